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
from scipy.optimize import linear_sum_assignment

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

    Zero divisions follow ``ie-eval``: precision is 1.0 when nothing was predicted,
    recall 1.0 when there was nothing to find, F1 0.0 when both are 0.
    """

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class ErrorRate:
    """Summed errors over a number of ground-truth items; ``rate`` is NaN without any."""

    errors: float
    reference: int

    @property
    def rate(self) -> float:
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
    (0.175, 1.0, 1.0)
    >>> result.bag_of_tagged_words.tp, result.bag_of_entities.tp
    (1, 0)
    """
    if not 0.0 <= cer_threshold <= 1.0:
        msg = f"cer_threshold must be a fraction in [0, 1], got {cer_threshold!r}"
        raise ValueError(msg)
    docs = [(_entities(gt, i, "ground-truth"), _entities(pred, i, "predicted"))
            for i, (gt, pred) in enumerate(docs)]
    per_category = []
    for index, (gt, pred) in enumerate(docs):
        per_category.extend(
            (index, *row) for row in _assignment_counts(gt, pred, cer_threshold)
        )
    assigned = pd.DataFrame(per_category, columns=["doc", "category", "scope", *_ASSIGNMENT_COUNTS])
    whole = assigned[assigned.scope == "document"].set_index("doc")[_ASSIGNMENT_COUNTS]
    split = assigned[assigned.scope == "category"].drop(columns=["scope", "doc"])
    bags = {name: _bag_counts(docs, name) for name in _BAGS}

    documents = whole.reindex(range(len(docs)), fill_value=0)
    categories = split.groupby("category").sum()
    for name, (per_doc_cat, per_doc) in bags.items():
        documents = documents.join(per_doc.add_prefix(f"{name}_"))
        categories = categories.join(_sum_by_category(per_doc_cat).add_prefix(f"{name}_"),
                                     how="outer")
    documents = _derived_columns(documents.fillna(0).astype(_count_dtypes(documents)))
    categories = _derived_columns(categories.fillna(0).astype(_count_dtypes(categories)))

    totals = documents.sum(numeric_only=True)
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
        total = precision + recall
        f1 = np.where(total > 0, 2 * precision * recall / total, 0.0)
    return precision, recall, f1


def _entities(entities: Sequence[Entity], doc: int, side: str) -> list[Entity]:
    checked = list(entities)
    for position, entity in enumerate(checked):
        if not (
            isinstance(entity, tuple | list)
            and len(entity) == 2
            and all(isinstance(part, str) for part in entity)
        ):
            msg = (f"document {doc}: {side} entity {position} must be a (category, text) "
                   f"pair of strings, got {entity!r}")
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
    """Rows (category, scope, n_gt, n_pred, ecer_errors, ewer_errors, nerval_tp).

    One row with scope ``"document"`` for the whole document, then one per category
    (scope ``"category"``) computed on that category's entities alone.
    """
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

    def counts(rows: np.ndarray, cols: np.ndarray) -> tuple[int, int, float, float, int]:
        n, m = rows.size, cols.size
        block = np.ix_(rows, cols)
        unpaired = abs(n - m)
        return (
            n,
            m,
            _min_assignment(ecer_cost[block]) + unpaired,
            _min_assignment(ewer_cost[block]) + unpaired,
            min(n, m) - int(_min_assignment(miss[block])),
        )

    rows = [(None, "document", *counts(np.arange(len(gt)), np.arange(len(pred))))]
    for category in sorted(set(gt_cat) | set(pred_cat)):
        rows.append((category, "category", *counts(np.flatnonzero(gt_cat == category),
                                                   np.flatnonzero(pred_cat == category))))
    return rows


def _min_assignment(cost: np.ndarray) -> float:
    if cost.size == 0:
        return 0.0
    if min(cost.shape) == 1:
        return float(cost.min())
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


def _bag_counts(docs: list[tuple[list[Entity], list[Entity]]], bag: str):
    """Per (doc, category) and per doc TP/FP/FN/errors of a bag of tagged items."""
    items = [
        (doc, category, item, is_gt)
        for doc, (gt, pred) in enumerate(docs)
        for is_gt, entities in ((1, gt), (0, pred))
        for category, text in entities
        for item in (text.split() if bag == "botw" else (text,))
    ]
    frame = pd.DataFrame(items, columns=["doc", "category", "item", "gt"])
    frame["pred"] = 1 - frame["gt"]
    counts = frame.groupby(["doc", "category", "item"])[["gt", "pred"]].sum()
    tp = np.minimum(counts["gt"], counts["pred"])
    per_item = pd.DataFrame({"tp": tp, "fp": counts["pred"] - tp, "fn": counts["gt"] - tp})
    per_doc_cat = per_item.groupby(level=["doc", "category"]).sum()
    per_doc_cat["errors"] = np.maximum(per_doc_cat["fp"], per_doc_cat["fn"])
    per_doc = per_doc_cat[["tp", "fp", "fn"]].groupby(level="doc").sum()
    per_doc["errors"] = np.maximum(per_doc["fp"], per_doc["fn"])
    return per_doc_cat, per_doc


def _sum_by_category(per_doc_cat: pd.DataFrame) -> pd.DataFrame:
    return per_doc_cat.groupby(level="category").sum()


def _count_dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {c: "float64" if c.endswith(("ecer_errors", "ewer_errors")) else "int64"
            for c in frame.columns}


def _derived_columns(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    nerval_fp = frame.n_pred - frame.nerval_tp
    nerval_fn = frame.n_gt - frame.nerval_tp
    frame.insert(frame.columns.get_loc("nerval_tp") + 1, "nerval_fp", nerval_fp)
    frame.insert(frame.columns.get_loc("nerval_fp") + 1, "nerval_fn", nerval_fn)
    n_gt = frame.n_gt.where(frame.n_gt > 0)
    frame["oiecer"] = frame.ecer_errors / n_gt
    frame["oiewer"] = frame.ewer_errors / n_gt
    for prefix, rate in [("nerval", None), *_BAGS.items()]:
        tp, fp, fn = (frame[f"{prefix}_{c}"] for c in ("tp", "fp", "fn"))
        precision, recall, f1 = prf_columns(tp, fp, fn)
        frame[f"{prefix}_precision"] = precision
        frame[f"{prefix}_recall"] = recall
        frame[f"{prefix}_f1"] = f1
        if rate:
            reference = (tp + fn).where(tp + fn > 0)
            frame[f"{prefix}_{rate}"] = frame[f"{prefix}_errors"] / reference
    return frame


def _bag_score(totals: pd.Series, prefix: str) -> BagScore:
    return BagScore(*(int(totals[f"{prefix}_{c}"]) for c in ("tp", "fp", "fn", "errors")))
