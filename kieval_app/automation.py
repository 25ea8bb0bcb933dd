"""The automation view (SPEC 4): choose a confidence threshold tau.

Predictions with confidence below tau are reviewed by a person, the rest are automated.
The core gives the exact curve (:attr:`ModelResult.curve`); this module reads it at a
threshold, draws it (the paper's Fig. 7 and the trade-off curve), counts the errors that
still escape review by kind, handles one threshold per entity type, and draws a
reliability diagram.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kieval_core import ModelResult

from .style import ACCURACY_COLOR, AUTOMATION_COLOR, KINDS, NEUTRAL_COLOR, base_layout
from .text import plain

_CELL = ["doc_id", "group_type", "gt_group", "pred_group", "entity_type"]


def tau_text(tau: float) -> str:
    """A threshold for people; above 1 every prediction is reviewed, also those that came
    without a confidence (they count as 1.0).

    >>> tau_text(0.66754), tau_text(1.0000000000000002)
    ('0.6675', '> 1 (review everything)')
    """
    return "> 1 (review everything)" if tau > 1.0 else f"{tau:.4f}"


def point_at(curve: pd.DataFrame, tau: float) -> pd.Series:
    """The curve's state at any threshold: the first curve point with threshold >= tau.

    The curve is exact at every distinct confidence; between two of them nothing changes,
    since a prediction is reviewed when its confidence is below tau.

    >>> curve = pd.DataFrame({"threshold": [0.0, 0.3, 0.6], "auto_rate": [1.0, 0.5, 0.0],
    ...                       "kieval_aligned": [0.5, 0.7, 0.9], "reviewed": [0, 1, 2]})
    >>> float(point_at(curve, 0.45)["kieval_aligned"])
    0.9
    >>> float(point_at(curve, 0.3)["auto_rate"])
    0.5
    """
    thresholds = curve["threshold"].to_numpy()
    i = int(np.searchsorted(thresholds, tau, side="left"))
    return curve.iloc[min(i, len(curve) - 1)]


def thin_curve(curve: pd.DataFrame, max_points: int = 1500) -> pd.DataFrame:
    """At most ``max_points`` curve points for drawing (first and last kept)."""
    if len(curve) <= max_points:
        return curve.reset_index(drop=True)
    keep = np.unique(np.linspace(0, len(curve) - 1, max_points).round().astype(int))
    return curve.iloc[keep].reset_index(drop=True)


def threshold_from_selection(selection: Mapping | None) -> float | None:
    """The threshold of the point clicked on an automation figure (None if none).

    Every clickable point of :func:`threshold_figure` and :func:`tradeoff_figure` carries
    its threshold as ``customdata[0]`` (the browser sends a row as ``{"0": ..., "1": ...}``).

    >>> threshold_from_selection({"points": [{"x": 0.9, "customdata": [0.61, 3]}]})
    0.61
    >>> threshold_from_selection({"points": [{"customdata": {"0": 0.7, "1": 5}}]})
    0.7
    >>> threshold_from_selection({"points": []}) is None
    True
    """
    points = (selection or {}).get("points") or []
    for point in points:
        value = first_custom_value(point.get("customdata"))
        if value is not None:
            return float(value)
    return None


def first_custom_value(data):
    """``customdata[0]`` of a selected point: a list, a ``{"0": ...}`` object (how the
    browser serialises a row of a 2-D customdata array) or a scalar."""
    if isinstance(data, (list, tuple)):
        return data[0] if data else None
    if isinstance(data, dict):
        return data.get("0", data.get(0))
    return data


def threshold_figure(
    curve: pd.DataFrame, tau: float, recommended: float | None, target: float
) -> go.Figure:
    """The paper's Fig. 7: KIEval_Aligned^tau and the automation rate against tau."""
    shown = thin_curve(curve)
    custom = np.column_stack([shown["threshold"], shown["reviewed"]])
    fig = go.Figure()
    for column, name, color in (
        ("kieval_aligned", "KIEval_Aligned^τ (accuracy after review)", ACCURACY_COLOR),
        ("auto_rate", "automation rate", AUTOMATION_COLOR),
    ):
        fig.add_trace(
            go.Scatter(
                x=shown["threshold"],
                y=shown[column],
                mode="lines+markers",
                name=name,
                line={"color": color, "width": 2.5, "shape": "vh"},
                marker={"size": 4, "color": color},
                customdata=custom,
                hovertemplate="τ = %{customdata[0]:.4f}<br>" + name + ": %{y:.2%}<br>"
                "%{customdata[1]:,} predictions reviewed<extra></extra>",
            )
        )
    fig.add_hline(
        y=target,
        line={"dash": "dot", "color": NEUTRAL_COLOR},
        annotation_text=f"target {target:.0%}",
        annotation_position="bottom left",
    )
    fig.add_vline(
        x=tau,
        line={"color": "#333", "width": 1.5},
        annotation_text=f"τ = {tau_text(tau)}",
        annotation_position="top",
    )
    if recommended is not None:
        fig.add_vline(
            x=recommended,
            line={"dash": "dash", "color": ACCURACY_COLOR, "width": 1},
            annotation_text="recommended",
            annotation_position="bottom right",
        )
    fig.update_layout(
        **base_layout(height=400),
        xaxis={"title": "confidence threshold τ", "range": [0, 1.01]},
        yaxis={"title": "rate", "tickformat": ".0%", "range": [0, 1.03]},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def tradeoff_figure(
    curve: pd.DataFrame, tau: float, recommended: float | None, target: float
) -> go.Figure:
    """Automation rate against accuracy after review; every point is one threshold."""
    shown = thin_curve(curve)
    custom = np.column_stack([shown["threshold"], shown["reviewed"]])
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=shown["auto_rate"],
            y=shown["kieval_aligned"],
            mode="lines+markers",
            name="thresholds",
            line={"color": ACCURACY_COLOR, "width": 2},
            marker={"size": 5, "color": ACCURACY_COLOR},
            customdata=custom,
            hovertemplate="τ = %{customdata[0]:.4f}<br>automation %{x:.2%}<br>accuracy %{y:.2%}<br>"
            "%{customdata[1]:,} reviewed<extra></extra>",
        )
    )
    now = point_at(curve, tau)
    fig.add_trace(
        go.Scatter(
            x=[now["auto_rate"]],
            y=[now["kieval_aligned"]],
            mode="markers",
            name=f"τ = {tau_text(tau)}",
            marker={"size": 15, "color": "#333", "symbol": "circle-open", "line": {"width": 3}},
            customdata=[[tau, int(now["reviewed"])]],
            hoverinfo="skip",
        )
    )
    if recommended is not None:
        rec = point_at(curve, recommended)
        fig.add_trace(
            go.Scatter(
                x=[rec["auto_rate"]],
                y=[rec["kieval_aligned"]],
                mode="markers",
                name="recommended",
                marker={"size": 15, "color": AUTOMATION_COLOR, "symbol": "star"},
                customdata=[[recommended, int(rec["reviewed"])]],
                hovertemplate="recommended τ = %{customdata[0]:.4f}<extra></extra>",
            )
        )
    fig.add_hline(
        y=target,
        line={"dash": "dot", "color": NEUTRAL_COLOR},
        annotation_text=f"target {target:.0%}",
        annotation_position="bottom left",
    )
    low = float(min(curve["kieval_aligned"].min(), target))
    fig.update_layout(
        **base_layout(height=400),
        xaxis={
            "title": "automation rate (share of predictions not reviewed)",
            "tickformat": ".0%",
            "range": [-0.02, 1.02],
        },
        yaxis={
            "title": "accuracy after review (KIEval_Aligned^τ)",
            "tickformat": ".0%",
            "range": [max(0.0, low - 0.05), 1.01],
        },
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def _review_mask(pred: pd.DataFrame, tau: float | Mapping[str, float]) -> np.ndarray:
    """Which predictions a person reviews: confidence (missing = 1.0) below the threshold."""
    conf = pred["confidence"].fillna(1.0).to_numpy(np.float64)
    if isinstance(tau, Mapping):
        limits = pred["entity_type"].map(dict(tau)).fillna(0.0).to_numpy(np.float64)
    else:
        limits = np.full(len(conf), float(tau))
    return conf < limits


def escaping_errors(model: ModelResult, tau: float | Mapping[str, float]) -> pd.DataFrame:
    """Per entity type, the corrections still needed after review at ``tau`` (one threshold,
    or one per entity type; types missing from a mapping are not reviewed).

    In each cell (GT group, predicted group, entity type) with ``fp`` wrong and ``fn``
    missing values, reviewing ``r`` of the wrong ones fixes ``min(r, fn)`` by substitution
    and deletes the rest (SPEC 4). What remains: ``u = fp - r`` unreviewed wrong values and
    ``g = fn - min(r, fn)`` missing ones, i.e. ``min(u, g)`` substitutions, ``u - min(u, g)``
    deletions and ``g - min(u, g)`` additions (additions never shrink).
    Columns: ``entity_type, predictions, reviewed, fixed, substitution, addition,
    deletion, errors, tp_after``.
    """
    pred = model.counted.pred_entities
    reviewed = _review_mask(pred, tau)
    wrong = (pred["status"] != "correct").to_numpy()
    keys = pd.DataFrame(
        {
            "doc_id": pred["doc_id"].to_numpy(object),
            "group_type": pred["group_type"].to_numpy(object),
            "gt_group": pred["paired_group"].to_numpy(),
            "pred_group": pred["group"].to_numpy(),
            "entity_type": pred["entity_type"].to_numpy(object),
        }
    )
    r = (
        pd.Series((reviewed & wrong).astype(np.int64))
        .groupby([keys[c] for c in _CELL], sort=False)
        .sum()
    )
    cells = model.counted.cells
    r = r.reindex(pd.MultiIndex.from_frame(cells[_CELL]), fill_value=0).to_numpy(np.int64)
    fp, fn = cells["fp"].to_numpy(np.int64), cells["fn"].to_numpy(np.int64)
    fixed = np.minimum(r, fn)
    u, g = fp - r, fn - fixed
    subs = np.minimum(u, g)
    per_cell = pd.DataFrame(
        {
            "entity_type": cells["entity_type"].to_numpy(object),
            "fixed": fixed,
            "substitution": subs,
            "addition": g - subs,
            "deletion": u - subs,
            "tp_after": cells["tp"].to_numpy(np.int64) + fixed,
        }
    )
    table = per_cell.groupby("entity_type", sort=True).sum()
    counts = pd.DataFrame(
        {"entity_type": pred["entity_type"].to_numpy(object), "reviewed": reviewed}
    )
    per_type = counts.groupby("entity_type").agg(
        predictions=("reviewed", "size"), reviewed=("reviewed", "sum")
    )
    table = table.join(per_type, how="left").fillna(0)
    table["errors"] = table[list(KINDS)].sum(axis=1)
    columns = ["predictions", "reviewed", "fixed", *KINDS, "errors", "tp_after"]
    return table[columns].astype(np.int64).reset_index()


def review_summary(model: ModelResult, tau: float | Mapping[str, float]) -> dict:
    """Totals at ``tau``: reviews, automation rate, accuracy after review, errors by kind."""
    table = escaping_errors(model, tau)
    n = int(table["predictions"].sum())
    reviewed = int(table["reviewed"].sum())
    errors = int(table["errors"].sum())
    tp_after = int(table["tp_after"].sum())
    total = tp_after + errors
    return {
        "predictions": n,
        "reviewed": reviewed,
        "auto_rate": 1.0 - reviewed / n if n else 1.0,
        "kieval_aligned": tp_after / total if total else 1.0,
        "reviews_per_1000_documents": 1000.0 * reviewed / model.n_documents
        if model.n_documents
        else 0.0,
        **{kind: int(table[kind].sum()) for kind in KINDS},
        "errors": errors,
    }


def _type_steps(effects: pd.DataFrame, tp: int, addition: int, target: float):
    """One entity type's thresholds with, for each, the reviews it costs and its slack
    ``s = TP'(1 - A) - A * (wrong left + additions)``; the whole reaches accuracy A
    exactly when the slacks of all types sum to >= 0."""
    conf = np.sort(effects["confidence"].to_numpy(np.float64))
    order = np.argsort(effects["confidence"].to_numpy(np.float64), kind="stable")
    cum_fp = np.concatenate([[0], np.cumsum(effects["fp"].to_numpy()[order])])
    cum_gain = np.concatenate([[0], np.cumsum(effects["gain"].to_numpy()[order])])
    top = conf[-1] if len(conf) else 0.0
    thresholds = np.unique(np.concatenate([[0.0], conf, [np.nextafter(top, np.inf)]]))
    reviewed = np.searchsorted(conf, thresholds, side="left")
    slack = (tp + cum_gain[reviewed]) * (1 - target) - target * (
        cum_fp[-1] - cum_fp[reviewed] + addition
    )
    return thresholds, reviewed, slack


def _upper_hull(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Indices of the upper concave hull of points sorted by x, starting at the first."""
    hull: list[int] = []
    for i in range(len(x)):
        if hull and x[i] == x[hull[-1]]:
            if y[i] <= y[hull[-1]]:
                continue
            hull.pop()
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (y[b] - y[a]) * (x[i] - x[a]) <= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return hull


def per_field_thresholds(model: ModelResult, target: float) -> pd.DataFrame:
    """One threshold per entity type, chosen to reach ``target`` overall with few reviews.

    Overall accuracy after review is a ratio of sums over entity types, so the types can
    be traded against each other: review first where a review buys the most accuracy.
    A greedy pass over each type's concave frontier (reviews -> accuracy slack) raises one
    type's threshold at a time until the target is met (the classic greedy for this
    multiple-choice knapsack). If that needs more reviews than the single threshold of
    :meth:`ModelResult.recommend`, every type gets the single threshold instead.
    Columns: ``entity_type, predictions, threshold, reviewed, auto_rate, kieval_aligned``
    (the last two for that type alone).
    """
    effects = model.review_effects
    per_type = model.by_entity_type.set_index("entity_type")
    frontier = {}
    for entity_type, part in effects.groupby("entity_type", sort=True, observed=True):
        row = per_type.loc[entity_type]
        thresholds, reviewed, slack = _type_steps(
            part, int(row["tp"]), int(row["addition"]), target
        )
        hull = _upper_hull(reviewed.astype(np.float64), slack)
        frontier[entity_type] = (thresholds, reviewed, slack, hull)
    # types without predictions still count in the slack (their misses are additions)
    fixed_slack = sum(
        -target * int(per_type.loc[t, "addition"]) + (1 - target) * int(per_type.loc[t, "tp"])
        for t in per_type.index
        if t not in frontier
    )
    step = dict.fromkeys(frontier, 0)
    total = fixed_slack + sum(f[2][f[3][0]] for f in frontier.values())
    while total < -1e-9:
        best, best_rate = None, -np.inf
        for entity_type, (_, reviewed, slack, hull) in frontier.items():
            k = step[entity_type]
            if k + 1 < len(hull):
                a, b = hull[k], hull[k + 1]
                rate = (slack[b] - slack[a]) / max(reviewed[b] - reviewed[a], 1)
                if rate > best_rate and slack[b] > slack[a]:
                    best, best_rate = entity_type, rate
        if best is None:
            break
        _, reviewed, slack, hull = frontier[best]
        total += slack[hull[step[best] + 1]] - slack[hull[step[best]]]
        step[best] += 1
    chosen = {t: float(f[0][f[3][step[t]]]) for t, f in frontier.items()}
    single = model.recommend(target)
    if single.reachable:
        greedy_reviews = sum(int(f[1][f[3][step[t]]]) for t, f in frontier.items())
        if total < -1e-9 or greedy_reviews > int(single.reviews or 0):
            chosen = dict.fromkeys(frontier, float(single.threshold))
    rows = []
    for entity_type, (_, reviewed, _, _) in frontier.items():
        curve = model.curves_by_entity_type
        curve = curve[curve["entity_type"] == entity_type].reset_index(drop=True)
        at = point_at(curve, chosen[entity_type])
        rows.append(
            {
                "entity_type": entity_type,
                "predictions": int(reviewed[-1]),
                "threshold": chosen[entity_type],
                "reviewed": int(at["reviewed"]),
                "auto_rate": float(at["auto_rate"]),
                "kieval_aligned": float(at["kieval_aligned"]),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "entity_type",
            "predictions",
            "threshold",
            "reviewed",
            "auto_rate",
            "kieval_aligned",
        ],
    )


def reliability(model: ModelResult, bins: int = 10) -> pd.DataFrame:
    """Accuracy by confidence bin: share of predictions that are correct, per equal-width
    bin of confidence (predictions without a confidence are left out).
    Columns: ``bin, low, high, predictions, mean_confidence, accuracy, gap``."""
    pred = model.counted.pred_entities
    pred = pred[pred["confidence"].notna()]
    edges = np.linspace(0.0, 1.0, bins + 1)
    conf = pred["confidence"].to_numpy(np.float64)
    index = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, bins - 1)
    correct = (pred["status"] == "correct").to_numpy()
    frame = pd.DataFrame({"bin": index, "confidence": conf, "correct": correct})
    grouped = frame.groupby("bin").agg(
        predictions=("correct", "size"),
        mean_confidence=("confidence", "mean"),
        accuracy=("correct", "mean"),
    )
    grouped = grouped.reindex(range(bins))
    grouped["predictions"] = grouped["predictions"].fillna(0).astype(np.int64)
    grouped.insert(0, "low", edges[:-1])
    grouped.insert(1, "high", edges[1:])
    grouped["gap"] = grouped["accuracy"] - grouped["mean_confidence"]
    return grouped.reset_index()


def expected_calibration_error(table: pd.DataFrame) -> float | None:
    """Weighted mean |accuracy - mean confidence| over the bins (None without confidences)."""
    n = table["predictions"].sum()
    if not n:
        return None
    filled = table[table["predictions"] > 0]
    return float((filled["predictions"] * filled["gap"].abs()).sum() / n)


def reliability_figure(table: pd.DataFrame) -> go.Figure:
    """Bars: accuracy per confidence bin; diagonal: perfect calibration; text: bin sizes."""
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
        name="share correct",
        marker_color=ACCURACY_COLOR,
        opacity=0.85,
        text=[f"{n:,}" if n else "" for n in table["predictions"]],
        textposition="outside",
        customdata=np.column_stack(
            [table["low"], table["high"], table["predictions"], table["mean_confidence"].fillna(0)]
        ),
        hovertemplate="confidence %{customdata[0]:.1f}-%{customdata[1]:.1f}<br>"
        "%{customdata[2]:,} predictions<br>mean confidence %{customdata[3]:.2f}<br>"
        "correct %{y:.1%}<extra></extra>",
    )
    fig.add_trace(
        go.Scatter(
            x=table["mean_confidence"],
            y=table["accuracy"],
            mode="markers",
            name="mean confidence of the bin",
            marker={"color": AUTOMATION_COLOR, "size": 9},
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        **base_layout(height=380),
        xaxis={"title": "confidence", "range": [0, 1], "dtick": 0.1},
        yaxis={
            "title": "share of predictions that are correct",
            "tickformat": ".0%",
            "range": [0, 1.12],
        },
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    return fig


def field_table_label(entity_type: str) -> str:
    """Entity types are file data: plain text for plotly."""
    return plain(entity_type, 40)
