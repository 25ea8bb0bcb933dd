"""Read exactly what the files say (issue 8): every case through the Python API and the CLI."""

from __future__ import annotations

import json
import unicodedata

import pytest
from anls_star import anls_score
from builders import write_jsonl
from conftest import SAMPLE_DATA

from kieval_core import (
    DecisionOptions,
    KievalInputError,
    LoadOptions,
    UnscoredKeyWarning,
    evaluate,
    load,
    load_bytes,
)
from kieval_core.cli import main
from kieval_core.output.render import build_report
from kieval_core.read.locations import LOCATION_KEYS
from kieval_core.review.automation import review_at


def _f1(gt, pred, **kwargs) -> float:
    return evaluate(gt, {"m": pred}, **kwargs).models["m"].entity.f1


def _cli_report(tmp_path, *args) -> dict:
    out = tmp_path / "report.json"
    assert main(["evaluate", *args, "--json", str(out), "--bootstrap", "20"]) == 0
    return json.loads(out.read_text("utf-8"))


# --- 1, 2: long-table JSONL reads JSON values as nested JSON does -------------------------


def test_table_jsonl_null_is_absent(tmp_path):
    rows = [{"doc_id": "d1", "entity": "date", "value": None, "group": None},
            {"doc_id": "d1", "entity": "total", "value": "5", "group": None, "confidence": None},
            {"doc_id": "d1", "entity": "menu.nm", "value": "Tea", "group": 0, "confidence": 0.5}]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    ds = load(path)
    assert ds.format == "table"
    assert sorted(ds.entities["entity_type"]) == ["menu.nm", "total"]  # no "nan" date
    assert ds.entities.set_index("entity_type").loc["total", "group"] == -1  # not a group "nan"
    assert ds.entities["confidence"].isna().tolist() == [True, False]
    assert _f1(path, path) == 1.0
    report = _cli_report(tmp_path, "--gt", str(path), "--pred", str(path))
    assert report["models"]["t"]["kieval"]["entity"]["f1"] == 1.0


def test_table_jsonl_equals_nested_json(tmp_path):
    nested = write_jsonl(tmp_path / "nested.jsonl", [
        {"doc_id": "d1", "fields": {"paid": True, "items": ["a", "b"], "total": 5}}])
    table = write_jsonl(tmp_path / "table.jsonl", [
        {"doc_id": "d1", "entity": "paid", "value": True},
        {"doc_id": "d1", "entity": "items", "value": ["a", "b"]},
        {"doc_id": "d1", "entity": "total", "value": 5}])
    assert sorted(load(table).entities["value"]) == ["5", "a", "b", "true"]
    model = evaluate(nested, {"m": table}).models["m"]
    assert (model.entity.tp, model.entity.fp, model.entity.fn) == (4, 0, 0)
    report = _cli_report(tmp_path, "--gt", str(nested), "--pred", str(table))
    assert report["models"]["table"]["kieval"]["entity"]["tp"] == 4


def test_table_jsonl_refuses_text_confidences_and_objects(tmp_path):
    bad = write_jsonl(tmp_path / "c.jsonl",
                      [{"doc_id": "d", "entity": "x", "value": "1", "confidence": "hi"}])
    with pytest.raises(KievalInputError, match="line 1: confidence 'hi'"):
        load(bad)
    bad = write_jsonl(tmp_path / "o.jsonl", [{"doc_id": "d", "entity": "x", "value": {"a": 1}}])
    with pytest.raises(KievalInputError, match="line 1: value is a dict"):
        load(bad)


# --- 3: container keys only at the record level -------------------------------------------


def test_keys_inside_documents_are_content(tmp_path):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps({"d1": {"total": "5"}}))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"d1": {"id": "INV-001", "total": "5"}}))
    assert _f1(gt, pred) == pytest.approx(2 / 3)
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"d1": {"parse": {"nm": "1"}, "total": "5"}}))
    rows = load(wrapped).entities[["entity_type", "value"]].values.tolist()
    assert rows == [["parse.nm", "1"], ["total", "5"]]  # total is not lost
    output = tmp_path / "output.json"
    output.write_text(json.dumps({"d1": {"output": "ok", "total": "5"}}))
    assert sorted(load(output).entities["entity_type"]) == ["output", "total"]
    report = _cli_report(tmp_path, "--gt", str(gt), "--pred", str(pred))
    assert report["models"]["pred"]["kieval"]["entity"]["f1"] == pytest.approx(2 / 3)


