"""Decision figures by hand: per-document costs, slices of documents, recommendations by
automation rate and by review budget, and the JSON keys of SPEC 4b."""

from __future__ import annotations

import numpy as np
import pytest
from builders import dataset
from conftest import SAMPLE_DATA

from kieval_core import Costs, DecisionOptions, evaluate
from kieval_core.output.render import build_report
from kieval_core.read.formats.builder import DatasetBuilder
from kieval_core.result.tables import corrections_table
from kieval_core.review.automation import (
    recommend_for_automation,
    recommend_for_budget,
    review_at,
    with_costs,
)
from kieval_core.review.decisions import slice_thresholds
from kieval_core.review.operating_point import operating_point, review_curve, starting_threshold


def _model(gt, pred, meta=None):
    gt_set = dataset(gt, "gt")
    if meta:
        builder = DatasetBuilder("gt", "gt", "rows")
        for doc_id, rows in gt.items():
            builder.add(doc_id, doc_id, [(*r[:4], np.nan) for r in rows], meta={"vendor": meta[doc_id]})
        gt_set = builder.build()
    return evaluate(gt_set, {"m": dataset(pred, "m")}).models["m"]


# Two receipts. A: total right (0.9), date wrong (0.3) where a date is expected.
# B: total wrong (0.8) where a total is expected, a spurious tax (0.6).
GT = {"A": [("", "", "total", "5"), ("", "", "date", "1/1")],
      "B": [("", "", "total", "7")]}
PRED = {"A": [("", "", "total", "5", 0.9), ("", "", "date", "2/2", 0.3)],
        "B": [("", "", "total", "8", 0.8), ("", "", "tax", "1", 0.6)]}


def test_per_document_costs_by_hand():
    m = _model(GT, PRED)
    costs = Costs(per_review=1, per_document=5, substitution=10, addition=20, deletion=30)
    # no review: subs 2 (date, B's total), deletion 1 (tax): 2*10 + 30 = 50
    assert review_at(m.review, 0.0, costs).cost == 50
    # τ = 0.5 reviews the date in A: 1 review + 1 opened document + B's total (10) + tax (30) = 46
    point = review_at(m.review, 0.5, costs)
    assert (point.reviewed, point.opened_documents, point.cost) == (1, 1, 46)
    # τ = 0.7 also reviews the tax in B: 2 reviews, 2 documents, B's total left: 2 + 10 + 10 = 22
    assert review_at(m.review, 0.7, costs).cost == 22
    # everything reviewed: 4 reviews, 2 documents, nothing left: 4 + 10 = 14
    assert review_at(m.review, 1.0 + 1e-9, costs).cost == 14
    curve = with_costs(m.curve, costs, m.n_documents).set_index("threshold")
    assert curve.loc[0.6, "cost"] == 46 and curve.loc[0.6, "cost_per_1000_documents"] == 23_000


def test_document_level_figures_by_hand():
    m = _model(GT, PRED)
    curve = m.curve.set_index("threshold")
    # A is right after review once its date (0.3) is reviewed; B once its total (0.8) and tax (0.6) are
    assert curve.loc[0.3, "document_accuracy"] == 0.0
    assert curve.loc[0.6, "document_accuracy"] == 0.5
    assert curve.loc[0.9, "document_accuracy"] == 1.0
    # A goes straight through while τ <= 0.3 (its least confident prediction), B while τ <= 0.6
    assert curve.loc[0.3, "straight_through_rate"] == 1.0
    assert curve.loc[0.6, "straight_through_rate"] == 0.5
    assert curve.loc[0.8, "straight_through_rate"] == 0.0


def test_recommendations_by_automation_rate_and_budget():
    m = _model(GT, PRED)
    assert recommend_for_automation(m.curve, 0.75, m.n_documents).threshold == 0.6  # 3 of 4 automated
    assert recommend_for_automation(m.curve, 0.5, m.n_documents).threshold == 0.8
    # a budget of 500 reviews per 1,000 documents: one review for two documents
    assert recommend_for_budget(m.curve, 500, m.n_documents).threshold == 0.6


