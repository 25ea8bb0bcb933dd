"""The RPA review model (SPEC 4 and 4b): predictions below a confidence threshold go to a
person, who substitutes or deletes wrong values and never adds missing ones.

Everything derives from one :class:`ReviewModel`, built once per model: per prediction
its confidence and what reviewing it changes, per document what review cannot change.
Each reviewed wrong prediction removes exactly one error: it is substituted (becomes a
TP) when it is among the first ``g`` reviewed wrong values of a cell whose GT side
misses ``g`` values, and deleted otherwise. Hence, at threshold t,

* TP'(t) = TP + gains reviewed, errors left = additions + wrong predictions not reviewed;
* a document goes straight through when none of its predictions is reviewed, and is
  right after review when it has no addition and every wrong prediction is reviewed.

Curves are read at every distinct confidence (plus 0 and just above the largest) from
one sort and cumulative sums: exact, never a grid. A slice of documents is the same
model restricted (:meth:`ReviewModel.restrict`), so every figure exists per slice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from ..choices import MISSING_POLICIES as MISSING_POLICIES  # what a prediction without confidence counts as
from ..count.engine import Counted, run_ranks
from ..count.scores import aligned_score
from ..exceptions import KievalOptionError
from ..validation import (
    check_choice,
    check_columns,
    check_instance,
    check_int,
    check_length,
    check_number,
    check_share,
    check_threshold,
)

#: Reasons shown instead of automation figures.
NO_CONFIDENCE = "the predictions carry no confidence"
#: The policy of a model built from the engine's tables (SPEC 4c's default).
DEFAULT_MISSING = "review"
#: The per-prediction arrays of a :class:`ReviewModel`, in one canonical order.
PREDICTION_ARRAYS = ("confidence", "has_confidence", "doc", "entity_type", "wrong", "gain", "cell", "copies")


@dataclass(frozen=True)
class Costs:
    """What review and errors cost (SPEC 4b); any unit, defaults per SPEC.

    Parameters
    ----------
    per_review : float
        One reviewed prediction.
    per_document : float
        One document opened for review (at least one of its predictions reviewed).
    substitution, addition, deletion : float
        One error left after review, by kind.
    """

    per_review: float = 1.0
    per_document: float = 0.0
    substitution: float = 10.0
    addition: float = 10.0
    deletion: float = 10.0

    def __post_init__(self) -> None:
        for name in ("per_review", "per_document", "substitution", "addition", "deletion"):
            check_number(name, getattr(self, name), minimum=0, finite=True)

    def as_dict(self) -> dict:
        return {"per_review": self.per_review, "per_document": self.per_document,
                "per_escaped": {"substitution": self.substitution, "addition": self.addition,
                                "deletion": self.deletion}}

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[str, str]]) -> Costs:
        """From ``NAME=VALUE`` pairs (``review``, ``document``, ``substitution``,
        ``addition``, ``deletion``, or ``escaped`` for all three kinds).

        >>> Costs.from_pairs([("review", "2"), ("escaped", "25")]).addition
        25.0
        """
        names = {"review": "per_review", "document": "per_document", "substitution": "substitution",
                 "addition": "addition", "deletion": "deletion"}
        values: dict[str, float] = {}
        for name, raw in pairs:
            try:
                value = float(raw)
            except ValueError:
                msg = f"cost {name!r}: {raw!r} is not a number"
                raise KievalOptionError(msg) from None
            if not value >= 0:
                msg = f"cost {name!r} must be >= 0, got {raw}"
                raise KievalOptionError(msg)
            if name == "escaped":
                values.update(substitution=value, addition=value, deletion=value)
            elif name in names:
                values[names[name]] = value
            else:
                msg = f"unknown cost {name!r}; use {', '.join([*names, 'escaped'])}"
                raise KievalOptionError(msg)
        return cls(**values)


def canonical_order(doc: np.ndarray, entity_type: np.ndarray, confidence: np.ndarray, *flags: np.ndarray
                    ) -> np.ndarray:
    """The stable sort of the predictions by document, entity type, confidence, then the
    boolean ``flags`` in turn: ``np.lexsort`` of those keys, from one sort of the
    confidences (their dense ranks) and one stable sort of the keys packed into one integer
    (``np.lexsort`` itself when they would not fit).

    >>> canonical_order(np.array([1, 0, 0]), np.array([0, 0, 0]), np.array([0.5, 0.9, 0.2]),
    ...                 np.array([True, False, True])).tolist()
    [2, 1, 0]
    """
    columns = [np.asarray(c, np.int64) for c in (doc, entity_type)]
    low = [int(c.min(initial=0)) for c in columns]
    spans = [int(c.max(initial=0)) - m + 1 for c, m in zip(columns, low, strict=True)]
    distinct, rank = np.unique(confidence, return_inverse=True)
    size = spans[0] * spans[1] * max(len(distinct), 1) * 2 ** len(flags)
    if size >= 1 << 62 or np.isnan(distinct).any():
        return np.lexsort((*reversed(flags), confidence, entity_type, doc))
    key = (columns[0] - low[0]) * spans[1] + (columns[1] - low[1])
    key = key * max(len(distinct), 1) + rank.reshape(-1)
    for flag in flags:
        key = key * 2 + np.asarray(flag, bool)
    return np.argsort(key, kind="stable")


@dataclass(frozen=True, eq=False)
class ReviewModel:
    """What review can change, per prediction, and what it cannot, per document.

    Build it with :meth:`from_counted` (or :meth:`merge` partial models of disjoint
    documents). Arrays are per prediction, in a canonical order (so every float sum is the
    same whatever the order of the input files), except the ``base_*`` arrays: TPs and
    additions per (entity type, document), which review leaves as they are.
    """

    confidence: np.ndarray  # a missing one counts as -inf (reviewed) or 1.0 (automated): MISSING_POLICIES
    has_confidence: np.ndarray
    doc: np.ndarray  # index into doc_ids
    entity_type: np.ndarray  # index into entity_types
    wrong: np.ndarray  # an FP: substituted or deleted
    gain: np.ndarray  # reviewing it substitutes it (it becomes a TP)
    cell: np.ndarray  # its cell (pair, entity type): ids unique within the model
    copies: np.ndarray  # identical values of one cell share an id: the most confident are the TPs
    doc_ids: tuple[str, ...]
    entity_types: tuple[str, ...]
    base_type: np.ndarray
    base_doc: np.ndarray
    base_tp: np.ndarray
    base_addition: np.ndarray

    @classmethod
    def from_counted(cls, counted: Counted, confidence: np.ndarray | None = None,
                     has_confidence: np.ndarray | None = None) -> ReviewModel:
        """The model of the engine's tables. ``confidence`` (one per predicted entity, in
        the table's order) replaces the file's own, e.g. consensus confidences
        (:mod:`kieval_core.result.consensus`); ``has_confidence`` then says which of them count
        as carrying one (default: all). A missing confidence follows :data:`DEFAULT_MISSING`."""
        pred, cells = counted.pred_entities, counted.cells
        conf = pred["confidence"].to_numpy(np.float64)
        wrong = (pred["status"] != "correct").to_numpy()
        cell = pred["cell"].to_numpy().astype(np.int64)
        if confidence is None:
            review_conf, has = np.nan_to_num(conf, nan=1.0), ~np.isnan(conf)  # the engine's reading
        else:
            review_conf = np.asarray(confidence, np.float64)
            has = np.ones(len(conf), bool) if has_confidence is None else np.asarray(has_confidence, bool)
        gain = np.zeros(len(conf), bool)
        fps = np.flatnonzero(wrong)
        order = fps[np.lexsort((fps, review_conf[fps], cell[fps]))]
        gain[order] = run_ranks(cell[order]) < cells["fn"].to_numpy()[cell[order]]
        # identical values of one cell (the engine's code; packed with the cell so that
        # concatenated partitions of a distributed run stay apart)
        same = pred["copies"].to_numpy(np.int64)
        copies = np.unique(cell * (int(same.max(initial=0)) + 1) + same, return_inverse=True)[1]
        base = cells.groupby([cells["entity_type"].cat.codes, cells["doc_id"].cat.codes])[
            ["tp", "addition"]].sum()
        base = base[(base["tp"] > 0) | (base["addition"] > 0)]
        model = cls._canonical(
            confidence=review_conf, has_confidence=has,
            doc=pred["doc_id"].cat.codes.to_numpy().astype(np.int64),
            entity_type=pred["entity_type"].cat.codes.to_numpy().astype(np.int64),
            wrong=wrong, gain=gain, cell=cell, copies=copies.astype(np.int64), doc_ids=tuple(counted.doc_ids),
            entity_types=tuple(str(t) for t in pred["entity_type"].cat.categories),
            base_type=base.index.get_level_values(0).to_numpy(np.int64),
            base_doc=base.index.get_level_values(1).to_numpy(np.int64),
            base_tp=base["tp"].to_numpy(np.int64), base_addition=base["addition"].to_numpy(np.int64),
        )
        return model.with_missing(DEFAULT_MISSING) if confidence is None else model

    @classmethod
    def _canonical(cls, **arrays) -> ReviewModel:
        order = canonical_order(arrays["doc"], arrays["entity_type"], arrays["confidence"],
                                arrays["has_confidence"], arrays["wrong"], arrays["gain"])
        for key in PREDICTION_ARRAYS:
            arrays[key] = arrays[key][order]
        base = np.lexsort((arrays["base_doc"], arrays["base_type"]))
        for key in ("base_type", "base_doc", "base_tp", "base_addition"):
            arrays[key] = arrays[key][base]
        return cls(**arrays)

    @classmethod
    def merge(cls, parts: list[ReviewModel]) -> ReviewModel:
        """One model from partial models of disjoint sets of documents (a distributed
        run): identical to the model of the whole corpus."""
        doc_ids = np.asarray(sorted(d for part in parts for d in part.doc_ids), dtype=object)
        types = sorted({t for part in parts for t in part.entity_types})
        doc_index, type_index = pd.Index(doc_ids), pd.Index(types)
        keys = (*PREDICTION_ARRAYS, "base_type", "base_doc", "base_tp", "base_addition")
        arrays: dict[str, list] = {k: [] for k in keys}
        offsets = {"cell": 0, "copies": 0}
        for part in parts:
            docs = doc_index.get_indexer(np.asarray(part.doc_ids, dtype=object))
            kinds = type_index.get_indexer(list(part.entity_types))
            for key in ("confidence", "has_confidence", "wrong", "gain", "base_tp", "base_addition"):
                arrays[key].append(getattr(part, key))
            for key in offsets:  # ids stay unique across parts
                ids = getattr(part, key)
                arrays[key].append(ids + offsets[key])
                offsets[key] += int(ids.max(initial=-1)) + 1
            arrays["doc"].append(docs[part.doc])
            arrays["entity_type"].append(kinds[part.entity_type])
            arrays["base_doc"].append(docs[part.base_doc])
            arrays["base_type"].append(kinds[part.base_type])
        joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in arrays.items()}
        return cls._canonical(doc_ids=tuple(doc_ids), entity_types=tuple(types), **joined)

    # --- shape ------------------------------------------------------------------------

    @property
    def n_documents(self) -> int:
        return len(self.doc_ids)

    @property
    def n_predictions(self) -> int:
        return len(self.confidence)

    @property
    def doc_tp(self) -> np.ndarray:
        return np.bincount(self.base_doc, weights=self.base_tp, minlength=self.n_documents).astype(np.int64)

    @property
    def doc_addition(self) -> np.ndarray:
        return np.bincount(self.base_doc, weights=self.base_addition,
                           minlength=self.n_documents).astype(np.int64)

    @property
    def tp(self) -> int:
        return int(self.base_tp.sum())

    @property
    def addition(self) -> int:
        return int(self.base_addition.sum())

    @property
    def substitution(self) -> int:
        """Substitutions before review: every cell's first min(FP, FN) wrong values, which
        are exactly the wrong predictions whose review substitutes them."""
        return int(self.gain.sum())

    def restrict(self, documents: np.ndarray) -> ReviewModel:
        """The model on a subset of documents (a boolean mask over ``doc_ids``)."""
        documents = np.asarray(documents, bool)
        keep, base = documents[self.doc], documents[self.base_doc]
        new_code = np.cumsum(documents) - 1
        part = ReviewModel(
            confidence=self.confidence[keep], has_confidence=self.has_confidence[keep],
            doc=new_code[self.doc[keep]], entity_type=self.entity_type[keep], wrong=self.wrong[keep],
            gain=self.gain[keep], cell=self.cell[keep], copies=self.copies[keep],
            doc_ids=tuple(np.asarray(self.doc_ids, object)[documents]),
            entity_types=self.entity_types, base_type=self.base_type[base],
            base_doc=new_code[self.base_doc[base]], base_tp=self.base_tp[base],
            base_addition=self.base_addition[base],
        )
        if "by_confidence" in self.__dict__:  # sorted already: the part's order is read off it
            order = self.by_confidence
            part.__dict__["by_confidence"] = (np.cumsum(keep) - 1)[order[keep[order]]]
        return part

    def of_type(self, code: int) -> ReviewModel:
        """The model of one entity type alone (its predictions, TPs and additions)."""
        keep, base = self.entity_type == code, self.base_type == code
        return ReviewModel(
            confidence=self.confidence[keep], has_confidence=self.has_confidence[keep],
            doc=self.doc[keep], entity_type=np.zeros(int(keep.sum()), np.int64), wrong=self.wrong[keep],
            gain=self.gain[keep], cell=self.cell[keep], copies=self.copies[keep], doc_ids=self.doc_ids,
            entity_types=(self.entity_types[code],),
            base_type=np.zeros(int(base.sum()), np.int64), base_doc=self.base_doc[base],
            base_tp=self.base_tp[base], base_addition=self.base_addition[base],
        )

    def by_type(self) -> tuple[list[ReviewModel], list[np.ndarray]]:
        """:meth:`of_type` of every entity type, in the order of ``entity_types``, from one
        sort; and per type the indexes of its predictions in this model (its part of any
        per-prediction array). Each part's confidence order is read off this model's (a
        stable sort keeps the order of the part's predictions among equal confidences)."""
        # type codes as int16 where they fit: numpy's stable sort of them is a radix sort
        kinds = self.entity_type.astype(np.int16 if len(self.entity_types) < 1 << 15 else np.int64)
        order = np.argsort(kinds, kind="stable")
        codes = np.arange(len(self.entity_types) + 1)
        ends = np.searchsorted(self.entity_type[order], codes)
        place = np.empty(len(order), np.int64)
        place[order] = np.arange(len(order))  # each prediction's row among the parts
        by_confidence = self.by_confidence
        # every prediction's row among the parts, in confidence order within each type
        rows_by_confidence = place[by_confidence][np.argsort(kinds[by_confidence], kind="stable")]
        base_order = np.argsort(self.base_type, kind="stable")
        base_ends = np.searchsorted(self.base_type[base_order], codes)
        arrays = {k: getattr(self, k)[order] for k in PREDICTION_ARRAYS if k != "entity_type"}
        base = {k: getattr(self, k)[base_order] for k in ("base_doc", "base_tp", "base_addition")}
        parts = []
        for code, name in enumerate(self.entity_types):
            rows, base_rows = slice(ends[code], ends[code + 1]), slice(base_ends[code], base_ends[code + 1])
            parts.append(ReviewModel(
                **{k: v[rows] for k, v in arrays.items()}, **{k: v[base_rows] for k, v in base.items()},
                entity_type=np.zeros(rows.stop - rows.start, np.int64), doc_ids=self.doc_ids,
                entity_types=(name,), base_type=np.zeros(base_rows.stop - base_rows.start, np.int64)))
            parts[-1].__dict__["by_confidence"] = rows_by_confidence[rows] - rows.start  # the cached property
        return parts, [order[ends[code]:ends[code + 1]] for code in range(len(self.entity_types))]

    def with_confidence(self, confidence: np.ndarray, has_confidence: np.ndarray) -> ReviewModel:
        """The same predictions reviewed by other confidences (one per prediction, in this
        model's order). Counts stay as they are; what follows the confidences follows them:
        which identical copies of a cell are its TPs (the most confident, SPEC 4) and which
        wrong values of a cell review substitutes (the least confident first)."""
        confidence = np.asarray(confidence, np.float64)
        if self._keeps_its_order(confidence, np.asarray(has_confidence, bool)):
            return replace(self, confidence=confidence)
        _, group = np.unique(self.copies, return_inverse=True)
        right = np.bincount(group, weights=~self.wrong, minlength=group.max(initial=-1) + 1)
        order = np.lexsort((-confidence, group))
        wrong = np.empty(self.n_predictions, bool)
        wrong[order] = run_ranks(group[order]) >= right[group[order]]
        _, cell = np.unique(self.cell, return_inverse=True)
        gains = np.bincount(cell, weights=self.gain, minlength=cell.max(initial=-1) + 1)
        fps = np.flatnonzero(wrong)
        order = fps[np.lexsort((confidence[fps], cell[fps]))]
        gain = np.zeros(self.n_predictions, bool)
        gain[order] = run_ranks(cell[order]) < gains[cell[order]]
        arrays = {k: getattr(self, k) for k in PREDICTION_ARRAYS}
        arrays.update(confidence=confidence, has_confidence=np.asarray(has_confidence, bool), wrong=wrong,
                      gain=gain)
        return ReviewModel._canonical(
            **arrays, doc_ids=self.doc_ids, entity_types=self.entity_types, base_type=self.base_type,
            base_doc=self.base_doc, base_tp=self.base_tp, base_addition=self.base_addition)

    def _keeps_its_order(self, confidence: np.ndarray, has_confidence: np.ndarray) -> bool:
        """Whether :meth:`with_confidence` would give this model with only the confidences
        replaced: one confidence for all, before and after (predictions without any, read by
        the missing-confidence policy), the same flags, and no cell where review substitutes
        some of its wrong values but not all. The copies of a value then share every key of
        the canonical order, their TPs first, so the same copies stay TPs; the wrong values
        of a cell are in an order where those review substitutes come last, so only a cell
        with both kinds would see them chosen otherwise."""
        arrays = (self.confidence, confidence, has_confidence)
        if not all(not len(a) or bool((a == a[0]).all()) for a in arrays) or not np.array_equal(
                has_confidence, self.has_confidence):
            return False
        gains = np.bincount(self.cell, weights=self.gain)  # cell ids: rows of a table, >= 0
        return bool(((gains == 0) | (gains == np.bincount(self.cell, weights=self.wrong))).all())

    def with_missing(self, policy: str) -> ReviewModel:
        """Predictions without confidence reviewed at every threshold, 0 included
        (``review``, the default: they count as -inf) or automated (``automate``: 1.0)."""
        if policy not in MISSING_POLICIES:
            msg = f"unknown missing-confidence policy {policy!r}; choose {' or '.join(MISSING_POLICIES)}"
            raise KievalOptionError(msg)
        confidence = np.where(self.has_confidence, self.confidence, MISSING_POLICIES[policy])
        if np.array_equal(confidence, self.confidence):
            return self
        return self.with_confidence(confidence, self.has_confidence)

    @cached_property
    def by_confidence(self) -> np.ndarray:
        """The predictions' indexes in confidence order (a stable sort), sorted once per
        model for its curve, its thresholds and its bootstrap."""
        return np.argsort(self.confidence, kind="stable")

    @cached_property
    def taus(self) -> np.ndarray:
        """:func:`thresholds` of the confidences, read off their sorted order."""
        return thresholds(self.confidence, self.confidence[self.by_confidence])

    # --- per document -----------------------------------------------------------------

    def per_document(self, values: np.ndarray) -> np.ndarray:
        """Sum of a per-prediction array over each document's predictions."""
        return np.bincount(self.doc, weights=values, minlength=self.n_documents).astype(np.int64)

    @property
    def doc_errors(self) -> np.ndarray:
        """Errors per document before review: its wrong predictions and its additions."""
        return self.per_document(self.wrong) + self.doc_addition

    @property
    def doc_gt(self) -> np.ndarray:
        """GT entities per document: TPs, substitutions and additions (FN = Subs + Add)."""
        return self.doc_tp + self.per_document(self.gain) + self.doc_addition

    def thresholds_of(self, threshold: float | Mapping[str, float] | np.ndarray) -> np.ndarray:
        """The threshold of every prediction: one for all, one per entity type (types
        missing from the mapping are never reviewed), or already one per prediction."""
        if isinstance(threshold, np.ndarray):
            return threshold
        if isinstance(threshold, Mapping):
            per_type = np.array([float(threshold.get(t, 0.0)) for t in self.entity_types] + [0.0])
            return per_type[self.entity_type]
        return np.full(self.n_predictions, float(threshold))


#: The columns of :func:`confidence_by_field`.
CONFIDENCE_BY_FIELD_COLUMNS = ["entity_type", "predictions", "without_confidence", "share_without_confidence"]


def confidence_by_field(model: ReviewModel) -> pd.DataFrame:
    """Per entity type with predictions: how many carry no confidence, and their share
    (SPEC 4c: the missing-confidence policy decides what happens to them).

    >>> m = ReviewModel(
    ...     confidence=np.array([0.9, -np.inf, 0.5]), has_confidence=np.array([True, False, True]),
    ...     doc=np.array([0, 0, 0]), entity_type=np.array([0, 1, 1]), wrong=np.zeros(3, bool),
    ...     gain=np.zeros(3, bool), cell=np.array([0, 1, 1]), copies=np.array([0, 1, 2]),
    ...     doc_ids=("d",), entity_types=("total", "date"), base_type=np.array([0, 1]),
    ...     base_doc=np.array([0, 0]), base_tp=np.array([1, 2]), base_addition=np.array([0, 0]))
    >>> confidence_by_field(m).to_dict("records")[1]
    {'entity_type': 'date', 'predictions': 2, 'without_confidence': 1, 'share_without_confidence': 0.5}
    """
    kinds = len(model.entity_types)
    predictions = np.bincount(model.entity_type, minlength=kinds)
    without = np.bincount(model.entity_type, weights=~model.has_confidence, minlength=kinds).astype(np.int64)
    present = predictions > 0
    return pd.DataFrame({
        "entity_type": np.asarray(model.entity_types, object)[present],
        "predictions": predictions[present].astype(np.int64),
        "without_confidence": without[present],
        "share_without_confidence": without[present] / predictions[present],
    })[CONFIDENCE_BY_FIELD_COLUMNS]


#: The columns of :func:`automation_blockers`.
BLOCKER_COLUMNS = ["entity_type", "opened_documents", "only_field_reviewed", "straight_through_gain"]


def automation_blockers(model: ReviewModel, limits: np.ndarray) -> pd.DataFrame:
    """Which fields keep documents from going straight through (SPEC 4d), with one threshold
    per prediction: per entity type, the documents in which it has a reviewed prediction,
    those in which it is the only field reviewed, and the straight-through rate gained if
    that field alone were always automated (those documents over all documents).

    >>> m = ReviewModel(
    ...     confidence=np.array([0.2, 0.3, 0.9]), has_confidence=np.ones(3, bool),
    ...     doc=np.array([0, 1, 1]), entity_type=np.array([0, 0, 1]), wrong=np.zeros(3, bool),
    ...     gain=np.zeros(3, bool), cell=np.array([0, 1, 2]), copies=np.array([0, 1, 2]),
    ...     doc_ids=("a", "b"), entity_types=("date", "total"), base_type=np.array([0, 1]),
    ...     base_doc=np.array([0, 1]), base_tp=np.array([2, 1]), base_addition=np.array([0, 0]))
    >>> automation_blockers(m, np.full(3, 0.5)).to_dict("records")[0]
    {'entity_type': 'date', 'opened_documents': 2, 'only_field_reviewed': 2, 'straight_through_gain': 1.0}
    """
    limits = check_length("limits", limits, model.n_predictions, "prediction")
    kinds, n_docs = len(model.entity_types), model.n_documents
    reviewed = model.confidence < limits
    pairs = np.unique(model.doc[reviewed] * kinds + model.entity_type[reviewed])  # (document, field) reviewed
    doc, kind = pairs // max(kinds, 1), pairs % max(kinds, 1)
    alone = np.bincount(doc, minlength=n_docs)[doc] == 1
    opened = np.bincount(kind, minlength=kinds)
    only = np.bincount(kind[alone], minlength=kinds)
    return pd.DataFrame({
        "entity_type": list(model.entity_types),
        "opened_documents": opened.astype(np.int64),
        "only_field_reviewed": only.astype(np.int64),
        "straight_through_gain": only / n_docs if n_docs else np.zeros(kinds),
    })[BLOCKER_COLUMNS]


def threshold_text(tau: float | None, short: bool = False) -> str:
    """A threshold τ for people. Curves end just above the largest confidence, where every
    prediction is reviewed: above 1 that reads "> 1 (review all)" ("> 1" when ``short``),
    and a τ just above a confidence that four decimals would round down reads "> 0.9993",
    so nobody sets 0.9993 and gets another operating point.

    >>> threshold_text(0.66754), threshold_text(0.6675), threshold_text(1.0000000000000002)
    ('0.6675', '0.6675', '> 1 (review all)')
    >>> threshold_text(0.9993000000000001), threshold_text(1.0000000000000002, short=True)
    ('> 0.9993', '> 1')
    >>> threshold_text(None)
    'n/a'
    """
    if tau is None or tau != tau:
        return "n/a"
    if tau > 1.0:
        return "> 1" if short else "> 1 (review all)"
    text = f"{tau:.4f}"
    return f"> {text}" if 0 < tau - float(text) < 1e-9 else text


# --- one operating point ------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewPoint:
    """Every figure at one operating point (a threshold, or one per entity type)."""

    predictions: int
    reviewed: int
    auto_rate: float
    substituted_by_review: int
    deleted_by_review: int
    substitution: int  # errors left after review, by kind
    addition: int
    deletion: int
    tp_after: int
    kieval_aligned: float
    documents: int
    straight_through: int
    straight_through_rate: float
    correct_documents: int
    document_accuracy: float
    opened_documents: int
    reviews_per_1000_documents: float
    cost: float
    cost_per_1000_documents: float
    added_by_review: int = 0  # whole-document review only
    review: str = "predictions"  # what a person reviews: "predictions" or whole "documents"

    @property
    def errors_left(self) -> int:
        """Corrections still needed after review: substitutions + additions + deletions left."""
        return self.substitution + self.addition + self.deletion

    def as_dict(self) -> dict:
        return {**asdict(self), "errors_left": self.errors_left}


def review_at(model: ReviewModel, threshold: float | Mapping[str, float],
              costs: Costs = Costs()) -> ReviewPoint:
    """The review at ``threshold`` (SPEC 4): one threshold, or ``{entity type: threshold}``.

    One document: a right total at 0.9, a wrong date at 0.2 where a date is missing.

    >>> m = ReviewModel(
    ...     confidence=np.array([0.9, 0.2]), has_confidence=np.array([True, True]),
    ...     doc=np.array([0, 0]), entity_type=np.array([0, 1]), wrong=np.array([False, True]),
    ...     gain=np.array([False, True]), cell=np.array([0, 1]), copies=np.array([0, 1]),
    ...     doc_ids=("d",), entity_types=("total", "date"),
    ...     base_type=np.array([0]), base_doc=np.array([0]), base_tp=np.array([1]),
    ...     base_addition=np.array([0]))
    >>> review_at(m, 0.0).kieval_aligned, review_at(m, 0.5).kieval_aligned
    (0.5, 1.0)
    """
    check_threshold("threshold", threshold, model.entity_types)
    return review_with(model, model.thresholds_of(threshold), costs)


def review_with(model: ReviewModel, limits: np.ndarray, costs: Costs = Costs()) -> ReviewPoint:
    """The review with one threshold per prediction (e.g. a threshold per slice of
    documents): a prediction is reviewed when its confidence is below its limit."""
    limits = check_length("limits", limits, model.n_predictions, "prediction")
    check_instance("costs", costs, Costs)
    return _point(model, model.confidence < limits, costs)


def _point(model: ReviewModel, reviewed: np.ndarray, costs: Costs) -> ReviewPoint:
    n_docs = model.n_documents
    n = model.n_predictions
    gained = int((reviewed & model.gain).sum())
    wrong_reviewed = int((reviewed & model.wrong).sum())
    substitution = model.substitution - gained
    deletion = int(model.wrong.sum()) - model.substitution - (wrong_reviewed - gained)
    addition = model.addition
    tp_after = model.tp + gained
    opened = np.zeros(n_docs, bool)
    opened[model.doc[reviewed]] = True
    escaped = np.zeros(n_docs, bool)
    escaped[model.doc[model.wrong & ~reviewed]] = True
    correct = ~escaped & (model.doc_addition == 0)
    straight = n_docs - int(opened.sum())
    cost = (costs.per_review * int(reviewed.sum()) + costs.per_document * int(opened.sum())
            + costs.substitution * substitution + costs.addition * addition + costs.deletion * deletion)
    return ReviewPoint(
        predictions=n, reviewed=int(reviewed.sum()),
        auto_rate=1.0 - int(reviewed.sum()) / n if n else 1.0,
        substituted_by_review=gained, deleted_by_review=wrong_reviewed - gained,
        substitution=substitution, addition=addition, deletion=deletion, tp_after=tp_after,
        kieval_aligned=float(aligned_score(tp_after, substitution + addition + deletion)),
        documents=n_docs, straight_through=straight,
        straight_through_rate=straight / n_docs if n_docs else 1.0,
        correct_documents=int(correct.sum()),
        document_accuracy=int(correct.sum()) / n_docs if n_docs else 1.0,
        opened_documents=int(opened.sum()),
        reviews_per_1000_documents=1000.0 * int(reviewed.sum()) / n_docs if n_docs else 0.0,
        cost=float(cost), cost_per_1000_documents=1000.0 * cost / n_docs if n_docs else 0.0,
    )


# --- whole-document review (SPEC 4c) -----------------------------------------------------

def review_documents_with(model: ReviewModel, limits: np.ndarray, costs: Costs = Costs()) -> ReviewPoint:
    """Whole-document review (SPEC 4c): a document with any prediction below its limit is
    opened and corrected entirely, additions included; the others keep their errors."""
    limits = check_length("limits", limits, model.n_predictions, "prediction")
    check_instance("costs", costs, Costs)
    n_docs, n = model.n_documents, model.n_predictions
    opened = np.zeros(n_docs, bool)
    opened[model.doc[model.confidence < limits]] = True
    kept = ~opened
    substitution_doc = model.per_document(model.gain)
    deletion_doc = model.per_document(model.wrong & ~model.gain)
    reviewed = int(model.per_document(np.ones(n))[opened].sum())
    substitution, deletion = int(substitution_doc[kept].sum()), int(deletion_doc[kept].sum())
    addition = int(model.doc_addition[kept].sum())
    tp_after = model.tp + int((model.doc_gt - model.doc_tp)[opened].sum())
    correct = int((opened | (model.doc_errors == 0)).sum())
    n_opened = int(opened.sum())
    cost = (costs.per_review * reviewed + costs.per_document * n_opened + costs.substitution * substitution
            + costs.addition * addition + costs.deletion * deletion)
    return ReviewPoint(
        predictions=n, reviewed=reviewed, auto_rate=1.0 - reviewed / n if n else 1.0,
        substituted_by_review=int(substitution_doc[opened].sum()),
        deleted_by_review=int(deletion_doc[opened].sum()),
        substitution=substitution, addition=addition, deletion=deletion, tp_after=tp_after,
        kieval_aligned=float(aligned_score(tp_after, substitution + addition + deletion)),
        documents=n_docs, straight_through=n_docs - n_opened,
        straight_through_rate=(n_docs - n_opened) / n_docs if n_docs else 1.0,
        correct_documents=correct, document_accuracy=correct / n_docs if n_docs else 1.0,
        opened_documents=n_opened, reviews_per_1000_documents=1000.0 * reviewed / n_docs if n_docs else 0.0,
        cost=float(cost), cost_per_1000_documents=1000.0 * cost / n_docs if n_docs else 0.0,
        added_by_review=int(model.doc_addition[opened].sum()), review="documents",
    )


#: The columns of :func:`review_by_entity_type` and :func:`review_documents_by_entity_type`.
REVIEW_BY_TYPE_COLUMNS = ["entity_type", "predictions", "reviewed", "fixed", "substitution", "addition",
                          "deletion", "errors_left", "tp_after", "kieval_aligned"]


def review_documents_by_entity_type(model: ReviewModel, limits: np.ndarray) -> pd.DataFrame:
    """Per entity type under whole-document review with one threshold per prediction: the
    columns of :func:`review_by_entity_type` (``fixed``: the errors of opened documents,
    additions included); the rows sum to the totals of :func:`review_documents_with`."""
    limits = check_length("limits", limits, model.n_predictions, "prediction")
    opened = np.zeros(model.n_documents, bool)
    opened[model.doc[model.confidence < limits]] = True  # a document opened by any field opens every field
    rows = []
    for name, part in zip(model.entity_types, model.by_type()[0], strict=True):
        inside, base_inside = opened[part.doc], opened[part.base_doc]
        substitution = int((part.gain & ~inside).sum())
        deletion = int((part.wrong & ~part.gain & ~inside).sum())
        addition = int(part.base_addition[~base_inside].sum())
        added = int(part.base_addition[base_inside].sum())
        tp_after = part.tp + int((part.gain & inside).sum()) + added
        errors_left = substitution + addition + deletion
        rows.append({"entity_type": name, "predictions": part.n_predictions, "reviewed": int(inside.sum()),
                     "fixed": int((part.wrong & inside).sum()) + added, "substitution": substitution,
                     "addition": addition, "deletion": deletion, "errors_left": errors_left,
                     "tp_after": tp_after, "kieval_aligned": float(aligned_score(tp_after, errors_left))})
    return pd.DataFrame(rows, columns=REVIEW_BY_TYPE_COLUMNS)


#: The columns of :func:`document_review_curve`.
DOCUMENT_REVIEW_COLUMNS = ["threshold", "straight_through_rate", "kieval_aligned", "document_accuracy",
                           "cost_per_1000_documents", "auto_rate", "reviewed", "opened_documents",
                           "substitution", "addition", "deletion", "cost"]


def document_review_curve(model: ReviewModel, costs: Costs = Costs()) -> pd.DataFrame:
    """Whole-document review at every threshold of :func:`thresholds` (SPEC 4c): the
    straight-through rate, accuracy after review (KIEval_Aligned with opened documents
    fully right), the share of documents right, and the cost. ``auto_rate`` and
    ``reviewed`` count the predictions of documents not opened / opened.

    A document is opened from the threshold just above its least confident prediction, so
    sorting documents by that confidence makes every figure a cumulative sum.
    """
    check_instance("costs", costs, Costs)
    taus = model.taus
    n_docs, n = model.n_documents, model.n_predictions
    least = np.full(n_docs, np.inf)
    np.minimum.at(least, model.doc, model.confidence)
    order = np.argsort(least, kind="stable")
    opened = np.searchsorted(least[order], taus, side="left")

    def in_opened(per_doc: np.ndarray) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(per_doc[order])])[opened]

    substitution_doc = model.per_document(model.gain)
    deletion_doc = model.per_document(model.wrong & ~model.gain)
    substitution = int(substitution_doc.sum()) - in_opened(substitution_doc)
    deletion = int(deletion_doc.sum()) - in_opened(deletion_doc)
    addition = model.addition - in_opened(model.doc_addition)
    tp_after = model.tp + in_opened(model.doc_gt - model.doc_tp)
    reviewed = in_opened(model.per_document(np.ones(n)))
    clean = (model.doc_errors == 0).astype(np.int64)
    correct = opened + int(clean.sum()) - in_opened(clean)
    cost = (costs.per_review * reviewed + costs.per_document * opened + costs.substitution * substitution
            + costs.addition * addition + costs.deletion * deletion).astype(np.float64)
    ones = np.ones(len(taus))
    return pd.DataFrame({
        "threshold": taus,
        "straight_through_rate": 1.0 - opened / n_docs if n_docs else ones,
        "kieval_aligned": aligned_score(tp_after, substitution + addition + deletion),
        "document_accuracy": correct / n_docs if n_docs else ones,
        "cost_per_1000_documents": cost * 1000.0 / n_docs if n_docs else cost * 0.0,
        "auto_rate": 1.0 - reviewed / n if n else ones,
        "reviewed": reviewed.astype(np.int64),
        "opened_documents": opened.astype(np.int64),
        "substitution": substitution.astype(np.int64),
        "addition": addition.astype(np.int64),
        "deletion": deletion.astype(np.int64),
        "cost": cost,
    })[DOCUMENT_REVIEW_COLUMNS]