def test_record_keys_are_container_keys_in_jsonl(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [{"doc_id": "d1", "id": "INV", "total": "5"}])
    ds = load(path)
    assert ds.entities["entity_type"].tolist() == ["total"]
    assert any("record keys not scored: id" in n for n in ds.notes)


def test_wrapper_of_every_document_is_read_and_reported(tmp_path):
    path = tmp_path / "all.json"
    path.write_text(json.dumps({"d1": {"gt_parse": {"total": "5"}}, "d2": {"gt_parse": {"total": "6"}}}))
    ds = load(path)
    assert ds.entities["entity_type"].tolist() == ["total", "total"]
    assert any("only the key 'gt_parse'" in n for n in ds.notes)
    named = load(path, LoadOptions(key="gt_parse"))
    assert named.entities["value"].tolist() == ["5", "6"]


# --- 4: metadata is declared, kept and never scored -------------------------------------


def test_meta_keys_are_kept_and_not_scored(tmp_path):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "d1", "split": "test", "vendor": "A", "total": "5"},
                                             {"doc_id": "d2", "split": "test", "vendor": "B", "total": "6"}])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d1", "total": "5"}, {"doc_id": "d2", "total": "6"}])
    with pytest.warns(UnscoredKeyWarning) as said:
        silent = evaluate(gt, {"p": pred})
    assert silent.set_aside == ["split", "vendor"]  # no prediction file has them: set aside
    assert silent.models["p"].entity.f1 == 1.0
    assert [str(w.message) for w in said] == [
        f"the key {k!r} is in the ground truth (2 values) but in no prediction file: it is set aside as "
        f"metadata and not scored (as load_options=LoadOptions(meta=({k!r},)) does). To score it as a "
        f"field every model misses: score_keys=[{k!r}]" for k in ("split", "vendor")]
    assert any("'split'" in w and "--score-key split" in w for w in silent.all_warnings)
    assert silent.models["p"].documents.set_index("doc_id")["vendor"].to_dict() == {"d1": "A", "d2": "B"}
    with pytest.warns(UnscoredKeyWarning, match="scored as a field every model misses"):
        scored = evaluate(gt, {"p": pred}, score_keys=["split"])
    assert scored.set_aside == ["vendor"] and scored.models["p"].entity.f1 < 1.0
    assert any("'split'" in w and "--meta split" in w for w in scored.all_warnings)
    declared = evaluate(gt, {"p": pred}, load_options=LoadOptions(meta=("split", "vendor")))
    model = declared.models["p"]
    assert model.entity.f1 == 1.0 and not declared.warnings
    assert model.documents.set_index("doc_id")["vendor"].to_dict() == {"d1": "A", "d2": "B"}
    assert model.by_slice("vendor")["vendor"].tolist() == ["A", "B"]
    report = _cli_report(tmp_path, "--gt", str(gt), "--pred", str(pred), "--meta", "split",
                         "--meta", "vendor")
    assert report["models"]["p"]["kieval"]["entity"]["f1"] == 1.0
    assert [row["vendor"] for row in report["models"]["p"]["by_slice"]["vendor"]] == ["A", "B"]


def test_the_cli_says_what_changes_a_figure_before_the_figures(tmp_path, capfd):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "d1", "split": "test", "total": "5", "date": "1"}])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d1", "total": "5", "date": "1"}])
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0"]) == 0
    said = capfd.readouterr()
    warning = ("warning: the key 'split' is in the ground truth (1 values) but in no prediction file: it is "
               "set aside as metadata and not scored (as --meta split does). To score it as a field every "
               "model misses: --score-key split")
    assert said.err.splitlines()[0] == warning and "KIEval entity F1" in said.out
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--score-key", "split"]) == 0
    said = capfd.readouterr()
    assert "a field every model misses. If it is metadata, declare it with --meta split" in said.err
    assert "try: p: --meta split would raise KIEval_Aligned from 0.6667 to 1.0000" in said.out


def test_prediction_only_key_is_named(tmp_path, capsys):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "d1", "total": "5", "date": "01/02/2019"},
                                             {"doc_id": "d2", "date": "25/12/2018"}])
    pred = write_jsonl(tmp_path / "p.jsonl", [
        {"doc_id": "d1", "total": "5", "source": "ocr", "date": "2019-02-01"},
        {"doc_id": "d2", "source": "ocr", "date": "25/12/2018"}])
    with pytest.warns(UnscoredKeyWarning, match=r"LoadOptions\(meta=\('source',\)\)"):
        result = evaluate(gt, {"p": pred})
    assert any("'source' is in the predictions" in w and "--meta source" in w for w in result.warnings)
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0"]) == 0
    # two deletions that --meta removes outnumber the one format error the date comparator fixes
    assert ("try: p: --meta source --compare date=date would raise KIEval_Aligned from 0.4000 to 1.0000"
            in capsys.readouterr().out)


