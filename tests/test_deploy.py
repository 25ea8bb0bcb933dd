"""Decisions a team can deploy (SPEC 4d): floors per field and automation blockers in
per-field plans, on hand-made data, under hypothesis and on Textract's real SROIE
confidences (skipped without ../shared/data)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from builders import dataset, write_jsonl
from conftest import SHARED_DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from test_review_modes import corpus

from kieval_core import evaluate, load
from kieval_core.cli import main
from kieval_core.exceptions import KievalOptionError
from kieval_core.read.formats import LoadOptions
from kieval_core.review.automation import automation_blockers
from kieval_core.review.field_thresholds import per_field_thresholds


def _predictions(model):
    """The engine's predictions with a missing confidence read as never automated (-inf),
    and which identical copies of a value are right redone with it: the most confident
    (SPEC 4; the engine reads a missing confidence as 1.0)."""
    pred = model.counted.pred_entities.copy()
    pred["conf"] = pred["confidence"].fillna(-math.inf)
    group = pred.groupby(["cell", "copies"], observed=True)
    right = group["status"].transform(lambda s: int((s == "correct").sum()))
    rank = group["conf"].rank(method="first", ascending=False)
    pred["wrong"] = rank > right
    return pred


def _by_hand(model, field: str, tau: float | None) -> float:
    """A field's accuracy after review, from the engine's tables, one prediction at a
    time: a prediction is reviewed when it has no confidence, or one below τ (every one
    when τ is None: reviewed whole); in each cell the first min(reviewed wrong, FN) reviewed
    wrong values become right, every wrong value not reviewed stays an error, additions
    stay (SPEC 4)."""
    pred, cells = _predictions(model), model.counted.cells
    tp = int(cells.loc[cells["entity_type"] == field, "tp"].sum())
    additions = int(cells.loc[cells["entity_type"] == field, "addition"].sum())
    reviewed_wrong: dict[int, int] = {}
    left = 0
    for row in pred[pred["entity_type"] == field].itertuples(index=False):
        if not row.wrong:
            continue
        reviewed = tau is None or row.conf < tau
        if reviewed:
            reviewed_wrong[row.cell] = reviewed_wrong.get(row.cell, 0) + 1
        else:
            left += 1
    fn = cells["fn"].tolist()
    tp += sum(min(r, fn[cell]) for cell, r in reviewed_wrong.items())
    return tp / (tp + left + additions) if tp + left + additions else 1.0


# --- floors --------------------------------------------------------------------------------


def _two_fields():
    """Dates: right at 0.9, wrong at 0.95 (so only full review gets them right); totals:
    right at 0.8 and 0.6, wrong at 0.3."""
    gt = {"A": [("", "", "total", "5"), ("", "", "date", "1/1")],
          "B": [("", "", "total", "7"), ("", "", "date", "2/2")],
          "C": [("", "", "total", "9")]}
    pred = {"A": [("", "", "total", "5", 0.8), ("", "", "date", "1/1", 0.9)],
            "B": [("", "", "total", "7", 0.6), ("", "", "date", "8/8", 0.95)],
            "C": [("", "", "total", "4", 0.3)]}
    return evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"]


def test_a_field_below_its_floor_is_reviewed_whole_and_named():
    m = _two_fields()
    plan = per_field_thresholds(m.review, 0.6)  # floors 0.6: dates reach it only reviewed whole
    assert plan.reachable and plan.floor_unreachable == {"date"} and "date" in plan.whole
    assert plan.floors == {"date": 0.6, "total": 0.6}
    loose = per_field_thresholds(m.review, 0.6, {"date": 0.5})  # a right date of two: 0.5 is enough
    assert loose.floor_unreachable == frozenset() and loose.thresholds["date"] == 0.0
    table = {r["entity_type"]: r for r in plan.table.to_dict("records")}
    assert table["date"]["review"] == "all" and table["date"]["meets_floor"]
    assert table["total"]["kieval_aligned"] == pytest.approx(2 / 3) and table["total"]["floor"] == 0.6
    assert plan.as_dict()["floor_unreachable"] == ["date"]
    with pytest.raises(KievalOptionError, match=r"'time': no such field; the fields are 'date', 'total'"):
        per_field_thresholds(m.review, 0.6, {"time": 0.9})


@settings(max_examples=60, deadline=None)
@given(corpus())
def test_every_field_reaches_its_floor_or_is_reviewed_whole(data):
    gt, (pred,) = data
    m = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"]
    plan = per_field_thresholds(m.review, 0.7, {t: 0.8 for t in m.review.entity_types[:1]})
    for row in plan.table.to_dict("records"):
        if not row["predictions"]:
            continue
        whole = row["entity_type"] in plan.whole
        assert row["meets_floor"] or whole, row
        assert row["entity_type"] not in plan.floor_unreachable or whole
        tau = None if whole else plan.thresholds[row["entity_type"]]
        assert _by_hand(m, row["entity_type"], tau) == pytest.approx(row["kieval_aligned"])
        # every prediction without a confidence is reviewed, whatever the field's τ
        mine = m.review.entity_type == m.review.entity_types.index(row["entity_type"])
        limits = m.review.thresholds_of(plan.thresholds)
        assert (m.review.confidence < limits)[mine & ~m.review.has_confidence].all()


def test_blockers_count_the_documents_a_field_alone_keeps_open():
    m = _two_fields()
    limits = m.review.thresholds_of({"total": 0.7, "date": 0.92})  # A: date; B: total; C: total
    blockers = automation_blockers(m.review, limits).set_index("entity_type")
    assert blockers.loc["total"].tolist() == [2, 2, pytest.approx(2 / 3)]
    assert blockers.loc["date"].tolist() == [1, 1, pytest.approx(1 / 3)]
    both = automation_blockers(m.review, m.review.thresholds_of({"total": 0.7, "date": 0.99}))
    assert both.set_index("entity_type").loc["date"].tolist() == [2, 1, pytest.approx(1 / 3)]


def test_field_floor_option_and_per_field_lines(tmp_path, capsys):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "A", "gt_parse": {"total": "5", "date": "1/1"}},
                                             {"doc_id": "B", "gt_parse": {"total": "7", "date": "2/2"}}])
    pred = write_jsonl(tmp_path / "m.jsonl", [
        {"doc_id": "A", "prediction": {"total": {"value": "5", "confidence": 0.8},
                                       "date": {"value": "1/1", "confidence": 0.9}}},
        {"doc_id": "B", "prediction": {"total": {"value": "7", "confidence": 0.6},
                                       "date": {"value": "8/8", "confidence": 0.95}}}])
    out = tmp_path / "r.json"
    args = ["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0", "--json", str(out),
            "--per-field-thresholds", "--target-accuracy", "0.7"]
    assert main([*args, "--field-floor", "date=0.5"]) == 0
    said = capsys.readouterr().out
    assert "m: one τ per field reaches 0.7 overall" in said and "  date: τ 0.0000, 0.5000 (floor 0.5)" in said
    plan = json.loads(out.read_text("utf-8"))["models"]["m"]["automation"]["per_field"]
    assert plan["floors"] == {"date": 0.5, "total": 0.7} and plan["floor_unreachable"] == []
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "  date: reviewed whole, 1.0000 (floor 0.7)" in said
    assert "cannot reach their floor with any automation, reviewed whole: date" in said
    assert main([*args, "--field-floor", "date=high"]) == 2
    assert "--field-floor date=high: 'high' is not a number" in capsys.readouterr().err


# --- Textract on SROIE ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def textract():
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    sroie = SHARED_DATA / "sroie"
    options = LoadOptions(meta=("split",))
    gt = load(sroie / "sroie_test_gt.jsonl", options)
    pred = load(sroie / "predictions" / "aws_textract_analyzeexpense.jsonl", options)
    return evaluate(gt, {"textract": pred}).models["textract"]


def test_textract_per_field_plan_keeps_every_field_at_its_floor(textract):
    review = textract.review
    plan = per_field_thresholds(review, 0.95)
    assert plan.reachable
    limits = review.thresholds_of(plan.thresholds)
    reviewed = review.confidence < limits
    assert reviewed[~review.has_confidence].all() and (~review.has_confidence).sum() == 618
    for field in review.entity_types:
        whole = field in plan.whole
        by_hand = _by_hand(textract, field, None if whole else plan.thresholds[field])
        assert by_hand >= plan.floors[field] or whole, (field, by_hand)
        row = plan.table.set_index("entity_type").loc[field]
        assert by_hand == pytest.approx(row["kieval_aligned"])
    dates = plan.table.set_index("entity_type").loc["date"]
    assert dates["reviewed"] >= 317 and dates["kieval_aligned"] >= 0.95  # was 84.7%, 2 dates reviewed
    assert np.isclose(plan.table["straight_through_gain"].max(), 4 / 347)  # company keeps 4 receipts open


# --- assured thresholds ----------------------------------------------------------------------


def _documents_by_hand(model, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Per GT document (in the model's order) its right values and errors left after review
    at τ, one prediction at a time (a prediction without a confidence is reviewed)."""
    pred, cells = _predictions(model), model.counted.cells
    index = {d: i for i, d in enumerate(model.review.doc_ids)}
    tp, errors = np.zeros(len(index)), np.zeros(len(index))
    for cell in cells.itertuples(index=False):
        tp[index[cell.doc_id]] += cell.tp
        errors[index[cell.doc_id]] += cell.addition
    reviewed_wrong: dict[int, int] = {}
    for row in pred.itertuples(index=False):
        if not row.wrong:
            continue
        if row.conf < tau:
            reviewed_wrong[row.cell] = reviewed_wrong.get(row.cell, 0) + 1
        else:
            errors[index[row.doc_id]] += 1
    fn, docs = cells["fn"].tolist(), cells["doc_id"].tolist()
    for cell, r in reviewed_wrong.items():
        tp[index[docs[cell]]] += min(r, fn[cell])
    return tp, errors


