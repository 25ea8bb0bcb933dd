"""ANLS* (Peer et al., 2024), score-compatible with the ``anls-star`` 1.0.1 package.

One document's ground truth and prediction are nested Python structures made of
dicts, lists, strings, numbers, booleans and ``None``; a tuple in the ground truth
lists alternative correct answers. Every rule of the package is kept, including the
tie-breaking of its Hungarian matcher, so scores agree to the last bit on
Python 3.11 (see ``docs/peer_metrics.md`` for the quirks this implies).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import chain
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

__all__ = ["THRESHOLD", "ANLSCorpus", "anls_star", "anls_star_corpus"]

THRESHOLD = 0.5
"""Normalised Levenshtein similarities below this count as 0."""

_LEAF_TYPES = (str, float, int, bool)


class ANLSCorpus(NamedTuple):
    """ANLS* of a corpus: one score per document and their mean."""

    per_document: tuple[float, ...]
    mean: float


class _Match(NamedTuple):
    """Comparison of a ground-truth subtree with a prediction subtree."""

    scores: list[float]  # leaf similarities, in the order the package lists them
    length: int  # the subtree pair's share of the denominator ("pairwise length")
    closest: Any  # the ground-truth object closest to the prediction


def anls_star(gt: Any, pred: Any) -> float:
    """ANLS* of one document.

    Parameters
    ----------
    gt : dict, list, tuple, str, int, float, bool or None
        Ground truth. Tuples hold alternative answers (the best one is used).
    pred : dict, list, str, int, float, bool or None
        Prediction; tuples are not allowed.

    Returns
    -------
    float
        Score in [0, 1]: the sum of leaf similarities divided by the pairwise length
        of the two trees (1.0 when both are empty).

    Raises
    ------
    ValueError
        For a value of an unsupported type, a tuple in the prediction or an empty tuple.

    Examples
    --------
    >>> anls_star({"total": "10.00", "items": ["tea", "cake"]},
    ...           {"total": "10.00", "items": ["cake", "tee"]})
    0.888888888888889
    >>> anls_star({"date": ("01/02/2019", "2019-02-01")}, {"date": "2019-02-01"})
    1.0
    """
    _validate(gt, is_gt=True)
    _validate(pred, is_gt=False)
    if (
        isinstance(gt, list)
        and gt
        and all(isinstance(x, str) for x in gt)
        and isinstance(pred, str)
    ):
        gt = tuple(gt)  # the package's compatibility mode for VQA-style answer lists
    match = _compare(gt, pred)
    return sum(match.scores) / match.length if match.length > 0 else 1.0


def anls_star_corpus(pairs: Iterable[tuple[Any, Any]]) -> ANLSCorpus:
    """ANLS* of every ``(gt, pred)`` document and their unweighted mean.

    Parameters
    ----------
    pairs : iterable of (gt, pred)
        One pair of nested structures per document.

    Returns
    -------
    ANLSCorpus
        ``(per_document, mean)``.

    Raises
    ------
    ValueError
        When ``pairs`` is empty, or as :func:`anls_star`.

    Examples
    --------
    >>> anls_star_corpus([({"a": "x"}, {"a": "x"}), ({"a": "x"}, {})])
    ANLSCorpus(per_document=(1.0, 0.0), mean=0.5)
    """
    scores = tuple(anls_star(gt, pred) for gt, pred in pairs)
    if not scores:
        msg = "anls_star_corpus needs at least one (gt, pred) document pair"
        raise ValueError(msg)
    return ANLSCorpus(scores, sum(scores) / len(scores))


def _validate(obj: Any, *, is_gt: bool) -> None:
    if isinstance(obj, tuple):
        if not is_gt:
            msg = f"tuples are reserved for alternative ground truths, got {obj!r} in a prediction"
            raise ValueError(msg)
        if not obj:
            msg = "a ground-truth tuple needs at least one alternative"
            raise ValueError(msg)
        children: Iterable[Any] = obj
    elif isinstance(obj, list):
        children = obj
    elif isinstance(obj, dict):
        children = obj.values()
    elif obj is None or isinstance(obj, _LEAF_TYPES):
        return
    else:
        msg = f"unsupported type {type(obj).__name__} for {obj!r} in an ANLS* structure"
        raise ValueError(msg)
    for child in children:
        _validate(child, is_gt=is_gt)


def _size(obj: Any) -> int:
    """The package's ``len()`` of a tree: leaves and ``None`` count 1, tuples their largest."""
    if isinstance(obj, tuple):
        return max(map(_size, obj))
    if isinstance(obj, list):
        return sum(map(_size, obj))
    if isinstance(obj, dict):
        return sum(map(_size, obj.values()))
    return 1


