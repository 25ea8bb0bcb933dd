"""The JSON report (SPEC 7): keys, determinism, nothing lost, and the error CSV."""

from __future__ import annotations

import json
import subprocess
import sys
from unittest import mock

import pandas as pd
import pytest
from conftest import SAMPLE_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import DecisionOptions, evaluate
from kieval_core.count.causes import CAUSE_COLUMNS, CAUSES_OF_KIND
from kieval_core.output import render
from kieval_core.output.render import (
    RawJSON,
    _records,
    build_report,
    nested_causes,
    records_json,
    report_json,
)


@pytest.fixture(scope="module")
def sample():
    preds = {p.stem: p for p in sorted(SAMPLE_DATA.glob("sim_*.jsonl"))}
    return evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", preds)


def test_spec_keys_present(sample):
    report = json.loads(report_json(sample))
    model = report["models"]["sim_weak"]
    assert model["n_documents"] == 100
    for key in ("tp", "fp", "fn", "precision", "recall", "f1"):
        assert key in model["kieval"]["entity"] and key in model["kieval"]["group"]
        assert key in model["entity_f1"]
    assert set(model["kieval"]["corrections"]) == {"substitution", "addition", "deletion", "total"}
    assert 0.0 <= model["kieval"]["aligned"] <= 1.0
    point = model["automation"]["curve"][0]
    assert set(point) == {"threshold", "auto_rate", "kieval_aligned"}
    assert {d["doc_id"] for d in model["documents"]} == {f"validation_{i:04d}" for i in range(100)}
    assert isinstance(report["warnings"], list)


def test_fast_json_equals_standard_encoding(sample):
    decisions = DecisionOptions(resamples=20)
    fast = json.loads(report_json(sample, decisions))
    assert fast == json.loads(json.dumps(build_report(sample, decisions), allow_nan=False))


def test_nothing_lost(sample):
    """Every GT document is scored; documents absent from predictions are listed."""
    weak = sample.models["sim_weak"]
    assert len(weak.documents) == 100
    assert weak.missing_documents == ("validation_0021", "validation_0058")
    assert weak.documents.set_index("doc_id").loc["validation_0021", "missing"]
    assert any("2 GT document(s) absent" in w for w in sample.all_warnings)
    gt_entities = sample.gt.n_entities
    assert weak.entity.tp + weak.entity.fn == gt_entities


@pytest.mark.slow
def test_report_is_byte_identical_across_processes(tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        subprocess.run(
            [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt",
             str(SAMPLE_DATA / "cord_v2_gt.jsonl"), "--pred", str(SAMPLE_DATA / "sim_llm.jsonl"),
             "--json", str(out)],
            check=True, capture_output=True,
        )
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_errors_csv(tmp_path):
    out = tmp_path / "errors.csv"
    from kieval_core.cli import main

    assert main(["evaluate", "--gt", str(SAMPLE_DATA / "cord_v2_gt.jsonl"),
                 "--pred", str(SAMPLE_DATA / "sim_strong.jsonl"), "--errors-csv", str(out)]) == 0
    errors = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(errors.columns) == ["model", "doc_id", "group_type", "gt_group", "pred_group",
                                    "entity_type", "gt_value", "pred_value", "kind", "cause", "confidence",
                                    "page", "gt_box", "pred_box"]
    assert (errors.loc[errors["kind"] == "addition", "gt_box"] != "").all()
    assert (errors.loc[errors["kind"] == "deletion", "pred_box"] != "").all()
    assert errors["gt_box"].str.match(r"^$|^\[\d+, \d+, \d+, \d+\]$").all()
    model = evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", SAMPLE_DATA / "sim_strong.jsonl").models["sim_strong"]
    counts = errors["kind"].value_counts()
    assert counts["substitution"] == model.corrections.substitution
    assert counts["addition"] == model.corrections.addition
    assert counts["deletion"] == model.corrections.deletion
    causes = errors.groupby(["kind", "cause"]).size()
    assert {k: {c: int(causes.get((k, c), 0)) for c in v} for k, v in model.causes.items()} == model.causes
    assert causes.sum() == len(errors)


def test_group_scores_undefined_without_groups(tmp_path):
    from builders import write_jsonl

    from kieval_core import UndefinedMetricWarning

    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"total": "1"}}])
    model = evaluate(gt, gt).models["gt"]
    with pytest.warns(UndefinedMetricWarning, match="no groups"):
        assert model.group is None
    assert model.group_aligned is None
    assert json.loads(report_json(evaluate(gt, gt)))["models"]["gt"]["kieval"]["group"] is None


