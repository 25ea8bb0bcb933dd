"""Whole-document review, the missing-confidence policy and consensus confidences (SPEC
4c): the worked example through the Python API and the CLI, naive oracles under
hypothesis, bad input, and the real SROIE systems (skipped without ../shared/data)."""

from __future__ import annotations

import json
import math
from unittest import mock

import numpy as np
import pytest
from builders import dataset, write_jsonl
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracles import isclose, naive_consensus, naive_document_review, naive_review
from test_invariance import document
from test_worked_examples import RPA_GT, RPA_PRED

from kieval_core import DecisionOptions, Normalizer, evaluate, load
from kieval_core.cli import main
from kieval_core.output.render import build_report
from kieval_core.result.consensus import consensus_confidence, with_confidence_sources
from kieval_core.review.automation import (
    PREDICTION_ARRAYS,
    Costs,
    ReviewModel,
    canonical_order,
    document_review_curve,
    point_at,
    recommend,
    review_documents_with,
    thresholds,
)
from kieval_core.review.field_thresholds import per_field_thresholds


def _model(gt, pred, name="m", missing="automate"):
    """The naive oracles read a missing confidence as 1.0 (``automate``); the default
    policy is tested against a file that writes them as 0.0."""
    return evaluate(dataset(gt, "gt"), {name: dataset(pred, name)}, missing_confidence=missing).models[name]


@pytest.fixture
def rpa_files(tmp_path):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "r", "gt_parse": RPA_GT}])
    pred = write_jsonl(tmp_path / "m.jsonl", [{"doc_id": "r", "prediction": RPA_PRED}])
    return gt, pred


# --- SPEC 4c worked example --------------------------------------------------------------


def _check_worked_example(points: dict) -> None:
    """τ <= 0.30: the receipt is not opened (7/11, 0 documents right, 4 errors: 40,000 per
    1,000 documents); τ > 0.30: opened and corrected whole (10/10, 1, 10 reviews: 10,000)."""
    for tau, p in points.items():
        expected = (1.0, 7 / 11, 0.0, 40_000.0) if tau <= 0.30 else (0.0, 1.0, 1.0, 10_000.0)
        got = (p["straight_through_rate"], p["kieval_aligned"], p["document_accuracy"],
               p["cost_per_1000_documents"])
        assert got == pytest.approx(expected), tau
    assert {round(t, 6) for t in points} >= {0.0, 0.30, 0.35, 0.40, 0.95}


def test_worked_example_through_the_python_api(rpa_files):
    model = evaluate(*rpa_files).models["m"]
    curve = document_review_curve(model.review, Costs())
    _check_worked_example({row["threshold"]: row for row in curve.to_dict("records")})
    assert curve["threshold"].iloc[-1] > 0.95
    rec = recommend(curve, 0.85, model.n_documents, "document_review")
    # opening the receipt leaves no automation
    assert not rec.reachable and rec.best_reachable == pytest.approx(7 / 11)
    point = review_documents_with(model.review, np.full(model.n_predictions, 0.31))
    assert (point.tp_after, point.errors_left, point.added_by_review, point.opened_documents) == (10, 0, 1, 1)


def test_worked_example_through_the_cli(rpa_files, tmp_path):
    out = tmp_path / "report.json"
    gt, pred = rpa_files
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(out), "--bootstrap", "0",
                 "--target-accuracy", "0.6", "--missing-confidence", "automate"]) == 0
    report = json.loads(out.read_text("utf-8"))
    automation = report["models"]["m"]["automation"]
    assert report["decisions"]["review"] == "both" and automation["review"] == "both"
    section = automation["document_review"]
    _check_worked_example({p["threshold"]: p for p in section["curve"]})
    assert set(section["curve"][0]) == {"threshold", "straight_through_rate", "kieval_aligned",
                                        "document_accuracy", "cost_per_1000_documents"}
    assert section["recommended"]["threshold"] == 0.0 and section["recommended"]["reachable"]
    assert section["min_cost"]["cost_per_1000_documents"] == pytest.approx(10_000)
    assert automation["curve"] is not None  # both policies by default
    assert automation["confidence_source"] == "model" and automation["missing_confidence"] == "automate"


@pytest.mark.parametrize(("review", "predictions", "documents"),
                         [("predictions", True, False), ("documents", False, True)])
