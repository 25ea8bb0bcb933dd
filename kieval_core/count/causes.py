"""Why each correction is needed (SPEC 2c): one cause per substitution, addition, deletion.

* substitution of GT value g by predicted value p: ``format`` when ``alnum``, ``number`` or
  ``number:comma`` makes them equal, or both name the same date read in the field's date
  order (:func:`field_date_orders`; a value that names one date in every order it reads
  in, such as ``2019-02-01`` or ``1 Feb 2019``, needs no order), or the same date in
  whichever order both are read (``21/12/16`` and ``21/12/16 9:29:44 AM``); else
  ``date_order`` when they name the same date only when a side is read in another order
  (dmy, mdy, ymd) than the field's, or, in a field without an order, in some order; else
  ``near_miss`` when their normalised Levenshtein similarity (rapidfuzz) after case folding
  and white-space collapsing is at least the threshold (default 0.8); else ``other_value``.
  A time after a date (``07 Mar 2018 18:22``, ``21/12/16 9:29:44 AM``) does not change the
  date it names;
* deletion of a predicted value: ``misplaced`` when the GT document holds the same value
  under another entity type or in another group; else ``hallucinated``;
* addition of a GT value: ``misplaced`` when the prediction holds the same value under
  another entity type or in another group; else ``missed``.

Values are the normalised ones (after the normaliser, before any comparator). Every
function here works on distinct values or pairs, once each, and on integer codes.

>>> substitution_causes(["01/02/2019", "200", "01/02/2019", "01/02/2019"],
...                     ["01/02/2018", "250", "2019-02-01", "2019-01-02"], date_orders=[0, 0, 0, 0]).tolist()
['near_miss', 'other_value', 'format', 'date_order']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .comparators import FORMAT_COMPARATORS, canonicalise, date_counts, date_readings
from .similarity import near_misses

#: Every cause, in the order of the ``cause`` categorical.
CAUSES = ("format", "date_order", "near_miss", "other_value", "misplaced", "hallucinated", "missed")
#: The causes of each correction kind (the JSON's ``kieval.causes``).
CAUSES_OF_KIND = {
    "substitution": ("format", "date_order", "near_miss", "other_value"),
    "deletion": ("misplaced", "hallucinated"),
    "addition": ("misplaced", "missed"),
}
#: Count columns of the tables of figures: ``<kind>_<cause>``.
CAUSE_COLUMNS = [f"{kind}_{cause}" for kind, causes in CAUSES_OF_KIND.items() for cause in causes]
FORMAT, DATE_ORDER, NEAR_MISS, OTHER_VALUE, MISPLACED, HALLUCINATED, MISSED = range(len(CAUSES))
#: The orders a date may be read in: the columns of :func:`date_readings`, the codes of
#: :func:`field_date_orders` (``-1``: no order, see there).
DATE_ORDERS = ("dmy", "mdy", "ymd")
#: The comparators besides dates whose equality makes a substitution ``format``.
_FORMAT_BY_FORM = ("alnum", "number", "number:comma")


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


# --- dates read in each order -------------------------------------------------------------

def has_digit(values: Sequence[str]) -> np.ndarray:
    """Which values hold a digit (vectorised).

    >>> has_digit(["Tea", "1 Feb", ""]).tolist()
    [False, True, False]
    """
    return pd.Series(np.asarray(values, dtype=object), dtype=object).str.contains(
        r"\d", regex=True).fillna(False).to_numpy(bool)


def date_codes(values: Sequence[str]) -> np.ndarray:
    """Integer codes of the dates each value names in each order of :data:`DATE_ORDERS`
    (read strictly by :func:`~kieval_core.count.comparators.date_readings`: a time after the
    date left out, month names and four-digit years first the same in every order; one row
    per value, equal codes are equal dates, -1 where it does not read as a date), and per
    value the code of the one date it names in every order it reads in (-1 when none or
    several). Only values with a digit are read, each distinct value once.

    >>> codes = date_codes(["01/02/2019", "2019-02-01", "25/12/2018 9:30 PM", "x", "1 Feb 2019 18:22"])
    >>> codes[:, :3].tolist(), codes[:, 3].tolist()
    ([[0, 1, -1], [0, 0, 0], [2, -1, -1], [-1, -1, -1], [0, 0, 0]], [-1, 0, 2, -1, 0])
    """
    codes, distinct = pd.factorize(np.asarray(values, dtype=object))
    readings = np.full((len(distinct), 3), None, dtype=object)
    with_digits = has_digit(distinct)  # a date has digits: most values are not read
    readings[with_digits] = date_readings(np.asarray(distinct, dtype=object)[with_digits])
    date_codes = pd.factorize(readings.ravel())[0].reshape(readings.shape)  # None -> -1
    first = date_codes.max(axis=1)
    same = ((date_codes == first[:, None]) | (date_codes < 0)).all(axis=1)
    one_date = np.where(same, first, -1)
    return np.column_stack([date_codes, one_date])[codes]


def field_date_orders(entity_types: Sequence[str], values: Sequence[str], wanted: Sequence[str]
                      ) -> dict[str, int]:
    """The date order each of the ``wanted`` entity types' ground truth uses (an index into
    :data:`DATE_ORDERS`; -1 when contradicted or undecided), by
    :func:`~kieval_core.count.comparators.date_order`: the one order under which every
    unambiguous value reads as a date. ``entity_types`` and ``values`` are the GT's entities.

    >>> field_date_orders(["d", "d", "e", "f", "f"], ["25/12/2018", "01/02/2019", "2019-02-01",
    ...                   "12/25/2018", "25/12/2018"], ["d", "e", "f"])
    {'d': 0, 'e': -1, 'f': -1}
    """
    types, type_names = pd.factorize(np.asarray(entity_types, dtype=object))
    codes, distinct = pd.factorize(np.asarray(values, dtype=object))
    return coded_date_orders(types, codes, np.asarray(type_names, dtype=object),
                             np.asarray(distinct, dtype=object), wanted)


def coded_date_orders(types: np.ndarray, codes: np.ndarray, type_names: np.ndarray, distinct: np.ndarray,
                      wanted: Sequence[str]) -> dict[str, int]:
    """:func:`field_date_orders` of entities given as codes (``types`` into ``type_names``,
    ``codes`` into the distinct values ``distinct``): each (type, value) pair is counted
    once, with its number of entities."""
    width = max(len(distinct), 1)
    pairs, weight = np.unique(np.asarray(types, np.int64) * width + codes, return_counts=True)
    of_type = pairs // width
    orders = {t: -1 for t in wanted}
    for code, entity_type in enumerate(type_names.tolist()):  # one call per field, not per value
        if entity_type in orders:
            mine = of_type == code
            if mine.any():
                counted = date_counts(distinct[pairs[mine] % width], weight[mine])
                orders[entity_type] = order_code(counted.order().order)
    return orders


def order_code(order: str | None) -> int:
    """A date order (``date:dmy`` ...) as an index into :data:`DATE_ORDERS`; None: -1."""
    return -1 if order is None else DATE_ORDERS.index(order.removeprefix("date:"))


def folded(values: np.ndarray) -> list[str]:
    """Values case-folded, white space collapsed: how a near miss is judged (SPEC 2c)."""
    return [" ".join(v.casefold().split()) for v in values]


def _date_pairs(dates: np.ndarray, g: np.ndarray, p: np.ndarray, orders: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (value indexes ``g``, ``p`` into the rows of :func:`date_codes` ``dates``,
    the field's order): whether both name the same date (in the field's order, or in
    whichever order both are read), and whether they do in some pair of orders."""
    # unreadable in an order: its one date (if any)
    in_order = np.where(dates[:, :3] >= 0, dates[:, :3], dates[:, 3:4])
    in_order = np.column_stack([in_order, dates[:, 3]])  # column -1: no order, the one date only
    date_g, date_p = in_order[g, orders], in_order[p, orders]
    read_g, read_p = dates[g, :3], dates[p, :3]
    same = ((date_g >= 0) & (date_g == date_p)) | ((read_g == read_p).all(axis=1) & (read_g >= 0).any(axis=1))
    read_g, read_p = read_g[:, :, None], read_p[:, None, :]
    crossed = ((read_g >= 0) & (read_g == read_p)).any(axis=(1, 2))
    return same, crossed