def test_sroie_metadata(shared_data):
    """Without --meta, SROIE's figures equal those with --meta split, and the user is told."""
    sroie = shared_data / "sroie"
    names = ("aws_textract_analyzeexpense", "charlm_njoyimpeguy")
    preds = {m: sroie / "predictions" / f"{m}.jsonl" for m in names}
    with pytest.warns(UnscoredKeyWarning, match="'split' is in the ground truth"):
        plain = evaluate(sroie / "sroie_test_gt.jsonl", preds, metrics="all")
    assert plain.set_aside == ["split"]
    assert any("--score-key split" in w for w in plain.warnings)
    declared = evaluate(sroie / "sroie_test_gt.jsonl", preds, metrics="all",
                        load_options=LoadOptions(meta=("split",)))
    assert round(declared.models["aws_textract_analyzeexpense"].entity.f1 * 100, 2) == 61.24
    assert round(declared.models["charlm_njoyimpeguy"].entity.f1 * 100, 2) == 98.34
    options = DecisionOptions(resamples=0)
    assert build_report(plain, options)["models"] == build_report(declared, options)["models"]
    with pytest.warns(UnscoredKeyWarning):
        scored = evaluate(sroie / "sroie_test_gt.jsonl", preds, score_keys=["split"])
    assert round(scored.models["aws_textract_analyzeexpense"].entity.f1 * 100, 2) == 54.41


def test_table_meta_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("doc_id,entity,value,vendor\nd1,total,5,A\nd1,date,1/1,A\nd2,total,6,\n")
    ds = load(path, LoadOptions(meta=("vendor",)))
    assert ds.meta["vendor"].to_dict() == {"d1": "A"}
    path.write_text("doc_id,entity,value,vendor\nd1,total,5,A\nd1,date,1/1,B\n")
    with pytest.raises(KievalInputError, match="line 3: document 'd1' has more than one value"):
        load(path, LoadOptions(meta=("vendor",)))


# --- 5: ties are settled by content, never by input order ---------------------------------


def test_automation_curve_does_not_depend_on_row_order():
    gt = "doc_id,group,entity,value\nd,0,menu.nm,B\nd,1,menu.nm,A\nd,1,menu.price,A\nd,2,menu.nm,B\n"
    rows = ["d,0,menu.nm,A,0.4", "d,0,menu.price,A,0.8", "d,1,menu.price,A,0.8", "d,2,menu.nm,A,0.6",
            "d,2,menu.price,A,0.4"]
    results = []
    for order in (rows, rows[::-1]):
        pred = "doc_id,group,entity,value,confidence\n" + "\n".join(order) + "\n"
        result = evaluate(load_bytes(gt.encode(), "gt.csv"), {"m": load_bytes(pred.encode(), "p.csv")})
        model = result.models["m"]
        results.append((review_at(model.review, 0.6).kieval_aligned, model.curve.values.tolist()))
    assert results[0] == results[1]


# --- 6, 7: no made-up automation figures ---------------------------------------------------


def test_without_confidences_every_automation_figure_is_null(tmp_path):
    gt = SAMPLE_DATA / "cord_v2_gt.jsonl"
    report = _cli_report(tmp_path, "--gt", str(gt), "--pred", f"same={gt}")
    automation = report["models"]["same"]["automation"]
    assert automation["has_confidence"] is False and automation["reason"]
    for key in ("curve", "recommended", "documents", "min_cost", "per_field", "by_entity_type"):
        assert automation[key] is None, key
    assert automation["full_review"]["kieval_aligned"] == 1.0
    assert evaluate(gt, {"same": gt}).models["same"].recommend(0.95) is None


def test_unreachable_target_has_no_threshold(tmp_path):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "d", "fields": {"a": "1", "b": "2"}}])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d", "fields": {
        "a": {"value": "1", "confidence": 0.9}, "b": {"value": "3", "confidence": 0.95}}}])
    report = _cli_report(tmp_path, "--gt", str(gt), "--pred", str(pred), "--target-accuracy", "0.95")
    rec = report["models"]["p"]["automation"]["recommended"]
    assert rec["reachable"] is False and rec["threshold"] is None
    assert rec["best_reachable"] == 0.5  # at τ just above 0.9: 'a' is automated, 'b' still wrong


# --- 8: gates follow each metric's direction --------------------------------------------