def review_by_entity_type(model: ReviewModel, threshold: float | Mapping[str, float] | np.ndarray
                          ) -> pd.DataFrame:
    """Per entity type at ``threshold``: predictions, reviewed, fixed by review, errors left
    by kind, accuracy after review. The review model decomposes by entity type (cells are
    per entity type), so the rows sum to the totals of :func:`review_at`."""
    if isinstance(threshold, np.ndarray):
        check_length("threshold", threshold, model.n_predictions, "prediction")
    else:
        check_threshold("threshold", threshold, model.entity_types)
    limits = model.thresholds_of(threshold)
    rows = []
    for name, part, mine in zip(model.entity_types, *model.by_type(), strict=True):
        point = _point(part, part.confidence < limits[mine], Costs())
        rows.append({"entity_type": name, "predictions": point.predictions, "reviewed": point.reviewed,
                     "fixed": point.substituted_by_review, "substitution": point.substitution,
                     "addition": point.addition, "deletion": point.deletion, "errors_left": point.errors_left,
                     "tp_after": point.tp_after, "kieval_aligned": point.kieval_aligned})
    return pd.DataFrame(rows, columns=REVIEW_BY_TYPE_COLUMNS)


# --- the curve ----------------------------------------------------------------------------

CURVE_COLUMNS = ["threshold", "auto_rate", "kieval_aligned", "reviewed", "substitution", "addition",
                 "deletion", "straight_through_rate", "document_accuracy", "opened_documents"]


