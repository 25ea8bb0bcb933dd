"""Saved runs: written by the CLI, read back without the inputs, the same report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE_DATA

from kieval_core import DecisionOptions, KievalInputError, evaluate
from kieval_core.cli import main
from kieval_core.output.render import report_json
from kieval_core.output.runs import digest, load_detail, load_run

#: Runs saved by earlier versions (see the README there).
SAVED_RUNS = Path(__file__).parent / "saved_runs"


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
    saved = load_run(run / "run").result.models["sim_weak"]
    fresh = evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", {"m": SAMPLE_DATA / "sim_weak.jsonl"}).models["m"]
    assert saved.error_list.astype(str).equals(fresh.error_list.astype(str))
    one = load_detail(run / "run" / "models" / "1" / "detail", "validation_0075")
    assert set(one.cells["doc_id"].astype(str)) == {"validation_0075"}
    assert len(one.pairs) == (fresh.matching["doc_id"] == "validation_0075").sum()


def test_anything_else_is_refused(tmp_path):
    with pytest.raises(KievalInputError, match="not a saved run"):
        load_run(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"kieval_run": 99}))
    with pytest.raises(KievalInputError, match="unknown run format"):
        load_run(tmp_path)


def _renamed(node):
    """A report written before issue 16's rename, with today's keys: ``errors`` of a review
    point or review table (it has ``tp_after``) is ``errors_left``, any other (a table of
    figures) is ``corrections``."""
    if isinstance(node, dict):
        return {("errors_left" if "tp_after" in node else "corrections") if k == "errors" else k: _renamed(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v) for v in node]
    return node


#: Keys of a model's ``automation`` section added after 0.1.0 (issue 31), and the one whose
#: figures changed (per-field plans keep every field at its floor; a holdout whose interval
#: crosses the target does not carry over): a run saved before them
#: gets them on reading; the rest of its report is unchanged.
ADDED_AUTOMATION_KEYS = ("confidence_by_field", "assured", "per_field", "holdout")


def _without_added(report: dict) -> dict:
    for model in report["models"].values():
        for key in ADDED_AUTOMATION_KEYS:
            model["automation"].pop(key, None)
    return report
def _without_field_rules(report: dict) -> dict:
    """A report without what field rules (SPEC 2d, after 0.1.0) added: ``options.rules``,
    ``ignored`` and ``suggested_rules``, ``rankings``, each model's ``kieval_strict``,
    ``kieval_suggested`` and ``kieval.rank``."""
    out = {k: v for k, v in report.items() if k != "rankings"}
    out["options"] = {k: v for k, v in report["options"].items()
                      if k not in ("rules", "ignored", "suggested_rules")}
    out["models"] = {}
    for name, model in report["models"].items():
        model = {k: v for k, v in model.items() if k not in ("kieval_strict", "kieval_suggested")}
        model["kieval"] = {k: v for k, v in model["kieval"].items() if k != "rank"}
        out["models"][name] = model
    return out


def test_a_run_saved_before_the_rename_opens_with_todays_names(tmp_path):
    """A run stores counts, and the renamed columns are derived from them on reading: a run
    saved by 0.1.0 before the rename opens, and gives its own report with today's keys."""
    old = SAVED_RUNS / "v0.1.0_before_rename"
    saved = load_run(old)
    assert saved.manifest["tool"]["version"] == "0.1.0"
    model = saved.result.models["sim_weak"]
    assert "corrections" in model.documents and "errors" not in model.documents
    assert (model.documents["corrections"] == model.documents[["substitution", "addition", "deletion"]]
            .sum(axis=1)).all()
    stored = json.loads((old / "report.json").read_text("utf-8"))
    assert '"errors"' in (old / "report.json").read_text("utf-8")  # written with the old keys
    again = json.loads(report_json(saved.result, DecisionOptions(resamples=0)))
    assert again.pop("suspects") == []  # added after 0.1.0 (SPEC 2f); none: no wrong value at >= 0.99
    assert _without_added(_without_field_rules(again)) == _without_added(_renamed(stored))
    gt, pred = tmp_path / "gt.jsonl", tmp_path / "sim_weak.jsonl"  # the inputs it was saved from
    lines = (SAMPLE_DATA / "cord_v2_gt.jsonl").read_text("utf-8").splitlines(keepends=True)[:6]
    gt.write_text("".join(lines), "utf-8")
    ids = {json.loads(line)["doc_id"] for line in lines}
    pred.write_text("".join(line for line in (SAMPLE_DATA / "sim_weak.jsonl").read_text("utf-8")
                            .splitlines(keepends=True) if json.loads(line)["doc_id"] in ids), "utf-8")
    assert digest(gt) == saved.manifest["inputs"]["gt"]["digest"]
    fresh = evaluate(gt, {"sim_weak": pred}).models["sim_weak"]
    assert model.error_list.astype(str).equals(fresh.error_list.astype(str))