def test_gates_follow_direction(tmp_path, capsys):
    gt = str(SAMPLE_DATA / "cord_v2_gt.jsonl")
    pred = str(SAMPLE_DATA / "sim_strong.jsonl")
    base = ["evaluate", "--gt", gt, "--pred", pred, "--bootstrap", "0"]
    assert main([*base, "--metrics", "oi", "--gate", "oi.oiecer<=0.2", "--gate", "kieval.aligned>=0.8"]) == 0
    assert main([*base, "--metrics", "oi", "--fail-under", "oi.oiecer=0.2"]) == 2
    assert "lower is better" in capsys.readouterr().err
    assert main([*base, "--gate", "kieval.aligned<=0.99"]) == 2
    assert main([*base, "--gate", "kieval.aligned>=0.9"]) == 3
    assert "gate kieval.aligned >= 0.9" in capsys.readouterr().err
    assert main([*base, "--gate", "automation.recommended.auto_rate>=0.5"]) == 0


# --- 9: ANLS* equals the anls-star package on the uploaded structures --------------------


def _plain(node):
    """The structure with scored leaves (a value with a confidence and a location, SPEC 6.7)
    replaced by their values."""
    if isinstance(node, dict):
        if "value" in node and set(node) <= {"value", "confidence", *LOCATION_KEYS}:
            return node["value"]
        return {k: _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def test_anls_star_agrees_with_the_package_by_default():
    gt_path, pred_path = SAMPLE_DATA / "cord_v2_gt.jsonl", SAMPLE_DATA / "sim_strong.jsonl"
    model = evaluate(gt_path, {"m": pred_path}, metrics=["anls_star"]).models["m"]
    gt_records = map(json.loads, gt_path.read_text("utf-8").splitlines())
    gt = {r["doc_id"]: _plain(r["gt_parse"]) for r in gt_records}
    records = map(json.loads, pred_path.read_text("utf-8").splitlines())
    pred = {r["doc_id"]: _plain(r["prediction"]) for r in records}
    scores = [anls_score(gt[d], pred.get(d, {})) for d in sorted(gt)]
    assert model.peer["anls_star"].figures["anls_star"] == pytest.approx(sum(scores) / len(scores), abs=1e-9)
    assert round(model.peer["anls_star"].figures["anls_star"], 4) == 0.6993


# --- 10: identifiers --------------------------------------------------------------------


def test_identifiers_are_nfc(tmp_path):
    composed, decomposed = "caf\u00e9", unicodedata.normalize("NFD", "caf\u00e9")
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": composed, "fields": {composed: "5"}}])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": decomposed, "fields": {decomposed: "5"}}])
    assert _f1(gt, pred) == 1.0
    twice = write_jsonl(tmp_path / "t.jsonl", [{"doc_id": composed, "fields": {}},
                                               {"doc_id": decomposed, "fields": {}}])
    with pytest.raises(KievalInputError, match="appears twice"):
        load(twice)


def test_tsv_has_no_quote_processing(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text('doc_id\tentity\tvalue\nd\tx\t"5" x\nd\ty\t"a\n', encoding="utf-8")
    assert load(path).entities["value"].tolist() == ['"5" x', '"a']


# --- the report depends on the data only -------------------------------------------------


def test_documents_are_sorted_in_the_report():
    gt = SAMPLE_DATA / "cord_v2_gt.jsonl"
    report = build_report(evaluate(gt, {"m": SAMPLE_DATA / "sim_weak.jsonl"}))
    ids = [d["doc_id"] for d in report["models"]["m"]["documents"]]
    assert ids == sorted(ids)


def test_only_record_level_keys_are_set_aside(tmp_path):
    """A key inside a structure (under gt_parse, or in a one-object container) is content: a
    field no model predicts stays scored, as missed; a scalar beside doc_id is record-level."""
    bare = write_jsonl(tmp_path / "bare.jsonl", [{"doc_id": "d1", "split": "test", "menu": [{"nm": "A"}]}])
    assert load(bare).record_keys == {"split"}
    wrapped = write_jsonl(tmp_path / "wrapped.jsonl", [{"doc_id": "d1", "gt_parse": {"split": "test"}}])
    assert load(wrapped).record_keys == frozenset()
    one_object = tmp_path / "all.json"
    one_object.write_text(json.dumps({"d1": {"split": "test"}}), "utf-8")
    assert load(one_object).record_keys == frozenset()
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d1", "total": "5"}])
    with pytest.warns(UnscoredKeyWarning, match="scored as a field every model misses"):
        result = evaluate(wrapped, {"p": pred})
    assert result.set_aside == [] and result.models["p"].corrections.addition == 1