def thresholds(confidence: np.ndarray, ordered: np.ndarray | None = None) -> np.ndarray:
    """0, every distinct confidence, and just above the largest (SPEC 4); a missing
    confidence reviewed at every threshold (-inf) is no threshold of its own. ``ordered``,
    the confidences sorted, spares the sort (unless one is 0, whose sign the sort picks).

    >>> thresholds(np.array([0.5, 0.2, 0.5, -np.inf])).tolist()
    [0.0, 0.2, 0.5, 0.5000000000000001]
    >>> thresholds(np.array([0.5, 0.2, 0.5, -np.inf]), np.array([-np.inf, 0.2, 0.5, 0.5])).tolist()
    [0.0, 0.2, 0.5, 0.5000000000000001]
    """
    if ordered is not None:
        finite = ordered[np.isfinite(ordered)]
        if len(finite) and not (finite == 0).any():
            distinct = finite[np.concatenate([[True], finite[1:] != finite[:-1]])]
            zero, end = int(np.searchsorted(distinct, 0.0)), np.nextafter(distinct[-1], np.inf)
            return np.concatenate([distinct[:zero], [0.0], distinct[zero:], [end]])
    confidence = confidence[np.isfinite(confidence)]
    ends = [np.nextafter(confidence.max(), np.inf)] if len(confidence) else []
    return np.unique(np.concatenate([[0.0], confidence, ends]))


