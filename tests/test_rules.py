"""Field rules (SPEC 2d): precedence worked by hand, rules files as stickler's and
extract-bench's users write them, ignored fields, the strict / by-rules / suggested figures
and their rankings, and the report's keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import dataset, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import Normalizer, evaluate
from kieval_core.cli import main
from kieval_core.count.comparators import canonicalise, date_counts
from kieval_core.count.scores import aligned_score
from kieval_core.output.render import build_report
from kieval_core.result.suggest import GtReadings
from kieval_core.rules import FieldRules, Rule, read_rules_file

RULES_FILES = Path(__file__).parent / "rules_files"


# --- precedence ------------------------------------------------------------------------------


def test_precedence_by_hand():
    """user > file > schema > suggested > default, setting by setting; within a source the
    last matching rule wins."""
    rules = FieldRules((
        Rule("total", "casefold", source="suggested"),
        Rule("date", "date:mdy", source="file", declared_by="r.json: properties.date x-kieval-comparator"),
        Rule("total", "number", source="schema"),
        Rule("date", "exact", source="user", declared_by="--compare date=exact"),
        Rule("*.price", "number", source="user"),
        Rule("menu.price", "alnum", source="file"),
        Rule("menu.*", "casefold", source="file"),
        Rule("menu.nm", "alnum", source="file"),
        Rule("split", ignore=True, source="file"),
        Rule("split", "number", source="user"),
        Rule("company", "alnum", source="suggested", why="3 of 4 substitutions differ only in case"),
    ))
    assert rules.comparator_for("date") == "exact"  # the user's exact over the file's mdy
    assert rules.comparator_for("total") == "number"  # schema over suggested
    assert rules.comparator_for("menu.price") == "number"  # the user's glob over the file's name
    assert rules.comparator_for("menu.nm") == "alnum"  # the file's later rule
    assert rules.comparator_for("menu.cnt") == "casefold"
    assert rules.comparator_for("address") == "exact"
    assert rules.ignores("split") and not rules.ignores("date")
    table = {row["type"]: row for row in rules.table(["date", "total", "split", "company", "address"])}
    assert table["date"] == {"type": "date", "comparator": "exact", "ignore": False, "source": "user",
                             "declared_by": "--compare date=exact", "why": ""}
    assert table["split"]["ignore"] and table["split"]["source"] == "file"  # the ignoring rule is named
    assert table["company"]["why"] == "3 of 4 substitutions differ only in case"
    assert table["address"]["source"] == "default"
    assert rules.comparators(["date", "total", "company"]) == {"company": "alnum", "total": "number"}


def test_options_and_python_forms_agree():
    from_cli = FieldRules.from_options(["date=date", "*.price=number"], ["split"])
    from_python = FieldRules.of({"date": "date", "*.price": "number", "split": "ignore"})
    for t in ("date", "menu.price", "split", "company"):
        assert from_cli.comparator_for(t) == from_python.comparator_for(t)
        assert from_cli.ignores(t) == from_python.ignores(t)
    assert FieldRules.of("suggested").apply_suggested
    assert FieldRules.from_json(from_cli.to_json()) == from_cli


# --- rules files ---------------------------------------------------------------------------------


def test_stickler_schema_read_as_it_is():
    rules = read_rules_file(RULES_FILES / "sroie_stickler.json")
    assert rules.comparator_for("address") == "alnum"
    assert rules.comparator_for("total") == "number"
    assert rules.comparator_for("date") == "date:gt"  # the order the ground truth uses, bound at evaluation
    assert rules.comparator_for("company") == "exact"
    assert list(rules.warnings) == [
        "sroie_stickler.json: company: x-aws-stickler-comparator LevenshteinComparator; "
        "x-aws-stickler-threshold 0.8 have no equivalent here; company is compared as exact",
        "sroie_stickler.json: total: x-aws-stickler-weight 2.0 has no equivalent here; "
        "total is compared as number",
    ]
    row = next(r for r in rules.table(["address"]))
    assert row["source"] == "file"
    assert row["declared_by"] == ("sroie_stickler.json: properties.address x-aws-stickler-comparator "
                                  "NormalizedComparator")


def test_extract_bench_schema_read_as_it_is():
    rules = read_rules_file(RULES_FILES / "sroie_extract_bench.json")
    assert rules.comparator_for("company") == "casefold"
    assert rules.comparator_for("total") == "number"
    assert rules.comparator_for("date") == "date:gt"
    assert rules.comparator_rule("date").source == "schema"
    assert rules.comparator_for("address") == "exact"
    assert rules.ignores("split")
    assert list(rules.warnings) == [
        "sroie_extract_bench.json: address: evaluation_config string_fuzzy has no equivalent here; "
        "address is compared as exact",
        "sroie_extract_bench.json: total: evaluation_config number_tolerance's tolerance 0.01 (equal numbers "
        "only) has no equivalent here; total is compared as number",
    ]


def test_nested_properties_give_dotted_types():
    """Arrays of objects are group types (``menu.nm``); a list of strings is judged as its
    items; an explicit key is above the plain type; ``x-kieval-ignore`` on a group ignores
    its fields."""
    schema = {"type": "object", "properties": {
        "menu": {"type": "array", "items": {"type": "object", "properties": {
            "nm": {"type": "string", "x-kieval-comparator": "casefold"},
            "price": {"type": "number"},
            "cnt": {"type": "integer", "x-kieval-comparator": "exact"},
            "sub": {"type": "object",
                    "properties": {"nm": {"type": "string", "x-kieval-comparator": "alnum"}}},
        }}},
        "meta": {"type": "object", "x-kieval-ignore": True, "properties": {"id": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string", "x-kieval-comparator": "alnum"}},
        "issued": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
    }}
    rules = read_rules_file(schema, "cord.json")
    assert rules.comparators(["menu.nm", "menu.price", "menu.cnt", "menu.sub.nm", "tags", "issued"]) == {
        "issued": "date:gt", "menu.nm": "casefold", "menu.price": "number", "menu.sub.nm": "alnum",
        "tags": "alnum"}
    assert rules.ignores("meta.id") and not rules.ignores("menu.nm")
    assert not rules.warnings


def test_a_rules_file_that_is_not_json_is_one_clear_error(tmp_path):
    bad = tmp_path / "rules.json"
    bad.write_text("{not json", "utf-8")
    with pytest.raises(Exception, match="rules.json: not a readable JSON rules file"):
        read_rules_file(bad)


# --- on SROIE: the schemas give the figures of the equivalent --compare options -------------------


@pytest.fixture
def sroie(shared_data):
    root = shared_data / "sroie"
    preds = root / "predictions"
    return str(root / "sroie_test_gt.jsonl"), {
        "textract": str(preds / "aws_textract_analyzeexpense.jsonl"),
        "gpt4o": str(preds / "gpt4o_vision_themurtez.jsonl"),
        "claude": str(preds / "claude_haiku_4.5.jsonl"),
    }


def _figures(result) -> dict:
    report = build_report(result)
    return {name: (m["kieval"], m["kieval_strict"], m.get("kieval_suggested"), m["by_entity_type"])
            for name, m in report["models"].items()}


@pytest.mark.parametrize(("schema", "compare", "ignore"), [
    ("sroie_stickler.json", ["date=date", "address=alnum", "total=number"], []),
    ("sroie_extract_bench.json", ["company=casefold", "date=date", "total=number"], ["split"]),
])
def test_schemas_give_the_figures_of_the_equivalent_options(sroie, schema, compare, ignore):
    gt, preds = sroie
    by_file = evaluate(gt, preds, rules=RULES_FILES / schema)
    by_options = evaluate(gt, preds, rules=FieldRules.from_options(compare, ignore))
    assert by_file.comparators == by_options.comparators
    assert _figures(by_file) == _figures(by_options)
    assert by_file.ignored == by_options.ignored
    assert len(by_file.rules.warnings) == 2  # every setting without an equivalent, once per field
    assert all(w in by_file.all_warnings for w in by_file.rules.warnings)


def test_sroie_rankings_strict_and_suggested(sroie):
    """Strictly GPT-4o ranks last; under the suggested rules first (issue 29)."""
    gt, preds = sroie
    result = evaluate(gt, preds, rules={"split": "ignore"})
    figures = result.rule_figures
    assert [n for n in sorted(figures.strict, key=lambda n: figures.strict[n].rank)] == [
        "textract", "claude", "gpt4o"]
    assert figures.suggested["gpt4o"].rank == 1 and figures.strict["gpt4o"].rank == 3
    assert figures.sentence.startswith("Under the suggested rules (")
    assert "date as date:dmy" in figures.sentence
    assert figures.sentence.endswith(" gpt4o ranks first; strictly it ranks last.")
    why = {r.pattern: r.why for r in figures.suggested_rules.rules}
    assert why["date"].startswith("347 of 347 GT values are dates; day first in ")
    # applying them gives the suggested figures as the active ones
    applied = evaluate(gt, preds, rules=[{"split": "ignore"}, "suggested"])
    for name in preds:
        assert applied.models[name].aligned == figures.suggested[name].aligned
        assert applied.rule_figures.strict[name].aligned == figures.strict[name].aligned
    assert applied.rule_figures.suggested is None
    sources = {row["type"]: row["source"] for row in applied.rules_table()}
    # split, in no prediction file, is set aside as metadata before any rule (SPEC 6.1)
    assert sources == {"address": "suggested", "company": "suggested", "date": "suggested",
                       "total": "suggested"}
    assert applied.set_aside == ["split"]


# --- ignored fields, figure sets and the report, worked by hand ------------------------------------

GT = {"a": [("", "", "date", "25/12/2018"), ("", "", "company", "ACME"), ("", "", "split", "test")],
      "b": [("", "", "date", "01/02/2019"), ("", "", "company", "Pear"), ("", "", "split", "test")]}
M1 = {"a": [("", "", "date", "2018-12-25"), ("", "", "company", "acme")],
      "b": [("", "", "date", "2019-02-01"), ("", "", "company", "pear")]}
M2 = {"a": [("", "", "date", "25/12/2018"), ("", "", "company", "ACME")],
      "b": [("", "", "date", "02/01/2019"), ("", "", "company", "Pea")]}


def test_ignored_strict_and_suggested_figures_by_hand():
    result = evaluate(dataset(GT, "gt"), {"m1": dataset(M1, "m1"), "m2": dataset(M2, "m2")},
                      rules=FieldRules.from_options(ignore=["split"]))
    assert result.ignored == {"split": 2}
    # strictly: m1 has 0 TP, 4 substitutions; m2 has 2 TP, 2 substitutions
    figures = result.rule_figures
    assert figures.strict["m1"].aligned == 0.0
    assert figures.strict["m2"].aligned == aligned_score(2, 2)
    assert [figures.strict[n].rank for n in ("m1", "m2")] == [2, 1]
    # suggested: date as date:dmy (day first in the one unambiguous GT date), company as casefold
    assert figures.suggested_comparators == {"company": "casefold", "date": "date:dmy"}
    assert figures.suggested["m1"].aligned == 1.0  # every value equal under the suggestions
    assert figures.suggested["m2"].aligned == aligned_score(2, 2)  # 02/01/2019 is 2 January; Pea
    assert figures.sentence == ("Under the suggested rules (company as casefold, date as date:dmy) m1 ranks "
                                "first; strictly it ranks last.")
    report = build_report(result)
    assert report["options"]["ignored"] == {"split": 2}
    assert [r["type"] for r in report["options"]["rules"]] == ["company", "date", "split"]
    assert report["options"]["rules"][2] == {"type": "split", "comparator": "exact", "ignore": True,
                                             "source": "user", "declared_by": "--ignore split", "why": ""}
    assert [r["type"] for r in report["options"]["suggested_rules"]] == ["company", "date"]
    assert report["rankings"] == {"strict": ["m2", "m1"], "rules": ["m2", "m1"], "suggested": ["m1", "m2"],
                                  "sentence": figures.sentence}
    m1 = report["models"]["m1"]
    assert list(m1)[list(m1).index("kieval"):][:3] == ["kieval", "kieval_strict", "kieval_suggested"]
    assert m1["kieval"]["rank"] == 2 and m1["kieval_suggested"]["rank"] == 1
    assert m1["kieval_suggested"]["entity"]["tp"] == 4
    assert m1["kieval_strict"]["corrections"] == {"substitution": 4, "addition": 0, "deletion": 0, "total": 4}
    assert "split" not in {row["entity_type"] for row in m1["by_entity_type"]}


def test_the_cli_takes_rules_and_prints_both_figure_sets(tmp_path, capsys):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": d, "fields": {t: v for _, _, t, v in rows}}
                                             for d, rows in GT.items()])
    preds = []
    for name, docs in (("m1", M1), ("m2", M2)):
        preds += ["--pred", str(write_jsonl(tmp_path / f"{name}.jsonl", [
            {"doc_id": d, "fields": {t: v for _, _, t, v in rows}} for d, rows in docs.items()]))]
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"properties": {"company": {"x-kieval-comparator": "casefold"},
                                                "split": {"x-kieval-ignore": True}}}), "utf-8")
    out_json = tmp_path / "r.json"
    argv = ["evaluate", "--gt", str(gt), *preds, "--rules", str(rules), "--compare", "date=date:mdy",
            "--json", str(out_json)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "KIEval_Aligned strict (rank)" in out and "KIEval_Aligned by the rules (rank)" in out
    assert "rules: company=casefold (rules.json: properties.company x-kieval-comparator); " \
           "date=date:mdy (--compare date=date:mdy)" in out
    assert "ignored (not scored): split (2 values)" in out
    report = json.loads(out_json.read_text("utf-8"))
    rows = {r["type"]: r for r in report["options"]["rules"]}
    assert rows["date"]["source"] == "user" and rows["company"]["source"] == "file"
    assert rows["split"]["ignore"] is True
    # the suggestion (date as day first) differs from the user's month first: all three sets
    assert report["options"]["suggested_rules"] == []  # the user's and the file's rules: not second-guessed
    assert "kieval_suggested" not in report["models"]["m1"]


def test_the_notebook_shows_both_rankings_and_the_sentence():
    result = evaluate(dataset(GT, "gt"), {"m1": dataset(M1, "m1"), "m2": dataset(M2, "m2")},
                      rules={"split": "ignore"})
    shown = result._repr_html_()
    assert ("<p><b>Under the suggested rules (company as casefold, date as date:dmy) m1 ranks first; "
            "strictly it ranks last.</b></p>") in shown
    assert "KIEval_Aligned, strict" in shown and "rank, suggested rules" in shown
    assert shown.index("KIEval_Aligned, strict") < shown.index("Headline figures")


def test_a_saved_run_keeps_its_rules_and_their_figures(tmp_path):
    from kieval_core.output.render import report_json
    from kieval_core.output.runs import load_run, save_run

    result = evaluate(dataset(GT, "gt"), {"m1": dataset(M1, "m1"), "m2": dataset(M2, "m2")},
                      rules=FieldRules.from_options(["date=date:mdy"], ["split"]))
    text = report_json(result)
    save_run(result, tmp_path / "run", text, {"gt": {"source": "gt", "digest": ""}, "models": {}}, {})
    again = load_run(tmp_path / "run").result
    assert again.rules == result.rules and again.ignored == {"split": 2}
    before, after = json.loads(text), json.loads(report_json(again))
    assert after["options"]["rules"] == before["options"]["rules"]
    assert after["rankings"] == before["rankings"]
    for name in ("m1", "m2"):
        for key in ("kieval", "kieval_strict", "kieval_suggested"):
            assert after["models"][name][key] == before["models"][name][key]


def test_without_the_engines_tables_strict_figures_are_absent_not_mislabelled():
    """A distributed run keeps only tallies: with a comparator active its strict figures
    cannot be counted, and the report says so (None) rather than copying the active ones."""
    import dataclasses

    result = evaluate(dataset(GT, "gt"), {"m1": dataset(M1, "m1"), "m2": dataset(M2, "m2")},
                      rules={"date": "date", "split": "ignore"})
    tallies_only = dataclasses.replace(result, models={
        n: dataclasses.replace(m, counted=None) for n, m in result.models.items()})
    report = build_report(tallies_only)
    assert report["models"]["m1"]["kieval_strict"] is None
    assert "kieval_suggested" not in report["models"]["m1"]
    assert report["rankings"]["strict"] == [] and report["rankings"]["sentence"] is None


def test_a_rules_file_of_unsupported_settings_only_keeps_its_warnings(tmp_path):
    """A rules file none of whose settings has an equivalent here gives no rule, and its
    warnings still reach the result (an empty set of rules is not "no rules file")."""
    schema = tmp_path / "rules.json"
    schema.write_text(json.dumps({"type": "object", "properties": {
        "total": {"type": "string", "x-aws-stickler-weight": 2.0}}}), "utf-8")
    rules = read_rules_file(schema)
    assert not rules.rules and rules.warnings
    gt = {"d1": {"total": "5.00"}}
    result = evaluate(gt, {"m": {"d1": {"total": "5.00"}}}, rules=str(schema))
    assert result.comparator_warnings == [
        "rules.json: total: x-aws-stickler-weight 2.0 has no equivalent here; total is compared as exact"]
    assert result.rules.warnings == rules.warnings


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["date", "total", "other"]),
                          st.sampled_from(["01/02/2019", "2019-02-01", " 01/02/2019", "13/01/2019", "12.50",
                                           "12,50", "x", "1.000"])), max_size=25))
def test_gt_readings_from_distinct_values_equal_those_of_every_value(rows):
    """The GT readings count each distinct normalised value once, weighted by how often it
    comes: the same figures as reading every value."""
    gt = pd.DataFrame({"entity_type": [t for t, _ in rows], "value": [v for _, v in rows]}, dtype=object)
    normalizer = Normalizer()
    readings = GtReadings.of(gt, normalizer, ["date", "total"], ["total", "other"])
    for field in ("date", "total", "other"):
        values = np.array([normalizer(v) for t, v in rows if t == field], dtype=object)
        assert readings.values[field] == len(values)
        if field != "other":
            assert readings.dates[field] == date_counts(values)
        if field != "date":
            assert readings.numbers[field] == int(canonicalise("number", values)[1].sum())