def test_review_option_selects_the_policies_reported(rpa_files, tmp_path, capsys, review, predictions,
                                                     documents):
    out = tmp_path / "report.json"
    gt, pred = rpa_files
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(out), "--bootstrap", "0",
                 "--review", review]) == 0
    automation = json.loads(out.read_text("utf-8"))["models"]["m"]["automation"]
    assert (automation["curve"] is not None, automation["document_review"] is not None) == (predictions,
                                                                                         documents)
    assert automation["calibration"] is not None
    printed = capsys.readouterr().out
    assert ("Recommended τ" in printed, "Whole-doc τ" in printed) == (predictions, documents)


# --- oracles ------------------------------------------------------------------------------


@st.composite
def corpus(draw, models: int = 1):
    n = draw(st.integers(1, 4))
    gt = {f"d{i}": draw(document(with_conf=False)) for i in range(n)}
    preds = [{f"d{i}": draw(document(with_conf=True)) for i in range(n)} for _ in range(models)]
    return gt, preds


COSTS = Costs(per_review=1.5, per_document=4.0, substitution=10.0, addition=20.0, deletion=7.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2),
                          st.sampled_from([0.0, -0.0, 0.5, 1.0, -np.inf]),
                          st.booleans(), st.booleans(), st.booleans()), max_size=30))
def test_the_canonical_order_is_the_lexsort_of_its_keys(rows):
    """One sort of the confidences and one of the packed keys: the permutation of
    np.lexsort over (doc, type, confidence, has, wrong, gain), ties and zeros of either sign
    included."""
    doc, etype, conf, has, wrong, gain = (np.array(c) for c in zip(*rows, strict=True)) if rows else (
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), *(np.zeros(0, bool),) * 3)
    expected = np.lexsort((gain, wrong, has, conf, etype, doc))
    order = canonical_order(doc, etype, conf.astype(np.float64), has, wrong, gain)
    assert order.tolist() == expected.tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5000000000000001, 1.0, -np.inf, 1e-300]),
                max_size=12))
def test_thresholds_read_off_the_sorted_confidences_equal_a_sort_of_their_own(values):
    """The model's thresholds come from its one sort of the confidences: the same array,
    bit for bit (a 0 of either sign falls back to the sort, which picks its sign)."""
    confidence = np.array(values, np.float64)
    ordered = confidence[np.argsort(confidence, kind="stable")]
    own = thresholds(confidence)
    assert thresholds(confidence, ordered).tobytes() == own.tobytes()


@settings(max_examples=60, deadline=None)
@given(corpus())
def test_every_type_from_one_sort_equals_each_type_alone(data):
    """by_type (one sort for every per-type table) gives each type's model as of_type
    does, array for array, the indexes of its predictions, and its confidence order (read
    off the whole model's) as a stable sort of its own confidences; so does a restriction
    to some documents."""
    gt, (pred,) = data
    review = _model(gt, pred).review
    parts, rows = review.by_type()
    assert len(parts) == len(rows) == len(review.entity_types)
    for code, (part, mine) in enumerate(zip(parts, rows, strict=True)):
        alone = review.of_type(code)
        assert part.entity_types == alone.entity_types and part.doc_ids == alone.doc_ids
        for key in ("confidence", "has_confidence", "doc", "entity_type", "wrong", "gain", "cell", "copies",
                    "base_type", "base_doc", "base_tp", "base_addition"):
            assert np.array_equal(getattr(part, key), getattr(alone, key)), key
        assert mine.tolist() == np.flatnonzero(review.entity_type == code).tolist()
        assert part.by_confidence.tolist() == np.argsort(alone.confidence, kind="stable").tolist()
    half = np.arange(review.n_documents) % 2 == 0
    assert review.restrict(half).by_confidence.tolist() == np.argsort(  # read off the sorted model
        review.restrict(half).confidence, kind="stable").tolist()


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(corpus())
def test_document_review_equals_a_naive_loop_over_documents(data):
    gt, (pred,) = data
    m = _model(gt, pred)
    curve = document_review_curve(m.review, COSTS)
    costs = (COSTS.per_review, COSTS.per_document, COSTS.substitution, COSTS.addition, COSTS.deletion)
    for row in curve.to_dict("records"):
        expected = naive_document_review(m.counted, row["threshold"], costs)
        for key, value in expected.items():
            assert isclose(row[key], value), (key, row["threshold"], row[key], value)
        point = review_documents_with(m.review, np.full(m.n_predictions, row["threshold"]), COSTS)
        for key in ("straight_through_rate", "kieval_aligned", "document_accuracy", "reviewed", "cost"):
            assert isclose(getattr(point, key), row[key]), key
    assert curve["kieval_aligned"].iloc[0] == m.aligned  # nothing opened at τ = 0
    assert (np.diff(curve["kieval_aligned"]) >= -1e-12).all()
    assert (np.diff(curve["straight_through_rate"]) <= 1e-12).all()


