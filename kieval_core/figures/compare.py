"""The compare page's figures: the bootstrap table and forest plot, and the per-document
scatter. The figures come from :mod:`kieval_core.result.compare`; this module only draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..result import registry as metric_registry
from ..result.results import ModelResult
from .automation import first_custom_value
from .style import ACCURACY_COLOR, NEUTRAL_COLOR, base_layout
from .text import plain

#: Per-document figures of the documents table offered in the scatter: label -> column.
DOCUMENT_METRICS = {
    "KIEval_Aligned": "aligned",
    "KIEval entity F1": "f1",
    "KIEval group F1": "group_f1",
    "flat entity F1": "flat_f1",
    "corrections": "corrections",
}


def document_metrics(a: ModelResult, b: ModelResult) -> dict[str, str]:
    """Per-document figures both models have: KIEval ones, then peer means computed."""
    labels = dict(DOCUMENT_METRICS)
    if a.group is None:
        del labels["KIEval group F1"]
    for metric in metric_registry.METRICS:
        if (
            metric.family != "kieval"
            and metric.column
            and all(metric.column in m.documents.columns for m in (a, b))
        ):
            labels[metric.label] = metric.column
    return labels


def verdict_text(verdict: str, name_a: str, name_b: str) -> str:
    """The verdict with the models' names instead of A and B.

    >>> verdict_text("B better", "x", "y"), verdict_text("no clear difference", "x", "y")
    ('y better', 'no clear difference')
    """
    return {"A better": f"{name_a} better", "B better": f"{name_b} better"}.get(verdict, verdict)


def deltas_display(table: pd.DataFrame, name_a: str, name_b: str) -> pd.DataFrame:
    """The bootstrap table for reading: values as fractions (shown as %), the interval and
    the difference in percentage points, the verdict with the models' names."""
    counts = table["count"].astype(bool)
    return pd.DataFrame(
        {
            "metric": table["metric"],
            "A": table["A"],
            "B": table["B"],
            "B - A": table["delta"],
            "95% interval": [
                f"[{lo:+.0f}, {hi:+.0f}]" if c else f"[{100 * lo:+.2f}, {100 * hi:+.2f}] pts"
                for lo, hi, c in zip(table["low"], table["high"], counts, strict=True)
            ],
            "verdict": [verdict_text(v, name_a, name_b) for v in table["verdict"]],
            "_count": counts,
        }
    )


def deltas_figure(table: pd.DataFrame, name_a: str, name_b: str) -> go.Figure:
    """Forest plot of the scores (counts are in the table): B - A with its interval."""
    table = table[~table["count"].astype(bool)]
    colors = [ACCURACY_COLOR if v != "no clear difference" else NEUTRAL_COLOR for v in table["verdict"]]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=table["delta"],
            y=table["metric"],
            mode="markers",
            marker={"size": 11, "color": colors},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": table["high"] - table["delta"],
                "arrayminus": table["delta"] - table["low"],
                "color": "#555",
                "thickness": 1.5,
            },
            customdata=np.column_stack(
                [table["low"], table["high"], [verdict_text(v, name_a, name_b) for v in table["verdict"]]]
            ),
            hovertemplate="%{y}<br>B - A = %{x:+.2%}<br>95% interval [%{customdata[0]:+.2%}, "
            "%{customdata[1]:+.2%}]<br>%{customdata[2]}<extra></extra>",
            showlegend=False,
        )
    )
    fig.add_vline(x=0, line={"color": "#333", "width": 1})
    fig.update_layout(
        **base_layout(height=90 + 26 * len(table)),
        title={"text": f"{plain(name_b, 30)} minus {plain(name_a, 30)}", "font": {"size": 14}},
        xaxis={"title": "difference (percentage points)", "tickformat": "+.0%", "zeroline": False},
        yaxis={"autorange": "reversed"},
    )
    return fig


def scatter_figure(frame: pd.DataFrame, label: str, name_a: str, name_b: str, is_count: bool) -> go.Figure:
    """One marker per distinct (A, B) pair of a per-document figure, sized by how many
    documents share it (hover: how many, and up to five ids); above the diagonal B does
    better for a score. Clicking opens the first document of the marker (its raw id is
    ``customdata[0]``)."""
    frame = frame.dropna(subset=["A", "B"])
    grouped = (
        frame.groupby(["A", "B"], sort=True)
        .agg(
            documents=("doc_id", "size"),
            first=("doc_id", "first"),
            ids=(
                "doc_id",
                lambda ids: ", ".join(plain(d, 30) for d in list(ids)[:5]) + (" …" if len(ids) > 5 else ""),
            ),
        )
        .reset_index()
    )
    fig = go.Figure()
    values = pd.concat([frame["A"], frame["B"]])
    lo = float(values.min()) if len(values) else 0.0
    hi = float(values.max()) if len(values) else 1.0
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            line={"dash": "dot", "color": NEUTRAL_COLOR},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    size = 7 + 18 * np.sqrt(grouped["documents"] / max(grouped["documents"].max(), 1))
    fmt = ",.0f" if is_count else ".1%"
    fig.add_trace(
        go.Scatter(
            x=grouped["A"],
            y=grouped["B"],
            mode="markers",
            marker={
                "size": size,
                "color": grouped["B"] - grouped["A"],
                "colorscale": "RdBu",
                "cmid": 0,
                "opacity": 0.75,
                "line": {"width": 0.5, "color": "#333"},
                "colorbar": {"title": "B - A", "thickness": 12},
            },
            customdata=np.column_stack([grouped["first"], grouped["documents"], grouped["ids"]]),
            hovertemplate=f"{plain(name_a, 30)}: %{{x:{fmt}}}<br>{plain(name_b, 30)}: %{{y:{fmt}}}<br>"
            "%{customdata[1]} document(s): %{customdata[2]}<extra></extra>",
            showlegend=False,
        )
    )
    axis = {} if is_count else {"tickformat": ".0%"}
    fig.update_layout(
        **base_layout(height=440),
        xaxis={"title": f"{plain(name_a, 30)}: {label}", **axis},
        yaxis={"title": f"{plain(name_b, 30)}: {label}", **axis},
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def doc_from_selection(selection) -> str | None:
    """The raw doc id of the marker clicked in :func:`scatter_figure` (None if none).

    >>> doc_from_selection({"points": [{"customdata": ["d1", 3, "d1, d2"]}]})
    'd1'
    >>> doc_from_selection({"points": [{"customdata": {"0": "d2", "1": 1}}]})
    'd2'
    """
    for point in (selection or {}).get("points") or []:
        value = first_custom_value(point.get("customdata"))
        if value is not None:
            return str(value)
    return None
