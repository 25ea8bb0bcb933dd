"""Near misses with bounded work (SPEC 2c): normalised Levenshtein similarity at least a
threshold, computed so that a pair of long values costs little.

rapidfuzz's normalised similarity of ``a`` and ``b`` is ``1 - d / max(|a|, |b|)`` with
``d`` their Levenshtein distance. ``d`` is at least the difference of the lengths, so the
similarity is at most ``1 - (long - short) / long``: a pair whose lengths alone put that
bound below the threshold is not a near miss and is not compared (the bound is computed
with the same floating-point operations as rapidfuzz, so it never drops a pair rapidfuzz
would keep). The other pairs' distances are computed with a cutoff (rapidfuzz's
``score_cutoff``), which limits its work to a band of width about ``(1 - threshold) * long``
around the diagonal, and on their
first :data:`COMPARED_CHARS` characters at most (a longer value is above the default value
length limit, :mod:`kieval_core.limits`, and is there only when a user raised it).

>>> near_misses(["01/02/2019", "200", "abcd"], ["01/02/2018", "250", "abcdefghij"], 0.8).tolist()
[True, False, False]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

#: Characters of each value a near-miss test compares at most.
COMPARED_CHARS = 100_000


def similarity_bound(gt_lengths: np.ndarray, pred_lengths: np.ndarray) -> np.ndarray:
    """The largest normalised Levenshtein similarity two values of these lengths can have
    (1 for two empty values).

    >>> similarity_bound(np.array([4, 3, 0]), np.array([5, 5, 0])).tolist()
    [0.8, 0.6, 1.0]
    """
    longest = np.maximum(gt_lengths, pred_lengths).astype(np.float64)
    gap = np.abs(np.asarray(gt_lengths, np.int64) - np.asarray(pred_lengths, np.int64)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(longest > 0, 1.0 - gap / np.where(longest > 0, longest, 1.0), 1.0)


def near_misses(gt_values: Sequence[str], pred_values: Sequence[str], threshold: float) -> np.ndarray:
    """Per pair: whether the normalised Levenshtein similarity is at least ``threshold``
    (see the module docstring for the bounds on the work).

    Each pair's distance is computed only up to a cutoff just above the largest distance a
    near miss of its length allows (pairs in buckets of powers of two, one rapidfuzz call
    each), then the similarity ``1 - d / longest`` is formed and compared as rapidfuzz forms
    it, in float64 (rapidfuzz's own ``score_cutoff`` on the normalised similarity drops a
    pair whose similarity equals the cutoff).
    """
    gt_values = np.asarray(gt_values, dtype=object)
    pred_values = np.asarray(pred_values, dtype=object)
    out = np.zeros(len(gt_values), bool)
    if not len(gt_values):
        return out
    lengths = np.frompyfunc(len, 1, 1)
    gt_len, pred_len = lengths(gt_values).astype(np.int64), lengths(pred_values).astype(np.int64)
    possible = np.flatnonzero(similarity_bound(gt_len, pred_len) >= threshold)
    longest = np.minimum(np.maximum(gt_len, pred_len)[possible], COMPARED_CHARS)
    allowed = np.maximum(np.ceil((1.0 - threshold) * longest).astype(np.int64) + 1, 1)
    bucket = np.ceil(np.log2(allowed)).astype(np.int64)
    for b in np.unique(bucket):
        at = possible[bucket == b]
        distance = cpdist([v[:COMPARED_CHARS] for v in gt_values[at]],
                          [v[:COMPARED_CHARS] for v in pred_values[at]],
                          scorer=Levenshtein.distance, score_cutoff=int(2 ** b), dtype=np.int64, workers=1)
        longest_here = longest[bucket == b].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            similarity = np.where(longest_here > 0, 1.0 - distance / longest_here, 1.0)
        out[at] = similarity >= threshold
    return out