def _filled(pred: dict, value: float) -> dict:
    return {d: [(*r[:4], value if math.isnan(r[4]) else r[4]) for r in rows] for d, rows in pred.items()}


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(corpus())
def test_missing_confidences_reviewed_equal_a_file_that_says_zero_above_zero(data):
    """Reviewed (the default) is a file that says 0.0 at every τ > 0, and at τ = 0 already
    reviews what has no confidence: the figures of the file's first τ above 0."""
    gt, (pred,) = data
    assume(all(r[4] != 0.0 for rows in pred.values() for r in rows))  # 0.0 is the missing ones' here
    result = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")})
    reviewed = result.models["m"]
    assert reviewed.missing_confidence == "review"
    zero = _model(gt, _filled(pred, 0.0), missing="review")  # the missing confidences written as 0.0
    columns = ["auto_rate", "kieval_aligned", "reviewed", "substitution", "addition", "deletion",
               "straight_through_rate", "document_accuracy", "opened_documents"]
    above = zero.curve["threshold"][zero.curve["threshold"] > 0].min() if zero.n_predictions else 0.0
    documents = document_review_curve(reviewed.review)
    for i, row in enumerate(reviewed.curve.to_dict("records")):
        tau = row["threshold"] if row["threshold"] > 0 else above
        assert point_at(zero.curve, tau)[columns].tolist() == [row[c] for c in columns], row["threshold"]
        assert documents.iloc[i].drop("threshold").equals(
            point_at(document_review_curve(zero.review), tau).drop("threshold"))
        expected = naive_review(zero.counted, tau)
        assert all(isclose(row[k], v) for k, v in expected.items() if k in row), row["threshold"]
    automated = with_confidence_sources(result, "automate").models["m"]
    assert automated.review.with_missing("review").confidence.tolist() == reviewed.review.confidence.tolist()
    assert (automated.curve["reviewed"].iloc[0], reviewed.curve["reviewed"].iloc[0]) == (
        0, int((~reviewed.review.has_confidence).sum()))


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(corpus(models=3))
def test_consensus_equals_a_naive_count_and_a_file_that_carries_it(data):
    gt, preds = data
    names = ["a", "b", "c"]
    stripped = [{d: [(*r[:4], math.nan) for r in rows] for d, rows in p.items()} for p in preds]
    result = evaluate(dataset(gt, "gt"), {n: dataset(p, n) for n, p in zip(names, stripped, strict=True)})
    frames = {n: result.models[n].counted.pred_entities[["doc_id", "entity_type", "value"]] for n in names}
    fast = consensus_confidence(frames, Normalizer())
    rows = {n: list(f.itertuples(index=False, name=None)) for n, f in frames.items()}
    slow = naive_consensus(rows, Normalizer())
    assert {n: v.tolist() for n, v in fast.items()} == slow
    derived = with_confidence_sources(result, source="consensus")
    for i, name in enumerate(names):
        model = derived.models[name]
        assert model.confidence_source == "consensus of 2 models"
        assert model.has_confidence or model.n_predictions == 0
        # the same predictions with the consensus written into the file score the same curves
        order = result.models[name].counted.pred_entities["position"].to_numpy()
        conf = np.empty(len(order))
        conf[order] = fast[name]
        flat = [(d, r) for d, rows_ in stripped[i].items() for r in rows_]
        written: dict = {d: [] for d in stripped[i]}
        for k, (d, r) in enumerate(flat):
            written[d].append((*r[:4], conf[k]))
        carried = _model(gt, written, name)
        assert model.curve.equals(carried.curve)


