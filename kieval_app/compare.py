"""Comparing two models on the same documents: paired bootstrap confidence intervals of
metric differences, a per-document scatter, and the documents where they disagree most.

The bootstrap resamples documents (with replacement) once, applies the same resample to
both models (paired), and recomputes micro metrics from per-document count arrays: one
matrix product per chunk of resamples, no Python loop over resamples.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kieval_core import ModelResult
from kieval_core import registry as metric_registry
from kieval_core.scores import aligned_score, precision_recall_f1

from .automation import first_custom_value
from .style import ACCURACY_COLOR, NEUTRAL_COLOR, base_layout
from .text import plain

#: Per-document counts summed by the bootstrap ("documents" is 1 per document).
COUNT_COLUMNS = (
    "tp",
    "fp",
    "fn",
    "errors",
    "group_tp",
    "group_fp",
    "group_fn",
    "pairs",
    "flat_tp",
    "flat_fp",
    "flat_fn",
    "documents",
)

Sums = dict[str, np.ndarray]
#: Registry key -> micro metric from summed counts (arrays: one value per resample).
BOOTSTRAP_METRICS: dict[str, Callable[[Sums], np.ndarray]] = {
    "kieval.entity.f1": lambda s: precision_recall_f1(s["tp"], s["fp"], s["fn"])[2],
    "kieval.entity.precision": lambda s: precision_recall_f1(s["tp"], s["fp"], s["fn"])[0],
    "kieval.entity.recall": lambda s: precision_recall_f1(s["tp"], s["fp"], s["fn"])[1],
    "kieval.group.f1": lambda s: precision_recall_f1(s["group_tp"], s["group_fp"], s["group_fn"])[
        2
    ],
    "kieval.aligned": lambda s: aligned_score(s["tp"], s["errors"]),
    "kieval.group_aligned": lambda s: aligned_score(s["group_tp"], s["pairs"] - s["group_tp"]),
    "entity_f1.f1": lambda s: precision_recall_f1(s["flat_tp"], s["flat_fp"], s["flat_fn"])[2],
}
#: Peer metrics that are means of per-document scores: registry key -> (family, column of
#: the family's per-document table). Their bootstrap mean is the resampled sum / documents.
MEAN_METRICS: dict[str, tuple[str, str]] = {
    "anls_star": ("anls_star", "anls_star"),
    "nted": ("nted", "nted"),
}

#: Per-document figures of the KIEval documents table offered in the scatter.
DOCUMENT_METRICS = {
    "KIEval_Aligned": "aligned",
    "KIEval entity F1": "f1",
    "KIEval group F1": "group_f1",
    "flat entity F1": "flat_f1",
    "corrections": "errors",
}


def _peer_documents(model: ModelResult, key: str) -> pd.Series | None:
    """A mean metric's per-document scores, when its family was computed."""
    family, column = MEAN_METRICS[key]
    figures = model.peer.get(family)
    documents = getattr(figures, "documents", None)
    if documents is None or column not in documents.columns:
        return None
    return documents[column]


def document_metrics(model: ModelResult) -> dict[str, str]:
    """Per-document figures available for this model: label -> column of
    :func:`document_values` (KIEval ones, then peer means that were computed)."""
    labels = dict(DOCUMENT_METRICS)
    if model.group is None:
        del labels["KIEval group F1"]
    registry = {m.key: m for m in metric_registry.METRICS}
    for key in MEAN_METRICS:
        if key in registry and _peer_documents(model, key) is not None:
            labels[registry[key].label] = f"peer:{key}"
    return labels


def document_values(model: ModelResult, column: str) -> pd.Series:
    """One per-document figure indexed by doc_id (``peer:<key>`` for a peer mean)."""
    if column.startswith("peer:"):
        values = _peer_documents(model, column.removeprefix("peer:"))
        ids = model.documents["doc_id"]
        return values.reindex(ids).set_axis(ids) if values is not None else pd.Series(dtype=float)
    return model.documents.set_index("doc_id")[column]


def document_counts(model: ModelResult) -> pd.DataFrame:
    """Per GT document (in GT order) the counts every bootstrapped metric is made of, plus
    ``mean:<key>`` columns of per-document peer scores."""
    docs = model.documents.set_index("doc_id")
    pairs = model.matching.groupby("doc_id", observed=True).size()
    counts = docs[[c for c in COUNT_COLUMNS if c not in ("pairs", "documents")]].astype(np.float64)
    counts["pairs"] = pairs.reindex(counts.index, fill_value=0).to_numpy(np.float64)
    counts["documents"] = 1.0
    counts = counts[list(COUNT_COLUMNS)]
    for key in MEAN_METRICS:
        values = _peer_documents(model, key)
        if values is not None:
            counts[f"mean:{key}"] = values.reindex(counts.index).to_numpy(np.float64)
    return counts


