"""The automation page's figures: every figure is read from the core's review model
(:mod:`kieval_core.review.automation`); this module only draws.

Curves are drawn as steps through real operating points, never interpolated: between two
distinct confidences no threshold exists, so a straight line between two operating
points would suggest figures no threshold gives. The threshold axis is the rank of the
operating point (the confidence quantiles), so a model whose confidences bunch near 1
still spreads its operating points over the whole axis.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..review.automation import threshold_text
from .style import ACCURACY_COLOR, AUTOMATION_COLOR, LEGEND_ABOVE, NEUTRAL_COLOR, base_layout

DOCUMENT_COLOR = "#009E73"
COST_COLOR = "#CC79A7"


def operating_points(curve: pd.DataFrame, limit: int = 400, keep: tuple[float, ...] = ()) -> pd.DataFrame:
    """At most ``limit`` operating points for a control or a chart, spread evenly over the
    ranks (confidence quantiles); the first, the last and any threshold in ``keep`` stay.

    >>> c = pd.DataFrame({"threshold": np.linspace(0, 1, 1001)})
    >>> len(operating_points(c, 10, keep=(0.5,)))
    11
    """
    if len(curve) <= limit:
        return curve.reset_index(drop=True)
    ranks = set(np.linspace(0, len(curve) - 1, limit).round().astype(int).tolist())
    thresholds = curve["threshold"].to_numpy()
    ranks |= {int(np.searchsorted(thresholds, t)) for t in keep if t is not None}
    return curve.iloc[sorted(r for r in ranks if r < len(curve))].reset_index(drop=True)


#: Room on the right for the rank axis's last tick, centred on the plot's edge: with the
#: usual 10 px plotly hid it ("> 0.9993", the threshold that reviews everything).
RANK_MARGIN = {"l": 10, "r": 40, "t": 40, "b": 10}


def _rank_axis(shown: pd.DataFrame) -> dict:
    """An x axis over operating-point ranks, ticks labelled with their thresholds."""
    n = len(shown)
    ticks = np.unique(np.linspace(0, n - 1, min(n, 7)).round().astype(int))
    return {
        "tickvals": ticks.tolist(),
        "ticktext": [threshold_text(float(shown['threshold'].iloc[t]), short=True) for t in ticks],
        # the caption under the chart says the rest (one step per operating point); a half-width
        # chart has room for about 32 characters of axis title
        "title": "threshold τ (not to scale)",
        "range": [-0.5, n - 0.5],
    }


def _mark_choice(fig: go.Figure, point: tuple[float, float] | None, target: float | None,
                 customdata: list | None = None, label: str = "bottom left") -> None:
    """The chosen operating point (a ring) and the target accuracy (a dotted line, its
    label at ``label``) of a trade-off chart."""
    if point is not None:
        fig.add_trace(
            go.Scatter(
                x=[point[0]],
                y=[point[1]],
                mode="markers",
                name="chosen point",
                marker={"size": 16, "color": "#333", "symbol": "circle-open", "line": {"width": 3}},
                customdata=customdata,
                hoverinfo="skip",
            )
        )
    if target is not None:
        fig.add_hline(
            y=target,
            line={"dash": "dot", "color": NEUTRAL_COLOR},
            annotation_text=f"target {target:.0%}",
            annotation_position=label,
        )


def mark_point(fig: go.Figure, auto_rate: float, accuracy: float) -> None:
    """Ring an operating point that is no point of the curve (per-field or per-slice
    thresholds) on a trade-off chart."""
    fig.add_scatter(x=[auto_rate], y=[accuracy], mode="markers", name="chosen point",
                    marker={"size": 16, "color": "#333", "symbol": "circle-open", "line": {"width": 3}})


def _marker_rank(shown: pd.DataFrame, tau: float | None) -> int | None:
    """The rank of the operating point at ``tau``: the first at or above it, as the core
    reads a curve (``point_at``). No tolerance: the last point lies 2e-16 above the largest
    confidence (review everything), and ``tau - 1e-12`` put the ring on the point before."""
    if tau is None:
        return None
    return int(min(np.searchsorted(shown["threshold"].to_numpy(), tau, side="left"), len(shown) - 1))


def threshold_figure(
    curve: pd.DataFrame, tau: float | None, target: float | None, band: pd.DataFrame | None = None
) -> go.Figure:
    """Accuracy after review and automation rate at every operating point (the paper's
    Fig. 7), with the 95% bootstrap band of the accuracy when given."""
    shown = operating_points(curve, keep=(tau,) if tau is not None else ())
    x = np.arange(len(shown))
    custom = np.column_stack([shown["threshold"], shown["reviewed"]])
    fig = go.Figure()
    if band is not None and len(band):
        at = np.clip(
            np.searchsorted(band["threshold"].to_numpy(), shown["threshold"].to_numpy(), side="right") - 1,
            0,
            len(band) - 1,
        )  # the band at the operating point at or below (a step, like the curve)
        low, high = band["low"].to_numpy()[at], band["high"].to_numpy()[at]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=high,
                mode="lines",
                line={"width": 0, "shape": "hv"},
                hoverinfo="skip",
                showlegend=False,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=low,
                mode="lines",
                line={"width": 0, "shape": "hv"},
                fill="tonexty",
                fillcolor="rgba(0,114,178,0.15)",
                name="95% band (bootstrap)",
                hoverinfo="skip",
            )
        )
    for column, name, color in (
        ("kieval_aligned", "accuracy after review", ACCURACY_COLOR),
        ("auto_rate", "automation rate", AUTOMATION_COLOR),
    ):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=shown[column],
                mode="lines+markers",
                name=name,
                line={"color": color, "width": 2.5, "shape": "hv"},
                marker={"size": 4, "color": color},
                customdata=custom,
                hovertemplate="τ = %{customdata[0]:.4f}<br>" + name + ": %{y:.2%}<br>"
                "%{customdata[1]:,} predictions reviewed<extra></extra>",
            )
        )
    # the label at the right, under the line: accuracy rises and automation falls to 0 along τ,
    # so the curves leave that corner free (at the left both crossed "target 95%" at 1,024 px)
    _mark_choice(fig, None, target, label="bottom right")
    rank = _marker_rank(shown, tau)
    if rank is not None:
        fig.add_vline(x=rank, line={"color": "#333", "width": 1.5})
    fig.update_layout(
        **base_layout(height=380, margin=RANK_MARGIN),
        xaxis=_rank_axis(shown),
        yaxis={"title": "rate", "tickformat": ".0%", "range": [0, 1.03]},
        legend=LEGEND_ABOVE,
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def tradeoff_figure(
    curve: pd.DataFrame,
    tau: float | None,
    target: float | None,
    x: str = "auto_rate",
    y: str = "kieval_aligned",
    labels: tuple[str, str] = ("automated (not reviewed)", "accuracy after review"),
) -> go.Figure:
    """The real operating points (automation, accuracy), and the best accuracy that keeps
    at least a given automation as a staircase between them (no interpolation): points run
    from most to least automation, so each keeps its accuracy leftwards until the next
    point's automation ("hv"; "vh" drew the next point's accuracy at this point's
    automation: Textract's jump from 87% to 99% at 0% automation showed at 50%)."""
    shown = operating_points(curve, keep=(tau,) if tau is not None else ())
    custom = np.column_stack([shown["threshold"], shown["reviewed"]])
    color = ACCURACY_COLOR if y == "kieval_aligned" else DOCUMENT_COLOR
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=shown[x],
            y=shown[y],
            mode="lines+markers",
            name="operating points",
            line={"color": color, "width": 1.5, "shape": "hv"},
            marker={"size": 6, "color": color},
            customdata=custom,
            hovertemplate="τ = %{customdata[0]:.4f}<br>"
            + labels[0]
            + " %{x:.2%}<br>"
            + labels[1]
            + " %{y:.2%}<br>%{customdata[1]:,} reviewed<extra></extra>",
        )
    )
    rank = _marker_rank(shown, tau)
    now = None if rank is None else shown.iloc[rank]
    _mark_choice(fig, None if now is None else (now[x], now[y]), target,
                 None if now is None else [[now["threshold"], now["reviewed"]]])
    low = float(min(shown[y].min(), target if target is not None else 1.0))
    fig.update_layout(
        **base_layout(height=380),
        xaxis={"title": labels[0], "tickformat": ".0%", "range": [-0.02, 1.02]},
        yaxis={"title": labels[1], "tickformat": ".0%", "range": [max(0.0, low - 0.05), 1.01]},
        legend=LEGEND_ABOVE,
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def policies_figure(
    predictions: pd.DataFrame,
    documents: pd.DataFrame,
    chosen: tuple[float, float] | None,
    target: float | None,
) -> go.Figure:
    """Both review policies on one chart: accuracy after review against the share of
    predictions nobody looks at, reviewing single predictions or whole documents (the
    curves of :func:`kieval_core.review.decisions.review_curve`), each through its real operating
    points as a staircase. ``chosen`` marks the point shown on the page."""
    fig = go.Figure()
    for curve, name, color, dash in (
        (predictions, "single predictions below τ", ACCURACY_COLOR, "solid"),
        (documents, "whole documents with one below τ", DOCUMENT_COLOR, "dash"),
    ):
        shown = operating_points(curve)
        fig.add_trace(
            go.Scatter(
                x=shown["auto_rate"],
                y=shown["kieval_aligned"],
                mode="lines+markers",
                name=name,
                line={"color": color, "width": 2, "shape": "hv", "dash": dash},
                marker={"size": 5, "color": color},
                customdata=np.column_stack([shown["threshold"], shown["reviewed"]]),
                hovertemplate="τ = %{customdata[0]:.4f}<br>automated %{x:.2%}<br>accuracy %{y:.2%}<br>"
                "%{customdata[1]:,} predictions looked at<extra>" + name + "</extra>",
            )
        )
    _mark_choice(fig, chosen, target)
    low = float(min(predictions["kieval_aligned"].min(), documents["kieval_aligned"].min(), target or 1.0))
    fig.update_layout(
        **base_layout(height=380),
        xaxis={
            "title": "automated (nobody looks at them)",
            "tickformat": ".0%",
            "range": [-0.02, 1.02],
        },
        yaxis={"title": "accuracy after review", "tickformat": ".0%", "range": [max(0.0, low - 0.05), 1.01]},
        legend=LEGEND_ABOVE,
        dragmode=False,
    )
    return fig


def cost_figure(curve: pd.DataFrame, tau: float | None, minimum: float | None) -> go.Figure:
    """Expected cost per 1,000 documents at every operating point."""
    shown = operating_points(curve, keep=tuple(t for t in (tau, minimum) if t is not None))
    x = np.arange(len(shown))
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=x,
            y=shown["cost_per_1000_documents"],
            mode="lines+markers",
            name="seconds per 1,000 documents",
            line={"color": COST_COLOR, "width": 2.5, "shape": "hv"},
            marker={"size": 4},
            customdata=shown["threshold"],
            hovertemplate="τ = %{customdata:.4f}<br>%{y:,.0f} s per 1,000 documents<extra></extra>",
        )
    )
    lines = ((tau, "chosen", "solid", "top"), (minimum, "cheapest", "dash", "bottom"))
    for value, label, dash, height in lines:
        rank = _marker_rank(shown, value)
        if rank is not None:
            # Labels stay inside the plot: left of a line in the right half, right of it
            # otherwise; "chosen" at the top and "cheapest" at the bottom, so close lines
            # cannot print one label over the other.
            side = "left" if rank > len(shown) / 2 else "right"
            fig.add_vline(
                x=rank,
                line={"color": "#333" if dash == "solid" else COST_COLOR, "dash": dash},
                annotation_text=label,
                annotation_position=f"{height} {side}",
            )
    fig.update_layout(
        **base_layout(height=320, margin=RANK_MARGIN),
        xaxis=_rank_axis(shown),
        yaxis={"title": "seconds per 1,000 documents", "tickformat": ",", "rangemode": "tozero"},
        showlegend=False,
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def first_custom_value(data):
    """``customdata[0]`` of a clicked or selected point (every clickable point of this
    module carries its threshold there): a list, a ``{"0": ...}`` object (how the browser
    serialises a row of a 2-D customdata array) or a scalar.

    >>> first_custom_value([0.61, 3]), first_custom_value({"0": 0.7, "1": 5}), first_custom_value([])
    (0.61, 0.7, None)
    """
    if isinstance(data, (list, tuple)):
        return data[0] if data else None
    if isinstance(data, dict):
        return data.get("0", data.get(0))
    return data


def reliability_figure(table: pd.DataFrame) -> go.Figure:
    """Bars: the share of right predictions per confidence bin; a diamond on each bar:
    the bin's mean confidence, where the bar would end if the confidences were calibrated."""
    centers = (table["low"] + table["high"]) / 2
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            name="perfect calibration",
            line={"dash": "dot", "color": NEUTRAL_COLOR},
            hoverinfo="skip",
        )
    )
    fig.add_bar(
        x=centers,
        y=table["accuracy"],
        width=(table["high"] - table["low"]) * 0.92,
        name="share right",
        marker_color=ACCURACY_COLOR,
        opacity=0.85,
        text=[f"{n:,}" if n else "" for n in table["predictions"]],
        textposition="outside",
        customdata=np.column_stack(
            [table["low"], table["high"], table["predictions"], table["mean_confidence"].fillna(0)]
        ),
        hovertemplate="confidence %{customdata[0]:.1f}-%{customdata[1]:.1f}<br>%{customdata[2]:,} "
        "predictions<br>mean confidence %{customdata[3]:.2f}<br>right %{y:.1%}<extra></extra>",
    )
    filled = table[table["predictions"] > 0]
    fig.add_trace(
        go.Scatter(
            x=(filled["low"] + filled["high"]) / 2,
            y=filled["mean_confidence"],
            mode="markers",
            name="mean confidence (a calibrated bar ends here)",
            marker={
                "color": AUTOMATION_COLOR,
                "size": 10,
                "symbol": "diamond",
                "line": {"width": 1, "color": "#333"},
            },
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        **base_layout(height=360),
        xaxis={"title": "confidence", "range": [0, 1], "dtick": 0.1},
        yaxis={"title": "share of predictions that are right", "tickformat": ".0%", "range": [0, 1.12]},
        legend=LEGEND_ABOVE,
    )
    return fig
