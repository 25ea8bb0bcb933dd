"""The document explorer: the document table, one document's group matching drawn, and
its entities aligned pair by pair (the core's :mod:`kieval_core.count.alignment` decides what
stands beside what; this module only draws).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kieval_core.count.alignment import document_alignment, document_view_tables, group_pairs
from kieval_core.read.page_images import Page, PageImages

from ..result.results import ModelResult
from ..result.tables import confidence_text
from .diff import diff_html
from .document_view import document_figure
from .style import LEGEND_ABOVE, STATUS_COLORS, base_layout
from .text import field_html, plain

NON_GROUP = "non-group"

#: Sort orders of the document table: label -> (columns, ascending).
SORTS = {
    "most errors first": (["corrections", "aligned"], [False, True]),
    "lowest KIEval_Aligned first": (["aligned", "corrections"], [True, False]),
    "largest flat F1 - KIEval F1 gap first (grouping errors)": (["gap", "corrections"], [False, False]),
    "document id": (["doc_id"], [True]),
}

DOCUMENT_COLUMNS = [
    "doc_id",
    "corrections",
    "substitution",
    "addition",
    "deletion",
    "aligned",
    "f1",
    "group_f1",
    "flat_f1",
    "n_gt",
    "n_pred",
    "missing",
]


def document_table(
    model: ModelResult,
    entity_types: Sequence[str] = (),
    kinds: Sequence[str] = (),
    only_with_errors: bool = False,
    sort: str = "most errors first",
) -> pd.DataFrame:
    """Per-document figures, filtered and sorted.

    ``entity_types`` / ``kinds`` keep documents having at least one error of those entity
    types / correction kinds (both: of those kinds in those types) and add a
    ``matching corrections`` column counting them.
    """
    docs = model.documents.assign(gap=lambda d: d["flat_f1"] - d["f1"])
    columns = list(DOCUMENT_COLUMNS)
    if entity_types or kinds:
        error_list = model.error_list
        mask = np.ones(len(error_list), bool)
        if entity_types:
            mask &= error_list["entity_type"].isin(list(entity_types)).to_numpy()
        if kinds:
            mask &= error_list["kind"].isin(list(kinds)).to_numpy()
        hits = error_list.loc[mask, "doc_id"].astype(object).value_counts()
        hits = hits[hits > 0]
        docs = docs[docs["doc_id"].isin(hits.index)].assign(
            **{"matching corrections": lambda d: d["doc_id"].map(hits).astype(np.int64)}
        )
        columns.insert(1, "matching corrections")
    elif only_with_errors:
        docs = docs[docs["corrections"] > 0]
    if model.group is None:  # no groups in the ground truth: group F1 is not defined
        columns.remove("group_f1")
    if model.meta is not None:
        columns += [c for c in model.meta.columns if c in docs.columns]
    by, ascending = SORTS[sort]
    docs = docs.sort_values(by, ascending=ascending, kind="stable")
    return docs[columns].reset_index(drop=True)


def neighbours(order: Sequence[str], doc_id: str) -> tuple[str | None, str | None]:
    """Previous and next document of ``doc_id`` in ``order`` (None at the ends).

    >>> neighbours(["a", "b", "c"], "b")
    ('a', 'c')
    >>> neighbours(["a", "b"], "x")
    (None, 'a')
    """
    order = list(order)
    if doc_id not in order:
        return None, order[0] if order else None
    i = order.index(doc_id)
    return (order[i - 1] if i > 0 else None), (order[i + 1] if i + 1 < len(order) else None)


_PAIR_COLORS = {
    "exact": STATUS_COLORS["correct"],
    "partial": STATUS_COLORS["substituted"],
    "unmatched GT": STATUS_COLORS["added"],
    "unmatched prediction": STATUS_COLORS["deleted"],
}


class _Lines:
    """A side's entities by line, ``(group_type, group)``: their columns as arrays and each
    line's positions in them (no sub-frame per line: the next document waits for this)."""

    def __init__(self, entities: pd.DataFrame) -> None:
        self.types = entities["entity_type"].to_numpy(object)
        self.values = entities["value"].to_numpy(object)
        self.statuses = entities["status"].to_numpy(object)
        self.positions = entities.groupby(["group_type", "group"], sort=False, observed=True).indices

    def _at(self, line: tuple) -> np.ndarray:
        return self.positions.get(line, np.empty(0, np.int64))

    def summary(self, line: tuple, limit: int) -> str:
        return plain(" · ".join(str(v) for v in self.values[self._at(line)]), limit)

    def hover(self, line: tuple) -> str:
        at = self._at(line)
        lines = [f"{plain(t, 30)}: {plain(v, 50)} ({s})"
                 for t, v, s in zip(self.types[at], self.values[at], self.statuses[at], strict=True)]
        return "<br>".join(lines[:25] + ([f"... {len(lines) - 25} more"] if len(lines) > 25 else []))


#: Headers of the values table (:func:`alignment_rows`); see :func:`value_columns`.
VALUE_COLUMNS = ["lines (GT ↔ pred)", "field", "ground truth", "prediction", "confidence", "status"]