def automation_curve(model: ReviewModel) -> pd.DataFrame:
    """The exact curve at every threshold of :func:`thresholds`: entity level (automation
    rate, accuracy after review, reviews, errors left by kind) and document level
    (straight-through rate, document accuracy, documents opened)."""
    conf = model.confidence
    order = model.by_confidence
    ordered = conf[order]
    taus = model.taus
    reviewed = np.searchsorted(ordered, taus, side="left")
    cum_wrong = np.concatenate([[0], np.cumsum(model.wrong[order])])[reviewed]
    cum_gain = np.concatenate([[0], np.cumsum(model.gain[order])])[reviewed]
    n = model.n_predictions
    substitution = model.substitution - cum_gain
    deletion = int(model.wrong.sum()) - model.substitution - (cum_wrong - cum_gain)
    tp_after = model.tp + cum_gain
    n_docs = model.n_documents
    # a document is opened from the threshold just above its least confident prediction
    least = np.full(n_docs, np.inf)
    np.minimum.at(least, model.doc, conf)
    opened = np.searchsorted(np.sort(least), taus, side="left")
    # right after review once its most confident wrong prediction is reviewed (no additions)
    most_wrong = np.full(n_docs, -np.inf)
    np.maximum.at(most_wrong, model.doc[model.wrong], conf[model.wrong])
    fixable = np.sort(most_wrong[model.doc_addition == 0])
    correct = np.searchsorted(fixable, taus, side="left")
    return pd.DataFrame({
        "threshold": taus,
        "auto_rate": 1.0 - reviewed / n if n else np.ones(len(taus)),
        "kieval_aligned": aligned_score(tp_after, substitution + deletion + model.addition),
        "reviewed": reviewed.astype(np.int64),
        "substitution": substitution.astype(np.int64),
        "addition": np.full(len(taus), model.addition, np.int64),
        "deletion": deletion.astype(np.int64),
        "straight_through_rate": 1.0 - opened / n_docs if n_docs else np.ones(len(taus)),
        "document_accuracy": correct / n_docs if n_docs else np.ones(len(taus)),
        "opened_documents": opened.astype(np.int64),
    })[CURVE_COLUMNS]


