"""Comparing two models on the same documents: are the differences real?

A paired bootstrap resamples documents with replacement, applies the same resample to
both models, and recomputes every metric from the resampled sums of the per-document
counts with the same :func:`~kieval_core.result.tally.figures` as the corpus figures (KIEval
family), or as the mean of the resampled per-document scores (ANLS*, nTED). No metric
formula is restated here: each registry metric names its column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..review.uncertainty import resample_weights
from ..validation import check_choice, check_instance, check_int, check_share
from .registry import METRICS, Metric
from .results import ModelResult
from .tally import figures

COLUMNS = ["key", "metric", "A", "B", "delta", "low", "high", "higher_is_better", "count", "verdict"]


def comparable_metrics(a: ModelResult, b: ModelResult) -> list[Metric]:
    """Registry metrics both models hold that can be resampled by document."""
    out = []
    for metric in METRICS:
        if metric.column is None or not (metric.computed(a) and metric.computed(b)):
            continue
        if metric.get(a) is None or metric.get(b) is None:
            continue  # e.g. group figures without GT groups
        out.append(metric)
    return out


def paired_bootstrap(a: ModelResult, b: ModelResult, resamples: int = 1000, seed: int = 0,
                     level: float = 0.95, chunk: int = 200) -> pd.DataFrame:
    """Differences B - A with percentile bootstrap intervals, one row per metric.

    Columns ``key, metric, A, B, delta, low, high, higher_is_better, count, verdict``
    (``count``: the metric counts things, so A, B and the interval are numbers of them, not
    fractions; verdict: ``B better``, ``A better`` or ``no clear difference`` when the
    interval holds 0).
    """
    check_instance("a", a, ModelResult)
    check_instance("b", b, ModelResult)
    check_int("resamples", resamples, minimum=1)
    check_int("seed", seed)
    check_share("level", level, open_interval=True)
    check_int("chunk", chunk, minimum=1)
    metrics = comparable_metrics(a, b)
    ids = a.tally.documents.index
    counts_a = a.tally.documents
    counts_b = b.tally.documents.reindex(ids, fill_value=0)
    means = [m for m in metrics if m.family != "kieval"]
    docs_a = a.documents.set_index("doc_id").reindex(ids)
    docs_b = b.documents.set_index("doc_id").reindex(ids)
    scores_a = docs_a[[m.column for m in means]].to_numpy(np.float64)
    scores_b = docs_b[[m.column for m in means]].to_numpy(np.float64)
    rng = np.random.default_rng(seed)
    deltas: list[np.ndarray] = []
    for start in range(0, resamples, chunk):
        weights = resample_weights(rng, len(ids), min(chunk, resamples - start))
        fig_a = figures(pd.DataFrame(weights @ counts_a.to_numpy(np.float64), columns=counts_a.columns))
        fig_b = figures(pd.DataFrame(weights @ counts_b.to_numpy(np.float64), columns=counts_b.columns))
        per_metric = []
        for metric in metrics:
            if metric.family == "kieval":
                per_metric.append(fig_b[metric.column].to_numpy() - fig_a[metric.column].to_numpy())
            else:
                j = means.index(metric)
                total = weights.sum(axis=1)
                per_metric.append((weights @ scores_b[:, j] - weights @ scores_a[:, j]) / total)
        deltas.append(np.column_stack(per_metric) if per_metric else np.zeros((len(weights), 0)))
    sampled = np.concatenate(deltas) if deltas else np.zeros((0, len(metrics)))
    alpha = (1 - level) / 2
    rows = []
    for j, metric in enumerate(metrics):
        low, high = (float(q) for q in np.quantile(sampled[:, j], [alpha, 1 - alpha]))
        value_a, value_b = float(metric.get(a)), float(metric.get(b))
        if low > 0 or high < 0:
            verdict = "B better" if (low > 0) == metric.higher_is_better else "A better"
        else:
            verdict = "no clear difference"
        rows.append({"key": metric.key, "metric": metric.label, "A": value_a, "B": value_b,
                     "delta": value_b - value_a, "low": low, "high": high,
                     "higher_is_better": metric.higher_is_better, "count": metric.count,
                     "verdict": verdict})
    return pd.DataFrame(rows, columns=COLUMNS)


def per_document(a: ModelResult, b: ModelResult, column: str) -> pd.DataFrame:
    """``doc_id, A, B, difference, A corrections, B corrections`` of one per-document figure."""
    check_instance("a", a, ModelResult)
    check_instance("b", b, ModelResult)
    shared = [c for c in a.documents.columns if c in set(b.documents.columns) and c != "doc_id"]
    check_choice("column", column, shared)
    docs_a = a.documents.set_index("doc_id")
    docs_b = b.documents.set_index("doc_id").reindex(docs_a.index)
    frame = pd.DataFrame({"A": docs_a[column], "B": docs_b[column], "A corrections": docs_a["corrections"],
                          "B corrections": docs_b["corrections"]})
    frame["difference"] = frame["B"] - frame["A"]
    return frame.rename_axis("doc_id").reset_index()


def disagreements(a: ModelResult, b: ModelResult, column: str = "aligned", n: int = 20) -> pd.DataFrame:
    """The documents where two models differ most on ``column`` (then on corrections)."""
    check_int("n", n)
    frame = per_document(a, b, column)
    size = frame["difference"].abs()
    corrections = (frame["B corrections"] - frame["A corrections"]).abs()
    frame = frame.assign(_size=size, _corrections=corrections)
    frame = frame[(frame["_size"] > 0) | (frame["_corrections"] > 0)]
    frame = frame.sort_values(["_size", "_corrections", "doc_id"], ascending=[False, False, True],
                              kind="stable")
    return frame.drop(columns=["_size", "_corrections"]).head(n).reset_index(drop=True)