def test_no_groups_is_said_once_for_all_models(tmp_path, capsys):
    """SROIE with seven models printed the same 'no groups' line seven times."""
    from builders import write_jsonl

    from kieval_core.cli import main

    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"total": "1"}}])
    assert main(["evaluate", "--gt", str(gt), "--pred", f"a={gt}", "--pred", f"b={gt}", "--pred", f"c={gt}",
                 "--bootstrap", "0"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "no groups" in line]
    assert said == ["warning: the ground truth has no groups; group P/R/F1 are undefined (reported as n/a)"]


def test_every_input_document_is_scored_or_listed(tmp_path):
    from builders import write_jsonl

    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": d, "gt_parse": {"t": "1"}} for d in "abc"])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": d, "prediction": {"t": "1"}} for d in "bcxy"])
    model = evaluate(gt, pred).models["p"]
    scored = set(model.documents["doc_id"])
    assert scored == {"a", "b", "c"}
    assert model.missing_documents == ("a",) and model.unknown_documents == ("x", "y")
    assert scored | set(model.unknown_documents) == {"a", "b", "c", "x", "y"}  # all input documents
    assert any("1 GT document(s) absent" in w and "a" in w for w in model.warnings)
    assert any("2 predicted document(s) not in the ground truth" in w and "x, y" in w
               for w in model.warnings)


_COUNT_ROWS = st.lists(st.integers(0, 10**12), min_size=len(CAUSE_COLUMNS), max_size=len(CAUSE_COLUMNS))


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.lists(_COUNT_ROWS, max_size=20),
                 # rows repeated: each distinct row is written once and shared
                 st.lists(_COUNT_ROWS, min_size=1, max_size=3).flatmap(
                     lambda distinct: st.lists(st.sampled_from(distinct), max_size=20))))
def test_nested_causes_is_the_json_of_each_rows_counts(rows):
    table = pd.DataFrame(rows, columns=CAUSE_COLUMNS, dtype="int64")
    table.insert(0, "doc_id", [f"d{i}" for i in range(len(rows))])
    out = nested_causes(table)
    assert list(out.columns) == ["doc_id", "causes"]
    for row, text in zip(rows, out["causes"], strict=True):
        counts = dict(zip(CAUSE_COLUMNS, row, strict=True))
        expected = {kind: {cause: counts[f"{kind}_{cause}"] for cause in causes}
                    for kind, causes in CAUSES_OF_KIND.items()}
        assert isinstance(text, RawJSON) and text == json.dumps(expected)


_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-05, 1e16]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_FLOATS, st.integers(-(2**63), 2**63 - 1), st.booleans(), st.text(max_size=5),
                          st.one_of(st.none(), st.text(max_size=3), st.integers(0, 9))),
                min_size=1, max_size=25),
       st.sampled_from([1, 2, 7, render.RECORDS_CHUNK]))
def test_records_json_writes_each_row_as_json_dumps(rows, chunk):
    """Texts (pandas' str type and Python objects), numbers, flags and mixed objects, laid
    out in chunks of any size."""
    frame = pd.DataFrame(rows, columns=["score", "count", "flag", "name", "mixed"]).astype(
        {"score": "float64", "count": "int64", "flag": "bool", "name": object, "mixed": object})
    frame["id"] = frame["name"].astype("str")
    expected = ",\n".join(json.dumps(record, ensure_ascii=False) for record in _records(frame))
    with mock.patch.object(render, "RECORDS_CHUNK", chunk):
        assert records_json(frame) == "[\n" + expected + "\n]"