def value_columns(model: ModelResult) -> list[str]:
    """The values table's headers: without confidence when the model has none (an empty
    column took the room the field names needed at 1,024 px: "menu.discou ntprice")."""
    return VALUE_COLUMNS if model.has_confidence else [c for c in VALUE_COLUMNS if c != "confidence"]


def pair_label(group_type: str, gt_group: int, pred_group: int) -> str:
    """A pair of lines, short enough for a narrow column: ``menu 2 ↔ 3`` is GT line 2
    matched with predicted line 3 (counted from 1); ``–`` marks the side without a line.

    >>> pair_label("menu", 1, 2), pair_label("menu", 1, -1), pair_label("", -1, -1)
    ('menu 2 ↔ 3', 'menu 2 ↔ –', 'non-group')
    """
    if gt_group < 0 and pred_group < 0:
        return NON_GROUP
    gt = "–" if gt_group < 0 else gt_group + 1
    pred = "–" if pred_group < 0 else pred_group + 1
    return f"{group_type} {gt} ↔ {pred}"


def alignment_rows(model: ModelResult, doc_id: str, table: pd.DataFrame | None = None
                   ) -> list[tuple[list[str], str]]:
    """The document's aligned entities as HTML table rows (pair, field, GT value,
    predicted value with differences marked, confidence unless the model has none, status:
    :func:`value_columns`); ``table`` is its
    :func:`~kieval_core.count.alignment.document_alignment` when already known."""
    rows = []
    with_confidence = model.has_confidence
    table = document_alignment(model.detail(), doc_id) if table is None else table
    for row in table.itertuples(index=False):
        if row.status == "substituted":
            gt, pred = diff_html(row.gt_value, row.pred_value)
        else:
            gt, pred = diff_html(row.gt_value, None)[0], diff_html(None, row.pred_value)[1]
        confidence = [confidence_text(row.confidence)] if with_confidence else []
        pair = plain(pair_label(row.group_type, int(row.gt_group), int(row.pred_group)))
        status = row.status if row.cause is None else f"{row.status}: {row.cause.replace('_', ' ')}"
        rows.append(([pair, field_html(row.entity_type), gt, pred, *confidence, plain(status)], row.status))
    return rows


#: The matching chart's labels: two lines (the group's line, then its values) of at most this
#: many characters each, in the 2 of the x axis' 5 units on each side of the links: ~210 px
#: at 1,024 px, where one line of 46 characters and the side's name were cut.
MATCHING_LABEL_CHARS = 28
MATCHING_X_RANGE = [-2.0, 3.0]


def matching_figure(model: ModelResult, doc_id: str, pairs: pd.DataFrame | None = None) -> go.Figure:
    """GT groups (left) and predicted groups (right), one row per pair; matched pairs are
    linked by a line labelled with S (shared identical entities); unmatched groups stand
    alone. Colours: exact pair, pair with errors, unmatched GT group (to add), unmatched
    predicted group (to delete). ``pairs`` is the document's
    :func:`~kieval_core.count.alignment.group_pairs` when already known."""
    counted = model.detail()
    pairs = group_pairs(counted, doc_id) if pairs is None else pairs
    g = counted.gt_entities[counted.gt_entities["doc_id"] == doc_id]
    p = counted.pred_entities[counted.pred_entities["doc_id"] == doc_id]
    g_by, p_by = _Lines(g), _Lines(p)
    n = len(pairs)
    ys = np.arange(n)[::-1].astype(float)
    # Built as a handful of traces with per-point arrays (one per side, one of links per
    # colour, one of link labels): a trace or an annotation per line costs ~3 ms each.
    links: dict[str, tuple[list, list]] = {}
    labels = {"x": [], "y": [], "text": [], "color": []}
    sides = {side: {"x": [], "y": [], "color": [], "text": [], "hovertext": []} for side in ("GT", "pred")}
    for y, row in zip(ys, pairs.itertuples(index=False), strict=True):
        non_group = row.status == "non-group"
        color = _PAIR_COLORS.get(
            row.status,
            STATUS_COLORS["correct"] if row.corrections == 0 else STATUS_COLORS["substituted"],
        )
        has_gt = row.gt_group >= 0 or (non_group and row.n_gt > 0)
        has_pr = row.pred_group >= 0 or (non_group and row.n_pred > 0)
        if has_gt and has_pr:
            xs, line_ys = links.setdefault(color, ([], []))
            xs += [0, 1, None]
            line_ys += [y, y, None]
            labels["x"].append(0.5)
            labels["y"].append(y)
            labels["text"].append(f"S={row.shared}" + (" ✓" if row.status == "exact" else ""))
            labels["color"].append(color)
        label = "non-group" if non_group else plain(row.group_type, MATCHING_LABEL_CHARS - 9)
        for x, present, by, side, index in (
            (0, has_gt, g_by, "GT", row.gt_group),
            (1, has_pr, p_by, "pred", row.pred_group),
        ):
            if not present:
                continue
            key = (row.group_type, -1 if non_group else index)
            line = label if non_group else f"{label} line {index + 1}"  # the side is the column's title
            points = sides[side]
            points["x"].append(x)
            points["y"].append(y)
            points["color"].append(color)
            points["text"].append(f"{line}<br>{by.summary(key, MATCHING_LABEL_CHARS)}")
            name = label if non_group else f"{label} {side} line {index + 1}"
            points["hovertext"].append(f"<b>{name}</b> ({row.status})<br>{by.hover(key)}")
    traces = _matching_traces(links, labels, sides)
    layout = base_layout(
        height=120 + 42 * max(n, 1),
        xaxis={"range": MATCHING_X_RANGE, "visible": False, "fixedrange": True},
        yaxis={"visible": False, "range": [-0.8, n - 0.2], "fixedrange": True},
        legend={**LEGEND_ABOVE, "x": 0.5, "xanchor": "center"},  # over the two columns
        annotations=[
            {"x": 0, "y": n - 0.35, "text": "<b>ground truth</b>", "showarrow": False, "xanchor": "right",
             "yshift": 12},
            {"x": 1, "y": n - 0.35, "text": "<b>prediction</b>", "showarrow": False, "xanchor": "left",
             "yshift": 12},
        ],
    )
    return go.Figure(data=traces, layout=layout, _validate=False)