def test_consensus_needs_three_models_and_keeps_own_confidences(rpa_files, tmp_path, capsys):
    gt, pred = rpa_files
    bare = write_jsonl(tmp_path / "bare.jsonl", [{"doc_id": "r", "prediction": {"company": "ACME"}}])
    out = tmp_path / "report.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--pred", str(bare), "--json", str(out),
                 "--bootstrap", "0", "--confidence-from", "consensus"]) == 0
    err = capsys.readouterr().err
    assert "needs at least 3 models" in err and "2 are loaded" in err
    assert main(["evaluate", "--gt", str(gt), "--pred", str(bare), "--bootstrap", "0",
                 "--confidence-from", "consensus"]) == 0
    assert "needs at least 3 models on one ground truth and 1 is loaded" in capsys.readouterr().err
    assert "bare without confidences keep none" in err
    models = json.loads(out.read_text("utf-8"))["models"]
    assert models["bare"]["automation"]["confidence_source"] == "none"
    third = write_jsonl(tmp_path / "third.jsonl",
                        [{"doc_id": "r", "prediction": {"company": "ACME", "total": "9"}}])
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--pred", str(bare), "--pred", str(third),
                 "--json", str(out), "--bootstrap", "0", "--confidence-from", "consensus"]) == 0
    err = capsys.readouterr().err
    assert "m: own confidences kept" in err
    models = json.loads(out.read_text("utf-8"))["models"]
    assert models["m"]["automation"]["confidence_source"] == "model"
    assert models["m"]["automation"]["calibration_consensus"] is not None  # compared with consensus
    assert models["bare"]["automation"]["confidence_source"] == "consensus of 2 models"
    assert models["third"]["automation"]["curve"] is not None


# --- per-field thresholds that review a whole field ----------------------------------------


def test_a_field_reviewed_whole_says_so_in_the_report():
    gt = {"A": [("", "", "total", "5"), ("", "", "date", "1/1")], "B": [("", "", "total", "7"),
                                                                        ("", "", "date", "2/2")]}
    pred = {"A": [("", "", "total", "5", 0.9), ("", "", "date", "9/9", 0.95)],
            "B": [("", "", "total", "7", 0.8), ("", "", "date", "8/8", 0.97)]}
    m = _model(gt, pred)
    fields = per_field_thresholds(m.review, 0.9)
    assert fields.reachable and fields.whole == {"date"} and fields.thresholds["date"] > 0.97
    section = build_report(evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}),
                           DecisionOptions(target=0.9, resamples=0))["models"]["m"]["automation"]["per_field"]
    assert section["thresholds"]["date"] == {"threshold": None, "review": "all"}
    assert section["thresholds"]["total"] == {"threshold": 0.0, "review": "below threshold"}
    table = {r["entity_type"]: r for r in section["table"]}
    assert table["date"]["threshold"] is None and table["date"]["review"] == "all"


# --- real systems ----------------------------------------------------------------------------


def test_textract_with_missing_confidences_reviewed(tmp_path, shared_data):
    sroie = shared_data / "sroie"
    textract = sroie / "predictions" / "aws_textract_analyzeexpense.jsonl"
    result = evaluate(load(sroie / "sroie_test_gt.jsonl"), {"textract": load(textract)})
    reviewed = result.models["textract"]  # the default: never automated
    assert reviewed.missing_confidence == "review"
    without = int((~reviewed.review.has_confidence).sum())
    assert without == 618 and reviewed.n_predictions == 1375  # 45% carry none
    automated = with_confidence_sources(result, "automate").models["textract"]
    first = reviewed.curve.iloc[0]  # τ = 0: every prediction without a confidence is already reviewed
    assert (first["threshold"], first["reviewed"], automated.curve.iloc[0]["reviewed"]) == (0.0, without, 0)
    assert automated.curve.iloc[1]["reviewed"] < without
    assert reviewed.curve.iloc[-1]["kieval_aligned"] == automated.curve.iloc[-1]["kieval_aligned"]
    out = tmp_path / "report.json"
    assert main(["evaluate", "--gt", str(sroie / "sroie_test_gt.jsonl"), "--pred", f"textract={textract}",
                 "--json", str(out), "--bootstrap", "0"]) == 0
    report = json.loads(out.read_text("utf-8"))["models"]["textract"]
    assert report["automation"]["missing_confidence"] == "review"
    assert any("never automate them" in w for w in report["warnings"])
    assert report["automation"]["curve"][0]["auto_rate"] == pytest.approx(1 - without / 1375)
    by_field = {f["entity_type"]: f for f in report["automation"]["confidence_by_field"]}
    assert (by_field["date"]["without_confidence"], by_field["date"]["predictions"]) == (317, 342)
    assert (by_field["total"]["without_confidence"], by_field["total"]["predictions"]) == (299, 346)
    assert sum(f["without_confidence"] for f in by_field.values()) == without


