"""The paper's worked examples (SPEC 3, 4), run through the loaders and the CLI."""

from __future__ import annotations

import json

import pytest
from builders import menu, write_jsonl

from kieval_core import evaluate
from kieval_core.cli import main

# Paper Fig. 2: six menu lines; the model splits the fifth line and loses the last price.
FIG2_GT = {"menu": menu(*[(f"item{i}", f"{i}00") for i in range(1, 7)])}
FIG2_PRED = {
    "menu": menu(*[(f"item{i}", f"{i}00") for i in range(1, 5)])
    + [{"nm": "item5"}, {"price": "500"}, {"nm": "item6"}]
}

# Paper Fig. 5 (top), prediction 2: every value right, every line mixed up.
FIG5_GT = {"menu": menu(("A", "1", "100"), ("B", "2", "200"), ("C", "3", "300"),
                        keys=("nm", "cnt", "price"))}
FIG5_PRED = {"menu": menu(("A", "2", "300"), ("B", "3", "100"), ("C", "1", "200"),
                          keys=("nm", "cnt", "price"))}


def _run_cli(tmp_path, gt: dict, pred: dict) -> dict:
    gt_file = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "r1", "gt_parse": gt}])
    pred_file = write_jsonl(tmp_path / "model.jsonl", [{"doc_id": "r1", "prediction": pred}])
    out = tmp_path / "report.json"
    assert main(["evaluate", "--gt", str(gt_file), "--pred", str(pred_file), "--json", str(out)]) == 0
    return json.loads(out.read_text("utf-8"))["models"]["model"]


def test_fig2_through_cli(tmp_path):
    m = _run_cli(tmp_path, FIG2_GT, FIG2_PRED)
    assert m["entity_f1"]["precision"] == 1.0
    assert m["entity_f1"]["recall"] == pytest.approx(11 / 12)
    assert m["entity_f1"]["f1"] == pytest.approx(0.9565, abs=5e-5)
    entity = m["kieval"]["entity"]
    assert (entity["tp"], entity["fp"], entity["fn"]) == (10, 1, 2)
    assert m["kieval"]["entity"]["f1"] == pytest.approx(0.8696, abs=5e-5)
    assert m["kieval"]["corrections"] == {"substitution": 0, "addition": 2, "deletion": 1, "total": 3}
    assert m["kieval"]["aligned"] == pytest.approx(10 / 13)
    group = m["kieval"]["group"]
    assert (group["tp"], group["fp"], group["fn"]) == (4, 3, 2)
    assert group["f1"] == pytest.approx(0.6154, abs=5e-5)
    assert m["kieval"]["group_aligned"] == pytest.approx(4 / 7)
    assert m["kieval"]["fp_plus_fn"] == 3


def test_fig5_through_cli(tmp_path):
    m = _run_cli(tmp_path, FIG5_GT, FIG5_PRED)
    assert m["entity_f1"]["f1"] == 1.0
    assert m["kieval"]["entity"]["f1"] == pytest.approx(1 / 3)
    assert m["kieval"]["group"]["f1"] == 0.0
    assert m["kieval"]["aligned"] == pytest.approx(1 / 3)
    assert m["kieval"]["corrections"]["substitution"] == 6
    assert m["kieval"]["corrections"]["total"] == 6


# SPEC 4 worked example: one receipt with confidences.
RPA_GT = {"company": "ACME", "date": "01/02/2019", "total": "10.00", "address": "JL X",
          "menu": menu(("A", "1", "100"), ("B", "2", "200"), keys=("nm", "cnt", "price"))}


def _scored(value, confidence):
    return {"value": value, "confidence": confidence}


RPA_PRED = {
    "company": _scored("ACME", 0.95), "date": _scored("01/02/2018", 0.40),
    "total": _scored("10.00", 0.90), "tax": _scored("1.00", 0.30),
    "menu": [
        {"nm": _scored("A", 0.90), "cnt": _scored("1", 0.80), "price": _scored("100", 0.85)},
        {"nm": _scored("B", 0.70), "cnt": _scored("2", 0.60), "price": _scored("250", 0.35)},
    ],
}


@pytest.fixture
def rpa(tmp_path):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "r", "gt_parse": RPA_GT}])
    pred = write_jsonl(tmp_path / "m.jsonl", [{"doc_id": "r", "prediction": RPA_PRED}])
    return evaluate(gt, pred).models["m"]


