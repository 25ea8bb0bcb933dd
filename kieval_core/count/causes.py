"""Why each correction is needed (SPEC 2c): one cause per substitution, addition, deletion.

* substitution of GT value g by predicted value p: ``format`` when a comparator the tool
  offers makes them equal (:data:`~kieval_core.count.comparators.FORMAT_COMPARATORS`: ``alnum``,
  ``number`` or ``number:comma``, a date under any of the three orders; ``casefold`` is
  implied by ``alnum``); else ``near_miss`` when their normalised Levenshtein similarity
  (rapidfuzz) is at least the threshold (default 0.8); else ``other_value``;
* deletion of a predicted value: ``misplaced`` when the GT document holds the same value
  under another entity type or in another group; else ``hallucinated``;
* addition of a GT value: ``misplaced`` when the prediction holds the same value under
  another entity type or in another group; else ``missed``.

Values are the normalised ones (after the normaliser, before any comparator). Every
function here works on distinct values or pairs, once each, and on integer codes.

>>> substitution_causes(["01/02/2019", "200", "01/02/2019"], ["01/02/2018", "250", "2019-02-01"]).tolist()
['near_miss', 'other_value', 'format']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .comparators import FORMAT_COMPARATORS, canonicalise
from .similarity import near_misses

#: Every cause, in the order of the ``cause`` categorical.
CAUSES = ("format", "near_miss", "other_value", "misplaced", "hallucinated", "missed")
#: The causes of each correction kind (the JSON's ``kieval.causes``).
CAUSES_OF_KIND = {
    "substitution": ("format", "near_miss", "other_value"),
    "deletion": ("misplaced", "hallucinated"),
    "addition": ("misplaced", "missed"),
}
#: Count columns of the tables of figures: ``<kind>_<cause>``.
CAUSE_COLUMNS = [f"{kind}_{cause}" for kind, causes in CAUSES_OF_KIND.items() for cause in causes]
FORMAT, NEAR_MISS, OTHER_VALUE, MISPLACED, HALLUCINATED, MISSED = range(len(CAUSES))


def fixing_comparators(gt_values: Sequence[str], pred_values: Sequence[str]) -> np.ndarray:
    """Which comparators of :data:`FORMAT_COMPARATORS` make each pair equal: a boolean
    matrix, one row per pair, one column per comparator. Each distinct value is
    canonicalised once per comparator.

    >>> fixing_comparators(["ACME"], ["acme."]).astype(int).tolist()
    [[0, 0, 0, 0, 0, 0, 1]]
    """
    gt_values = np.asarray(gt_values, dtype=object)
    codes, distinct = pd.factorize(np.concatenate([gt_values, np.asarray(pred_values, dtype=object)]))
    g, p = codes[: len(gt_values)], codes[len(gt_values):]
    out = np.zeros((len(g), len(FORMAT_COMPARATORS)), bool)
    for j, comparator in enumerate(FORMAT_COMPARATORS):
        forms, _ = canonicalise(comparator, distinct)
        form_codes = pd.factorize(forms)[0]
        out[:, j] = form_codes[g] == form_codes[p]
    return out


def substitution_cause_codes(gt_values: Sequence[str], pred_values: Sequence[str],
                             near_miss: float = 0.8) -> np.ndarray:
    """Cause codes (:data:`FORMAT`, :data:`NEAR_MISS`, :data:`OTHER_VALUE`) of substitution
    pairs of normalised values; the pairs should be distinct (the engine passes each once)."""
    gt_values = np.asarray(gt_values, dtype=object)
    pred_values = np.asarray(pred_values, dtype=object)
    causes = np.full(len(gt_values), OTHER_VALUE, np.int8)
    if not len(gt_values):
        return causes
    is_format = fixing_comparators(gt_values, pred_values).any(axis=1)
    causes[is_format] = FORMAT
    rest = np.flatnonzero(~is_format)
    if len(rest):
        causes[rest[near_misses(gt_values[rest], pred_values[rest], near_miss)]] = NEAR_MISS
    return causes


def substitution_causes(gt_values: Sequence[str], pred_values: Sequence[str],
                        near_miss: float = 0.8) -> np.ndarray:
    """The cause names of substitution pairs (see :func:`substitution_cause_codes`)."""
    return np.asarray(CAUSES, dtype=object)[substitution_cause_codes(gt_values, pred_values, near_miss)]


def dense_codes(*columns: np.ndarray) -> np.ndarray:
    """One dense code per distinct row of the integer columns (first column primary).

    >>> dense_codes(np.array([1, 1, 0]), np.array([5, 5, 7])).tolist()
    [1, 1, 0]
    """
    code = np.zeros(len(columns[0]), np.int64)
    for column in columns:
        column = np.asarray(column, np.int64)
        low = column.min(initial=0)
        code = code * (int(column.max(initial=0)) - int(low) + 1) + (column - low)
        code = np.unique(code, return_inverse=True)[1].astype(np.int64)
    return code


def held_elsewhere(own: Sequence[np.ndarray], other: Sequence[np.ndarray]) -> np.ndarray:
    """Per entity of one side: whether the other side's document holds its value somewhere
    else than the place that would stand for it.

    ``own`` and ``other`` are integer columns ``(document, normalised value, entity type,
    group type, group)``; an entity's own row names the place where the other side's copy
    would have to be (its own type, the group paired with its group), the other side's rows
    where its entities are.

    >>> doc, value, etype, gtype = np.array([0, 0]), np.array([7, 7]), np.array([1, 2]), np.array([0, 0])
    >>> held_elsewhere((doc, value, etype, gtype, np.array([-1, -1])),
    ...                (doc[:1], value[:1], etype[:1], gtype[:1], np.array([-1]))).tolist()
    [False, True]
    """
    n = len(own[0])
    both = [np.concatenate([a, b]) for a, b in zip(own, other, strict=True)]
    value = dense_codes(*both[:2])
    place = dense_codes(*both)
    other_by_value = np.bincount(value[n:], minlength=int(value.max(initial=-1)) + 1)
    other_by_place = np.bincount(place[n:], minlength=int(place.max(initial=-1)) + 1)
    return other_by_value[value[:n]] > other_by_place[place[:n]]


def largest_cause(causes: dict[str, dict[str, int]] | None) -> tuple[str, str, int] | None:
    """The (kind, cause, count) with most corrections (ties: the order of
    :data:`CAUSES_OF_KIND`); None without causes or corrections.

    >>> largest_cause({"substitution": {"format": 3, "near_miss": 1}, "addition": {"missed": 3}})
    ('substitution', 'format', 3)
    """
    counted = [(n, kind, cause) for kind, inner in (causes or {}).items() for cause, n in inner.items() if n]
    if not counted:
        return None
    n, kind, cause = max(counted, key=lambda t: t[0])
    return kind, cause, n
