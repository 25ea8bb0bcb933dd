"""The errors view: corrections per entity type, flat vs KIEval F1 per entity type, the
error list's filters and its CSV / JSON export (the figures come from the core)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kieval_core.count.causes import CAUSES_OF_KIND
from kieval_core.safe_text import csv_text

from ..result.results import ModelResult
from .diff import diff_html
from .style import ACCURACY_COLOR, KIND_COLORS, KIND_LABELS, KINDS, LEGEND_ABOVE, NEUTRAL_COLOR, base_layout
from .text import field_html, plain


def corrections_by_type(model: ModelResult) -> pd.DataFrame:
    """Per entity type: substitutions, additions, deletions and their total, most first."""
    table = model.by_entity_type[["entity_type", *KINDS, "corrections", "n_gt", "n_pred"]]
    return table.sort_values(["corrections", "entity_type"], ascending=[False, True],
                             kind="stable").reset_index(drop=True)


def corrections_by_type_figure(model: ModelResult, top: int = 25) -> go.Figure:
    """Stacked horizontal bars of the corrections per entity type (types with most errors)."""
    table = corrections_by_type(model)
    table = table[table["corrections"] > 0].head(top)
    series = [(KIND_LABELS[kind], table[kind], KIND_COLORS[kind]) for kind in KINDS]
    return _stacked_corrections(table["entity_type"], series, base_height=120)


def _stacked_corrections(entity_types: pd.Series, series: list[tuple[str, pd.Series, str]],
                         base_height: int) -> go.Figure:
    """Horizontal bars of corrections per entity type, one stacked series per (label,
    values, colour), the types in the table's order from the top."""
    types = [plain(t, 40) for t in entity_types]
    fig = go.Figure()
    for label, values, color in series:
        fig.add_bar(y=types, x=values, orientation="h", name=label, marker_color=color,
                    hovertemplate="%{y}<br>" + label + ": %{x}<extra></extra>")
    fig.update_layout(
        **base_layout(height=base_height + 24 * max(len(types), 3)),
        barmode="stack",
        xaxis_title="corrections",
        yaxis={"autorange": "reversed"},
        legend={**LEGEND_ABOVE, "traceorder": "normal"},
    )
    return fig