def substitution_cause_codes(gt_values: Sequence[str], pred_values: Sequence[str],
                             near_miss: float = 0.8, date_orders: Sequence[int] | None = None) -> np.ndarray:
    """Cause codes (:data:`FORMAT`, :data:`DATE_ORDER`, :data:`NEAR_MISS`,
    :data:`OTHER_VALUE`) of substitution pairs of normalised values, each pair with its
    field's date order (:func:`field_date_orders`; default: none). The pairs should be
    distinct (the engine passes each once); each distinct value is read once."""
    gt_values = np.asarray(gt_values, dtype=object)
    pred_values = np.asarray(pred_values, dtype=object)
    n = len(gt_values)
    causes = np.full(n, OTHER_VALUE, np.int8)
    if not n:
        return causes
    orders = np.full(n, -1, np.int64) if date_orders is None else np.asarray(date_orders, np.int64)
    codes, distinct = pd.factorize(np.concatenate([gt_values, pred_values]))
    g, p = codes[:n], codes[n:]
    is_format = np.zeros(n, bool)
    for comparator in _FORMAT_BY_FORM:
        form_codes = pd.factorize(canonicalise(comparator, distinct)[0])[0]
        is_format |= form_codes[g] == form_codes[p]
    same_date, crossed = _date_pairs(date_codes(distinct), g, p, orders)
    is_format |= same_date
    causes[is_format] = FORMAT
    causes[~is_format & crossed] = DATE_ORDER
    rest = np.flatnonzero(causes == OTHER_VALUE)
    if len(rest):
        shown = np.asarray(folded(distinct), dtype=object)  # judged case-folded, spaces collapsed
        causes[rest[near_misses(shown[g[rest]], shown[p[rest]], near_miss)]] = NEAR_MISS
    return causes


