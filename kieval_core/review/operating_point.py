"""One operating point and everything the Automation page shows at it (SPEC 4 to 4d).

:func:`operating_point` takes the choice (review mode, how to decide, the value, one τ,
one per field or per slice, target, floors, assurance) and returns an
:class:`OperatingPoint`: the figures of its cards, the curves of its charts, the per-field
table with floors and automation blockers, what to say about it, and the decision file
that writes exactly that. What does not depend on τ (curves, per-field plans, slice plans,
the bootstrap band, the assured τ) is computed once per model and costs in a
:class:`DecisionContext`, so a change that only moves τ recomputes none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..exceptions import KievalOptionError
from ..validation import check_choice, check_instance, check_number, check_share
from .automation import (
    _LEVELS,
    NO_CONFIDENCE,
    Costs,
    MinimumCost,
    ReviewPoint,
    automation_blockers,
    confidence_by_field,
    document_review_curve,
    minimum_cost,
    recommend,
    recommend_for_budget,
    review_by_entity_type,
    review_documents_by_entity_type,
    review_documents_with,
    review_with,
    with_costs,
)
from .automation import threshold_text as _tau
from .decisions import DecisionOptions, SliceThresholds, slice_thresholds
from .deploy import EVERY_FIELD, Decision
from .field_thresholds import FieldThresholds, field_floors, per_field_thresholds
from .uncertainty import Assured, Bootstrap, assured_threshold, bootstrap

if TYPE_CHECKING:
    from ..result.results import ModelResult

#: How an operating point is chosen: a target accuracy, an automation rate, a review budget
#: (reviews per 1,000 documents) or the threshold itself.
DECIDE_BY = ("accuracy", "automation", "budget", "threshold")
#: Per review mode: the level of its recommendations and its figures at one point.
_MODES = {"predictions": ("entity", review_with), "documents": ("document_review", review_documents_with)}
#: How a review mode is said.
REVIEW_WORDS = {"predictions": "reviewing single predictions", "documents": "reviewing whole documents"}


def review_curve(model: ModelResult, review: str, costs: Costs = Costs()) -> pd.DataFrame:
    """The curve of a review mode with costs: single predictions (:func:`with_costs` of
    the model's curve) or whole documents (:func:`document_review_curve`)."""
    check_choice("review", review, _MODES)
    if review == "documents":
        return document_review_curve(model.review, costs)
    return with_costs(model.curve, costs, model.n_documents)


class DecisionContext:
    """What operating points of one model at one set of costs read and τ does not change,
    each computed on first use and kept (the page keeps one context per model and costs).
    """

    def __init__(self, model: ModelResult, costs: Costs = Costs(), resamples: int = 1000, seed: int = 0,
                 memo: Callable[[tuple, Callable[[], Any]], Any] | None = None) -> None:
        """``memo(key, compute)`` keeps each piece (default: in this object); the dashboard
        passes its store, so each piece is cached and sized on its own."""
        check_instance("costs", costs, Costs)
        self.model, self.costs, self.resamples, self.seed = model, costs, resamples, seed
        self._memo: dict = {}
        self._keep = memo or self._kept

    def _kept(self, key: tuple, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def _once(self, key: tuple, compute: Callable[[], Any]) -> Any:
        return self._keep(key, compute)

    def curve(self, review: str) -> pd.DataFrame:
        return self._once(("curve", review), lambda: review_curve(self.model, review, self.costs))

    def cheapest(self, review: str) -> MinimumCost:
        return self._once(("cheapest", review), lambda: minimum_cost(self.curve(review)))

    def fields(self, target: float, floors: tuple = ()) -> FieldThresholds:
        return self._once(("fields", target, floors),
                          lambda: per_field_thresholds(self.model.review, target, dict(floors)))

    def slices(self, key: str, target: float) -> SliceThresholds:
        return self._once(("slices", key, target), lambda: slice_thresholds(self.model, key, target))

    def bootstrap(self, target: float) -> Bootstrap:
        return self._once(("bootstrap", target),
                          lambda: bootstrap(self.model.review, target, self.resamples, self.seed))

    def assured(self, target: float, assurance: float) -> Assured:
        return self._once(("assured", target, assurance), lambda: assured_threshold(
            self.model.review, target, assurance, self.resamples, self.seed, self.model.curve))


@dataclass(frozen=True)
class Notice:
    """What the page says about the operating point: ``kind`` is ``success``, ``warning``
    or ``info``; ``text`` is Markdown of the core's own words and numbers, with a
    ``{NAME}`` placeholder for each entry of ``names`` (text from the files: field names,
    slice values), which :meth:`render` escapes.

    >>> Notice("warning", "reviewed whole: {fields}", {"fields": ("*date*",)}).render(lambda t: t.upper())
    'reviewed whole: *DATE*'
    """

    kind: str
    text: str
    names: dict = field(default_factory=dict)

    def render(self, escape: Callable[[str], str]) -> str:
        """The text with every name escaped by ``escape`` (e.g. Markdown escaping)."""
        text = self.text
        for key, names in self.names.items():
            text = text.replace("{" + key + "}", ", ".join(escape(str(n)) for n in names))
        return text


@dataclass(frozen=True, eq=False)
class OperatingPoint:
    """One operating point and every figure at it (SPEC 4 to 4d).

    ``threshold`` is the one τ (None with per-field or per-slice thresholds: ``limits``
    holds every prediction's). When a target cannot be reached with automation,
    ``reachable`` is False and the point shown is the best accuracy with some automation
    (``best_reachable``, at ``threshold``); ``fields_reach`` then gives the reviews one τ
    per field needs to reach it, when it can. ``fields`` and ``unreachable_slices`` belong
    to per-field and per-slice thresholds; ``assured`` to one τ chosen for a target
    reviewing single predictions with an assurance (its τ is then the assured one when
    there is one). ``curve`` is the review mode's curve with costs, ``curves`` both modes'
    (the policies chart), ``band`` the 95% bootstrap band when deciding by accuracy,
    ``by_field`` the per-field table (figures after review, τ, floor, share without a
    confidence, automation blockers), ``notices`` what to say, and ``decision`` the
    decision file of exactly this point (None, with ``decision_refused``, for a plan per
    slice or a model without confidences).
    """

    review: str
    decide_by: str
    scope: str
    target: float | None
    threshold: float | None
    limits: np.ndarray
    point: ReviewPoint
    reachable: bool = True
    best_reachable: float | None = None
    fields_reach: int | None = None
    fields: FieldThresholds | None = None
    unreachable_slices: tuple[str, ...] = ()
    assured: Assured | None = None
    curve: pd.DataFrame | None = field(default=None, repr=False)
    curves: dict = field(default_factory=dict, repr=False)
    band: pd.DataFrame | None = field(default=None, repr=False)
    cheapest: MinimumCost | None = None
    by_field: pd.DataFrame | None = field(default=None, repr=False)
    notices: tuple[Notice, ...] = ()
    decision: Decision | None = None
    decision_refused: str | None = None

    @property
    def opened_per_1000_documents(self) -> float:
        """Documents opened (at least one prediction below its threshold) per 1,000."""
        p = self.point
        return 1000.0 * p.opened_documents / p.documents if p.documents else 0.0


def operating_point(model: ModelResult | DecisionContext, *, review: str = "predictions",
                    decide_by: str = "accuracy", value: float = 0.95, scope: str = "one",
                    target: float = 0.95, costs: Costs = Costs(), floors: dict | None = None,
                    assurance: float | None = None,
                    chosen_on: dict | None = None) -> OperatingPoint:
    """The operating point chosen by ``decide_by`` and ``value`` (a target accuracy, a share
    of predictions automated, or of documents straight through when whole documents are
    reviewed, reviews per 1,000 documents, or τ), for one τ (``scope="one"``), one τ per
    field (``"field"``, every field at or above its floor) or per value of a metadata key
    (``"slice:KEY"``); per-field and per-slice thresholds are always chosen for ``target``.
    Deciding one τ by accuracy reviewing single predictions with an ``assurance``, the τ is
    the assured one (SPEC 4d) when there is one. ``model`` may be a
    :class:`DecisionContext` (its costs then apply), which keeps what τ does not change.

    Whole documents with per-field or per-slice thresholds: the thresholds chosen for
    single predictions decide which documents are opened.
    """
    context = model if isinstance(model, DecisionContext) else DecisionContext(model, costs)
    check_choice("review", review, _MODES)
    check_choice("decide_by", decide_by, DECIDE_BY)
    check_number("value", value)
    check_share("target", target)
    if assurance is not None:
        check_share("assurance", assurance, open_interval=True)
    floors_key = tuple(sorted(field_floors(context.model.review.entity_types, target, floors).items()))
    if scope == "field":
        op = _per_field(context, review, decide_by, target, floors_key)
    elif scope.startswith("slice:"):
        op = _per_slice(context, review, decide_by, scope, target)
    else:
        check_choice("scope", scope, ("one", "field", "slice:KEY"))
        op = _one(context, review, decide_by, value, target, floors_key, assurance)
    return _dressed(context, op, floors_key, assurance, chosen_on)


def _point(context: DecisionContext, review: str, limits: np.ndarray) -> ReviewPoint:
    return _MODES[review][1](context.model.review, limits, context.costs)


def _per_field(context: DecisionContext, review: str, decide_by: str, target: float, floors: tuple
               ) -> OperatingPoint:
    fields = context.fields(target, floors)
    limits = context.model.review.thresholds_of(fields.thresholds)
    return OperatingPoint(review, decide_by, "field", target, None, limits, _point(context, review, limits),
                          reachable=fields.reachable, fields=fields)


def _per_slice(context: DecisionContext, review: str, decide_by: str, scope: str, target: float
               ) -> OperatingPoint:
    plan = context.slices(scope.split(":", 1)[1], target)
    return OperatingPoint(review, decide_by, scope, target, None, plan.limits,
                          _point(context, review, plan.limits), reachable=not plan.unreachable,
                          unreachable_slices=tuple(plan.unreachable))


def _one(context: DecisionContext, review: str, decide_by: str, value: float, target: float, floors: tuple,
         assurance: float | None) -> OperatingPoint:
    level = _MODES[review][0]
    curve = context.curve(review)
    n_docs = context.model.n_documents
    accuracy, automation = _LEVELS[level]
    extra: dict = {}
    if decide_by == "accuracy":
        target = check_share("value", value)
        tau, extra = _by_accuracy(context, review, curve, target, floors, assurance)
    elif decide_by == "automation":
        check_share("value", value)
        ok = np.flatnonzero(curve[automation].to_numpy() >= value - 1e-12)
        tau = float(curve["threshold"].iloc[int(ok[-1])]) if len(ok) else 0.0
    elif decide_by == "budget":
        tau = recommend_for_budget(curve, value, n_docs).threshold
    else:
        tau = float(value)
    limits = np.full(context.model.review.n_predictions, tau)
    return OperatingPoint(review, decide_by, "one", target if decide_by == "accuracy" else None, tau, limits,
                          _point(context, review, limits), **extra)


def _by_accuracy(context: DecisionContext, review: str, curve: pd.DataFrame, target: float, floors: tuple,
                 assurance: float | None) -> tuple[float, dict]:
    """The τ for a target and what goes with it: the assured τ when asked for and there is
    one, else the point recommendation, else the best accuracy with some automation."""
    level = _MODES[review][0]
    rec = recommend(curve, target, context.model.n_documents, level)
    if not rec.reachable:
        extra: dict = {"reachable": False, "best_reachable": rec.best_reachable}
        if review == "predictions":
            fields = context.fields(target, floors)
            extra["fields_reach"] = fields.reviews if fields.reachable else None
        return _best_automated(curve, *_LEVELS[level]), extra
    if review == "documents" or assurance is None or not context.resamples:
        return float(rec.threshold), {}
    assured = context.assured(target, assurance)
    return (assured.threshold if assured.reachable else float(rec.threshold)), {"assured": assured}


def _dressed(context: DecisionContext, op: OperatingPoint, floors: tuple, assurance: float | None,
             chosen_on: dict | None) -> OperatingPoint:
    """The operating point with what the page draws and the file it downloads."""
    review = op.review
    band = None
    if op.decide_by == "accuracy" and op.scope == "one" and review == "predictions" and context.resamples:
        band = context.bootstrap(op.target).band
    dressed = replace(op, curve=context.curve(review),
                      curves={r: context.curve(r) for r in _MODES}, band=band,
                      cheapest=context.cheapest(review), by_field=_by_field(context, op, dict(floors)))
    dressed = replace(dressed, notices=notices(dressed))
    try:
        decision = decision_of(context.model, dressed, assurance=assurance if op.assured else None,
                               chosen_on=chosen_on)
    except KievalOptionError as refused:
        return replace(dressed, decision_refused=str(refused))
    return replace(dressed, decision=decision)


#: The columns of :attr:`OperatingPoint.by_field`.
BY_FIELD_COLUMNS = ["entity_type", "threshold", "floor", "kieval_aligned", "meets_floor",
                    "straight_through_gain", "share_without_confidence", "predictions", "reviewed", "fixed",
                    "errors_left", "opened_documents"]


def _by_field(context: DecisionContext, op: OperatingPoint, floors: dict) -> pd.DataFrame:
    """Per field at the operating point: its τ (None: reviewed whole), floor, predictions
    and share without a confidence, figures after review, whether it meets its floor, the
    documents it opens and the straight-through it costs (automation blockers)."""
    review = context.model.review
    table = (review_documents_by_entity_type if op.review == "documents" else review_by_entity_type)(
        review, op.limits)
    taus = dict(op.fields.thresholds) if op.fields is not None else {}
    whole = op.fields.whole if op.fields is not None else frozenset()
    table["threshold"] = [None if t in whole else taus.get(t, op.threshold) for t in table["entity_type"]]
    table["floor"] = table["entity_type"].map(floors)
    table["meets_floor"] = table["kieval_aligned"] >= table["floor"] - 1e-12
    without = confidence_by_field(review).set_index("entity_type")["share_without_confidence"]
    table["share_without_confidence"] = table["entity_type"].map(without)
    blockers = automation_blockers(review, op.limits).set_index("entity_type")
    table["opened_documents"] = table["entity_type"].map(blockers["opened_documents"]).fillna(0).astype(int)
    table["straight_through_gain"] = table["entity_type"].map(blockers["straight_through_gain"]).fillna(0.0)
    return table[table["predictions"] > 0][BY_FIELD_COLUMNS].reset_index(drop=True)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def notices(op: OperatingPoint) -> tuple[Notice, ...]:
    """What the page says about an operating point: the target reached or not, by which τ,
    assured or not, and the fields or slices that cannot reach theirs."""
    if op.scope == "field":
        return _field_notices(op)
    if op.scope.startswith("slice:"):
        if not op.unreachable_slices:
            return ()
        names = {"key": (op.scope.split(":", 1)[1],), "values": op.unreachable_slices[:5]}
        text = (f"{len(op.unreachable_slices)} value(s) of {{key}} cannot reach {op.target:.1%} with "
                "automation and are fully reviewed: {values}.")
        return (Notice("warning", text, names),)
    if op.decide_by != "accuracy":
        return ()
    if not op.reachable:
        text = (f"A target of {op.target:.1%} is **not reachable with automation** by one τ for every "
                f"field, {REVIEW_WORDS[op.review]}: only reviewing everything gets there. The best accuracy "
                f"with some automation is {_percent(op.best_reachable)} (τ = {_tau(op.threshold)}, shown "
                "below).")
        if op.fields_reach is not None:
            text += (f" **One τ per field reaches it** with {op.fields_reach:,} reviews of "
                     f"{op.point.predictions:,} predictions: choose it under Thresholds.")
        return (Notice("warning", text),)
    if op.assured is None:
        return (Notice("success", f"**τ = {_tau(op.threshold)}** reaches {op.target:.1%}: the smallest "
                                  "threshold that does, so the most automation."),)
    return (_assured_notice(op.assured),)


def _assured_notice(a: Assured) -> Notice:
    point = (f"the point estimate reaches it from τ = {_tau(a.point_threshold)}, where its "
             f"{a.assurance:.0%} lower bound is {_percent(a.point_lower_bound)}")
    if a.reachable:
        return Notice("success", f"**τ = {_tau(a.threshold)}** reaches {a.target:.1%} with {a.assurance:.0%} "
                                 f"assurance: its one-sided lower bound is {_percent(a.lower_bound)} "
                                 f"(document bootstrap, {a.resamples:,} resamples); {point}.")
    needed = (f" About {a.documents_needed:,} documents like these would assure τ = {_tau(a.best_threshold)}."
              if a.documents_needed else " More documents like these would not assure it.")
    return Notice("warning", f"τ = {_tau(a.point_threshold)} reaches {a.target:.1%} on these {a.documents:,} "
                             f"documents, but **no τ with automation is assured** at {a.assurance:.0%}: "
                             f"{point}. Shown: the point estimate.{needed}")


def _field_notices(op: OperatingPoint) -> tuple[Notice, ...]:
    fields = op.fields
    out = []
    if not op.reachable:
        out.append(Notice("warning", f"No combination of per-field thresholds reaches {op.target:.1%} "
                                     "with automation, every field at its floor; showing every field's "
                                     "threshold at full review."))
    if fields.floor_unreachable:
        out.append(Notice("warning", "Cannot reach their floor with any automation, so reviewed whole: "
                                     "{fields}.", {"fields": tuple(sorted(fields.floor_unreachable))}))
    if op.reachable:
        out.append(Notice("success", f"One τ per field reaches {op.target:.1%} overall with "
                                     f"{fields.reviews:,} reviews, every field at or above its floor "
                                     "or reviewed whole."))
    return tuple(out)


def starting_threshold(curve: pd.DataFrame, target: float, n_documents: int,
                       review: str = "predictions") -> float:
    """The τ a threshold control starts from: the recommendation for ``target`` (``curve``
    of :func:`review_curve` for ``review``), else the best accuracy with some automation,
    where deciding by accuracy puts it; never review everything, which a target out of
    reach used to open the control on (0% automated)."""
    level = _MODES[check_choice("review", review, _MODES)][0]
    rec = recommend(curve, target, n_documents, level)
    if rec.reachable:
        return float(rec.threshold)
    return _best_automated(curve, *_LEVELS[level])


def _best_automated(curve: pd.DataFrame, accuracy: str, automation: str) -> float:
    """The smallest threshold of best accuracy among those with some automation (the last
    threshold when none has any)."""
    automated = curve[curve[automation] > 0]
    if not len(automated):
        return float(curve["threshold"].iloc[-1])
    best = automated.sort_values([accuracy, "threshold"], ascending=[False, True], kind="stable")
    return float(best["threshold"].iloc[0])


# --- the decision as a file (SPEC 4d) ------------------------------------------------------


def decision_of(model: ModelResult, op: OperatingPoint, *, assurance: float | None = None,
                chosen_on: dict | None = None) -> Decision:
    """The decision file of an operating point: its thresholds (one τ, or one per field
    with null for a field reviewed whole), what it was chosen for, and its figures on the
    data it was chosen on (``accuracy_lower``: the assured bound, when the τ is assured).
    A plan per slice of documents is refused: its τ depend on metadata new predictions do
    not carry."""
    if not model.has_confidence:
        msg = f"{model.name}: {NO_CONFIDENCE}, so there is no threshold to decide"
        raise KievalOptionError(msg)
    if op.scope.startswith("slice:"):
        msg = ("one τ per slice cannot be written as a decision file (new predictions carry no metadata); "
               "choose one τ or one τ per field")
        raise KievalOptionError(msg)
    if op.fields is not None and op.scope == "field":
        thresholds = {t: None if t in op.fields.whole else float(tau)
                      for t, tau in op.fields.thresholds.items()}
        floors = dict(op.fields.floors)
    else:
        thresholds, floors = {EVERY_FIELD: float(op.threshold)}, {}
    assured = op.assured if op.assured is not None and op.assured.reachable else None
    lower = assured.lower_bound if assured is not None and assured.threshold == op.threshold else None
    p = op.point
    return Decision(
        model=model.name, review=op.review, missing_confidence=model.missing_confidence,
        thresholds=thresholds, target=op.target, assurance=assurance if lower is not None else None,
        floors=floors,
        expected={"accuracy": p.kieval_aligned, "accuracy_lower": lower, "auto_rate": p.auto_rate,
                  "straight_through_rate": p.straight_through_rate,
                  "cost_per_1000_documents": p.cost_per_1000_documents},
        chosen_on={"documents": model.n_documents, "gt_sha256": None, "pred_sha256": None,
                   **(chosen_on or {})},
    )


def decide(model: ModelResult, options: DecisionOptions, chosen_on: dict | None = None) -> Decision:
    """The decision ``kieval evaluate --decision-out`` writes: reviewing whole documents
    when ``options.review`` is ``documents`` (else single predictions); one τ per field
    (``options.per_field``) or one τ for every field for the target: the assured τ when
    the bootstrap assures one (single predictions), else the point recommendation (or
    the best accuracy with automation when the target is out of reach)."""
    if not model.has_confidence:
        msg = f"{model.name}: {NO_CONFIDENCE}, so there is no threshold to decide"
        raise KievalOptionError(msg)
    context = DecisionContext(model, options.costs, options.resamples, options.seed)
    op = operating_point(context, review="documents" if options.review == "documents" else "predictions",
                         scope="field" if options.per_field else "one", value=options.target,
                         target=options.target, floors=dict(options.floors),
                         assurance=options.assurance if options.resamples else None, chosen_on=chosen_on)
    return op.decision
