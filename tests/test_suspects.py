"""Suspect ground truth (SPEC 2f): hand-worked cases, a property, and the fix files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import KievalInputError, KievalOptionError, Normalizer, evaluate
from kieval_core.review.label_fixes import apply_fixes, parse_fixes
from kieval_core.review.suspects import (
    WEAK_CONFIDENCE,
    _wrong_values,
    default_agreement,
    suspect_records,
    suspect_table,
)
from tests.builders import dataset

NON = ("", "")


def models(*predictions: list[tuple], confidences=None) -> dict:
    """One single-document model per list of rows, named m0, m1, ..."""
    return {f"m{i}": dataset({"d": rows}, f"m{i}") for i, rows in enumerate(predictions)}


def suspects_of(gt_rows, preds, **options):
    return evaluate(dataset({"d": gt_rows}, "gt"), preds, **options).suspects


def test_default_agreement_is_more_than_half_and_at_least_two():
    assert [default_agreement(n) for n in range(1, 9)] == [1, 2, 2, 3, 3, 4, 4, 5]


def test_a_gt_value_two_of_three_models_replace_by_one_value_is_suspect():
    gt = [(*NON, "zip", "B1750")]
    preds = models([(*NON, "zip", "81750", 0.9)], [(*NON, "zip", "81750", 0.7)], [(*NON, "zip", "B1750")])
    s = suspects_of(gt, preds)
    assert s[["doc_id", "entity_type", "group", "kind", "gt_value", "proposed_value"]].values.tolist() == [
        ["d", "zip", -1, "value", "B1750", "81750"]]
    assert s.loc[0, "models"] == ("m0", "m1")
    assert s.loc[0, "confidences"] == (0.9, 0.7)
    assert s.loc[0, "score"] == pytest.approx(2 / 3)
    assert s.loc[0, "mean_confidence"] == pytest.approx(0.8)
    assert not s.loc[0, "weak"]
    # k = 3: the third model does not agree
    assert suspects_of(gt, preds, suspect_agreement=3).empty


def test_models_that_disagree_with_each_other_are_no_evidence():
    gt = [(*NON, "total", "10.00")]
    preds = models([(*NON, "total", "11.00")], [(*NON, "total", "11.00")], [(*NON, "total", "12.00")],
                   [(*NON, "total", "12.00")])
    assert suspects_of(gt, preds).empty  # k = 3 of 4; two and two
    assert len(suspects_of(gt, preds, suspect_agreement=2)) == 2


def test_agreement_is_judged_by_the_fields_comparator():
    gt = [(*NON, "total", "13.00")]
    preds = models([(*NON, "total", "RM 12.00")], [(*NON, "total", "12")])
    assert suspects_of(gt, preds).empty  # exact: "RM 12.00" and "12" are two values
    s = suspects_of(gt, preds, normalizer=Normalizer.from_names(None, ["total=number"]))
    assert s["proposed_value"].tolist() == ["12"]  # a tie of raw values: the smallest
    assert s.loc[0, "values"] == ("RM 12.00", "12")
    # a model equal to the GT under the comparator is no disagreement
    preds = models([(*NON, "total", "RM 13")], [(*NON, "total", "13.0")])
    assert suspects_of(gt, preds, normalizer=Normalizer.from_names(None, ["total=number"])).empty


def test_a_value_most_models_predict_where_the_gt_has_none_is_a_gap():
    gt = [(*NON, "total", "5"), ("menu", "0", "menu.nm", "Tea")]
    line = [("menu", "0", "menu.nm", "Tea"), ("menu", "0", "menu.price", "2.50")]
    preds = models([(*NON, "total", "5"), (*NON, "tax", "0.50"), *line],
                   [(*NON, "total", "5"), (*NON, "tax", "0.50"), *line],
                   [(*NON, "total", "5")])
    s = suspects_of(gt, preds)
    shown = s[["entity_type", "group_type", "group", "kind", "gt_value", "proposed_value"]]
    assert shown.values.tolist() == [["menu.price", "menu", 0, "gap", None, "2.50"],
                                     ["tax", "", -1, "gap", None, "0.50"]]
    records = suspect_records(s)
    assert records[0]["group"] == {"type": "menu", "index": 0} and records[1]["group"] is None


def test_a_gap_beside_a_suspect_value_has_no_gt_value():
    gt = [(*NON, "total", "5")]
    rows = [(*NON, "total", "6"), (*NON, "tax", "0.50")]
    s = suspects_of(gt, models(rows, rows))
    assert s["gt_value"].tolist() == [None, "5"]
    assert [r["gt_value"] for r in suspect_records(s)] == [None, "5"]


def test_values_in_unmatched_predicted_groups_are_no_gap():
    gt = [("menu", "0", "menu.nm", "Tea")]
    extra = [("menu", "0", "menu.nm", "Tea"), ("menu", "1", "menu.nm", "Cake")]  # group 1 matches nothing
    assert suspects_of(gt, models(extra, extra)).empty


def test_a_model_votes_once_per_suspect():
    gt = [(*NON, "zip", "B1750")]
    preds = models([(*NON, "zip", "81750"), (*NON, "zip", "81750")], [(*NON, "zip", "B1750")],
                   [(*NON, "zip", "B1750")])
    assert suspects_of(gt, preds, suspect_agreement=2).empty


def test_ties_of_score_go_to_the_higher_mean_confidence_and_missing_confidence_last():
    gt = [(*NON, "a", "x"), (*NON, "b", "x"), (*NON, "c", "x")]
    preds = models([(*NON, "a", "y", 0.5), (*NON, "b", "y", 0.9), (*NON, "c", "y")],
                   [(*NON, "a", "y", 0.5), (*NON, "b", "y", 0.8), (*NON, "c", "y")],
                   [(*NON, "a", "x"), (*NON, "b", "y", 0.1), (*NON, "c", "x")])
    s = suspects_of(gt, preds)
    assert s["entity_type"].tolist() == ["b", "a", "c"]
    assert s["score"].tolist() == pytest.approx([1.0, 2 / 3, 2 / 3])
    assert s["mean_confidence"].tolist()[:2] == pytest.approx([0.6, 0.5])
    assert np.isnan(s.loc[2, "mean_confidence"])


def test_one_model_lists_only_confident_disagreements_as_weak_evidence():
    gt = [(*NON, "a", "x"), (*NON, "b", "x"), (*NON, "c", "x"), (*NON, "d", "x")]
    preds = models([(*NON, "a", "y", 0.995), (*NON, "b", "y", 0.9), (*NON, "c", "y"), (*NON, "d", "x", 1.0),
                    (*NON, "e", "z", 0.99)])
    s = suspects_of(gt, preds)
    assert s[["entity_type", "kind", "proposed_value"]].values.tolist() == [
        ["a", "value", "y"], ["e", "gap", "z"]]
    assert s["weak"].all() and s["score"].tolist() == [1.0, 1.0]


def test_the_agreement_must_be_between_one_and_the_number_of_models():
    with pytest.raises(KievalOptionError, match="between 1 and the number of models"):
        suspects_of([(*NON, "a", "x")], models([(*NON, "a", "y")]), suspect_agreement=2)


def test_the_csv_table_joins_the_evidence_and_neutralises_formulas(tmp_path):
    gt = [(*NON, "a", "=1+1")]
    preds = models([(*NON, "a", "=HYPERLINK(1)", 1.0)], [(*NON, "a", "=HYPERLINK(1)")])
    result = evaluate(dataset({"d": gt}, "gt"), preds)
    table = suspect_table(result.suspects)
    assert table.loc[0, "models"] == "m0 | m1" and table.loc[0, "confidences"] == "1 | "
    from kieval_core.review.suspects import write_suspects

    write_suspects(result.suspects, tmp_path / "s.csv")
    text = (tmp_path / "s.csv").read_text()
    assert "'=1+1" in text and "'=HYPERLINK(1)" in text
    write_suspects(result.suspects, tmp_path / "s.json", as_json=True)
    assert json.loads((tmp_path / "s.json").read_text())[0]["gt_value"] == "=1+1"


# --- a property: the order of the models never matters -------------------------------------

VALUES = st.sampled_from(["x", "y", "z", "1.00", "1"])
ROWS = st.lists(st.tuples(st.sampled_from(["", "menu"]), st.sampled_from(["a", "b"]), VALUES,
                          st.one_of(st.none(), st.sampled_from([0.5, 0.99, 1.0]))), max_size=5)


def _rows(rows):
    return [(g, "0" if g else "", f"{g}.{t}" if g else t, v, np.nan if c is None else c)
            for g, t, v, c in rows]


@settings(max_examples=60, deadline=None)
@given(gt=ROWS, preds=st.lists(ROWS, min_size=1, max_size=4), order=st.randoms(use_true_random=False))
def test_permuting_the_models_never_changes_the_suspects(gt, preds, order):
    truth = dataset({"d": _rows(gt)}, "gt")
    named = [(f"m{i}", dataset({"d": _rows(rows)}, f"m{i}")) for i, rows in enumerate(preds)]
    shuffled = named[:]
    order.shuffle(shuffled)
    normalizer = Normalizer.from_names(None, ["*a=number"])
    first = evaluate(truth, dict(named), normalizer=normalizer).suspects
    second = evaluate(truth, dict(shuffled), normalizer=normalizer).suspects
    pd.testing.assert_frame_equal(first, second)


@settings(max_examples=40, deadline=None)
@given(gt=ROWS, pred=ROWS)
def test_one_models_confident_wrong_values_picked_first_are_those_filtered_after(gt, pred):
    """The shortcut of one model (the confidence filter inside the table's build) keeps
    exactly the rows the filter of the whole table keeps."""
    result = evaluate(dataset({"d": _rows(gt)}, "gt"), {"m": dataset({"d": _rows(pred)}, "m")})
    everything = _wrong_values(result.models["m"].counted, 0)
    filtered = everything[everything["confidence"].to_numpy() >= WEAK_CONFIDENCE].reset_index(drop=True)
    # an empty table's column types are never read (no suspects)
    pd.testing.assert_frame_equal(_wrong_values(result.models["m"].counted, 0, WEAK_CONFIDENCE), filtered,
                                  check_dtype=not filtered.empty)


# --- label fixes ---------------------------------------------------------------------------

GT = {"d1": [(*NON, "zip", "B1750"), (*NON, "date", "15/01/2019"), ("menu", "0", "menu.nm", "Tea")],
      "d2": [(*NON, "zip", "81750")]}


def fix(**row) -> dict:
    return {"doc_id": "d1", "entity_type": "zip", "group": None, "gt_value": "B1750", "fixed_value": "81750",
            "note": ""} | row


def test_fixes_replace_remove_and_add_values_in_a_copy():
    gt = dataset(GT, "gt")
    fixes = parse_fixes([fix(), fix(entity_type="date", gt_value=" 15/01/2019 ", fixed_value=None),
                         fix(entity_type="menu.price", group={"type": "menu", "index": 0}, gt_value=None,
                             fixed_value="2.50")], "fixes.json")
    fixed = apply_fixes(gt, fixes, source="fixes.json")
    rows = fixed.entities[["doc_id", "group_type", "group", "entity_type", "value"]].values.tolist()
    assert rows == [["d1", "", -1, "zip", "81750"], ["d1", "menu", 0, "menu.nm", "Tea"],
                    ["d2", "", -1, "zip", "81750"], ["d1", "menu", 0, "menu.price", "2.50"]]
    assert gt.entities["value"].tolist() == ["B1750", "15/01/2019", "Tea", "81750"]  # the input as it was
    assert fixed.notes[-1] == "3 label fix(es) applied from fixes.json"


@pytest.mark.parametrize(("row", "message"), [
    (fix(doc_id="d9"), r"fix 2 \(d9, zip\): unknown document"),
    (fix(entity_type="tax"), r"fix 2 \(d1, tax\): unknown entity"),
    (fix(gt_value="B1751"), r"fix 2 \(d1, zip\): old value 'B1751' is not the GT's \(it holds 'B1750'\)"),
    (fix(group={"type": "menu", "index": 3}), r"fix 2 \(d1, zip, group menu 3\): unknown group"),
    (fix(), r"fix 2 \(d1, zip\): old value 'B1750' is not"),  # the one copy is fixed by row 1 already
])
def test_a_fix_that_does_not_match_the_gt_is_refused_naming_the_row(row, message):
    fixes = parse_fixes([fix(), row], "fixes.json")
    with pytest.raises(KievalInputError, match=message):
        apply_fixes(dataset(GT, "gt"), fixes, source="fixes.json")


@pytest.mark.parametrize(("rows", "message"), [
    ({"a": 1}, "a JSON list of fixes"),
    ([fix(gt_value=None, fixed_value=None)], "fix 1: gt_value and fixed_value are both null"),
    ([fix(), {"doc_id": "d1"}], "fix 2: missing entity_type, gt_value, fixed_value"),
    ([fix(group=[1])], "fix 1: group must be null or"),
    ([fix(fixed_value=3)], "fix 1: fixed_value must be a string or null, got 3"),
])
def test_a_fix_file_of_the_wrong_shape_is_refused_naming_the_row(rows, message):
    with pytest.raises(KievalInputError, match=message):
        parse_fixes(rows, "fixes.json")


def test_evaluate_with_fixes_reports_the_figures_before_and_after(tmp_path):
    gt = dataset(GT, "gt")
    preds = {"m0": dataset({"d1": [(*NON, "zip", "81750"), (*NON, "date", "15/01/2019")]}, "m0")}
    path = tmp_path / "fixes.json"
    path.write_text(json.dumps([fix()]))
    result = evaluate(gt, preds, gt_fixes=path)
    assert result.before_fixes.models["m0"].entity.tp == 1 and result.models["m0"].entity.tp == 2
    from kieval_core import report_json

    report = json.loads(report_json(result))
    model = report["models"]["m0"]
    assert model["kieval"]["entity"]["tp"] == 2 and model["kieval_before_fixes"]["entity"]["tp"] == 1
    assert model["entity_f1"]["tp"] == 2 and model["entity_f1_before_fixes"]["tp"] == 1
    assert report["label_fixes"] == [fix()]
    assert "kieval_before_fixes" not in json.loads(report_json(evaluate(gt, preds)))["models"]["m0"]


# --- the command line ----------------------------------------------------------------------


def _files(tmp_path):
    from tests.builders import write_jsonl

    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "d1", "zip": "B1750", "total": "=1+1"},
                                             {"doc_id": "d2", "zip": "81750", "total": "3"}])
    preds = []
    records = [{"doc_id": "d1", "zip": "81750", "total": "=1+1"},
               {"doc_id": "d2", "zip": "81750", "total": "3"}]
    for name in ("a", "b", "c"):
        preds += ["--pred", str(write_jsonl(tmp_path / f"{name}.jsonl", records))]
    return ["evaluate", "--gt", str(gt), *preds, "--no-hints"]


def test_the_command_writes_the_suspects_as_csv_or_json_and_scores_fixes(tmp_path, capsys):
    from kieval_core.cli import main

    base = _files(tmp_path)
    assert main([*base, "--suspects", str(tmp_path / "s.csv")]) == 0
    assert main([*base, "--suspects", str(tmp_path / "s.JSON")]) == 0
    out = capsys.readouterr().out
    assert "suspect labels: 1 (k = 2 of 3 models" in out
    rows = json.loads((tmp_path / "s.JSON").read_text())
    assert [(r["doc_id"], r["gt_value"], r["proposed_value"], r["models"]) for r in rows] == [
        ("d1", "B1750", "81750", ["a", "b", "c"])]
    csv = pd.read_csv(tmp_path / "s.csv")
    assert csv.loc[0, "models"] == "a | b | c" and csv.loc[0, "score"] == 1.0
    (tmp_path / "fixes.json").write_text(json.dumps([fix()]))
    assert main([*base, "--gt-fixes", str(tmp_path / "fixes.json"), "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "label fixes: 1 applied" in out and "a: 0.7500 -> 1.0000" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["models"]["a"]["kieval"]["aligned"] == 1.0
    assert report["models"]["a"]["kieval_before_fixes"]["aligned"] == 0.75
    assert report["suspects"] == []


def test_the_command_refuses_a_fix_file_that_does_not_match_the_gt(tmp_path, capsys):
    from kieval_core.cli import main

    (tmp_path / "fixes.json").write_text(json.dumps([fix(), fix(doc_id="d2", gt_value="81751")]))
    assert main([*_files(tmp_path), "--gt-fixes", str(tmp_path / "fixes.json")]) == 2
    err = capsys.readouterr().err
    assert "fix 2 (d2, zip): old value '81751' is not the GT's (it holds '81750')" in err


# --- the corrected ground truth, in the input's own format -----------------------------------


def _entities(ds):
    e = ds.entities
    return sorted(zip(e["doc_id"], e["group_type"], e["group"], e["entity_type"], e["value"], strict=True))


def test_the_corrected_gt_keeps_a_jsonl_files_other_lines_byte_for_byte(tmp_path):
    from kieval_core import load
    from kieval_core.review.label_fixes import corrected_gt

    lines = ['{"doc_id": "d1", "gt_parse": {"zip": "B1750", "menu": [{"nm": "Tea", "price": 5}, '
             '{"nm": "Cake"}]}}', '{"doc_id":"d2",  "gt_parse": {"zip": "81750"}}']
    path = tmp_path / "gt.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gt = load(path)

    def price(index, old, new):
        group = {"type": "menu", "index": index}
        return fix(entity_type="menu.price", group=group, gt_value=old, fixed_value=new)

    fixes = parse_fixes([fix(), price(0, "5", "5.00"), price(1, None, "7")], "fixes.json")
    fixed = apply_fixes(gt, fixes)
    data, name = corrected_gt(path.read_bytes(), "gt.jsonl", fixes, fixed)
    assert name == "gt_fixed.jsonl"
    out = data.decode("utf-8").splitlines()
    assert out[1] == lines[1]
    assert json.loads(out[0])["gt_parse"] == {"zip": "81750", "menu": [{"nm": "Tea", "price": "5.00"},
                                                                        {"nm": "Cake", "price": "7"}]}
    (tmp_path / name).write_bytes(data)
    assert _entities(load(tmp_path / name)) == _entities(fixed)
    assert path.read_text(encoding="utf-8") == "\n".join(lines) + "\n"  # the input as it was


def test_a_gt_the_walk_cannot_patch_comes_back_as_a_long_table_of_the_fixed_gt(tmp_path):
    from kieval_core import load
    from kieval_core.review.label_fixes import corrected_gt

    path = tmp_path / "gt.json"
    path.write_text(json.dumps({"d1": {"zip": "B1750"}, "d2": {"zip": "=81750"}, "d3": {}}), encoding="utf-8")
    gt = load(path)
    fixes = parse_fixes([fix()], "fixes.json")
    fixed = apply_fixes(gt, fixes)
    data, name = corrected_gt(path.read_bytes(), "gt.json", fixes, fixed)
    assert name == "gt_fixed.csv"
    (tmp_path / name).write_bytes(data)
    again = load(tmp_path / name)
    assert _entities(again) == _entities(fixed) and set(again.doc_ids) == {"d1", "d2", "d3"}


def test_fixing_an_evaluation_gives_the_figures_of_evaluating_with_the_fix_file(tmp_path):
    from kieval_core import report_json
    from kieval_core.evaluate import with_label_fixes

    gt = dataset(GT, "gt")
    preds = {name: dataset({"d1": [(*NON, "zip", "81750", c), ("menu", "0", "menu.nm", "Tea", c)],
                            "d2": [(*NON, "zip", "81750", c)]}, name) for name, c in (("a", 0.9), ("b", 0.4))}
    rows = [fix(), fix(entity_type="date", gt_value="15/01/2019", fixed_value=None)]
    (tmp_path / "fixes.json").write_text(json.dumps(rows))
    direct = evaluate(gt, preds, gt_fixes=tmp_path / "fixes.json")
    later = with_label_fixes(evaluate(gt, preds), parse_fixes(rows, "fixes.json"))
    for name in preds:
        assert later.models[name].corpus.equals(direct.models[name].corpus)
        assert later.models[name].curve.equals(direct.models[name].curve)
        assert later.before_fixes.models[name].corpus.equals(direct.before_fixes.models[name].corpus)
    assert json.loads(report_json(later))["models"] == json.loads(report_json(direct))["models"]


def test_fixing_an_evaluation_keeps_its_review_policy(tmp_path):
    from kieval_core.evaluate import with_label_fixes

    gt = dataset(GT, "gt")
    preds = {"a": dataset({"d1": [(*NON, "zip", "81750")], "d2": [(*NON, "zip", "81750", 0.5)]}, "a")}
    rows = [fix()]
    (tmp_path / "fixes.json").write_text(json.dumps(rows))
    path = tmp_path / "fixes.json"
    direct = evaluate(gt, preds, gt_fixes=path, missing_confidence="automate")
    later = with_label_fixes(evaluate(gt, preds, missing_confidence="automate"), parse_fixes(rows, "f"))
    by_default = evaluate(gt, preds, gt_fixes=path)  # missing confidences reviewed
    assert later.models["a"].missing_confidence == "automate"
    assert later.models["a"].curve.equals(direct.models["a"].curve)
    assert not later.models["a"].curve.equals(by_default.models["a"].curve)
