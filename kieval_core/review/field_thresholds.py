"""One threshold per entity type (SPEC 4 review model, 4d): reach a target accuracy
overall with the fewest reviews, every field at or above its floor.

A field's floor (default: the target) is the accuracy after review it must reach on its
own; only its thresholds that reach it with some of the field automated are options, and
a field with none is reviewed whole and named (``floor_unreachable``). Predictions
without a confidence follow the missing-confidence policy of the review model: under
``review`` (the default) they are reviewed in every option.

Overall accuracy after review is a ratio of sums over entity types, so a type's
threshold t gives it a *slack* TP'(1 - A) - A * errors left, and the whole reaches A
exactly when the slacks sum to >= 0. Only thresholds right after a wrong prediction can
raise a slack, so each type offers few options; an exact dynamic programme over the
number of reviews picks one option per type (a multiple-choice knapsack). Corpora too
large for it get the Lagrangian (convex-hull) greedy, and the result says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..count.scores import aligned_score
from ..exceptions import KievalOptionError
from ..validation import check_share
from .automation import (
    ReviewModel,
    automation_blockers,
    automation_curve,
    confidence_by_field,
    review_at,
    review_by_entity_type,
)


@dataclass(frozen=True)
class FieldThresholds:
    """One threshold per entity type reaching a target overall with the fewest reviews.

    ``exact`` is False when the corpus was too large for the exact search and the
    Lagrangian (convex-hull) approximation was used instead. ``whole`` names the fields
    whose threshold lies above all their confidences: every one of their predictions is
    reviewed (the report says ``"review": "all"`` instead of a threshold such as
    1.0000000000000002). ``floors`` holds every field's floor; ``floor_unreachable``
    names the fields that reach their floor at no threshold that automates any of them
    (reviewed whole). The table gives per field its figures after review, its floor,
    the share of its predictions without a confidence and how much straight-through it
    costs (``straight_through_gain``: the straight-through rate gained if that field alone
    were always automated, :func:`~kieval_core.review.automation.automation_blockers`).
    """

    target: float
    reachable: bool
    thresholds: Mapping[str, float]
    reviews: int | None
    exact: bool
    table: pd.DataFrame = field(repr=False)
    whole: frozenset[str] = frozenset()
    floors: Mapping[str, float] = field(default_factory=dict)
    floor_unreachable: frozenset[str] = frozenset()

    def as_dict(self) -> dict:
        fields = {t: {"threshold": None, "review": "all"} if t in self.whole else
                  {"threshold": tau, "review": "below threshold"} for t, tau in self.thresholds.items()}
        return {"target": self.target, "reachable": self.reachable, "exact": self.exact,
                "reviews": self.reviews, "thresholds": fields, "floors": dict(self.floors),
                "floor_unreachable": sorted(self.floor_unreachable)}


#: Largest (review budget x options) the exact search handles.
EXACT_LIMIT = 2 * 10**8


def field_floors(entity_types: tuple[str, ...], target: float, floors: Mapping[str, float] | None = None
                 ) -> dict[str, float]:
    """Every field's floor: ``floors`` where given, else the target; a field the model does
    not have is refused, naming the fields it has.

    >>> field_floors(("date", "total"), 0.95, {"date": 0.9})
    {'date': 0.9, 'total': 0.95}
    """
    check_share("target", target)
    floors = dict(floors or {})
    unknown = [t for t in floors if t not in entity_types]
    if unknown:
        msg = (f"field floor for {', '.join(map(repr, unknown))}: no such field; the fields are "
               f"{', '.join(map(repr, entity_types)) or 'none'}")
        raise KievalOptionError(msg)
    return {t: check_share(f"floor of {t!r}", floors.get(t, target)) for t in entity_types}


def per_field_thresholds(model: ReviewModel, target: float, floors: Mapping[str, float] | None = None
                         ) -> FieldThresholds:
    """Thresholds per entity type: fewest reviews with overall KIEval_Aligned^t >= target
    (and some automation), every field at or above its floor (default: the target) or
    reviewed whole; among those, the highest accuracy (module docstring)."""
    floors = field_floors(model.entity_types, target, floors)
    options = {}
    unreachable = set()
    fixed = 0.0
    for name, part in zip(model.entity_types, model.by_type()[0], strict=True):
        if not part.n_predictions:
            fixed += (1 - target) * part.tp - target * part.addition
            continue
        curve = automation_curve(part)
        tp_after = part.tp + (part.substitution - curve["substitution"].to_numpy())
        errors = (curve["substitution"] + curve["addition"] + curve["deletion"]).to_numpy()
        slack = (1 - target) * tp_after - target * errors
        reviews = curve["reviewed"].to_numpy()
        allowed = aligned_score(tp_after, errors) >= floors[name] - 1e-12
        if not (allowed & (curve["auto_rate"].to_numpy() > 0)).any():  # reviewed whole
            unreachable.add(name)
            allowed[:-1] = False
            allowed[-1] = True
        at = np.flatnonzero(allowed)
        keep = at[_pareto(reviews[at], slack[at])]
        options[name] = (curve["threshold"].to_numpy()[keep], reviews[keep], slack[keep])
    total_reviews = sum(int(o[1][-1]) for o in options.values())
    budget = sum(len(o[0]) for o in options.values()) * (total_reviews + 1)
    if budget <= EXACT_LIMIT:
        chosen = _exact_choice(options, fixed)
        exact = True
    else:
        chosen = _hull_choice(options, fixed)
        exact = False
    plan = {"floors": floors, "floor_unreachable": frozenset(unreachable)}
    if chosen is None:
        thresholds_ = {t: float(o[0][-1]) for t, o in options.items()}
        return _result(model, target, False, thresholds_, None, exact, **plan)
    thresholds_ = {t: float(options[t][0][k]) for t, k in chosen.items()}
    point = review_at(model, thresholds_)
    if point.auto_rate <= 0:
        return _result(model, target, False, thresholds_, None, exact, **plan)
    return _result(model, target, True, thresholds_, point.reviewed, exact, **plan)


def _result(model: ReviewModel, target: float, reachable: bool, chosen: dict[str, float], reviews: int | None,
            exact: bool, floors: Mapping[str, float], floor_unreachable: frozenset[str]) -> FieldThresholds:
    highest = np.full(len(model.entity_types), -np.inf)
    np.maximum.at(highest, model.entity_type, model.confidence)
    whole = frozenset(t for t, tau in chosen.items() if tau > highest[model.entity_types.index(t)])
    table = _field_table(model, chosen, floors)
    table["review"] = ["all" if t in whole else "below threshold" for t in table["entity_type"]]
    table["threshold"] = table["threshold"].astype(object).where(~table["entity_type"].isin(whole), None)
    return FieldThresholds(target, reachable, chosen, reviews, exact, table, whole, dict(floors),
                           floor_unreachable)


def _pareto(reviews: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """Indices of the options whose slack beats every option with fewer reviews."""
    best = np.maximum.accumulate(slack)
    keep = np.ones(len(slack), bool)
    keep[1:] = slack[1:] > best[:-1] + 1e-12
    return np.flatnonzero(keep)


def _exact_choice(options: dict, fixed: float) -> dict[str, int] | None:
    """min total reviews with sum of slacks >= 0; ties to the highest slack, then the
    lowest thresholds."""
    names = list(options)
    size = sum(int(o[1][-1]) for o in options.values()) + 1
    best = np.full(size, -np.inf)
    best[0] = fixed
    choice = []
    for name in names:
        _, reviews, slack = options[name]
        new = np.full(size, -np.inf)
        pick = np.zeros(size, np.int64)
        for k in range(len(reviews) - 1, -1, -1):  # lowest option wins ties
            shifted = np.full(size, -np.inf)
            r = int(reviews[k])
            shifted[r:] = best[: size - r] + slack[k]
            better = shifted >= new
            new = np.where(better, shifted, new)
            pick = np.where(better, k, pick)
        best = new
        choice.append(pick)
    feasible = np.flatnonzero(best >= -1e-9)
    if not len(feasible):
        return None
    r = int(feasible[0])
    chosen = {}
    for name, pick in zip(reversed(names), reversed(choice), strict=True):
        k = int(pick[r])
        chosen[name] = k
        r -= int(options[name][1][k])
    return chosen


def _hull_choice(options: dict, fixed: float) -> dict[str, int] | None:
    """Greedy over each type's upper convex hull (reviews -> slack): raise the threshold
    where a review buys the most slack until the sum reaches 0 (Lagrangian relaxation)."""
    hulls = {name: _upper_hull(o[1].astype(np.float64), o[2]) for name, o in options.items()}
    step = dict.fromkeys(options, 0)
    total = fixed + sum(options[n][2][hulls[n][0]] for n in options)
    while total < -1e-9:
        best, best_rate = None, -np.inf
        for name, hull in hulls.items():
            k = step[name]
            if k + 1 < len(hull):
                _, reviews, slack = options[name]
                a, b = hull[k], hull[k + 1]
                rate = (slack[b] - slack[a]) / max(reviews[b] - reviews[a], 1)
                if rate > best_rate:
                    best, best_rate = name, rate
        if best is None:
            return None
        slack = options[best][2]
        total += slack[hulls[best][step[best] + 1]] - slack[hulls[best][step[best]]]
        step[best] += 1
    return {name: int(hulls[name][step[name]]) for name in options}


def _upper_hull(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Indices of the upper concave hull of points sorted by x, starting at the first."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (y[b] - y[a]) * (x[i] - x[a]) <= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return hull


def _field_table(model: ReviewModel, chosen: Mapping[str, float], floors: Mapping[str, float]
                 ) -> pd.DataFrame:
    table = review_by_entity_type(model, chosen)
    table.insert(1, "threshold", [chosen.get(t) for t in table["entity_type"]])
    table["auto_rate"] = 1.0 - table["reviewed"] / table["predictions"].where(table["predictions"] > 0)
    table["floor"] = table["entity_type"].map(floors)
    table["meets_floor"] = table["kieval_aligned"] >= table["floor"] - 1e-12
    without = confidence_by_field(model).set_index("entity_type")["share_without_confidence"]
    table["share_without_confidence"] = table["entity_type"].map(without)
    gain = automation_blockers(model, model.thresholds_of(chosen)).set_index("entity_type")
    table["straight_through_gain"] = table["entity_type"].map(gain["straight_through_gain"]).fillna(0.0)
    return table
