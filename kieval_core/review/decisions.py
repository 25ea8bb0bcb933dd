"""Threshold decisions (SPEC 4, 4b): what an operations team decides on, for one model.

:class:`DecisionOptions` holds the decision parameters (target accuracy, costs,
bootstrap, slices); :func:`automation_section` computes every automation figure of a
model from its :class:`~kieval_core.review.automation.ReviewModel` and returns the JSON report's
``automation`` section. Without any confidence every figure is null with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..choices import MAX_RESAMPLES as MAX_RESAMPLES  # the most bootstrap resamples
from ..choices import REVIEW_CHOICES as REVIEW_CHOICES  # review of predictions, documents, or both
from ..exceptions import KievalOptionError
from ..validation import check_choice, check_instance, check_int, check_share
from .automation import (
    NO_CONFIDENCE,
    Costs,
    automation_curve,
    confidence_by_field,
    document_review_curve,
    minimum_cost,
    recommend,
    review_with,
    with_costs,
)
from .calibration import calibration
from .field_thresholds import per_field_thresholds
from .uncertainty import bootstrap_and_assured, holdout, random_half

if TYPE_CHECKING:  # a type only: results draws its notebook view, which reads this module
    from ..result.results import ModelResult

ENTITY_CURVE = ["threshold", "auto_rate", "kieval_aligned"]
DOCUMENT_CURVE = ["threshold", "straight_through_rate", "document_accuracy"]
DOCUMENT_REVIEW_CURVE = ["threshold", "straight_through_rate", "kieval_aligned", "document_accuracy",
                         "cost_per_1000_documents"]


@dataclass(frozen=True)
class DecisionOptions:
    """The parameters of threshold decisions; none of them changes a metric.

    Parameters
    ----------
    target : float
        Accuracy after review (KIEval_Aligned^t) the recommended threshold must reach.
    document_target : float or None
        Share of documents right after review for the document-level recommendation
        (default: ``target``).
    costs : Costs
        Cost per review, per opened document and per escaped error.
    resamples, seed : int
        The bootstrap over documents (0 resamples: no intervals).
    slices : tuple of str
        Metadata keys whose values get their own recommendation.
    review : str
        ``predictions`` (a person reviews the predictions below τ), ``documents`` (every
        document with a prediction below τ, whole; SPEC 4c) or ``both`` (default).
    floors : tuple of (str, float)
        Per-field floors of per-field plans (SPEC 4d): ``(entity type, accuracy)``; a field
        not named has the target as its floor.
    per_field : bool
        Whether the decision is one τ per field (``--per-field-thresholds``) rather than one
        τ for every field; the report has both plans either way.
    assurance : float
        The one-sided confidence of the assured threshold (SPEC 4d): the smallest τ whose
        lower bound of accuracy after review reaches the target (needs the bootstrap).
    """

    target: float = 0.95
    document_target: float | None = None
    costs: Costs = field(default_factory=Costs)
    resamples: int = 1000
    seed: int = 0
    slices: tuple[str, ...] = ()
    review: str = "both"
    floors: tuple[tuple[str, float], ...] = ()
    per_field: bool = False
    assurance: float = 0.95

    def __post_init__(self) -> None:
        check_choice("review", self.review, REVIEW_CHOICES)
        check_share("target", self.target)
        if self.document_target is not None:
            check_share("document_target", self.document_target)
        check_instance("costs", self.costs, Costs)
        check_int("resamples", self.resamples, maximum=MAX_RESAMPLES)
        check_int("seed", self.seed)
        if not isinstance(self.slices, tuple) or not all(isinstance(s, str) for s in self.slices):
            msg = f"slices must be a tuple of metadata keys (str), got {self.slices!r}"
            raise KievalOptionError(msg)
        for entity_type, floor in self.floors:
            check_share(f"floor of {entity_type!r}", floor)
        check_share("assurance", self.assurance, open_interval=True)

    @property
    def documents_target(self) -> float:
        return self.target if self.document_target is None else self.document_target

    @property
    def predictions(self) -> bool:
        """Whether review of single predictions is reported."""
        return self.review != "documents"

    @property
    def documents(self) -> bool:
        """Whether whole-document review is reported."""
        return self.review != "predictions"


Records = Callable[[pd.DataFrame], object]


def _plain_records(frame: pd.DataFrame) -> list[dict]:
    return frame.to_dict(orient="records")


def automation_section(model: ModelResult, options: DecisionOptions,
                       records: Records = _plain_records) -> dict:
    """The ``automation`` section of one model's JSON report. ``records`` turns a table
    into its JSON value (the report writer passes a fast column-wise one)."""
    check_instance("options", options, DecisionOptions)
    section: dict = {
        "has_confidence": model.has_confidence,
        "confidence_coverage": model.confidence_coverage,
        "confidence_source": model.confidence_source,
        "missing_confidence": model.missing_confidence,
        # a row per field: written as it is, the summary reads it
        "confidence_by_field": _plain_records(confidence_by_field(model.review)),
        "review": options.review,
        "cost": options.costs.as_dict(),
    }
    if not model.has_confidence:
        n = model.n_documents
        full = model.review
        full_review = review_with(full, np.full(full.n_predictions, np.inf), options.costs)
        section.update({
            "reason": NO_CONFIDENCE, "curve": None, "recommended": None, "assured": None,
            "documents": None, "min_cost": None, "per_field": None, "by_entity_type": None,
            "slices": None, "holdout": None, "calibration": None, "calibration_consensus": None,
            "band": None, "document_review": None,
            "without_review": {"kieval_aligned": model.aligned,
                               "cost_per_1000_documents": _cost_without_review(model, options.costs)},
            "full_review": {"kieval_aligned": full_review.kieval_aligned,
                            "reviews_per_1000_documents": full_review.reviews_per_1000_documents,
                            "cost_per_1000_documents": full_review.cost_per_1000_documents,
                            "documents": n},
        })
        return section
    section.update(dict.fromkeys(SECTION_KEYS), reason=None)
    if options.predictions:
        section.update(_prediction_review(model, options, records))
    if options.documents:
        section["document_review"] = document_review_section(model, options, records)
    section["calibration"] = records(calibration(model.review))
    if model.consensus is not None:
        section["calibration_consensus"] = records(calibration(model.consensus))
    return section


#: The keys of a model with confidences, in the report's order (null: not asked for).
SECTION_KEYS = ("curve", "recommended", "assured", "documents", "min_cost", "per_field", "by_entity_type",
                "slices", "holdout", "calibration", "calibration_consensus", "band", "document_review")


def document_review_section(model: ModelResult, options: DecisionOptions, records: Records = _plain_records
                            ) -> dict:
    """``automation.document_review`` (SPEC 4c): whole-document review along the
    thresholds, the smallest threshold whose accuracy (KIEval_Aligned) reaches the target
    with some documents straight through, and the cheapest threshold."""
    curve = document_review_curve(model.review, options.costs)
    return {"curve": records(curve[DOCUMENT_REVIEW_CURVE]),
            "recommended": recommend(curve, options.target, model.n_documents, "document_review").as_dict(),
            "min_cost": minimum_cost(curve).as_dict()}


def _prediction_review(model: ModelResult, options: DecisionOptions, records: Records) -> dict:
    review = model.review
    curve = with_costs(model.curve, options.costs, model.n_documents)
    entity = recommend(curve, options.target, model.n_documents)
    band = assured = None
    if options.resamples:
        boot, found = bootstrap_and_assured(review, options.target, options.assurance, options.resamples,
                                            options.seed, curve)
        assured = found.as_dict()
        # an unreachable target has no threshold, so no interval either (a few resamples that
        # happen to reach it would give one); band.reachable_share says how many did
        entity = _with_interval(entity, boot.interval() if entity.reachable else NO_INTERVAL)
        band = {"seed": boot.seed, "resamples": boot.resamples, "reachable_share": boot.reachable_share,
                "points": records(boot.band)}
    document = recommend(curve, options.documents_target, model.n_documents, level="document")
    fields = per_field_thresholds(review, options.target, dict(options.floors))
    check = holdout(review, options.target, random_half(review.n_documents, options.seed),
                    resamples=max(options.resamples, 1), seed=options.seed)
    return {
        "curve": records(curve[ENTITY_CURVE]),
        "recommended": entity.as_dict(),
        "assured": assured,
        "documents": {"curve": records(curve[DOCUMENT_CURVE]), "recommended": document.as_dict()},
        "min_cost": minimum_cost(curve).as_dict(),
        "per_field": {**fields.as_dict(), "table": _plain_records(fields.table)},  # a row per field
        "by_entity_type": {
            etype: records(part[ENTITY_CURVE])
            for etype, part in model.curves_by_entity_type.groupby("entity_type", sort=True)
        },
        "slices": {key: slice_thresholds(model, key, options.target).as_dict(model, options.costs)
                   for key in options.slices},
        "holdout": check.as_dict(),
        "band": band,
    }


NO_INTERVAL = {"threshold": None, "auto_rate": None}


def _with_interval(rec, interval: dict):
    return replace(rec, interval=interval)


def _cost_without_review(model: ModelResult, costs: Costs) -> float:
    c = model.corrections
    total = costs.substitution * c.substitution + costs.addition * c.addition + costs.deletion * c.deletion
    return 1000.0 * total / model.n_documents if model.n_documents else 0.0


@dataclass(frozen=True, eq=False)
class SliceThresholds:
    """One threshold per value of a metadata key (a slice of documents), each the smallest
    that reaches the target on its slice; a slice that cannot reach it with automation is
    fully reviewed. ``limits`` holds every prediction's threshold under this plan."""

    key: str
    target: float
    rows: list[dict]
    limits: np.ndarray

    @property
    def unreachable(self) -> list[str]:
        return [r["value"] for r in self.rows if not r["recommended"]["reachable"]]

    def as_dict(self, model: ModelResult, costs: Costs) -> dict:
        combined = review_with(model.review, self.limits, costs)
        return {"values": self.rows, "combined": combined.as_dict()}


def slice_thresholds(model: ModelResult, key: str, target: float) -> SliceThresholds:
    """Per value of a metadata key: its documents, accuracy without review, and its own
    recommended threshold for ``target``; and the plan that applies them together."""
    check_share("target", target)
    labels = model.slice_labels(key)
    review = model.review
    rows, doc_limit = [], np.full(review.n_documents, np.inf)
    for value in sorted(labels.unique(), key=str):
        mine = (labels == value).to_numpy()
        part = review.restrict(mine)
        curve = automation_curve(part)
        rec = recommend(curve, target, part.n_documents)
        rows.append({"value": value, "n_documents": part.n_documents,
                     "kieval_aligned": float(curve["kieval_aligned"].iloc[0]), "recommended": rec.as_dict()})
        if rec.reachable:
            doc_limit[mine] = rec.threshold
    return SliceThresholds(key, target, rows, doc_limit[review.doc])
