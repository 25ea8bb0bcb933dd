"""Reading-order-independent IE metrics (Villanova-Aparisi, Tarride et al., 2024).

Semantics of the ``ie-eval`` 0.2.0 scorers (``OiEcerEwer``, ``OiNerval``,
``BagOfWords``) on documents given as lists of ``(category, text)`` named entities:

* OIECER / OIEWER: a one-to-one assignment between GT and predicted entities that
  minimises the summed cost min(1, CER) (resp. WER) of same-category pairs, 1 for a
  pair of different categories and 1 for every entity left unpaired. Corpus rate =
  summed costs / GT entities, *not* capped at 1.
* OINerval: the assignment that pairs the most same-category entities whose capped
  CER is at most ``cer_threshold`` (inclusive); those pairs are TP.
* Bag-of-tagged-words and bag-of-entities: multiset intersections of
  ``(category, word)`` resp. ``(category, text)``; errors per document =
  max(FP, FN), as in the bWER of Vidal et al. (2023).

Per-category figures evaluate each category's entities alone. Cost matrices come from
one ``rapidfuzz.process.cdist`` call per document, assignments from
``scipy.optimize.linear_sum_assignment``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

__all__ = [
    "DEFAULT_CER_THRESHOLD",
    "BagScore",
    "Detection",
    "ErrorRate",
    "OIResult",
    "oi_metrics",
    "prf_columns",
]

DEFAULT_CER_THRESHOLD = 0.30

Entity = tuple[str, str]

_ASSIGNMENT_COUNTS = ["n_gt", "n_pred", "ecer_errors", "ewer_errors", "nerval_tp"]
_BAGS = {"botw": "wer", "boe": "er"}


@dataclass(frozen=True)
class Detection:
    """TP/FP/FN counts and the precision, recall and F1 derived from them.

    Zero divisions follow ``ie-eval``: precision is 1.0 when nothing was predicted and
    recall 1.0 when there was nothing to find. F1 = 2 TP / (2 TP + FP + FN), which is
    the harmonic mean of the two under those rules (1.0 when all counts are 0).
    """

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        """TP / (TP + FP), 1.0 when nothing was predicted."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        """TP / (TP + FN), 1.0 when there was nothing to find."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        """2 TP / (2 TP + FP + FN), 1.0 when all counts are 0."""
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else 1.0


@dataclass(frozen=True)
class ErrorRate:
    """Summed errors over a number of ground-truth items; ``rate`` is NaN without any."""

    errors: float
    reference: int

    @property
    def rate(self) -> float:
        """Errors / reference; not capped at 1."""
        return self.errors / self.reference if self.reference else float("nan")


@dataclass(frozen=True)
class BagScore(Detection):
    """Bag-of-items detection counts plus the bag error count (sum of max(FP, FN))."""

    errors: int

    @property
    def error_rate(self) -> float:
        """Errors / GT items (bWER for tagged words, ER for entities); NaN without GT."""
        reference = self.tp + self.fn
        return self.errors / reference if reference else float("nan")


@dataclass(frozen=True, eq=False)
class OIResult:
    """Corpus figures of :func:`oi_metrics` plus per-document and per-category tables.

    ``documents`` has one row per input document (in input order) and ``categories``
    one row per category; both hold the counts and the rates derived from them:
    ``n_gt``, ``n_pred``, ``ecer_errors``, ``oiecer``, ``ewer_errors``, ``oiewer``,
    ``nerval_{tp,fp,fn,precision,recall,f1}``,
    ``botw_{tp,fp,fn,errors,precision,recall,f1,wer}`` and
    ``boe_{tp,fp,fn,errors,precision,recall,f1,er}``.
    """

    oiecer: ErrorRate
    oiewer: ErrorRate
    oinerval: Detection
    bag_of_tagged_words: BagScore
    bag_of_entities: BagScore
    cer_threshold: float
    documents: pd.DataFrame
    categories: pd.DataFrame


def oi_metrics(
    docs: Iterable[tuple[Sequence[Entity], Sequence[Entity]]],
    cer_threshold: float = DEFAULT_CER_THRESHOLD,
) -> OIResult:
    """Compute every reading-order-independent metric on a corpus.

    Parameters
    ----------
    docs : iterable of (gt_entities, pred_entities)
        Per document, the GT and predicted named entities as ``(category, text)``.
    cer_threshold : float, default 0.30
        OINerval's largest CER (a fraction, inclusive) at which two entities of the
        same category still match.

    Returns
    -------
    OIResult

    Raises
    ------
    ValueError
        When ``cer_threshold`` is outside [0, 1] or an entity is not a pair of strings.

    Examples
    --------
    >>> gt = [("name", "Anna Smith"), ("date", "1890")]
    >>> pred = [("date", "1891"), ("name", "Ana Smith")]
    >>> result = oi_metrics([(gt, pred)])
    >>> round(result.oiecer.rate, 4), result.oiewer.rate, result.oinerval.f1
    (0.175, 0.75, 1.0)
    >>> result.bag_of_tagged_words.tp, result.bag_of_entities.tp
    (1, 0)
    """
    if not 0.0 <= cer_threshold <= 1.0:
        msg = f"cer_threshold must be a fraction in [0, 1], got {cer_threshold!r}"
        raise ValueError(msg)
    docs = [
        (_entities(gt, i, "ground-truth"), _entities(pred, i, "predicted"))
        for i, (gt, pred) in enumerate(docs)
    ]
    names = sorted({category for doc in docs for side in doc for category, _ in side})
    index = {name: k for k, name in enumerate(names)}
    per_doc = np.zeros((len(docs), len(_ASSIGNMENT_COUNTS)))
    per_category = np.zeros((len(names), len(_ASSIGNMENT_COUNTS)))
    for doc, (gt, pred) in enumerate(docs):
        per_doc[doc], by_category = _assignment_counts(gt, pred, cer_threshold)
        for name, counts in by_category:
            per_category[index[name]] += counts
    doc_columns = dict(zip(_ASSIGNMENT_COUNTS, per_doc.T, strict=True))
    category_columns = dict(zip(_ASSIGNMENT_COUNTS, per_category.T, strict=True))
    for bag in _BAGS:
        bag_docs, bag_categories = _bag_counts(docs, index, split_words=bag == "botw")
        doc_columns.update({f"{bag}_{c}": v for c, v in bag_docs.items()})
        category_columns.update({f"{bag}_{c}": v for c, v in bag_categories.items()})
    documents = _table(doc_columns, pd.RangeIndex(len(docs), name="doc"))
    categories = _table(category_columns, pd.Index(names, name="category", dtype=object))
    totals = documents.sum()
    return OIResult(
        oiecer=ErrorRate(float(totals.ecer_errors), int(totals.n_gt)),
        oiewer=ErrorRate(float(totals.ewer_errors), int(totals.n_gt)),
        oinerval=Detection(*(int(totals[f"nerval_{c}"]) for c in ("tp", "fp", "fn"))),
        bag_of_tagged_words=_bag_score(totals, "botw"),
        bag_of_entities=_bag_score(totals, "boe"),
        cer_threshold=cer_threshold,
        documents=documents,
        categories=categories,
    )


def prf_columns(tp, fp, fn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised precision, recall and F1 with :class:`Detection`'s zero-division rules.

    Examples
    --------
    >>> [a.tolist() for a in prf_columns([3, 0], [2, 0], [0, 0])]
    [[0.6, 1.0], [1.0, 1.0], [0.75, 1.0]]
    """
    tp, fp, fn = (np.asarray(a, dtype=float) for a in (tp, fp, fn))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 1.0)
        denominator = 2 * tp + fp + fn
        f1 = np.where(denominator > 0, 2 * tp / denominator, 1.0)
    return precision, recall, f1