def _bound_by_hand(model, tau: float, assurance: float, resamples: int, seed: int) -> float:
    """The one-sided lower bound of a seeded bootstrap over documents, written here: draw
    the resamples 50 at a time, count each drawn document once per draw."""
    tp, errors = _documents_by_hand(model, tau)
    n = len(tp)
    rng = np.random.default_rng(seed)
    accuracies = []
    for start in range(0, resamples, 50):
        for draw in rng.integers(0, n, (min(50, resamples - start), n)):
            right, wrong = tp[draw].sum(), errors[draw].sum()
            accuracies.append(right / (right + wrong) if right + wrong else 1.0)
    return float(np.quantile(accuracies, 1 - assurance))


@settings(max_examples=40, deadline=None)
@given(corpus())
def test_assured_threshold_is_never_below_the_point_one_and_its_bound_is_a_bootstrap(data):
    from kieval_core.review.uncertainty import assured_threshold

    gt, (pred,) = data
    m = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"]
    assured = assured_threshold(m.review, 0.6, 0.9, resamples=120, seed=3)
    if assured.point_threshold is None:
        assert not assured.reachable and assured.threshold is None
        return
    assert assured.point_lower_bound == _bound_by_hand(m, assured.point_threshold, 0.9, 120, 3)
    if assured.reachable:
        assert assured.threshold >= assured.point_threshold
        assert assured.lower_bound == _bound_by_hand(m, assured.threshold, 0.9, 120, 3) >= 0.6 - 1e-12
        below = m.curve["threshold"][(m.curve["threshold"] < assured.threshold)
                                     & (m.curve["threshold"] >= assured.point_threshold)]
        assert all(_bound_by_hand(m, t, 0.9, 120, 3) < 0.6 - 1e-12 for t in below)  # the smallest
    elif assured.documents_needed is not None:
        best = assured.best_threshold
        accuracy = m.curve.set_index("threshold").loc[best, "kieval_aligned"]
        gap = accuracy - _bound_by_hand(m, best, 0.9, 120, 3)
        assert assured.documents_needed == math.ceil(m.n_documents * (gap / (accuracy - 0.6)) ** 2)