def test_rpa_counts(rpa):
    assert (rpa.entity.tp, rpa.entity.fp, rpa.entity.fn) == (7, 3, 3)
    assert (rpa.corrections.substitution, rpa.corrections.addition, rpa.corrections.deletion) == (2, 1, 1)
    assert rpa.aligned == pytest.approx(7 / 11)
    assert rpa.group.tp == 1 and rpa.group.fn == 1


def test_rpa_curve(rpa):
    curve = rpa.curve.set_index("threshold")
    expected = {0.0: (1.0, 7 / 11), 0.30: (1.0, 7 / 11), 0.35: (0.9, 0.7), 0.40: (0.8, 0.8),
                0.60: (0.7, 0.9), 0.70: (0.6, 0.9), 0.95: (0.1, 0.9)}
    for tau, (auto, acc) in expected.items():
        assert curve.loc[tau, "auto_rate"] == pytest.approx(auto), tau
        assert curve.loc[tau, "kieval_aligned"] == pytest.approx(acc), tau
    last = rpa.curve.iloc[-1]
    assert last["threshold"] > 0.95 and last["auto_rate"] == 0.0
    assert last["kieval_aligned"] == pytest.approx(0.9)  # the missing address is never added


def test_rpa_recommendation(rpa):
    rec = rpa.recommend(0.85)
    assert rec.threshold == pytest.approx(0.60)
    assert rec.auto_rate == pytest.approx(0.7)
    assert rec.reviews == 3 and rec.reviews_per_1000_documents == pytest.approx(3000)
    assert not rpa.recommend(0.95).reachable


def test_rpa_errors_list(rpa):
    errors = rpa.error_list
    assert sorted(errors["kind"]) == ["addition", "deletion", "substitution", "substitution"]
    subs = errors[errors["kind"] == "substitution"].set_index("entity_type")
    assert subs.loc["date", ["gt_value", "pred_value"]].tolist() == ["01/02/2019", "01/02/2018"]
    assert subs.loc["menu.price", ["gt_value", "pred_value", "confidence"]].tolist() == ["200", "250", 0.35]
    assert subs.loc["menu.price", "gt_group"] == 1 and subs.loc["menu.price", "pred_group"] == 1
    deletion = errors[errors["kind"] == "deletion"].iloc[0]
    assert (deletion["entity_type"], deletion["pred_value"], deletion["confidence"]) == ("tax", "1.00", 0.30)
    addition = errors[errors["kind"] == "addition"].iloc[0]
    assert (addition["entity_type"], addition["gt_value"]) == ("address", "JL X")


# SPEC 4b: document level and cost on the same receipt, default costs.


def test_rpa_cost_and_documents_through_cli(tmp_path):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "r", "gt_parse": RPA_GT}])
    pred = write_jsonl(tmp_path / "m.jsonl", [{"doc_id": "r", "prediction": RPA_PRED}])
    out = tmp_path / "report.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(out),
                 "--target-accuracy", "0.85", "--bootstrap", "50"]) == 0
    automation = json.loads(out.read_text("utf-8"))["models"]["m"]["automation"]
    assert automation["cost"] == {"per_review": 1.0, "per_document": 0.0,
                                  "per_escaped": {"substitution": 10.0, "addition": 10.0, "deletion": 10.0}}
    assert automation["min_cost"]["threshold"] == pytest.approx(0.60)
    assert automation["min_cost"]["cost_per_1000_documents"] == pytest.approx(13_000)
    documents = {round(p["threshold"], 6): p for p in automation["documents"]["curve"]}
    for tau, point in documents.items():
        assert point["straight_through_rate"] == (1.0 if tau <= 0.30 else 0.0), tau
        assert point["document_accuracy"] == 0.0  # the missing address is never added
    assert automation["recommended"]["threshold"] == pytest.approx(0.60)
    interval = automation["recommended"]["interval"]
    assert interval["threshold"] == [pytest.approx(0.60), pytest.approx(0.60)]  # one document


def test_rpa_cost_curve(rpa):
    from kieval_core.review.automation import Costs, with_costs

    curve = with_costs(rpa.curve, Costs(), rpa.n_documents).set_index("threshold")
    expected = {0.0: 40, 0.35: 31, 0.40: 22, 0.60: 13, 0.70: 14}
    for tau, cost in expected.items():
        assert curve.loc[tau, "cost"] == cost, tau
    assert curve["cost"].iloc[-1] == 20  # every prediction reviewed, the address still missing
    doubled = with_costs(rpa.curve, Costs(per_document=5), rpa.n_documents)
    assert doubled["cost"].iloc[-1] == 25  # the receipt is opened once