def _sums(matrix: np.ndarray, columns) -> Sums:
    return {c: matrix[..., i] for i, c in enumerate(columns)}


def resample_weights(n_docs: int, n_resamples: int, rng: np.random.Generator, chunk: int = 200):
    """Yield ``(chunk, n_docs)`` matrices: how often each document is drawn per resample."""
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        index = rng.integers(0, n_docs, size=(size, n_docs))
        flat = index + (np.arange(size)[:, None] * n_docs)
        yield np.bincount(flat.ravel(), minlength=size * n_docs).reshape(size, n_docs)


def bootstrap_sums(
    counts_a: np.ndarray, counts_b: np.ndarray, n_resamples: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Summed counts of both models on the same document resamples: two
    ``(n_resamples, n_counts)`` arrays."""
    rng = np.random.default_rng(seed)
    n = counts_a.shape[0]
    parts_a, parts_b = [], []
    for weights in resample_weights(n, n_resamples, rng):
        parts_a.append(weights @ counts_a)
        parts_b.append(weights @ counts_b)
    return np.concatenate(parts_a), np.concatenate(parts_b)


def _metric_functions(columns) -> dict[str, Callable[[Sums], np.ndarray]]:
    functions = dict(BOOTSTRAP_METRICS)
    for key in MEAN_METRICS:
        if f"mean:{key}" in columns:
            functions[key] = lambda s, c=f"mean:{key}": s[c] / s["documents"]
    return functions


def paired_bootstrap(
    model_a: ModelResult,
    model_b: ModelResult,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """Metric differences B - A with percentile bootstrap confidence intervals.

    KIEval metrics are recomputed as micro averages of the resampled counts; ANLS* and
    nTED (means over documents) as means of the resampled per-document scores.
    Columns: ``key, metric, A, B, delta, low, high, higher_is_better, verdict``.
    """
    ca = document_counts(model_a)
    cb = document_counts(model_b).reindex(ca.index, fill_value=0)
    columns = [c for c in ca.columns if c in cb.columns]
    ca, cb = ca[columns].fillna(0.0), cb[columns].fillna(0.0)
    full_a = _sums(ca.to_numpy().sum(axis=0), columns)
    full_b = _sums(cb.to_numpy().sum(axis=0), columns)
    sums_a, sums_b = bootstrap_sums(ca.to_numpy(), cb.to_numpy(), n_resamples, seed)
    sa, sb = _sums(sums_a, columns), _sums(sums_b, columns)
    labels = {m.key: m for m in metric_registry.METRICS}
    has_groups = model_a.group is not None
    alpha = (1 - level) / 2
    rows = []
    for key, metric in _metric_functions(columns).items():
        if key not in labels or (key.startswith("kieval.group") and not has_groups):
            continue
        delta = np.asarray(metric(sb)) - np.asarray(metric(sa))
        low, high = np.quantile(delta, [alpha, 1 - alpha])
        a, b = float(metric(full_a)), float(metric(full_b))
        better = labels[key].higher_is_better
        if low > 0 or high < 0:
            b_wins = (low > 0) == better
            verdict = "B better" if b_wins else "A better"
        else:
            verdict = "no clear difference"
        rows.append(
            {
                "key": key,
                "metric": labels[key].label,
                "A": a,
                "B": b,
                "delta": b - a,
                "low": float(low),
                "high": float(high),
                "higher_is_better": better,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


def deltas_display(table: pd.DataFrame) -> pd.DataFrame:
    """The bootstrap table as text for reading: scores in %, the interval in points."""

    def points(x: float) -> str:
        return f"{100 * x:+.2f}"

    return pd.DataFrame(
        {
            "metric": table["metric"],
            "A": [f"{100 * v:.2f}%" for v in table["A"]],
            "B": [f"{100 * v:.2f}%" for v in table["B"]],
            "B - A (points)": [points(v) for v in table["delta"]],
            "95% CI (points)": [
                f"[{points(lo)}, {points(hi)}]"
                for lo, hi in zip(table["low"], table["high"], strict=True)
            ],
            "verdict": table["verdict"],
        }
    )


def deltas_figure(table: pd.DataFrame, name_a: str, name_b: str) -> go.Figure:
    """Forest plot: each metric's difference B - A with its confidence interval."""
    fig = go.Figure()
    colors = [
        ACCURACY_COLOR if v != "no clear difference" else NEUTRAL_COLOR for v in table["verdict"]
    ]
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
            customdata=np.column_stack([table["low"], table["high"], table["verdict"]]),
            hovertemplate="%{y}<br>B - A = %{x:+.2%}<br>95% CI [%{customdata[0]:+.2%}, "
            "%{customdata[1]:+.2%}]<br>%{customdata[2]}<extra></extra>",
            showlegend=False,
        )
    )
    fig.add_vline(x=0, line={"color": "#333", "width": 1})
    fig.update_layout(
        **base_layout(height=90 + 38 * len(table)),
        title={"text": f"{plain(name_b, 30)} minus {plain(name_a, 30)}", "font": {"size": 14}},
        xaxis={"title": "difference (percentage points)", "tickformat": "+.0%", "zeroline": False},
        yaxis={"autorange": "reversed"},
    )
    return fig