def _entities(entities: Sequence[Entity], doc: int, side: str) -> list[Entity]:
    checked = list(entities)
    for position, entity in enumerate(checked):
        if not (
            isinstance(entity, tuple | list)
            and len(entity) == 2
            and all(isinstance(part, str) for part in entity)
        ):
            msg = (
                f"document {doc}: {side} entity {position} must be a (category, text) "
                f"pair of strings, got {entity!r}"
            )
            raise ValueError(msg)
    return [tuple(entity) for entity in checked]


def _capped_rates(gt: list, pred: list) -> np.ndarray:
    """min(1, edit distance / len(gt item)) for every pair; an empty GT item gives 0 or 1."""
    distance = cdist(gt, pred, scorer=Levenshtein.distance, dtype=np.int64).astype(float)
    length = np.fromiter(map(len, gt), float, len(gt))[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(length > 0, distance / length, (distance > 0).astype(float))
    return np.minimum(rate, 1.0)


def _assignment_counts(gt: list[Entity], pred: list[Entity], cer_threshold: float):
    """Counts (n_gt, n_pred, ecer_errors, ewer_errors, nerval_tp) of a document, and
    ``(category, counts)`` for each category evaluated on its own entities."""
    gt_cat = np.array([c for c, _ in gt], dtype=object)
    pred_cat = np.array([c for c, _ in pred], dtype=object)
    if gt and pred:
        same = gt_cat[:, None] == pred_cat[None, :]
        cer = _capped_rates([t for _, t in gt], [t for _, t in pred])
        wer = _capped_rates([t.split() for _, t in gt], [t.split() for _, t in pred])
        ecer_cost = np.where(same, cer, 1.0)
        ewer_cost = np.where(same, wer, 1.0)
        miss = (~(same & (cer <= cer_threshold))).astype(float)
    else:
        ecer_cost = ewer_cost = miss = np.ones((len(gt), len(pred)))

    def counts(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        n, m = rows.size, cols.size
        block = np.ix_(rows, cols)
        unpaired = abs(n - m)
        return np.array(
            [
                n,
                m,
                _min_assignment(ecer_cost[block]) + unpaired,
                _min_assignment(ewer_cost[block]) + unpaired,
                min(n, m) - _min_assignment(miss[block]),
            ]
        )

    whole = counts(np.arange(len(gt)), np.arange(len(pred)))
    by_category = [
        (name, counts(np.flatnonzero(gt_cat == name), np.flatnonzero(pred_cat == name)))
        for name in set(gt_cat) | set(pred_cat)
    ]
    return whole, by_category


def _min_assignment(cost: np.ndarray) -> float:
    if cost.size == 0:
        return 0.0
    if min(cost.shape) == 1:
        return float(cost.min())
    from scipy.optimize import linear_sum_assignment  # on demand: slow to import

    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


def _bag_counts(
    docs: list[tuple[list[Entity], list[Entity]]], index: dict[str, int], split_words: bool
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """TP, FP, FN and errors of a bag of tagged items, per document and per category.

    Items are coded once for the whole corpus and counted with ``bincount``: per
    (document, category, item) TP = min(GT count, predicted count); errors = max(FP, FN)
    per document for the document figures and per (document, category) for the
    category figures.
    """
    items = [
        (doc, index[category], item, is_gt)
        for doc, (gt, pred) in enumerate(docs)
        for is_gt, entities in ((True, gt), (False, pred))
        for category, text in entities
        for item in (text.split() if split_words else (text,))
    ]
    n_docs, n_categories = len(docs), len(index)
    keys = np.empty(len(items), dtype=object)
    keys[:] = [item[:3] for item in items]
    doc = np.fromiter((item[0] for item in items), np.int64, len(items))
    category = np.fromiter((item[1] for item in items), np.int64, len(items))
    is_gt = np.fromiter((item[3] for item in items), bool, len(items))
    key_codes, unique_keys = pd.factorize(keys)
    gt_count = np.bincount(key_codes, weights=is_gt, minlength=len(unique_keys))
    pred_count = np.bincount(key_codes, weights=~is_gt, minlength=len(unique_keys))
    tp = np.minimum(gt_count, pred_count)
    cell_of_key = np.zeros(len(unique_keys), np.int64)
    cell_of_key[key_codes] = doc * n_categories + category
    cells, cell_codes = np.unique(cell_of_key, return_inverse=True)
    cell_counts = {
        name: np.bincount(cell_codes, weights=values, minlength=len(cells))
        for name, values in (("tp", tp), ("fp", pred_count - tp), ("fn", gt_count - tp))
    }
    cell_counts["errors"] = np.maximum(cell_counts["fp"], cell_counts["fn"])
    per_doc = {
        name: np.bincount(cells // n_categories, weights=values, minlength=n_docs)
        for name, values in cell_counts.items()
    }
    per_doc["errors"] = np.maximum(per_doc["fp"], per_doc["fn"])
    per_category = {
        name: np.bincount(cells % max(n_categories, 1), weights=values, minlength=n_categories)
        for name, values in cell_counts.items()
    }
    return per_doc, per_category


def _table(counts: dict[str, np.ndarray], index: pd.Index) -> pd.DataFrame:
    """Counts plus the rates derived from them, in a stable column order."""
    n_gt, n_pred, tp = counts["n_gt"], counts["n_pred"], counts["nerval_tp"]
    counts = {**counts, "nerval_fp": n_pred - tp, "nerval_fn": n_gt - tp}
    with np.errstate(divide="ignore", invalid="ignore"):
        columns = {
            "n_gt": n_gt,
            "n_pred": n_pred,
            "ecer_errors": counts["ecer_errors"],
            "oiecer": np.where(n_gt > 0, counts["ecer_errors"] / n_gt, np.nan),
            "ewer_errors": counts["ewer_errors"],
            "oiewer": np.where(n_gt > 0, counts["ewer_errors"] / n_gt, np.nan),
        }
        for prefix, rate in [("nerval", None), *_BAGS.items()]:
            tp, fp, fn = (counts[f"{prefix}_{c}"] for c in ("tp", "fp", "fn"))
            columns.update({f"{prefix}_tp": tp, f"{prefix}_fp": fp, f"{prefix}_fn": fn})
            if rate:
                errors = counts[f"{prefix}_errors"]
                columns[f"{prefix}_errors"] = errors
                columns[f"{prefix}_{rate}"] = np.where(tp + fn > 0, errors / (tp + fn), np.nan)
            precision, recall, f1 = prf_columns(tp, fp, fn)
            columns.update(
                {f"{prefix}_precision": precision, f"{prefix}_recall": recall, f"{prefix}_f1": f1}
            )
    frame = pd.DataFrame(columns, index=index)
    integer = [
        c
        for c in frame.columns
        if c.endswith(("n_gt", "n_pred", "_tp", "_fp", "_fn")) or c in ("botw_errors", "boe_errors")
    ]
    return frame.astype(dict.fromkeys(integer, "int64"))


def _bag_score(totals: pd.Series, prefix: str) -> BagScore:
    return BagScore(*(int(totals[f"{prefix}_{c}"]) for c in ("tp", "fp", "fn", "errors")))