def _matching_traces(links: dict[str, tuple[list, list]], labels: dict[str, list],
                     sides: dict[str, dict[str, list]]) -> list[dict]:
    """The matching chart's traces: one of links per colour, one of link labels, one of
    points per side, and the legend."""
    # plain dicts, not validated when built (a go.Scatter per trace validates each twice;
    # the next document waits for it): tests/app/test_builders.py validates the figure
    traces: list[dict] = [
        {"type": "scatter", "x": xs, "y": line_ys, "mode": "lines", "line": {"color": color, "width": 3},
         "hoverinfo": "skip", "showlegend": False}
        for color, (xs, line_ys) in links.items()
    ]
    traces.append({"type": "scatter", "x": labels["x"], "y": labels["y"], "mode": "text",
                   "text": labels["text"], "textposition": "top center",
                   "textfont": {"size": 11, "color": labels["color"]}, "hoverinfo": "skip",
                   "showlegend": False})
    for side, position in (("GT", "middle left"), ("pred", "middle right")):
        points = sides[side]
        traces.append({
            "type": "scatter", "x": points["x"], "y": points["y"], "mode": "markers+text",
            "marker": {"size": 16, "symbol": "square", "color": points["color"],
                       "line": {"width": 1, "color": "#333"}},
            "text": points["text"], "textposition": position, "textfont": {"size": 12},
            "hovertext": points["hovertext"], "hoverinfo": "text", "showlegend": False,
        })
    traces += [
        {"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": status,
         "marker": {"size": 12, "symbol": "square", "color": color}}
        for status, color in _PAIR_COLORS.items()
    ]
    return traces


# --- one document's parts, each built once through ``view(name, fn, *key)``: the page's
# session.view, or compute.view bound to the store and workspace when the next document is
# built ahead (compute.ahead) while the user looks at this one. One place for their keys,
# so what is built ahead is what the page asks for.

def document_tables(view: Callable, model: ModelResult, name: str, doc: str):
    """The document's group pairs, its boxes and its values pair by pair."""
    pairs = view("pairs", lambda: group_pairs(model.detail(), doc), name, doc)
    boxes, aligned = view("view_tables", lambda: document_view_tables(model.detail(), doc, pairs), name, doc)
    return pairs, boxes, aligned


def page_figure(view: Callable, name: str, doc: str, boxes: pd.DataFrame, page: int, image: Page | None,
                selected: int | None, images_digest: str | None) -> go.Figure:
    return view("page_view", lambda: document_figure(boxes, page, image, selected, doc=doc),
                name, doc, page, selected, images_digest)


def has_groups(pairs: pd.DataFrame) -> bool:
    return bool((pairs["status"] != "non-group").any())


def matching(view: Callable, model: ModelResult, name: str, doc: str, pairs: pd.DataFrame) -> go.Figure:
    return view("matching", lambda: matching_figure(model, doc, pairs), name, doc)


def pair_rows(view: Callable, model: ModelResult, name: str, doc: str, aligned: pd.DataFrame) -> list:
    return view("alignment", lambda: alignment_rows(model, doc, aligned), name, doc)


def build_document(view: Callable, model: ModelResult, name: str, doc: str, images: PageImages | None,
                   images_digest: str | None) -> None:
    """Everything the Documents page draws of ``doc`` opened anew: its first page, nothing
    selected."""
    pairs, boxes, aligned = document_tables(view, model, name, doc)
    if len(boxes):
        image = images.page(doc, 1) if images is not None else None
        page_figure(view, name, doc, boxes, 1, image, None, images_digest)
    if has_groups(pairs):
        matching(view, model, name, doc, pairs)
    pair_rows(view, model, name, doc, aligned)
