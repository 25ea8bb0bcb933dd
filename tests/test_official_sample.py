"""Reproduce the official KIEval tool's published totals on its bundled CORD sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kieval_core import evaluate

OFFICIAL = Path(__file__).resolve().parents[1] / "sample_data" / "kieval_official_cord"


def test_reproduces_published_totals():
    folder = OFFICIAL
    model = evaluate(folder / "gt_csv", folder / "pred_csv").models["pred_csv"]
    assert model.entity.tp == 1020  # exact_match
    assert model.corrections.substitution == 167  # wrong_match
    assert model.corrections.addition + model.corrections.deletion == 273  # no_match
    assert model.entity.tp + model.entity.fn == 1301  # label
    assert round(model.entity.f1, 4) == 0.7707
    assert round(model.entity.precision, 4) == 0.7578
    assert round(model.entity.recall, 4) == 0.7840
    assert round(model.aligned, 4) == 0.6986
    # its other two columns: macro_f1 is the mean of the per-field F1 the Errors page and the
    # report's by_entity_type show (26 fields), accuracy is TP / (TP + FP + FN)
    per_field = model.by_entity_type
    assert len(per_field) == 26 and round(per_field["f1"].mean(), 4) == 0.4971  # macro_f1
    assert round(model.entity.tp / (model.entity.tp + model.entity.fp + model.entity.fn), 4) == 0.6269
    # The official tool reports 0.5613 because it counts 7 all-<empty> predicted rows as
    # groups; empty groups are dropped here (SPEC 6.6).
    assert round(model.group.f1, 4) == 0.5658


@pytest.mark.slow
def test_cli_on_official_sample(tmp_path):
    folder = OFFICIAL
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(folder / "gt_csv"),
         "--pred", f"qwen={folder / 'pred_csv'}", "--json", str(out), "--bootstrap", "0",
         "--fail-under", "kieval.aligned=0.69"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "0.6986" in done.stdout
    report = json.loads(out.read_text("utf-8"))["models"]["qwen"]
    assert report["kieval"]["entity"]["tp"] == 1020
    failing = subprocess.run(
        [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(folder / "gt_csv"),
         "--pred", str(folder / "pred_csv"), "--fail-under", "kieval.aligned=0.7", "--bootstrap", "0"],
        capture_output=True, text=True, check=False,
    )
    assert failing.returncode == 3
    assert "kieval.aligned = 0.6986, gate kieval.aligned >= 0.7" in failing.stderr


@pytest.mark.parametrize("pred_dir", ["pred_json"])
def test_json_predictions_match_csv(pred_dir):
    """The tool's JSON outputs (dotted keys inside groups) read the same as its CSVs."""
    folder = OFFICIAL
    from kieval_core import load

    csv = load(folder / "pred_csv").entities
    js = load(folder / pred_dir).entities
    assert len(js) == len(csv) == 1346
    assert sorted(js["entity_type"].unique()) == sorted(csv["entity_type"].unique())


def test_bad_fail_under_is_refused_before_scoring(tmp_path, capsys):
    from kieval_core.cli import main

    missing = tmp_path / "never-read.jsonl"  # the bar is checked before any file is read
    assert main(["evaluate", "--gt", str(missing), "--pred", str(missing),
                 "--fail-under", "kieval.bogus=0.5"]) == 2
    assert "unknown key 'kieval.bogus'" in capsys.readouterr().err