def test_consensus_on_the_seven_sroie_systems(shared_data):
    sroie = shared_data / "sroie"
    files = sorted((sroie / "predictions").glob("*.jsonl"))
    assert len(files) == 7
    result = evaluate(load(sroie / "sroie_test_gt.jsonl"), {f.stem: load(f) for f in files},
                      confidence_from="consensus")
    for name, model in result.models.items():
        expected = "model" if name == "aws_textract_analyzeexpense" else "consensus of 6 models"
        assert model.confidence_source == expected
        assert model.curve["kieval_aligned"].iloc[-1] >= model.aligned
    from kieval_core.review.calibration import calibration

    textract = result.models["aws_textract_analyzeexpense"]
    own, cons = calibration(textract.review).iloc[0], calibration(textract.consensus).iloc[0]
    assert own["with_confidence"] == cons["with_confidence"]  # the same predictions, both ways
    assert cons["auroc"] > 0.5  # agreement ranks errors below right values


# --- the operating point of the Automation page ----------------------------------------------


@settings(max_examples=40, deadline=None)
@given(corpus(), st.sampled_from(["predictions", "documents"]), st.sampled_from([0.3, 0.6, 0.9]))
def test_operating_points_by_every_way_of_deciding(data, review, value):
    from kieval_core.review.automation import (
        point_at,
        review_by_entity_type,
        review_documents_by_entity_type,
        review_with,
    )
    from kieval_core.review.operating_point import operating_point, review_curve

    gt, (pred,) = data
    m = _model(gt, pred)
    reviewer = review_with if review == "predictions" else review_documents_with
    curve = review_curve(m, review)
    automation = "auto_rate" if review == "predictions" else "straight_through_rate"
    for decide_by in ("accuracy", "automation", "budget", "threshold"):
        v = value * 1000 if decide_by == "budget" else value
        op = operating_point(m, review=review, decide_by=decide_by, value=v)
        assert op.point == reviewer(m.review, np.full(m.n_predictions, op.threshold))
        row = point_at(curve, op.threshold)
        if decide_by == "accuracy" and op.reachable:
            assert row["kieval_aligned"] >= value - 1e-12 and row[automation] > 0
            assert not ((curve["threshold"] < op.threshold) & (curve["kieval_aligned"] >= value - 1e-12)
                        & (curve[automation] > 0)).any()  # the smallest such τ
        if decide_by == "automation":  # or the most automation there is (none without confidences)
            assert row[automation] >= min(value, curve[automation].max()) - 1e-12
        if decide_by == "budget":
            assert row["reviewed"] * 1000 / m.n_documents <= v + 1e-9 or op.threshold == 0.0
    op = operating_point(m, review=review, scope="field", target=value)
    assert op.threshold is None
    assert op.point == reviewer(m.review, m.review.thresholds_of(op.fields.thresholds))
    by_type = (review_by_entity_type if review == "predictions" else review_documents_by_entity_type)(
        m.review, op.limits)
    for column in ("substitution", "addition", "deletion", "tp_after"):
        assert by_type[column].sum() == getattr(op.point, column)
    assert op.opened_per_1000_documents == pytest.approx(1000 * op.point.opened_documents / m.n_documents)


def test_an_unreachable_target_shows_the_best_point_with_automation(rpa_files):
    from kieval_core.review.operating_point import operating_point

    model = evaluate(*rpa_files).models["m"]
    op = operating_point(model, decide_by="accuracy", value=0.95)
    assert not op.reachable and op.best_reachable == pytest.approx(0.9)
    assert op.threshold == pytest.approx(0.60) and op.point.kieval_aligned == pytest.approx(0.9)
    whole = operating_point(model, review="documents", decide_by="accuracy", value=0.95)
    assert not whole.reachable and whole.threshold == 0.0  # opening the receipt leaves nothing automated


