"""The document explorer: the document table, and one document's group matching.

The group matching of a document is shown two ways, both built here:

* :func:`group_pairs` / :func:`matching_figure`: ground-truth groups on the left,
  predicted groups on the right, one row per pair, a line for every matched pair;
* :func:`aligned_entities`: one row per aligned entity of each pair, the GT value beside
  the predicted value, with its status (correct / substituted / added / deleted) and
  the prediction's confidence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kieval_core import ModelResult, Normalizer

from .style import STATUS_COLORS, base_layout
from .text import plain

NON_GROUP = "non-group"

#: Sort orders of the document table: label -> (columns, ascending).
SORTS = {
    "most errors first": (["errors", "aligned"], [False, True]),
    "lowest KIEval_Aligned first": (["aligned", "errors"], [True, False]),
    "largest flat F1 - KIEval F1 gap first (grouping errors)": (["gap", "errors"], [False, False]),
    "document id": (["doc_id"], [True]),
}

DOCUMENT_COLUMNS = [
    "doc_id",
    "errors",
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
    ``matching errors`` column counting them.
    """
    docs = model.documents.assign(gap=lambda d: d["flat_f1"] - d["f1"])
    columns = list(DOCUMENT_COLUMNS)
    if entity_types or kinds:
        errors = model.errors
        mask = np.ones(len(errors), bool)
        if entity_types:
            mask &= errors["entity_type"].isin(list(entity_types)).to_numpy()
        if kinds:
            mask &= errors["kind"].isin(list(kinds)).to_numpy()
        hits = errors.loc[mask, "doc_id"].astype(object).value_counts()
        hits = hits[hits > 0]
        docs = docs[docs["doc_id"].isin(hits.index)].assign(
            **{"matching errors": lambda d: d["doc_id"].map(hits).astype(np.int64)}
        )
        columns.insert(1, "matching errors")
    elif only_with_errors:
        docs = docs[docs["errors"] > 0]
    if model.group is None:  # no groups in the ground truth: group F1 is not defined
        columns.remove("group_f1")
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


def _pair_label(group_type: str, gt_group: int, pred_group: int) -> str:
    if gt_group < 0 and pred_group < 0:
        return NON_GROUP
    if pred_group < 0:
        return f"{group_type}: GT #{gt_group} (unmatched)"
    if gt_group < 0:
        return f"{group_type}: pred #{pred_group} (unmatched)"
    return f"{group_type}: GT #{gt_group} <-> pred #{pred_group}"


def group_pairs(model: ModelResult, doc_id: str) -> pd.DataFrame:
    """One row per pair of the document, in display order: the non-group pair first, then
    per group type the matched pairs and unmatched GT groups by GT index, then unmatched
    predicted groups.

    Columns: ``pair, group_type, gt_group, pred_group, shared, status, n_gt, n_pred, errors``
    where status is ``exact`` / ``partial`` / ``unmatched GT`` / ``unmatched prediction`` /
    ``non-group``.
    """
    cells = model.counted.cells
    cells = cells[cells["doc_id"] == doc_id]
    pairs = model.matching
    pairs = pairs[pairs["doc_id"] == doc_id][
        ["group_type", "gt_group", "pred_group", "shared", "exact"]
    ]
    ng = cells[(cells["gt_group"] < 0) & (cells["pred_group"] < 0)]
    rows = []
    if len(ng):
        rows.append(
            {
                "group_type": "",
                "gt_group": -1,
                "pred_group": -1,
                "shared": int(ng["tp"].sum()),
                "exact": False,
            }
        )
    rows.extend(pairs.to_dict("records"))
    frame = pd.DataFrame(rows, columns=["group_type", "gt_group", "pred_group", "shared", "exact"])
    sums = cells.groupby(["group_type", "gt_group", "pred_group"], observed=True)[
        ["n_gt", "n_pred", "substitution", "addition", "deletion"]
    ].sum()
    key = pd.MultiIndex.from_frame(frame[["group_type", "gt_group", "pred_group"]])
    sums = sums.reindex(key, fill_value=0)
    frame["n_gt"] = sums["n_gt"].to_numpy()
    frame["n_pred"] = sums["n_pred"].to_numpy()
    frame["errors"] = (sums["substitution"] + sums["addition"] + sums["deletion"]).to_numpy()
    frame["status"] = np.select(
        [
            (frame["gt_group"] < 0) & (frame["pred_group"] < 0),
            frame["pred_group"] < 0,
            frame["gt_group"] < 0,
            frame["exact"].astype(bool),
        ],
        ["non-group", "unmatched GT", "unmatched prediction", "exact"],
        "partial",
    )
    frame["pair"] = [
        _pair_label(t, g, p)
        for t, g, p in zip(frame["group_type"], frame["gt_group"], frame["pred_group"], strict=True)
    ]
    order = np.lexsort(
        (
            frame["pred_group"].to_numpy(),
            np.where(frame["gt_group"] < 0, np.iinfo(np.int64).max, frame["gt_group"]),
            frame["group_type"].map(_first_seen(frame["group_type"])).to_numpy(),
            (frame["status"] != "non-group").to_numpy(),
        )
    )
    columns = [
        "pair",
        "group_type",
        "gt_group",
        "pred_group",
        "shared",
        "status",
        "n_gt",
        "n_pred",
        "errors",
    ]
    return frame.iloc[order][columns].reset_index(drop=True)