@settings(max_examples=30, deadline=None)
@given(corpus(), st.integers(2, 5))
def test_assured_threshold_reads_the_same_bounds_in_small_batches(data, batch):
    """Bounds computed a few thresholds per pass over the resamples (as on a corpus with
    more distinct confidences than one pass holds) give the same assured threshold, to the
    bit, as all of them in one pass."""
    from kieval_core.review import uncertainty

    gt, (pred,) = data
    m = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"]
    whole = uncertainty.assured_threshold(m.review, 0.6, 0.9, resamples=60, seed=5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(uncertainty, "_CELLS", 60 * batch)
        assert uncertainty.assured_threshold(m.review, 0.6, 0.9, resamples=60, seed=5) == whole
    if whole.reachable:
        assert whole.lower_bound == _bound_by_hand(m, whole.threshold, 0.9, 60, 5)


@settings(max_examples=30, deadline=None)
@given(corpus(), st.sampled_from([0.3, 0.6, 0.95]), st.sampled_from([None, 3]))
def test_bootstrap_and_assured_from_one_draw_equal_their_own_calls(data, target, batch):
    """The report draws the resamples once for the bootstrap and the assured threshold's
    first pass: both equal their own calls to the bit, whether the target is reachable or
    not and whether the search needs further passes (a few thresholds per pass)."""
    from kieval_core.review import uncertainty

    gt, (pred,) = data
    review = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"].review
    with pytest.MonkeyPatch.context() as patch:
        if batch is not None:
            patch.setattr(uncertainty, "_CELLS", 60 * batch)
        boot, assured = uncertainty.bootstrap_and_assured(review, target, 0.9, resamples=60, seed=4)
        alone = uncertainty.bootstrap(review, target, resamples=60, seed=4)
        assert assured == uncertainty.assured_threshold(review, target, 0.9, resamples=60, seed=4)
    assert (boot.threshold, boot.auto_rate, boot.reachable_share) == (
        alone.threshold, alone.auto_rate, alone.reachable_share)
    assert boot.band.equals(alone.band)


def test_holdout_does_not_carry_over_when_its_interval_crosses_the_target():
    from kieval_core.review.uncertainty import Holdout

    def check(low, high):
        return Holdout(0.95, "a", "b", 0.9, 0.96, 0.957, (low, high), 0.2).carries_over

    assert check(0.951, 0.97) and not check(0.941, 0.971) and not check(0.90, 0.94)


def test_textract_assured_threshold_and_the_holdout(textract):
    from kieval_core.review.uncertainty import assured_threshold, holdout, random_half

    assured = assured_threshold(textract.review, 0.95, 0.95, resamples=1000, seed=0)
    assert assured.reachable and assured.point_threshold == pytest.approx(0.9996)
    assert assured.threshold >= assured.point_threshold and assured.lower_bound >= 0.95
    assert assured.point_lower_bound < 0.95  # the point τ is not assured
    assert assured.lower_bound == _bound_by_hand(textract, assured.threshold, 0.95, 1000, 0)
    check = holdout(textract.review, 0.95, random_half(textract.n_documents, 0))
    assert check.interval_checked[0] < 0.95 < check.interval_checked[1] and check.carries_over is False
    tight = assured_threshold(textract.review, 0.985, 0.95, resamples=200, seed=0)
    assert not tight.reachable and tight.documents_needed > textract.n_documents


# --- the decision as a file ------------------------------------------------------------------


def _follows_the_rule(decision, routing) -> None:
    """Reviewing single predictions: automate iff a confidence is present and at or above
    its field's τ (a field reviewed whole: never); whole documents: review iff its document
    has such a prediction."""
    marks = routing.predictions
    tau = marks["entity_type"].map(lambda t: decision.thresholds.get(t, decision.thresholds.get("*")))
    present = marks["confidence"].notna()
    if decision.missing_confidence == "automate":
        present = present | True
    confident = present & (marks["confidence"].fillna(1.0) >= tau.astype(float).fillna(np.inf))
    if decision.review == "predictions":
        assert ((marks["mark"] == "automate") == confident).all()
    opened = set(marks.loc[~confident, "doc_id"])
    assert ((marks["document"] == "open") == marks["doc_id"].isin(opened)).all()
    if decision.review == "documents":
        assert ((marks["mark"] == "review") == marks["doc_id"].isin(opened)).all()


@settings(max_examples=40, deadline=None)
@given(corpus())
def test_routing_the_predictions_a_decision_was_chosen_on_reproduces_it(data):
    from kieval_core.review.deploy import Decision
    from kieval_core.review.operating_point import decision_of, operating_point

    gt, (pred,) = data
    predictions = dataset(pred, "m")
    m = evaluate(dataset(gt, "gt"), {"m": predictions}).models["m"]
    if not m.has_confidence:
        return
    for review in ("predictions", "documents"):
        for scope, decide_by in (("one", "accuracy"), ("one", "automation"), ("field", "accuracy")):
            op = operating_point(m, review=review, decide_by=decide_by, value=0.7, scope=scope, target=0.7)
            decision = Decision.from_dict(json.loads(decision_of(m, op).to_json()))
            routing = decision.route(predictions)
            assert routing.summary["auto_rate"] == decision.expected["auto_rate"]
            assert routing.summary["straight_through_rate"] == decision.expected["straight_through_rate"]
            _follows_the_rule(decision, routing)


def test_a_decision_that_does_not_fit_is_refused_naming_the_difference(tmp_path):
    from kieval_core.review.deploy import Decision

    m = _two_fields()
    predictions = load(write_jsonl(tmp_path / "m.jsonl", [
        {"doc_id": "A", "prediction": {"total": {"value": "5", "confidence": 0.8}}}]))
    decision = Decision("m", "predictions", "review", {"total": 0.7, "date": None})
    with pytest.raises(KievalOptionError, match=r"^field\(s\) 'date' of the decision are absent from the"):
        decision.route(predictions)
    with pytest.raises(KievalOptionError, match="chosen for model 'gpt', the predictions are 'm'"):
        Decision("gpt", "predictions", "review", {"*": 0.5}).route(predictions)
    with pytest.raises(KievalOptionError, match="chosen with --missing-confidence review, not automate"):
        Decision("m", "predictions", "review", {"*": 0.5}).route(predictions, "automate")
    with pytest.raises(KievalOptionError, match="'total' the decision has no τ for"):
        Decision("m", "predictions", "review", {"date": 0.5}).route(predictions)
    (tmp_path / "bad.json").write_text('{"thresholds": {"*": 0.5}}', encoding="utf-8")
    with pytest.raises(Exception, match="not a kieval decision file"):
        Decision.load(tmp_path / "bad.json")
    assert m.n_documents == 3


def test_route_command_writes_marks_as_jsonl_and_csv(tmp_path, capsys):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "A", "gt_parse": {"total": "5", "date": "1/1"}},
                                             {"doc_id": "B", "gt_parse": {"total": "7", "date": "2/2"}}])
    pred = write_jsonl(tmp_path / "m.jsonl", [
        {"doc_id": "A", "prediction": {"total": {"value": "5", "confidence": 0.8}, "date": "1/1"}},
        {"doc_id": "B", "prediction": {"total": {"value": "=7", "confidence": 0.6},
                                       "date": {"value": "8/8", "confidence": 0.95}}}])
    decision = tmp_path / "d.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0", "--target-accuracy",
                 "0.5", "--decision-out", str(decision)]) == 0
    saved = json.loads(decision.read_text("utf-8"))
    assert saved["kieval_decision"] == 1 and saved["model"] == "m" and saved["thresholds"] == {"*": 0.0}
    assert saved["missing_confidence"] == "review" and saved["chosen_on"]["documents"] == 2
    assert len(saved["chosen_on"]["gt_sha256"]) == 64
    capsys.readouterr()
    out = tmp_path / "marks.jsonl"
    assert main(["route", "--decision", str(decision), "--pred", str(pred), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "m: 4 predictions: 3 automate (75.00%), 1 review; 2 documents: 1 straight through (50.00%)" in said
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["mark"] for r in rows] == ["automate", "review", "automate", "automate"]
    assert rows[1]["confidence"] is None and rows[1]["document"] == "open"
    csv = tmp_path / "m.csv"
    assert main(["route", "--decision", str(decision), "--pred", str(pred), "--out", str(csv)]) == 0
    assert "'=7" in csv.read_text("utf-8")  # never a live formula
    assert main(["route", "--decision", str(decision), "--pred", f"other={pred}"]) == 2
    assert "chosen for model 'm', the predictions are 'other'" in capsys.readouterr().err


def test_textract_decisions_route_back_to_their_figures(textract, tmp_path):
    from kieval_core import Decision, DecisionOptions
    from kieval_core.review.operating_point import decide

    sroie = SHARED_DATA / "sroie" / "predictions" / "aws_textract_analyzeexpense.jsonl"
    for options in (DecisionOptions(resamples=200), DecisionOptions(per_field=True, resamples=0),
                    DecisionOptions(review="documents", resamples=0)):
        decide(textract, options).save(tmp_path / "d.json")
        decision = Decision.load(tmp_path / "d.json")
        routing = decision.route(load(sroie, name="textract"))
        assert routing.summary["auto_rate"] == decision.expected["auto_rate"]
        assert routing.summary["straight_through_rate"] == decision.expected["straight_through_rate"]
        _follows_the_rule(decision, routing)
        assert routing.predictions["mark"][routing.predictions["confidence"].isna()].eq("review").all()
    assert decision.thresholds == {"*": 0.0} and decision.review == "documents"