def substitution_causes(gt_values: Sequence[str], pred_values: Sequence[str], near_miss: float = 0.8,
                        date_orders: Sequence[int] | None = None) -> np.ndarray:
    """The cause names of substitution pairs (see :func:`substitution_cause_codes`)."""
    codes = substitution_cause_codes(gt_values, pred_values, near_miss, date_orders)
    return np.asarray(CAUSES, dtype=object)[codes]


def format_note(gt_value: str, pred_value: str) -> str:
    """How the two values of a ``format`` substitution are the same, in words (shown in
    place of a character diff).

    >>> format_note("07 MAR 2018", "2018-03-07"), format_note("ACME Sdn Bhd", "acme sdn bhd")
    ('same date, other format', 'same text, other case')
    >>> format_note("1,000.00", "1000"), format_note("L/RA 458", "lra458")
    ('same number, other format', 'same text, other punctuation')
    """
    if gt_value.casefold() == pred_value.casefold():
        return "same text, other case"
    dates = date_codes([gt_value, pred_value])[:, :3]
    if ((dates[0][:, None] >= 0) & (dates[0][:, None] == dates[1][None, :])).any():
        return "same date, other format"
    for comparator in ("number", "number:comma"):
        forms, parsed = canonicalise(comparator, [gt_value, pred_value])
        if parsed.all() and forms[0] == forms[1]:
            return "same number, other format"
    return "same text, other punctuation"


def dense_codes(*columns: np.ndarray) -> np.ndarray:
    """One dense code per distinct row of the integer columns (first column primary).

    >>> dense_codes(np.array([1, 1, 0]), np.array([5, 5, 7])).tolist()
    [1, 1, 0]
    """
    code, span = np.zeros(len(columns[0]), np.int64), 1
    for column in columns:
        column = np.asarray(column, np.int64)
        low = column.min(initial=0)
        width = int(column.max(initial=0)) - int(low) + 1
        if span * width >= _PACKED:  # the packed key would overflow: rank what is packed so far
            code, span = _ranks(code)
            if span * width >= _PACKED:
                column, width = _ranks(column)
                low = 0
        code = code * width + (column - low)  # rows in the order of the columns' lexicographic order
        span *= width
    return _ranks(code)[0]


#: Packed keys stay below this (int64); one sort at the end instead of one per column.
_PACKED = 1 << 62


def _ranks(code: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense rank of every element and the number of distinct elements."""
    distinct, rank = np.unique(code, return_inverse=True)
    return rank.astype(np.int64), len(distinct)


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
    place = dense_codes(value, *both[2:])  # the value's rank stands for its first two columns
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