def _first_seen(values: pd.Series) -> dict:
    return {v: i for i, v in enumerate(dict.fromkeys(values))}


def aligned_entities(model: ModelResult, doc_id: str, normalizer: Normalizer) -> pd.DataFrame:
    """The document's entities aligned pair by pair: GT value beside predicted value.

    Correct GT and predicted copies are paired by equal (normalised) value, substitutions
    by their order in the cell (as the engine pairs them); an added GT entity or a deleted
    prediction stands alone. Columns: ``pair, entity_type, gt_value, pred_value,
    confidence, status`` plus the pair keys.
    """
    counted = model.counted
    g = counted.gt_entities[counted.gt_entities["doc_id"] == doc_id]
    p = counted.pred_entities[counted.pred_entities["doc_id"] == doc_id]
    g = pd.DataFrame(
        {
            "group_type": g["group_type"].to_numpy(),
            "gt_group": g["group"].to_numpy(),
            "pred_group": g["paired_group"].to_numpy(),
            "entity_type": g["entity_type"].to_numpy(),
            "value": g["value"].to_numpy(object),
            "status": g["status"].to_numpy(object),
            "position": g["position"].to_numpy(),
        }
    )
    p = pd.DataFrame(
        {
            "group_type": p["group_type"].to_numpy(),
            "gt_group": p["paired_group"].to_numpy(),
            "pred_group": p["group"].to_numpy(),
            "entity_type": p["entity_type"].to_numpy(),
            "value": p["value"].to_numpy(object),
            "status": p["status"].to_numpy(object),
            "confidence": p["confidence"].to_numpy(np.float64),
            "position": p["position"].to_numpy(),
        }
    )
    cell = ["group_type", "gt_group", "pred_group", "entity_type"]
    for side in (g, p):
        side["norm"] = _normalised(side["value"], normalizer)
        # k-th entity of a (cell, norm value) among correct ones, of a cell among substitutions
        side["link"] = -1
        for status, keys in (("correct", [*cell, "norm"]), ("substituted", cell)):
            chosen = side[side["status"] == status].sort_values("position", kind="stable")
            side.loc[chosen.index, "link"] = chosen.groupby(keys, sort=False).cumcount().to_numpy()
        side["link_value"] = side["norm"].where(side["status"] == "correct", "")
    linked_g = g[g["link"] >= 0].drop(columns="norm")
    linked_p = p[p["link"] >= 0].drop(columns="norm")
    both = linked_g.merge(
        linked_p, on=[*cell, "status", "link", "link_value"], how="outer", suffixes=("_g", "_p")
    )
    rows = pd.concat(
        [
            pd.DataFrame(
                {
                    **{c: both[c].to_numpy() for c in cell},
                    "gt_value": both["value_g"].to_numpy(object),
                    "pred_value": both["value_p"].to_numpy(object),
                    "confidence": both["confidence"].to_numpy(np.float64),
                    "status": both["status"].to_numpy(object),
                    "position_g": both["position_g"].to_numpy(np.float64),
                    "position_p": both["position_p"].to_numpy(np.float64),
                }
            ),
            pd.DataFrame(
                {
                    **{c: g.loc[g["link"] < 0, c].to_numpy() for c in cell},
                    "gt_value": g.loc[g["link"] < 0, "value"].to_numpy(object),
                    "pred_value": None,
                    "confidence": np.nan,
                    "status": g.loc[g["link"] < 0, "status"].to_numpy(object),
                    "position_g": g.loc[g["link"] < 0, "position"].to_numpy(np.float64),
                    "position_p": np.nan,
                }
            ),
            pd.DataFrame(
                {
                    **{c: p.loc[p["link"] < 0, c].to_numpy() for c in cell},
                    "gt_value": None,
                    "pred_value": p.loc[p["link"] < 0, "value"].to_numpy(object),
                    "confidence": p.loc[p["link"] < 0, "confidence"].to_numpy(np.float64),
                    "status": p.loc[p["link"] < 0, "status"].to_numpy(object),
                    "position_g": np.nan,
                    "position_p": p.loc[p["link"] < 0, "position"].to_numpy(np.float64),
                }
            ),
        ],
        ignore_index=True,
    )
    pairs = group_pairs(model, doc_id)
    pair_rank = {
        (t, gg, pg): i
        for i, (t, gg, pg) in enumerate(
            zip(pairs["group_type"], pairs["gt_group"], pairs["pred_group"], strict=True)
        )
    }
    rows["pair_rank"] = [
        pair_rank.get((t, int(gg), int(pg)), len(pair_rank))
        for t, gg, pg in zip(rows["group_type"], rows["gt_group"], rows["pred_group"], strict=True)
    ]
    # within a pair: GT reading order; predictions without a GT partner after them
    rows["within"] = rows["position_g"].fillna(rows["position_p"] + 1e9)
    rows = rows.sort_values(["pair_rank", "within"], kind="stable")
    rows["pair"] = [
        _pair_label(t, int(gg), int(pg))
        for t, gg, pg in zip(rows["group_type"], rows["gt_group"], rows["pred_group"], strict=True)
    ]
    columns = [
        "pair",
        "entity_type",
        "gt_value",
        "pred_value",
        "confidence",
        "status",
        "group_type",
        "gt_group",
        "pred_group",
    ]
    return rows[columns].reset_index(drop=True)