def test_slices_get_their_own_thresholds():
    m = _model(GT, PRED, meta={"A": "acme", "B": "beta"})
    plan = slice_thresholds(m, "vendor", 1.0)
    rows = {r["value"]: r for r in plan.rows}
    assert rows["acme"]["recommended"]["threshold"] == 0.9  # the date (0.3) reviewed, the total kept
    assert rows["beta"]["recommended"]["reachable"] is False  # every B prediction must be reviewed
    assert plan.unreachable == ["beta"]
    combined = plan.as_dict(m, Costs())["combined"]
    assert combined["reviewed"] == 3 and combined["kieval_aligned"] == 1.0
    assert combined["straight_through"] == 0


def test_spec_4b_json_keys():
    m_report = build_report(evaluate(dataset(GT, "gt"), {"m": dataset(PRED, "m")}),
                            DecisionOptions(target=0.9, resamples=50))["models"]["m"]["automation"]
    point = m_report["documents"]["curve"][0]
    assert set(point) == {"threshold", "straight_through_rate", "document_accuracy"}
    assert set(m_report["cost"]) == {"per_review", "per_document", "per_escaped"}
    assert set(m_report["cost"]["per_escaped"]) == {"substitution", "addition", "deletion"}
    assert {"threshold", "cost_per_1000_documents"} <= set(m_report["min_cost"])
    assert set(m_report["recommended"]["interval"]) == {"threshold", "auto_rate"}
    assert m_report["band"]["resamples"] == 50 and m_report["per_field"]["exact"] is True
    assert m_report["holdout"]["target"] == 0.9 and m_report["calibration"][0]["entity_type"] is None
    assert pytest.approx(m_report["curve"][0]["kieval_aligned"]) == 1 / 4  # 1 TP, 3 errors


def test_an_unreachable_target_has_no_interval_even_when_some_resamples_reach_it():
    # B's total is missing (an addition, never fixed by review): 100% is out of reach on the
    # corpus, but a resample that draws only A reaches it
    gt = {"A": [("", "", "total", "5")], "B": [("", "", "total", "7"), ("", "", "date", "1/1")]}
    pred = {"A": [("", "", "total", "5", 0.9)], "B": [("", "", "date", "1/1", 0.8)]}
    m_report = build_report(evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}),
                            DecisionOptions(target=1.0, resamples=200))["models"]["m"]["automation"]
    assert m_report["recommended"]["reachable"] is False
    assert 0 < m_report["band"]["reachable_share"] < 1
    assert m_report["recommended"]["interval"] == {"threshold": None, "auto_rate": None}


def test_corrections_beside_fp_fn_by_hand():
    # A: total right, date wrong (1 substitution = 1 FP + 1 FN); B: total wrong (the same), tax
    # spurious (1 deletion = 1 FP): 3 corrections against FP + FN = 5, overstated by 2/3
    table = corrections_table(evaluate(dataset(GT, "gt"), {"m": dataset(PRED, "m")}))
    row = table.loc["m"]
    assert (row["substitution"], row["addition"], row["deletion"], row["corrections"]) == (2, 0, 1, 3)
    assert row["FP + FN"] == 5 and row["FP + FN overstates work by"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("review", ["predictions", "documents"])
def test_a_threshold_control_starts_where_deciding_by_accuracy_is(review):
    """Reachable: the recommendation; out of reach: the best accuracy with some automation
    (the point the accuracy mode shows), never the last point (review everything)."""
    model = evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", {"m": SAMPLE_DATA / "sim_llm.jsonl"}).models["m"]
    curve = review_curve(model, review)
    for target in (0.5, 0.999):
        expected = operating_point(model, review=review, value=target, target=target)
        start = starting_threshold(curve, target, model.n_documents, review)
        assert start == expected.threshold and expected.point.auto_rate > 0
        assert expected.reachable == (target == 0.5 or review == "documents")  # whole documents fix all
