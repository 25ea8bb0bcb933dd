"""Can the confidences be trusted? Calibration of a model's confidences, overall and per
entity type: a reliability table, the expected calibration error (ECE), the Brier score,
the AUROC of confidence for right against wrong predictions, and coverage (the share of
predictions that carry a confidence at all).

Only predictions with a confidence enter the scores; "right" means the prediction is a
TP of the KIEval matching.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exceptions import KievalOptionError
from ..validation import check_choice, check_columns, check_int
from .automation import ReviewModel

SUMMARY_COLUMNS = ["entity_type", "predictions", "with_confidence", "coverage", "accuracy",
                   "mean_confidence", "ece", "brier", "auroc"]


def _checked(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    """Confidences and right/wrong flags, one of each per prediction."""
    confidence, correct = np.asarray(confidence), np.asarray(correct)
    if confidence.ndim != 1 or confidence.shape != correct.shape:
        msg = (f"confidence and correct must be one-dimensional, one value per prediction each, got "
               f"shapes {confidence.shape} and {correct.shape}")
        raise KievalOptionError(msg)
    return confidence.astype(np.float64), correct.astype(bool)


def reliability(confidence: np.ndarray, correct: np.ndarray, bins: int = 10) -> pd.DataFrame:
    """Share of right predictions per equal-width confidence bin (the last bin includes 1).

    Columns ``bin, low, high, predictions, mean_confidence, accuracy, gap`` (gap =
    accuracy - mean confidence; empty bins have NaN figures).

    >>> reliability(np.array([0.05, 0.95, 0.97]), np.array([False, True, False]), bins=2)[
    ...     ["predictions", "accuracy"]].values.tolist()
    [[1.0, 0.0], [2.0, 0.5]]
    """
    check_int("bins", bins, minimum=1)
    confidence, correct = _checked(confidence, correct)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(index, weights=confidence, minlength=bins) / count
        accuracy = np.bincount(index, weights=correct.astype(np.float64), minlength=bins) / count
    return pd.DataFrame({
        "bin": np.arange(bins), "low": edges[:-1], "high": edges[1:], "predictions": count,
        "mean_confidence": mean_conf, "accuracy": accuracy, "gap": accuracy - mean_conf,
    })


def expected_calibration_error(table: pd.DataFrame) -> float | None:
    """Bin-size weighted mean of |accuracy - mean confidence| (None without predictions)."""
    check_columns("table", table, ["predictions", "gap"], "reliability")
    n = int(table["predictions"].sum())
    if not n:
        return None
    filled = table[table["predictions"] > 0]
    return float((filled["predictions"] * filled["gap"].abs()).sum() / n)


def auroc(confidence: np.ndarray, correct: np.ndarray, order: np.ndarray | None = None) -> float | None:
    """Probability that a right prediction has a higher confidence than a wrong one (ties
    count half); None when either class is empty.

    >>> auroc(np.array([0.9, 0.8, 0.3]), np.array([True, True, False]))
    1.0
    >>> auroc(np.array([0.5, 0.5]), np.array([True, False]))
    0.5
    """
    confidence, correct = _checked(confidence, correct)
    n_pos = int(correct.sum())
    n_neg = len(correct) - n_pos
    if not n_pos or not n_neg:
        return None
    ranks = average_ranks(confidence, order)
    return float((ranks[correct].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def average_ranks(values: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their ranks (``scipy.stats.rankdata``'s
    default, whose import alone costs ~0.9 s; every rank is a whole or half number, exact).
    ``order`` sorts ``values`` when it is known (any order of equal values gives the same
    ranks).

    >>> average_ranks(np.array([0.5, 0.1, 0.5, 0.9])).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    order = np.argsort(values, kind="mergesort") if order is None else order
    ordered = values[order]
    start = np.ones(len(values), bool)
    start[1:] = ordered[1:] != ordered[:-1]
    first = np.flatnonzero(start)
    last = np.append(first[1:], len(values))
    ranks = np.empty(len(values), np.float64)
    ranks[order] = ((first + last + 1) / 2)[np.cumsum(start) - 1]
    return ranks


def _summary(name: str, confidence: np.ndarray, has: np.ndarray, correct: np.ndarray, bins: int,
             order: np.ndarray) -> dict:
    """The row of one set of predictions; ``order`` sorts their confidences."""
    conf, right = confidence[has], correct[has]
    order = order[has[order]]  # the predictions with a confidence, in confidence order ...
    order = (np.cumsum(has) - 1)[order]  # ... as indexes among them
    n = len(confidence)
    return {
        "entity_type": name,
        "predictions": n,
        "with_confidence": int(has.sum()),
        "coverage": float(has.mean()) if n else None,
        "accuracy": float(right.mean()) if len(right) else None,
        "mean_confidence": float(conf.mean()) if len(conf) else None,
        "ece": expected_calibration_error(reliability(conf, right, bins)),
        "brier": float(np.mean((conf - right) ** 2)) if len(conf) else None,
        "auroc": auroc(conf, right, order),
    }


def calibration(model: ReviewModel, bins: int = 10) -> pd.DataFrame:
    """Calibration figures, first over all predictions (``entity_type`` = None), then per
    entity type with predictions."""
    check_int("bins", bins, minimum=1)
    rows = [_summary(None, model.confidence, model.has_confidence, ~model.wrong, bins, model.by_confidence)]
    for name, part in zip(model.entity_types, model.by_type()[0], strict=True):
        if part.n_predictions:
            rows.append(_summary(name, part.confidence, part.has_confidence, ~part.wrong, bins,
                                 part.by_confidence))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def reliability_of(model: ReviewModel, entity_type: str | None = None, bins: int = 10) -> pd.DataFrame:
    """The reliability table of a model's predictions that carry a confidence (all, or one
    entity type's)."""
    if entity_type is not None:
        check_choice("entity_type", entity_type, model.entity_types)
    mine = model.has_confidence.copy()
    if entity_type is not None:
        mine &= model.entity_type == model.entity_types.index(entity_type)
    return reliability(model.confidence[mine], ~model.wrong[mine], bins)
