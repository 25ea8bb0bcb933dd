"""Outputs are whole or absent (SPEC 8b): staged files and runs, interrupted runs, the
save directory's rules, a lock between two saves, and the bootstrap bound."""

from __future__ import annotations

import importlib
import json
import os
import signal
from pathlib import Path

import pytest
from conftest import SAMPLE_DATA

from kieval_core import safe_text
from kieval_core.cli import main
from kieval_core.output import outputs, runs
from kieval_core.output import render as report
from kieval_core.output.runs import RunStage, load_run

evaluate_module = importlib.import_module("kieval_core.evaluate")  # the package's `evaluate` is the function
GT = str(SAMPLE_DATA / "cord_v2_gt.jsonl")
MODELS = [str(SAMPLE_DATA / f"{name}.jsonl") for name in ("sim_strong", "sim_weak", "sim_llm")]


def run_args(folder: Path, *models: str, extra: tuple[str, ...] = ()) -> list[str]:
    preds = [a for m in models for a in ("--pred", m)]
    return ["evaluate", "--gt", GT, *preds, "--bootstrap", "20", "--json", str(folder / "r.json"),
            "--errors-csv", str(folder / "e.csv"), "--save-run", str(folder / "D"), *extra]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if outputs.TEMP_MARK in p.name)


def test_a_later_run_with_fewer_models_leaves_none_of_the_earlier_ones(tmp_path):
    assert main(run_args(tmp_path, *MODELS)) == 0
    assert sorted(p.name for p in (tmp_path / "D" / "models").iterdir()) == ["0", "1", "2"]
    assert main(run_args(tmp_path, MODELS[1])) == 0
    assert sorted(p.name for p in (tmp_path / "D" / "models").iterdir()) == ["0"]
    assert list(load_run(tmp_path / "D").result.models) == ["sim_weak"]
    assert leftovers(tmp_path) == []


def test_a_folder_with_other_files_is_refused_unless_forced(tmp_path, capsys):
    own = tmp_path / "D"
    own.mkdir()
    (own / "report.json").write_text("mine")
    assert main(run_args(tmp_path, MODELS[0])) == 2
    err = capsys.readouterr().err
    assert "holds files and is not a saved run" in err and "--force" in err
    assert (own / "report.json").read_text() == "mine"
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "e.csv").exists()
    assert main(run_args(tmp_path, MODELS[0], extra=("--force",))) == 0
    assert load_run(own).manifest["models"][0]["name"] == "sim_strong"
    assert json.loads((own / "report.json").read_text())["models"]
    (tmp_path / "file").write_text("x")
    args = run_args(tmp_path, MODELS[0])
    args[args.index("--save-run") + 1] = str(tmp_path / "file")
    assert main([*args, "--force"]) == 2
    assert "is a file" in capsys.readouterr().err


def test_a_second_save_into_the_same_directory_is_refused_while_the_first_runs(tmp_path, capsys):
    assert main(run_args(tmp_path, MODELS[0])) == 0
    before = (tmp_path / "D" / "manifest.json").read_bytes()
    with RunStage(tmp_path / "D"):  # another kieval holds the directory
        assert main(run_args(tmp_path, MODELS[1])) == 2
        assert "another kieval is writing a run here" in capsys.readouterr().err
    assert (tmp_path / "D" / "manifest.json").read_bytes() == before
    assert main(run_args(tmp_path, MODELS[1])) == 0  # once it is done, the directory is free again


def test_outputs_that_cannot_be_written_are_found_before_the_work(tmp_path, capsys, monkeypatch):
    def no_evaluation(*args, **kwargs):
        raise AssertionError("the evaluation started")

    monkeypatch.setattr(evaluate_module, "evaluate", no_evaluation)
    for option, bad in (("--errors-csv", tmp_path / "missing" / "e.csv"), ("--json", tmp_path),
                        ("--errors-csv", tmp_path / "r.json" / "e.csv")):
        args = run_args(tmp_path, MODELS[0])
        args[args.index(option) + 1] = str(bad)
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {option} ") and err.count("\n") == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_bootstrap_is_bounded(tmp_path, capsys):
    assert main([*run_args(tmp_path, MODELS[0]), "--bootstrap", "100000000"]) == 2
    assert "resamples must be an integer in [0, 10,000], got 100000000" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- interrupted runs ----------------------------------------------------------------------


def _signal_self(signum: int):
    os.kill(os.getpid(), signum)


POINTS = {
    # where the signal arrives: the function it is sent from (module, name), and on which call
    "reading": (evaluate_module, "evaluate", 1),  # the CLI imports them when it runs
    "report": (report, "render_report", 1),
    "run tables": (runs, "save_detail", 1),
    "errors csv": (safe_text, "csv_text", 1),
    "committing": (outputs.StagedFile, "commit", 1),
}


@pytest.fixture(scope="module")
def earlier_and_complete(tmp_path_factory):
    """The outputs of an earlier run (one model) and of the complete run (two)."""
    earlier, complete = tmp_path_factory.mktemp("earlier"), tmp_path_factory.mktemp("complete")
    assert main(run_args(earlier, MODELS[0])) == 0
    assert main(run_args(complete, *MODELS[:2])) == 0
    return earlier, complete


@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_leaves_every_output_unchanged_or_complete(
        point, signum, earlier_and_complete, tmp_path, monkeypatch, capsys):
    earlier, complete = earlier_and_complete
    for name in ("r.json", "e.csv"):
        (tmp_path / name).write_bytes((earlier / name).read_bytes())
    assert main(run_args(tmp_path, MODELS[0])) == 0  # D holds the earlier run
    capsys.readouterr()
    owner, name, on_call = POINTS[point]
    original = getattr(owner, name)
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == on_call:
            _signal_self(signum)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, interrupted)
    code = main(run_args(tmp_path, *MODELS[:2]))
    assert calls, "the signal was never sent"
    assert code == 128 + signum
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert len(said) == 1 and "Traceback" not in err
    assert said[0].startswith(f"kieval: stopped by {signal.Signals(signum).name}")
    for name in ("r.json", "e.csv"):
        now = (tmp_path / name).read_bytes()
        assert now in ((earlier / name).read_bytes(), (complete / name).read_bytes()), name
    run = load_run(tmp_path / "D")  # always opens: the earlier run or the complete one
    names = list(run.result.models)
    assert names in (["sim_strong"], ["sim_strong", "sim_weak"])
    assert (tmp_path / "D" / "report.json").read_bytes() == (
        (complete if len(names) == 2 else earlier) / "D" / "report.json").read_bytes()
    assert leftovers(tmp_path) == []


def test_signals_are_held_back_while_outputs_are_put_in_place(tmp_path):
    """A signal during the commit is raised once every output is in place."""
    first, second = outputs.StagedFile(tmp_path / "a", "--json"), outputs.StagedFile(tmp_path / "b", "--json")
    original = outputs.StagedFile.commit
    before = signal.getsignal(signal.SIGTERM)

    def commit(self):
        _signal_self(signal.SIGTERM)
        original(self)

    with outputs.stop_on_signals(), pytest.raises(outputs.Interrupted) as stopped, \
            pytest.MonkeyPatch.context() as patch:
        patch.setattr(outputs.StagedFile, "commit", commit)
        with outputs.OutputSet() as staged:
            staged.add(lambda: first)
            staged.add(lambda: second)
            staged.commit()
    assert stopped.value.exit_code == 143
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    assert signal.getsignal(signal.SIGTERM) == before  # the earlier handler is back