def test_summary_names_review_all_and_the_best_reachable(tmp_path, capsys):
    """The most confident value is the wrong one: the cheapest plan and the only way to 95%
    is to review everything. The summary says "> 0.9500" (τ just above the largest
    confidence), not 0.9500, at which that value would be automated; and it names the
    target, the costs and the best accuracy some automation gives."""
    gt, pred = tmp_path / "gt.jsonl", tmp_path / "m.jsonl"
    gt.write_text('{"doc_id": "d", "a": "1", "b": "2"}\n', "utf-8")
    pred.write_text('{"doc_id": "d", "a": {"value": "7", "confidence": 0.95}, '
                    '"b": {"value": "2", "confidence": 0.9}}\n', "utf-8")
    out = tmp_path / "report.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(out),
                 "--bootstrap", "0", "--review", "predictions"]) == 0
    min_cost = json.loads(out.read_text("utf-8"))["models"]["m"]["automation"]["min_cost"]
    assert min_cost["auto_rate"] == 0 and 0.95 < min_cost["threshold"] < 0.95 + 1e-12
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if line.startswith("Minimum-cost τ")).split()[-2:] == [">", "0.9500"]
    assert next(line for line in lines if line.startswith("Recommended τ")).endswith("not reachable")
    assert ("decisions: target accuracy after review 0.95 (--target-accuracy); cost 1 per review, 0 per "
            "opened document, 10 per error left (--cost)") in lines
    assert ("m: 0.95 is not reachable with automation, reviewing single predictions (best 0.5000: only "
            "reviewing everything gets there)") in lines
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--cost", "escaped=1", "--cost", "addition=3"]) == 0  # now no review is cheapest
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if line.startswith("Minimum-cost τ")).endswith(" 0.0000")
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--gate", "automation.recommended.auto_rate>=0.5"]) == 3
    assert ("gate failed: m: automation.recommended.auto_rate = n/a (not reachable, or no confidences), "
            "gate automation.recommended.auto_rate >= 0.5") in capsys.readouterr().err
    costs = "per error left: substitution 1, addition 3, deletion 1 (--cost)"
    assert any(line.endswith(costs) for line in lines)


def test_document_target_says_what_it_chose(tmp_path, capsys):
    """--document-target drives automation.documents.recommended only, which no row of the
    summary shows: a line says what it chose. Worked by hand: receipt a is right (0.9),
    receipt b's only value is wrong (0.3), receipt c's value is missing (never fixed by a
    review of predictions). At τ 0 one document in 3 is right, all go straight through; at
    τ 0.9 b's value is reviewed: 2 of 3 right, a and c straight through; above 0.9 nothing
    goes through. So 0.6 of documents right needs τ 0.9, and 1 is out of reach (best 2/3)."""
    gt, pred = tmp_path / "gt.jsonl", tmp_path / "m.jsonl"
    gt.write_text("".join(f'{{"doc_id": "{d}", "x": "1"}}\n' for d in "abc"), "utf-8")
    pred.write_text('{"doc_id": "a", "x": {"value": "1", "confidence": 0.9}}\n'
                    '{"doc_id": "b", "x": {"value": "2", "confidence": 0.3}}\n{"doc_id": "c"}\n', "utf-8")
    command = ["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0"]

    def said(*options: str) -> list[str]:
        main([*command, *options])
        return [line for line in capsys.readouterr().out.splitlines() if line.startswith("document target")]

    assert said() == []  # not asked: the summary is as before
    assert said("--document-target", "0.6") == [
        "document target 0.6 (--document-target), reviewing single predictions: m τ 0.9000: 0.6667 of "
        "documents right after review, 0.6667 straight through"]
    assert said("--document-target", "1") == [
        "document target 1 (--document-target), reviewing single predictions: m not reachable (best 0.6667 "
        "of documents right with some straight through)"]
    assert said("--document-target", "0.3") == [  # τ 0: no review at all reaches a third
        "document target 0.3 (--document-target), reviewing single predictions: m τ 0.0000: 0.3333 of "
        "documents right after review, 1.0000 straight through"]
    assert said("--document-target", "1", "--review", "documents") == [
        "document target 1 (--document-target): not used, it applies to reviewing single predictions "
        "(--review predictions or both)"]
    out = tmp_path / "r.json"
    said("--document-target", "0.6", "--json", str(out))
    recommended = json.loads(out.read_text("utf-8"))["models"]["m"]["automation"]["documents"]["recommended"]
    assert recommended["threshold"] == 0.9 and recommended["accuracy"] == pytest.approx(2 / 3)
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"doc_id": "a", "x": "1"}\n', "utf-8")
    command += ["--pred", str(bare)]
    assert said("--document-target", "0.6")[0].endswith(
        "m τ 0.9000: 0.6667 of documents right after review, 0.6667 straight through; bare no confidences")