def per_document(model_a: ModelResult, model_b: ModelResult, column: str) -> pd.DataFrame:
    """``doc_id, A, B, difference`` of one per-document figure, plus both error counts."""
    a = model_a.documents.set_index("doc_id")
    b = model_b.documents.set_index("doc_id").reindex(a.index)
    frame = pd.DataFrame(
        {
            "A": document_values(model_a, column).reindex(a.index),
            "B": document_values(model_b, column).reindex(a.index),
            "A errors": a["errors"],
            "B errors": b["errors"],
        }
    )
    frame["difference"] = frame["B"] - frame["A"]
    frame.index.name = "doc_id"
    return frame.reset_index()


def disagreements(
    model_a: ModelResult, model_b: ModelResult, column: str = "aligned", n: int = 20
) -> pd.DataFrame:
    """The documents where the two models differ most on ``column`` (then on errors)."""
    frame = per_document(model_a, model_b, column)
    frame["_size"] = frame["difference"].abs()
    frame["_errors"] = (frame["B errors"] - frame["A errors"]).abs()
    frame = frame[(frame["_size"] > 0) | (frame["_errors"] > 0)]
    frame = frame.sort_values(
        ["_size", "_errors", "doc_id"], ascending=[False, False, True], kind="stable"
    )
    return frame.drop(columns=["_size", "_errors"]).head(n).reset_index(drop=True)


def scatter_figure(
    model_a: ModelResult, model_b: ModelResult, column: str, label: str, name_a: str, name_b: str
) -> go.Figure:
    """One point per document: A's figure against B's; above the diagonal B does better
    (for a score). Each point carries its raw doc id in ``customdata[0]`` for navigation."""
    frame = per_document(model_a, model_b, column)
    hover = [plain(d, 60) for d in frame["doc_id"]]
    fig = go.Figure()
    values = pd.concat([frame["A"], frame["B"]]).dropna()
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
    rng = np.random.default_rng(0)
    span = (hi - lo) or 1.0
    jitter = rng.uniform(-0.006, 0.006, size=(2, len(frame))) * span
    fig.add_trace(
        go.Scattergl(
            x=frame["A"] + jitter[0],
            y=frame["B"] + jitter[1],
            mode="markers",
            marker={
                "size": 8,
                "color": frame["difference"],
                "colorscale": "RdBu",
                "cmid": 0,
                "opacity": 0.75,
                "line": {"width": 0.5, "color": "#333"},
                "colorbar": {"title": "B - A", "thickness": 12},
            },
            customdata=np.column_stack([frame["doc_id"], hover, frame["A"], frame["B"]]),
            hovertemplate="%{customdata[1]}<br>"
            + plain(name_a, 30)
            + ": %{customdata[2]:.3f}<br>"
            + plain(name_b, 30)
            + ": %{customdata[3]:.3f}<extra></extra>",
            showlegend=False,
        )
    )
    is_count = column == "errors"
    fmt = {} if is_count else {"tickformat": ".0%"}
    fig.update_layout(
        **base_layout(height=460),
        xaxis={"title": f"{plain(name_a, 30)}: {label}", **fmt},
        yaxis={"title": f"{plain(name_b, 30)}: {label}", **fmt},
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def doc_from_selection(selection) -> str | None:
    """The raw doc id of the point clicked in :func:`scatter_figure` (None if none).

    >>> doc_from_selection({"points": [{"customdata": ["d1", "d1", 0.5, 0.7]}]})
    'd1'
    >>> doc_from_selection({"points": [{"customdata": {"0": "d2", "1": "d2"}}]})
    'd2'
    """
    for point in (selection or {}).get("points") or []:
        value = first_custom_value(point.get("customdata"))
        if value is not None:
            return str(value)
    return None