def with_costs(curve: pd.DataFrame, costs: Costs, n_documents: int) -> pd.DataFrame:
    """The curve with ``cost`` and ``cost_per_1000_documents`` at every threshold."""
    check_columns("curve", curve, ["reviewed", "opened_documents", "substitution", "addition", "deletion"],
                  "automation_curve")
    check_instance("costs", costs, Costs)
    check_int("n_documents", n_documents)
    cost = (costs.per_review * curve["reviewed"] + costs.per_document * curve["opened_documents"]
            + costs.substitution * curve["substitution"] + costs.addition * curve["addition"]
            + costs.deletion * curve["deletion"]).astype(np.float64)
    per_1000 = cost * 1000.0 / n_documents if n_documents else cost * 0.0
    return curve.assign(cost=cost, cost_per_1000_documents=per_1000)


def point_at(curve: pd.DataFrame, threshold: float) -> pd.Series:
    """The curve's state at any threshold: the first curve point at or above it (nothing
    changes between two distinct confidences)."""
    check_columns("curve", curve, ["threshold"], "automation_curve")
    check_number("threshold", threshold)
    i = int(np.searchsorted(curve["threshold"].to_numpy(), threshold, side="left"))
    return curve.iloc[min(i, len(curve) - 1)]


def curves_by_entity_type(model: ReviewModel) -> pd.DataFrame:
    """One curve per entity type (the review model decomposes by entity type)."""
    parts = zip(model.entity_types, model.by_type()[0], strict=True)
    frames = [automation_curve(part).assign(entity_type=name) for name, part in parts if part.n_predictions]
    columns = ["entity_type", *CURVE_COLUMNS]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