def f1_by_type(model: ModelResult) -> pd.DataFrame:
    """Per entity type: flat entity F1 (groups ignored) and KIEval entity F1, and the gap."""
    table = model.by_entity_type[["entity_type", "flat_f1", "f1", "n_gt", "corrections"]].rename(
        columns={"f1": "kieval_f1"}
    )
    table = table.assign(gap=table["flat_f1"] - table["kieval_f1"])
    return table.sort_values(["gap", "entity_type"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )


def f1_by_type_figure(model: ModelResult, top: int = 30) -> go.Figure:
    """A dumbbell per entity type: flat F1 and KIEval F1; a long bar = grouping errors."""
    table = f1_by_type(model)
    table = table.sort_values("n_gt", ascending=False, kind="stable").head(top)
    table = table.sort_values(["gap", "kieval_f1"], ascending=[False, True], kind="stable")
    types = [plain(t, 40) for t in table["entity_type"]]
    fig = go.Figure()
    for y, lo, hi in zip(types, table["kieval_f1"], table["flat_f1"], strict=True):
        fig.add_trace(
            go.Scatter(
                x=[lo, hi],
                y=[y, y],
                mode="lines",
                showlegend=False,
                line={"color": "#bbbbbb", "width": 4},
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=table["flat_f1"],
            y=types,
            mode="markers",
            name="flat entity F1",
            marker={
                "size": 11,
                "color": NEUTRAL_COLOR,
                "symbol": "circle-open",
                "line": {"width": 2},
            },
            customdata=table["n_gt"],
            hovertemplate="%{y}<br>flat F1 %{x:.1%}<br>%{customdata} GT entities<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=table["kieval_f1"],
            y=types,
            mode="markers",
            name="KIEval entity F1",
            marker={"size": 11, "color": ACCURACY_COLOR},
            customdata=table["n_gt"],
            hovertemplate="%{y}<br>KIEval F1 %{x:.1%}<br>%{customdata} GT entities<extra></extra>",
        )
    )
    fig.update_layout(
        **base_layout(height=120 + 24 * max(len(types), 3)),
        xaxis={"title": "F1", "tickformat": ".0%", "range": [-0.02, 1.02]},
        yaxis={"autorange": "reversed"},
        legend=LEGEND_ABOVE,
    )
    return fig


#: Every (kind, cause) of SPEC 2c (kinds in the page's order), its label and colour: a
#: light, a full and (substitutions) a dark shade of the kind's own colour, so the causes
#: chart reads with the corrections chart beside it (orange substitutions, blue additions,
#: vermillion deletions) instead of painting additions in the substitutions' orange.
CAUSE_SERIES = [(kind, cause) for kind in ("substitution", "addition", "deletion")
                for cause in CAUSES_OF_KIND[kind]]
CAUSE_LABELS = {(kind, cause): f"{kind}: {'format only' if cause == 'format' else cause.replace('_', ' ')}"
                for kind, cause in CAUSE_SERIES}
CAUSE_COLORS = {
    ("substitution", "format"): "#F3CF80",
    ("substitution", "date_order"): "#D9A441",
    ("substitution", "near_miss"): KIND_COLORS["substitution"],
    ("substitution", "other_value"): "#9A6A00",
    ("addition", "misplaced"): "#56B4E9",
    ("addition", "missed"): KIND_COLORS["addition"],
    ("deletion", "misplaced"): "#EFA77F",
    ("deletion", "hallucinated"): KIND_COLORS["deletion"],
}


def causes_by_type_figure(model: ModelResult, top: int = 25) -> go.Figure:
    """Why: stacked horizontal bars of the corrections per entity type by cause (SPEC 2c)."""
    table = corrections_by_type(model)
    table = table[table["corrections"] > 0].head(top)
    table = table.merge(model.by_entity_type, on="entity_type", suffixes=("", "_"))
    series = [(CAUSE_LABELS[kc], table[f"{kc[0]}_{kc[1]}"], CAUSE_COLORS[kc]) for kc in CAUSE_SERIES]
    return _stacked_corrections(table["entity_type"], series, base_height=150)


def format_shares(model: ModelResult) -> pd.DataFrame:
    """Per entity type with substitutions: the share of them that differ only in format,
    largest share of the most substitutions first."""
    table = model.by_entity_type
    table = table[table["substitution"] > 0]
    out = pd.DataFrame({"entity_type": table["entity_type"], "format": table["substitution_format"],
                        "substitution": table["substitution"]})
    out["share"] = out["format"] / out["substitution"]
    out = out.sort_values(["format", "entity_type"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def filter_error_list(
    error_list: pd.DataFrame,
    kinds: Sequence[str] = (),
    entity_types: Sequence[str] = (),
    search: str = "",
    causes: Sequence[str] = (),
) -> pd.DataFrame:
    """The corrections of the given kinds, entity types and causes whose doc id or values
    contain ``search`` (case-insensitive, plain text: no regular expression)."""
    mask = np.ones(len(error_list), bool)
    if kinds:
        mask &= error_list["kind"].isin(list(kinds)).to_numpy()
    if causes and "cause" in error_list:
        mask &= error_list["cause"].isin(list(causes)).to_numpy()
    if entity_types:
        mask &= error_list["entity_type"].isin(list(entity_types)).to_numpy()
    if search.strip():
        needle = search.strip().casefold()
        hit = np.zeros(len(error_list), bool)
        for column in ("doc_id", "gt_value", "pred_value"):
            values = error_list[column].astype(object).where(error_list[column].notna(), "")
            hit |= values.astype(str).str.casefold().str.contains(needle, regex=False).to_numpy()
        mask &= hit
    return error_list[mask].reset_index(drop=True)


def error_list_csv(error_list: pd.DataFrame) -> bytes:
    """The error list as UTF-8 CSV (SPEC 7 columns; empty cell = absent), a cell a
    spreadsheet would run as a formula prefixed with ``'`` (SPEC 8b)."""
    return csv_text(error_list).encode("utf-8")


def error_list_json(error_list: pd.DataFrame) -> bytes:
    """The error list as a JSON array of records (null = absent)."""
    records = []
    for row in error_list.itertuples(index=False):
        record = {}
        for column, value in zip(error_list.columns, row, strict=True):
            if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
                record[column] = None
            elif isinstance(value, np.integer):
                record[column] = int(value)
            elif isinstance(value, np.floating):
                record[column] = float(value)
            else:
                record[column] = value
        records.append(record)
    return json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8")


def substitution_rows(error_list: pd.DataFrame) -> list[tuple[list[str], str]]:
    """Substitutions as HTML table rows, the differing characters marked."""
    rows = []
    for row in error_list[error_list["kind"] == "substitution"].itertuples(index=False):
        gt, pred = diff_html(row.gt_value, row.pred_value)
        rows.append(([plain(row.doc_id), field_html(row.entity_type), gt, pred], "substituted"))
    return rows


def confusion_rows(confusions: pd.DataFrame) -> list[tuple[list[str], str]]:
    """Top confusions as HTML table rows, the differing characters marked."""
    rows = []
    for row in confusions.itertuples(index=False):
        gt, pred = diff_html(row.gt_value, row.pred_value)
        rows.append(([field_html(row.entity_type), gt, pred, f"{row.count:,}", f"{row.documents:,}"], ""))
    return rows
