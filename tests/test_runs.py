"""Saved runs: written by the CLI, read back without the inputs, the same report."""

from __future__ import annotations

import json

import pytest
from conftest import SAMPLE_DATA

from kieval_core import DecisionOptions, KievalInputError
from kieval_core.cli import main
from kieval_core.report.render import report_json
from kieval_core.report.runs import load_detail, load_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    args = [
        "evaluate",
        "--gt",
        str(SAMPLE_DATA / "cord_v2_gt.jsonl"),
        "--pred",
        str(SAMPLE_DATA / "sim_strong.jsonl"),
        "--pred",
        str(SAMPLE_DATA / "sim_weak.jsonl"),
        "--metrics",
        "all",
        "--json",
        str(folder / "r.json"),
        "--save-run",
        str(folder / "run"),
        "--bootstrap",
        "100",
    ]
    assert main(args) == 0
    return folder


def test_a_saved_run_gives_the_same_report(run):
    saved = load_run(run / "run")
    assert report_json(saved.result, DecisionOptions(resamples=100)) == (run / "r.json").read_text("utf-8")
    assert (run / "run" / "report.json").read_text("utf-8") == (run / "r.json").read_text("utf-8")
    manifest = saved.manifest
    assert set(manifest["inputs"]["models"]) == {"sim_strong", "sim_weak"}
    assert len(manifest["inputs"]["gt"]["digest"]) == 64


def test_a_saved_run_keeps_errors_and_matchings(run):
    from kieval_core import evaluate

    saved = load_run(run / "run").result.models["sim_weak"]
    fresh = evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", {"m": SAMPLE_DATA / "sim_weak.jsonl"}).models["m"]
    assert saved.errors.astype(str).equals(fresh.errors.astype(str))
    one = load_detail(run / "run" / "models" / "1" / "detail", "validation_0075")
    assert set(one.cells["doc_id"].astype(str)) == {"validation_0075"}
    assert len(one.pairs) == (fresh.matching["doc_id"] == "validation_0075").sum()


def test_anything_else_is_refused(tmp_path):
    with pytest.raises(KievalInputError, match="not a saved run"):
        load_run(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"kieval_run": 99}))
    with pytest.raises(KievalInputError, match="unknown run format"):
        load_run(tmp_path)