# --- decisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Recommendation:
    """The threshold that reaches a target with the most automation (SPEC 4).

    ``level`` is ``entity`` (accuracy after review, KIEval_Aligned^t; automation = share
    of predictions not reviewed), ``document`` (share of documents right after review;
    automation = straight-through rate) or ``document_review`` (whole-document review of
    :func:`document_review_curve`: KIEval_Aligned^t; automation = straight-through rate).
    When only full review reaches the target it is
    not reachable with automation: ``reachable`` is False, ``threshold`` None, and
    ``best_reachable`` the best accuracy at non-zero automation.
    """

    target: float
    level: str
    reachable: bool
    threshold: float | None
    auto_rate: float | None
    accuracy: float | None
    reviews: int | None
    reviews_per_1000_documents: float | None
    straight_through_rate: float | None
    best_reachable: float | None
    interval: Mapping[str, tuple[float, float] | None] | None = None

    def as_dict(self) -> dict:
        out = asdict(self)
        if self.interval is not None:
            out["interval"] = {k: None if v is None else list(v) for k, v in self.interval.items()}
        return out


#: Per level of a recommendation: its accuracy column and its automation column.
_LEVELS = {"entity": ("kieval_aligned", "auto_rate"),
           "document": ("document_accuracy", "straight_through_rate"),
           "document_review": ("kieval_aligned", "straight_through_rate")}


