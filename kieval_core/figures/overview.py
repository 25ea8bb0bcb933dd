"""The overview's tables and figure, read from the core and the metric registry.

Metrics are read from the registry at call time, so every registered metric a model
holds appears without changes here; metrics a family did not compute are left out.
The metric table itself is the core's (:func:`kieval_core.result.tables.metric_table`).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ..result import registry as metric_registry
from ..result.results import EvaluationResult, OneSidedKey
from ..result.tables import corrections_table, metric_table, reported_metrics
from .style import KIND_COLORS, KIND_LABELS, LEGEND_ABOVE, base_layout
from .text import plain

__all__ = [
    "best_models", "corrections_figure", "metric_cards", "metric_table", "reported_metrics",
]

FP_FN_COLOR = "#7f7f7f"


def set_aside_caption(key: OneSidedKey) -> str:
    """The first screen's note on a ground-truth key no prediction file has (SPEC 6.1): which
    key was set aside, and how to score it (plain text; the page escapes it).

    >>> set_aside_caption(OneSidedKey("split", "ground truth", 347, record_level=True, set_aside=True))[:75]
    "Not scored: 'split' (347 values in the ground truth, in no prediction file)"
    """
    return (f"Not scored: {key.key!r} ({key.values:,} values in the ground truth, in no prediction file) is "
            "kept as metadata. Score it as a field every model misses with the button.")


def best_models(result: EvaluationResult, table: pd.DataFrame) -> dict[str, str]:
    """Per metric label, the best model (empty when all models tie)."""
    out = {}
    for metric in reported_metrics(result):
        if metric.label not in table.columns:
            continue
        values = table[metric.label].dropna()
        if len(values) > 1 and values.nunique() > 1:
            out[metric.label] = values.idxmax() if metric.higher_is_better else values.idxmin()
    return out


def corrections_figure(result: EvaluationResult) -> go.Figure:
    """Per model: a stacked bar of corrections next to a bar of FP + FN."""
    table = corrections_table(result)
    models = [plain(m, 32) for m in table.index]
    fig = go.Figure()
    base = pd.Series(0, index=table.index)
    for kind in ("substitution", "addition", "deletion"):
        if not table[kind].any():
            continue  # no bar to draw; a legend key for it would only send readers looking
        fig.add_bar(
            y=models,
            x=table[kind],
            base=base.tolist(),
            orientation="h",
            offsetgroup="corr",
            name=KIND_LABELS[kind],
            marker_color=KIND_COLORS[kind],
            hovertemplate="%{y}<br>" + KIND_LABELS[kind] + ": %{x:,}<extra></extra>",
        )
        base = base + table[kind]
    fig.add_bar(
        y=models,
        x=table["FP + FN"],
        orientation="h",
        offsetgroup="fpfn",
        name="FP + FN",
        marker_color=FP_FN_COLOR,
        opacity=0.55,
        hovertemplate="%{y}<br>FP + FN: %{x:,}<extra></extra>",
    )
    fig.update_layout(
        **base_layout(height=90 + 42 * len(models)),
        barmode="group",
        xaxis={"title": "count", "tickformat": ","},
        yaxis={"autorange": "reversed"},
        legend={**LEGEND_ABOVE, "traceorder": "normal"},
    )
    return fig


def metric_cards() -> pd.DataFrame:
    """Every metric of the registry (read now, so later registrations appear)."""
    return pd.DataFrame(
        [
            {
                "metric": m.label,
                "key": m.key,
                "family": m.family,
                "direction": m.direction,
                "definition": m.definition,
                "how to read it": m.how_to_read,
                "source": m.citation,
                "headline": m.headline,
            }
            for m in metric_registry.METRICS
        ]
    )