def _is_none_like(value: Any) -> bool:
    return value in (None, {}, [], "")


def _is_leaf(value: Any) -> bool:
    return isinstance(value, _LEAF_TYPES)


def _normalise(value: Any) -> str:
    return " ".join(str(value).strip().lower().split())


def _leaf_similarity(gt: Any, pred: Any) -> float:
    a, b = _normalise(gt), _normalise(pred)
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    score = 1 - Levenshtein.distance(a, b) / longest
    return score if score >= THRESHOLD else 0.0


def _leaf_similarities(gts: list[Any], preds: list[Any]) -> np.ndarray:
    """Vectorised :func:`_leaf_similarity` for every pair of two lists of leaves."""
    a = [_normalise(x) for x in gts]
    b = [_normalise(x) for x in preds]
    distance = cdist(a, b, scorer=Levenshtein.distance, dtype=np.int64)
    longest = np.maximum(
        np.fromiter(map(len, a), np.int64, len(a))[:, None],
        np.fromiter(map(len, b), np.int64, len(b))[None, :],
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        score = 1 - distance / longest
    score[longest == 0] = 1.0
    score[score < THRESHOLD] = 0.0
    return score


def _compare(gt: Any, pred: Any) -> _Match:
    if isinstance(gt, tuple):
        return _compare_alternatives(gt, pred)
    if isinstance(gt, list):
        if isinstance(pred, list):
            return _compare_lists(gt, pred)
        return _Match([0.0], max(_size(gt), _size(pred)), gt)
    if isinstance(gt, dict):
        if isinstance(pred, dict):
            return _compare_dicts(gt, pred)
        return _Match([0.0], max(_size(gt), _size(pred)), gt)
    length = max(1, _size(pred))
    if gt is None:
        if _is_none_like(pred):
            return _Match([1.0], length, pred)
        return _Match([0.0], length, None)
    if _is_leaf(pred):
        return _Match([_leaf_similarity(gt, pred)], 1, gt)
    return _Match([0.0], length, gt)


def _mean(match: _Match) -> float:
    return sum(match.scores) / match.length if match.length > 0 else 1.0


def _compare_alternatives(options: tuple[Any, ...], pred: Any) -> _Match:
    best, best_key = None, None
    for option in options:
        match = _compare(option, pred)
        key = (_mean(match), 1 if match.closest == pred else 0)
        if best_key is None or key > best_key:  # the first of equal keys wins, like max()
            best, best_key = match, key
    return best


def _compare_dicts(gt: dict, pred: dict) -> _Match:
    scores: list[float] = []
    closest: dict = {}
    length = 0
    for key in chain(gt, (k for k in pred if k not in gt)):
        value = pred.get(key)
        if key not in gt and _is_none_like(value):
            # A hallucinated key holding a None-like value adds no score but, as in the
            # package, still counts in the denominator.
            length += max(1, _size(value))
            continue
        match = _compare(gt.get(key), value)
        scores.extend(match.scores)
        length += match.length
        if key in pred or not _is_none_like(match.closest):
            closest[key] = match.closest
    return _Match(scores, length, closest)


def _compare_lists(gt: list, pred: list) -> _Match:
    if not gt or not pred:
        return _Match([], sum(map(_size, gt)) + sum(map(_size, pred)), list(gt))
    matches, profit = _pair_matches(gt, pred)
    pairs = _munkres(profit)
    chosen = [matches(row, col) for row, col in pairs]
    matched_rows = {row for row, _ in pairs}
    matched_cols = {col for _, col in pairs}
    closest = [m.closest for m, _ in sorted(zip(chosen, pairs, strict=True), key=lambda t: t[1][1])]
    closest.extend(x for i, x in enumerate(gt) if i not in matched_rows)
    length = (
        sum(m.length for m in chosen)
        + sum(_size(x) for i, x in enumerate(gt) if i not in matched_rows)
        + sum(_size(y) for j, y in enumerate(pred) if j not in matched_cols)
    )
    return _Match(list(chain.from_iterable(m.scores for m in chosen)), length, closest)


def _pair_matches(gt: list, pred: list):
    """Profit matrix of all element pairs plus a lookup for the pairs' matches.

    Leaf-leaf pairs are scored in one vectorised call; other pairs recurse. As in the
    package, a pair whose prediction equals its closest ground truth gets its mean
    nudged up by one ulp to break ties.
    """
    profit = np.empty((len(gt), len(pred)))
    leaf_scores = np.zeros_like(profit)
    leaf_rows = np.fromiter(map(_is_leaf, gt), bool, len(gt))
    leaf_cols = np.fromiter(map(_is_leaf, pred), bool, len(pred))
    rows, cols = np.flatnonzero(leaf_rows), np.flatnonzero(leaf_cols)
    if rows.size and cols.size:
        gt_leaves = np.empty(rows.size, dtype=object)
        gt_leaves[:] = [gt[i] for i in rows]
        pred_leaves = np.empty(cols.size, dtype=object)
        pred_leaves[:] = [pred[j] for j in cols]
        similarity = _leaf_similarities(list(gt_leaves), list(pred_leaves))
        exact = gt_leaves[:, None] == pred_leaves[None, :]
        leaf_scores[np.ix_(rows, cols)] = similarity
        profit[np.ix_(rows, cols)] = np.where(exact, np.nextafter(similarity, math.inf), similarity)
    recursed: dict[tuple[int, int], _Match] = {}
    for i, j in zip(*np.nonzero(~(leaf_rows[:, None] & leaf_cols[None, :])), strict=True):
        match = _compare(gt[i], pred[j])
        recursed[int(i), int(j)] = match
        mean = _mean(match)
        profit[i, j] = math.nextafter(mean, math.inf) if pred[j] == match.closest else mean

    def matches(i: int, j: int) -> _Match:
        if (i, j) in recursed:
            return recursed[i, j]
        return _Match([float(leaf_scores[i, j])], 1, gt[i])

    return matches, profit


def _munkres(profit: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-profit assignment, step for step as ``munkres`` 1.1.4 computes it.

    The package converts profits to costs with ``make_cost_matrix`` (``max - profit``)
    and runs ``Munkres().compute``; replaying its steps, scan orders included, picks the
    same assignment among equally good ones, which decides ANLS* when ties occur.
    """
    n_rows, n_cols = profit.shape
    if n_rows == n_cols == 1:
        return [(0, 0)]
    n = max(n_rows, n_cols)
    cost = np.zeros((n, n))
    cost[:n_rows, :n_cols] = profit.max() - profit
    cost -= cost.min(axis=1, keepdims=True)
    starred = np.zeros((n, n), bool)
    primed = np.zeros((n, n), bool)
    row_covered = np.zeros(n, bool)
    col_covered = np.zeros(n, bool)
    for i in range(n):
        free = np.flatnonzero((cost[i] == 0) & ~col_covered)
        if free.size:
            starred[i, free[0]] = True
            col_covered[free[0]] = True
    col_covered[:] = False
    while True:
        col_covered = starred.any(axis=0)  # step 3
        if col_covered.sum() >= n:
            break
        row, col = 0, 0
        while True:  # step 4, with step 6 whenever no uncovered zero is left
            row, col = _find_uncovered_zero(cost, row_covered, col_covered, row, col)
            if row < 0:
                uncovered = ~row_covered[:, None] & ~col_covered[None, :]
                smallest = cost[uncovered].min()
                cost[row_covered, :] += smallest
                cost[:, ~col_covered] -= smallest
                row, col = 0, 0
                continue
            primed[row, col] = True
            star_cols = np.flatnonzero(starred[row])
            if not star_cols.size:
                break
            col = int(star_cols[0])
            row_covered[row] = True
            col_covered[col] = False
        _augment(starred, primed, row, col)  # step 5
        primed[:] = False
        row_covered[:] = False
    return [(int(i), int(j)) for i, j in np.argwhere(starred[:n_rows, :n_cols])]


def _find_uncovered_zero(
    cost: np.ndarray, row_covered: np.ndarray, col_covered: np.ndarray, row0: int, col0: int
) -> tuple[int, int]:
    """``Munkres.__find_a_zero``: rows scanned cyclically from ``row0``; within the first
    row holding an uncovered zero, the *last* such zero in cyclic order from ``col0``."""
    n = cost.shape[0]
    zeros = (cost == 0) & ~row_covered[:, None] & ~col_covered[None, :]
    row_order = (row0 + np.arange(n)) % n
    hit_rows = np.flatnonzero(zeros[row_order].any(axis=1))
    if not hit_rows.size:
        return -1, -1
    row = int(row_order[hit_rows[0]])
    col_order = (col0 + np.arange(n)) % n
    return row, int(col_order[np.flatnonzero(zeros[row, col_order])[-1]])


def _augment(starred: np.ndarray, primed: np.ndarray, row: int, col: int) -> None:
    path = [(row, col)]
    while True:
        star_rows = np.flatnonzero(starred[:, path[-1][1]])
        if not star_rows.size:
            break
        path.append((int(star_rows[0]), path[-1][1]))
        path.append((path[-1][0], int(np.flatnonzero(primed[path[-1][0]])[0])))
    for i, j in path:
        starred[i, j] = not starred[i, j]
