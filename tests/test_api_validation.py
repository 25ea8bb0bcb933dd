"""The public review API refuses a bad parameter at the boundary with one clear ValueError
that names the parameter, the value given and what is allowed (never a bare KeyError, an
IndexError, or a silently meaningless figure); values at the edges of what is allowed pass."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from builders import dataset

from kieval_core import Costs, DecisionOptions, KievalOptionError, evaluate
from kieval_core.result import compare
from kieval_core.review import automation as review
from kieval_core.review import calibration as cal
from kieval_core.review import decisions, field_thresholds, uncertainty

# Two receipts with confidences: a right total, a wrong date, a wrong total, a spurious tax.
GT = {"A": [("", "", "total", "5"), ("", "", "date", "1/1")], "B": [("", "", "total", "7")]}
PRED = {"A": [("", "", "total", "5", 0.9), ("", "", "date", "2/2", 0.3)],
        "B": [("", "", "total", "8", 0.8), ("", "", "tax", "1", 0.6)]}


@pytest.fixture(scope="module")
def model():
    return evaluate(dataset(GT, "gt"), {"m": dataset(PRED, "m")}).models["m"]


@pytest.fixture(scope="module")
def other():
    worse = {d: [(*r[:3], "x", r[4]) for r in rows] for d, rows in PRED.items()}
    return evaluate(dataset(GT, "gt"), {"o": dataset(worse, "o")}).models["o"]


# (call, parameter, bad value, words of the allowed values): each call passes the bad value
CASES = [
    (lambda m, o: review.recommend(m.curve, 0.9, 2, level="bogus"), "level", "bogus", "'entity', 'document'"),
    (lambda m, o: review.recommend(m.curve, 95, 2), "target", 95, "[0, 1]"),
    (lambda m, o: review.recommend(m.curve, -0.1, 2), "target", -0.1, "[0, 1]"),
    (lambda m, o: review.recommend(m.curve, float("nan"), 2), "target", float("nan"), "[0, 1]"),
    (lambda m, o: review.recommend(m.curve, "0.9", 2), "target", "0.9", "[0, 1]"),
    (lambda m, o: review.recommend(m.curve, 0.9, -1), "n_documents", -1, "integer >= 0"),
    (lambda m, o: review.recommend(m.curve, 0.9, 2.5), "n_documents", 2.5, "integer >= 0"),
    (lambda m, o: review.recommend_for_automation(m.curve, 1.5, 2), "auto_rate", 1.5, "[0, 1]"),
    (lambda m, o: review.recommend_for_budget(m.curve, -5, 2), "reviews_per_1000", -5, ">= 0"),
    (lambda m, o: m.recommend(95), "target", 95, "[0, 1]"),
    (lambda m, o: m.recommend(0.9, level="page"), "level", "page", "'entity', 'document'"),
    (lambda m, o: review.review_at(m.review, float("nan")), "threshold", float("nan"), "a number"),
    (lambda m, o: review.review_at(m.review, {"total": "high"}), "threshold['total']", "high", "a number"),
    (lambda m, o: review.review_with(m.review, np.zeros(3)), "limits", "3", "one value per prediction (4)"),
    (lambda m, o: review.review_at(m.review, 0.5, costs=(1, 2)), "costs", (1, 2), "a Costs"),
    (lambda m, o: review.review_by_entity_type(m.review, None), "threshold", None, "a number"),
    (lambda m, o: review.point_at(m.curve, None), "threshold", None, "a number"),
    (lambda m, o: review.with_costs(m.curve, Costs(), -2), "n_documents", -2, "integer >= 0"),
    (lambda m, o: Costs(per_review=-1), "per_review", -1, "finite number >= 0"),
    (lambda m, o: Costs(addition=float("inf")), "addition", float("inf"), "finite number >= 0"),
    (lambda m, o: DecisionOptions(target=95), "target", 95, "[0, 1]"),
    (lambda m, o: DecisionOptions(document_target=1.2), "document_target", 1.2, "[0, 1]"),
    (lambda m, o: DecisionOptions(resamples=-1), "resamples", -1, "integer in [0, 10,000]"),
    (lambda m, o: DecisionOptions(resamples=10_001), "resamples", 10_001, "integer in [0, 10,000]"),
    (lambda m, o: DecisionOptions(seed=-3), "seed", -3, "integer >= 0"),
    (lambda m, o: DecisionOptions(costs={"review": 1}), "costs", {"review": 1}, "a Costs"),
    (lambda m, o: decisions.slice_thresholds(m, "vendor", 2), "target", 2, "[0, 1]"),
    (lambda m, o: decisions.automation_section(m, {"target": 0.9}), "options", {"target": 0.9},
     "a DecisionOptions"),
    (lambda m, o: field_thresholds.per_field_thresholds(m.review, 90), "target", 90, "[0, 1]"),
    (lambda m, o: uncertainty.bootstrap(m.review, 1.1), "target", 1.1, "[0, 1]"),
    (lambda m, o: uncertainty.bootstrap(m.review, 0.9, resamples=-10), "resamples", -10, "integer >= 0"),
    (lambda m, o: uncertainty.bootstrap(m.review, 0.9, seed=-1), "seed", -1, "integer >= 0"),
    (lambda m, o: uncertainty.bootstrap(m.review, 0.9, chunk=0), "chunk", 0, "integer >= 1"),
    (lambda m, o: uncertainty.holdout(m.review, 0.9, np.array([True])), "chosen", "1",
     "one value per document (2)"),
    (lambda m, o: uncertainty.holdout(m.review, 0.9, np.array([True, False]), resamples=0), "resamples", 0,
     "integer >= 1"),
    (lambda m, o: uncertainty.holdout(m.review, 9, np.array([True, False])), "target", 9, "[0, 1]"),
    (lambda m, o: uncertainty.holdout(m.review, 0.9, np.array([True, False]), chunk=0), "chunk", 0,
     "integer >= 1"),
    (lambda m, o: uncertainty.random_half(-4), "n_documents", -4, "integer >= 0"),
    (lambda m, o: cal.calibration(m.review, bins=0), "bins", 0, "integer >= 1"),
    (lambda m, o: cal.reliability(np.array([0.5]), np.array([True, False])), "confidence and correct", "(1,)",
     "one value per prediction"),
    (lambda m, o: cal.auroc(np.array([0.5, 0.2]), np.array([True])), "confidence and correct", "(2,)",
     "one value per prediction"),
    (lambda m, o: cal.reliability_of(m.review, "vendor"), "entity_type", "vendor", "'date'"),
    (lambda m, o: compare.paired_bootstrap(m, o, level=95), "level", 95, "(0, 1)"),
    (lambda m, o: compare.paired_bootstrap(m, o, resamples=0), "resamples", 0, "integer >= 1"),
    (lambda m, o: compare.paired_bootstrap(m, "o"), "b", "o", "a ModelResult"),
    (lambda m, o: compare.per_document(m, o, "bogus"), "column", "bogus", "'aligned'"),
    (lambda m, o: compare.disagreements(m, o, n=-1), "n", -1, "integer >= 0"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_bad_parameter_is_one_clear_value_error(model, other, case):
    call, name, value, allowed = CASES[case]
    with pytest.raises(ValueError) as raised:
        call(model, other)
    message = str(raised.value)
    assert isinstance(raised.value, KievalOptionError)  # a bad option: the CLI's exit 2
    assert message.startswith(name), message
    assert (value if isinstance(value, str) else repr(value)) in message, message
    assert allowed in message, message


def test_a_curve_that_is_not_a_curve_is_named(model):
    with pytest.raises(ValueError, match="curve lacks the column.s. document_accuracy; pass a table made by "
                                         "automation_curve"):
        review.recommend(model.curve.drop(columns="document_accuracy"), 0.9, 2, level="document")
    with pytest.raises(ValueError, match="curve must be a DataFrame made by automation_curve, got 'list'"):
        review.recommend_for_automation([0.1, 0.2], 0.5, 2)
    with pytest.raises(ValueError, match="curve lacks the column.s. cost, cost_per_1000_documents"):
        review.minimum_cost(model.curve)
    with pytest.raises(ValueError, match="curve is empty"):
        review.recommend(model.curve.iloc[:0], 0.9, 2)
    with pytest.raises(ValueError, match=re.escape("table lacks the column(s) gap")):
        cal.expected_calibration_error(pd.DataFrame({"predictions": [1]}))


def test_per_type_thresholds_name_an_unknown_type(model):
    with pytest.raises(ValueError, match="threshold: unknown entity type.s. 'totl'; the model's types are "
                                         "'date', 'tax', 'total'"):
        review.review_at(model.review, {"totl": 0.5})


def test_the_edges_of_what_is_allowed_pass(model, other):
    curve = model.curve
    assert review.recommend(curve, 0, 2, "document").threshold == 0.0
    assert review.recommend(curve, 1, 2).threshold == 0.9
    assert review.recommend_for_automation(curve, 0.0, 2).threshold == curve["threshold"].iloc[-1]
    assert review.recommend_for_automation(curve, 1.0, 2).threshold == 0.3  # reviews nothing
    assert review.recommend_for_budget(curve, 0, 2).threshold == 0.3
    assert review.review_at(model.review, np.inf).reviewed == 4  # infinity reviews everything
    assert review.review_at(model.review, np.float32(0.5)).reviewed == 1  # numpy numbers are numbers
    assert review.review_at(model.review, {"date": 0.5}).reviewed == 1
    assert review.point_at(curve, 2)["reviewed"] == 4
    assert uncertainty.bootstrap(model.review, 0.9, resamples=0).threshold is None
    assert len(uncertainty.random_half(0)) == 0
    assert DecisionOptions(target=1, document_target=0, resamples=0, seed=np.int64(3)).seed == 3
    assert len(compare.paired_bootstrap(model, other, resamples=1, level=0.5))
    assert cal.auroc([0.9, 0.1], [1, 0]) == 1.0  # lists and 0/1 flags read as bool, not as positions