def recommend(curve: pd.DataFrame, target: float, n_documents: int, level: str = "entity") -> Recommendation:
    """Smallest threshold whose accuracy reaches ``target`` with some automation.

    >>> curve = pd.DataFrame({"threshold": [0.0, 0.5, 0.9], "auto_rate": [1.0, 0.5, 0.0],
    ...                       "kieval_aligned": [0.6, 0.9, 0.95], "reviewed": [0, 5, 10],
    ...                       "straight_through_rate": [1.0, 0.0, 0.0]})
    >>> recommend(curve, 0.85, 2).threshold
    0.5
    >>> recommend(curve, 0.95, 2).reachable, recommend(curve, 0.95, 2).best_reachable
    (False, 0.9)
    """
    accuracy_column, automation_column = _LEVELS[check_choice("level", level, _LEVELS)]
    _check_curve(curve, [accuracy_column, automation_column])
    check_share("target", target)
    check_int("n_documents", n_documents)
    accuracy = curve[accuracy_column].to_numpy()
    automated = curve[automation_column].to_numpy() > 0
    best = float(accuracy[automated].max()) if automated.any() else None
    reached = np.flatnonzero(automated & (accuracy >= target - 1e-12))
    if not len(reached):
        return Recommendation(target, level, False, None, None, None, None, None, None, best)
    row = curve.iloc[int(reached[0])]
    reviews = int(row["reviewed"])
    return Recommendation(
        target=target, level=level, reachable=True, threshold=float(row["threshold"]),
        auto_rate=float(row["auto_rate"]), accuracy=float(row[accuracy_column]), reviews=reviews,
        reviews_per_1000_documents=1000.0 * reviews / n_documents if n_documents else 0.0,
        straight_through_rate=float(row["straight_through_rate"]), best_reachable=best,
    )


