"""Counts and the scores derived from them, with one explicit 0/0 policy.

0/0 policy (``zero_division``): a ratio whose denominator is zero is 1.0 when nothing was
wrong either (nothing to find and nothing predicted) and 0.0 otherwise. So an empty
document predicted as empty scores 1, a document whose every entity was missed scores 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd


def _ratio(num, den, *, perfect_when_empty):
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1), np.where(perfect_when_empty, 1.0, 0.0))
    return out if out.ndim else float(out)


def precision_recall_f1(tp, fp, fn):
    """Micro P/R/F1 from counts (scalars or arrays), with the module's 0/0 policy.

    >>> precision_recall_f1(10, 1, 2)
    (0.9090909090909091, 0.8333333333333334, 0.8695652173913043)
    >>> precision_recall_f1(0, 0, 0)
    (1.0, 1.0, 1.0)
    >>> precision_recall_f1(0, 0, 3)
    (0.0, 0.0, 0.0)
    """
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    precision = _ratio(tp, tp + fp, perfect_when_empty=fn == 0)
    recall = _ratio(tp, tp + fn, perfect_when_empty=fp == 0)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn, perfect_when_empty=True)
    return precision, recall, f1


def aligned_score(tp, errors):
    """KIEval_Aligned = TP / (TP + Error); 1.0 for a document with nothing in it.

    >>> aligned_score(10, 3)
    0.7692307692307693
    """
    tp = np.asarray(tp, dtype=np.float64)
    return _ratio(tp, tp + np.asarray(errors, dtype=np.float64), perfect_when_empty=True)


@dataclass(frozen=True)
class Counts:
    """TP/FP/FN with their precision, recall and F1."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return precision_recall_f1(self.tp, self.fp, self.fn)[0]

    @property
    def recall(self) -> float:
        return precision_recall_f1(self.tp, self.fp, self.fn)[1]

    @property
    def f1(self) -> float:
        return precision_recall_f1(self.tp, self.fp, self.fn)[2]

    def as_dict(self) -> dict:
        return {**asdict(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


@dataclass(frozen=True)
class Corrections:
    """What a person must do to turn the prediction into the ground truth (SPEC 3.4)."""

    substitution: int
    addition: int
    deletion: int

    @property
    def total(self) -> int:
        return self.substitution + self.addition + self.deletion

    def as_dict(self) -> dict:
        return {**asdict(self), "total": self.total}


def add_scores(frame: pd.DataFrame, prefix: str = "") -> pd.DataFrame:
    """Add precision/recall/f1 columns computed from ``{prefix}tp/fp/fn`` columns."""
    p, r, f = precision_recall_f1(frame[f"{prefix}tp"], frame[f"{prefix}fp"], frame[f"{prefix}fn"])
    return frame.assign(**{f"{prefix}precision": p, f"{prefix}recall": r, f"{prefix}f1": f})