def _normalised(values: pd.Series, normalizer: Normalizer) -> pd.Series:
    """Each distinct value normalised once (as the engine compares them)."""
    codes, uniques = pd.factorize(values, sort=False)
    normalised = np.array([normalizer(v) for v in uniques] + [""], dtype=object)
    return pd.Series(normalised[codes], index=values.index, dtype=object)


_PAIR_COLORS = {
    "exact": STATUS_COLORS["correct"],
    "partial": STATUS_COLORS["substituted"],
    "unmatched GT": STATUS_COLORS["added"],
    "unmatched prediction": STATUS_COLORS["deleted"],
}


def _summary(entities: pd.DataFrame, limit: int) -> str:
    return plain(" · ".join(str(v) for v in entities["value"]), limit)


def _hover(entities: pd.DataFrame) -> str:
    lines = [
        f"{plain(t, 30)}: {plain(v, 50)} ({s})"
        for t, v, s in zip(
            entities["entity_type"], entities["value"], entities["status"], strict=True
        )
    ]
    return "<br>".join(lines[:25] + ([f"... {len(lines) - 25} more"] if len(lines) > 25 else []))


def matching_figure(model: ModelResult, doc_id: str) -> go.Figure:
    """GT groups (left) and predicted groups (right), one row per pair; matched pairs are
    linked by a line labelled with S (shared identical entities); unmatched groups stand
    alone. Colours: exact pair, pair with errors, unmatched GT group (to add), unmatched
    predicted group (to delete)."""
    pairs = group_pairs(model, doc_id)
    counted = model.counted
    g = counted.gt_entities[counted.gt_entities["doc_id"] == doc_id]
    p = counted.pred_entities[counted.pred_entities["doc_id"] == doc_id]
    g_by = {k: v for k, v in g.groupby(["group_type", "group"], sort=False, observed=True)}
    p_by = {k: v for k, v in p.groupby(["group_type", "group"], sort=False, observed=True)}
    n = len(pairs)
    fig = go.Figure()
    ys = np.arange(n)[::-1].astype(float)
    for y, row in zip(ys, pairs.itertuples(index=False), strict=True):
        non_group = row.status == "non-group"
        color = _PAIR_COLORS.get(
            row.status,
            STATUS_COLORS["correct"] if row.errors == 0 else STATUS_COLORS["substituted"],
        )
        has_gt = row.gt_group >= 0 or (non_group and row.n_gt > 0)
        has_pr = row.pred_group >= 0 or (non_group and row.n_pred > 0)
        if has_gt and has_pr:
            fig.add_trace(
                go.Scatter(
                    x=[0, 1],
                    y=[y, y],
                    mode="lines",
                    line={"color": color, "width": 3},
                    hoverinfo="skip",
                    showlegend=False,
                )
            )
            fig.add_annotation(
                x=0.5,
                y=y,
                text=f"S={row.shared}" + (" ✓" if row.status == "exact" else ""),
                showarrow=False,
                yshift=9,
                font={"size": 11, "color": color},
            )
        label = "non-group" if non_group else plain(row.group_type, 20)
        for x, present, by, side, index, pos in (
            (0, has_gt, g_by, "GT", row.gt_group, "middle left"),
            (1, has_pr, p_by, "pred", row.pred_group, "middle right"),
        ):
            if not present:
                continue
            entities = by.get((row.group_type, -1 if non_group else index))
            entities = entities if entities is not None else g.iloc[:0]
            name = f"{label}" if non_group else f"{label} {side} #{index}"
            fig.add_trace(
                go.Scatter(
                    x=[x],
                    y=[y],
                    mode="markers+text",
                    marker={
                        "size": 16,
                        "symbol": "square",
                        "color": color,
                        "line": {"width": 1, "color": "#333"},
                    },
                    text=[f"{name}: {_summary(entities, 46)}"],
                    textposition=pos,
                    textfont={"size": 12},
                    hovertext=[f"<b>{name}</b> ({row.status})<br>{_hover(entities)}"],
                    hoverinfo="text",
                    showlegend=False,
                )
            )
    for status, color in _PAIR_COLORS.items():
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=status,
                marker={"size": 12, "symbol": "square", "color": color},
            )
        )
    fig.update_layout(
        **base_layout(height=110 + 34 * max(n, 1)),
        xaxis={"range": [-1.6, 2.6], "visible": False, "fixedrange": True},
        yaxis={"visible": False, "range": [-0.8, n - 0.2], "fixedrange": True},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        annotations=[
            *fig.layout.annotations,
            {
                "x": 0,
                "y": n - 0.35,
                "text": "<b>ground truth</b>",
                "showarrow": False,
                "xanchor": "right",
                "yshift": 12,
            },
            {
                "x": 1,
                "y": n - 0.35,
                "text": "<b>prediction</b>",
                "showarrow": False,
                "xanchor": "left",
                "yshift": 12,
            },
        ],
    )
    return fig


def document_figures(model: ModelResult, doc_id: str) -> pd.Series:
    """The document's row of :attr:`ModelResult.documents`."""
    docs = model.documents
    return docs[docs["doc_id"] == doc_id].iloc[0]