def recommend_for_automation(curve: pd.DataFrame, auto_rate: float, n_documents: int) -> Recommendation:
    """The threshold automating at least ``auto_rate`` of the predictions with the best
    accuracy (the largest such threshold: accuracy never falls as the threshold grows)."""
    _check_curve(curve)
    check_share("auto_rate", auto_rate)
    check_int("n_documents", n_documents)
    ok = np.flatnonzero(curve["auto_rate"].to_numpy() >= auto_rate - 1e-12)
    row = curve.iloc[int(ok[-1])]
    return _chosen(row, n_documents)


def recommend_for_budget(curve: pd.DataFrame, reviews_per_1000: float, n_documents: int) -> Recommendation:
    """The largest threshold (best accuracy) whose reviews per 1,000 documents stay within
    the budget."""
    _check_curve(curve)
    check_number("reviews_per_1000", reviews_per_1000, minimum=0)
    check_int("n_documents", n_documents)
    per_1000 = curve["reviewed"].to_numpy() * 1000.0 / max(n_documents, 1)
    ok = np.flatnonzero(per_1000 <= reviews_per_1000 + 1e-9)
    row = curve.iloc[int(ok[-1])] if len(ok) else curve.iloc[0]
    return _chosen(row, n_documents)


def _check_curve(curve: pd.DataFrame, columns: Sequence[str] = ()) -> None:
    """A curve of :func:`automation_curve` (what a recommendation reads of it)."""
    needed = ["threshold", "auto_rate", "kieval_aligned", "reviewed", "straight_through_rate"]
    check_columns("curve", curve, dict.fromkeys([*needed, *columns]), "automation_curve")


def _chosen(row: pd.Series, n_documents: int) -> Recommendation:
    reviews = int(row["reviewed"])
    return Recommendation(
        target=float(row["kieval_aligned"]), level="entity", reachable=True,
        threshold=float(row["threshold"]), auto_rate=float(row["auto_rate"]),
        accuracy=float(row["kieval_aligned"]), reviews=reviews,
        reviews_per_1000_documents=1000.0 * reviews / n_documents if n_documents else 0.0,
        straight_through_rate=float(row["straight_through_rate"]), best_reachable=None,
    )


@dataclass(frozen=True)
class MinimumCost:
    """The cheapest threshold (the smallest among ties) and its cost."""

    threshold: float
    cost: float
    cost_per_1000_documents: float
    auto_rate: float
    kieval_aligned: float

    def as_dict(self) -> dict:
        return asdict(self)


def minimum_cost(curve: pd.DataFrame) -> MinimumCost:
    """The threshold of least total cost on a curve with costs (:func:`with_costs`)."""
    columns = ["threshold", "cost", "cost_per_1000_documents", "auto_rate", "kieval_aligned"]
    check_columns("curve", curve, columns, "with_costs")
    cost = curve["cost"].to_numpy()
    i = int(np.flatnonzero(cost <= cost.min() + 1e-9 * max(1.0, abs(cost.min())))[0])
    row = curve.iloc[i]
    return MinimumCost(float(row["threshold"]), float(row["cost"]), float(row["cost_per_1000_documents"]),
                       float(row["auto_rate"]), float(row["kieval_aligned"]))