def test_summary_names_the_predictions_without_confidence_per_field(tmp_path, capsys):
    """One date of two carries no confidence: never automated (the default), said per field."""
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"date": "1/1", "total": "5"}},
                                             {"doc_id": "b", "gt_parse": {"date": "2/2", "total": "7"}}])
    pred = write_jsonl(tmp_path / "m.jsonl", [
        {"doc_id": "a", "prediction": {"date": "1/1", "total": {"value": "5", "confidence": 0.9}}},
        {"doc_id": "b", "prediction": {"date": {"value": "2/2", "confidence": 0.8},
                                       "total": {"value": "7", "confidence": 0.7}}}])
    out = tmp_path / "r.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--json", str(out)]) == 0
    said = capsys.readouterr().out
    assert ("m: predictions without a confidence are never automated, reviewed at every τ "
            "(--missing-confidence): date 50% (1 of 2)") in said
    automation = json.loads(out.read_text("utf-8"))["models"]["m"]["automation"]
    assert automation["curve"][0] == {"threshold": 0.0, "auto_rate": 0.75, "kieval_aligned": 1.0}
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--missing-confidence", "automate"]) == 0
    assert "date 50% (1 of 2)" in capsys.readouterr().out


# --- the review model's order kept when the confidences change nothing ------------------------

def _arrays(model: ReviewModel) -> dict:
    keys = (*PREDICTION_ARRAYS, "base_type", "base_doc", "base_tp", "base_addition")
    return {key: getattr(model, key).tolist() for key in keys}


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(
    st.lists(document(with_conf=False), min_size=n, max_size=n),
    st.lists(document(with_conf=False), min_size=n, max_size=n))), st.booleans())
def test_a_model_without_confidences_keeps_its_order_as_the_full_reordering_does(docs, confident):
    """Predictions without confidence (all read as one value): the shortcut of
    ``with_confidence`` gives the arrays of the full reordering, for both policies; with a
    confidence on every prediction the full path runs and agrees with itself."""
    gt, pred = ({f"d{i}": rows for i, rows in enumerate(side)} for side in docs)
    if confident:
        pred = {d: [(*row[:4], 0.5) for row in rows] for d, rows in pred.items()}
    counted = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"].counted
    with mock.patch.object(ReviewModel, "_keeps_its_order", lambda *args: False):
        full = ReviewModel.from_counted(counted)
        full_automated = full.with_missing("automate")
    fast = ReviewModel.from_counted(counted)
    assert _arrays(fast) == _arrays(full)
    assert _arrays(fast.with_missing("automate")) == _arrays(full_automated)


def _without_confidence(gt_values: list[str], pred_values: list[str]) -> ReviewModel:
    rows = {"gt": [("", "", "b", v, math.nan) for v in gt_values],
            "pred": [("", "", "b", v, math.nan) for v in pred_values]}
    model = evaluate(dataset({"d": rows["gt"]}, "gt"), {"m": dataset({"d": rows["pred"]}, "m")}).models["m"]
    n = len(pred_values)  # read as the engine does: 1.0, no confidence
    return ReviewModel.from_counted(model.counted, np.ones(n), np.zeros(n, bool))


def test_the_order_is_kept_unless_review_substitutes_some_wrong_values_of_a_cell_but_not_all():
    one_for_one = _without_confidence(["y"], ["z"])  # one wrong value, substituted
    minus_inf = np.full(1, -math.inf)
    assert one_for_one._keeps_its_order(minus_inf, one_for_one.has_confidence)
    two_for_one = _without_confidence(["y"], ["z", "w"])  # two wrong values, one substituted
    assert not two_for_one._keeps_its_order(np.full(2, -math.inf), two_for_one.has_confidence)
    assert not one_for_one._keeps_its_order(np.array([0.5]), np.ones(1, bool))  # the flags change
