"""MLflow: one run per evaluation in a real local store, read back with MlflowClient."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mlflow")  # the test extra brings it; the message without it is tested below

from mlflow import MlflowClient  # noqa: E402

from kieval_core import DecisionOptions, KievalOptionError, evaluate, render_report  # noqa: E402
from kieval_core.cli import main  # noqa: E402
from kieval_core.output.render import DECISION_ROWS, value_at  # noqa: E402
from kieval_core.output.runs import load_run  # noqa: E402
from kieval_core.output.tracking import INSTALL, log_mlflow, result_metrics  # noqa: E402
from kieval_core.result.registry import METRICS  # noqa: E402
from kieval_core.result.results import all_error_lists  # noqa: E402
from kieval_core.safe_text import csv_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
GT, STRONG, WEAK = (str(SAMPLE / f) for f in ("cord_v2_gt.jsonl", "sim_strong.jsonl", "sim_weak.jsonl"))
DECISIONS = DecisionOptions(target=0.9, resamples=30)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh local file store; the variables MLflow reads are restored afterwards."""
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_ALLOW_FILE_STORE"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return (tmp_path / "mlruns").as_uri()


@pytest.fixture(scope="module")
def result():
    return evaluate(SAMPLE / "cord_v2_gt.jsonl",
                    {"strong": SAMPLE / "sim_strong.jsonl", "weak one": SAMPLE / "sim_weak.jsonl"})


def test_a_run_holds_the_reports_figures_curve_and_artifacts(result, store, tmp_path):
    run_id = log_mlflow(result, "receipts", tracking_uri=store, decisions=DECISIONS, run_name="nightly")
    assert os.environ["MLFLOW_ALLOW_FILE_STORE"] == "true"  # MLflow 3 refuses a file store otherwise
    client = MlflowClient(tracking_uri=store)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "nightly"
    assert client.get_experiment(run.info.experiment_id).name == "receipts"
    report_text = render_report(result, DECISIONS).text
    report = json.loads(report_text)
    logged = run.data.metrics
    prefixes = {"strong": "strong", "weak one": "weak_one"}
    n = 0
    for name, figures in report["models"].items():
        for key in ["n_documents", *(m.key for m in METRICS), *DECISION_ROWS.values()]:
            value = value_at(figures, key)
            if isinstance(value, (int, float)):
                assert logged[f"{prefixes[name]}.{key}"] == value, key
                n += 1
            else:
                assert f"{prefixes[name]}.{key}" not in logged
        for column in ("threshold", "auto_rate", "kieval_aligned"):
            history = client.get_metric_history(run_id, f"{prefixes[name]}.automation.curve.{column}")
            curve = figures["automation"]["curve"]
            assert [m.step for m in history] == list(range(len(curve)))
            assert [m.value for m in sorted(history, key=lambda m: m.step)] == [p[column] for p in curve]
    assert n >= 2 * 12 and logged["strong.kieval.aligned"] == result.models["strong"].aligned
    params = run.data.params
    assert params["normalizer"] == report["normalizer"] and params["metrics"] == "kieval"
    assert params["format"] == "jsonl" and params["weak_one.format"] == "jsonl"
    assert params["decisions.target_accuracy"] == "0.9" and params["decisions.cost.per_review"] == "1.0"
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert artifacts == {"report.json", "errors.csv", "charts.html", "run"}
    folder = Path(client.download_artifacts(run_id, "", str(tmp_path / "down")))
    assert (folder / "report.json").read_text("utf-8") == report_text
    assert (folder / "errors.csv").read_bytes() == csv_text(all_error_lists(result)).encode("utf-8")
    charts = (folder / "charts.html").read_text("utf-8")
    assert charts.count("Plotly.newPlot") == 3 and "weak one: accuracy after review" in charts
    reopened = load_run(folder / "run").result  # the saved run opens with the dashboard
    assert render_report(reopened, DECISIONS).text == report_text


def test_the_cli_logs_one_run_to_the_default_store(store, tmp_path, monkeypatch, capsys):
    """No MLFLOW_TRACKING_URI: where MLflow 3 itself logs (sqlite:///mlflow.db since 3.7), so
    `mlflow ui` or `mlflow server` there shows the run (it refused the ./mlruns file store)."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    code = main(["evaluate", "--gt", GT, "--pred", STRONG,
                 "--bootstrap", "20", "--save-run", "saved", "--mlflow"])
    assert code == 0
    assert "MLflow: run " in capsys.readouterr().err
    assert mlflow.get_tracking_uri() == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert (tmp_path / "mlflow.db").is_file()
    assert not (tmp_path / "mlruns" / "0" / "meta.yaml").exists()  # no file store
    client = MlflowClient(tracking_uri=mlflow.get_tracking_uri())
    experiment = client.get_experiment_by_name("kieval")
    (run,) = client.search_runs([experiment.experiment_id])
    params = run.data.params
    assert params["option.format"] == "auto" and params["option.engine"] == "local"
    assert params["option.normalize"] == "default" and params["decisions.bootstrap_resamples"] == "20"
    saved = json.loads((tmp_path / "saved" / "report.json").read_text("utf-8"))
    assert run.data.metrics["sim_strong.kieval.aligned"] == saved["models"]["sim_strong"]["kieval"]["aligned"]
    names = {a.path for a in client.list_artifacts(run.info.run_id, "run")}
    assert "run/manifest.json" in names


def test_a_store_that_cannot_be_written_is_one_message(store, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a file"
    blocker.write_text("x")
    uri = (blocker / "mlruns").as_uri()  # a directory under a file cannot be made, even by root
    with pytest.raises(KievalOptionError, match="cannot log to MLflow at file://"):
        log_mlflow(evaluate(GT, WEAK), tracking_uri=uri)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    code = main(["evaluate", "--gt", GT, "--pred", WEAK,
                 "--json", str(tmp_path / "r.json"), "--mlflow", "x"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot log to MLflow at ") and err.count("\n") == 1
    assert not (tmp_path / "r.json").exists()  # refused before any work


def test_without_the_extra_one_message_names_the_install_command(store, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if mlflow-skinny were not installed
    with pytest.raises(KievalOptionError, match=r"needs the mlflow extra: pip install 'kieval-workbench\["):
        log_mlflow(evaluate(GT, WEAK), tracking_uri=store)
    code = main(["evaluate", "--gt", GT, "--pred", WEAK,
                 "--mlflow"])
    err = capsys.readouterr().err
    assert code == 2 and err == f"error: logging to MLflow needs the mlflow extra: {INSTALL}\n"


def test_per_epoch_figures_are_the_logged_ones(result, store):
    """result_metrics (no tables, no bootstrap) gives the names and values a run logs."""
    decisions = DecisionOptions(target=0.9, resamples=0)
    run_id = log_mlflow(result, tracking_uri=store, decisions=decisions)
    logged = MlflowClient(tracking_uri=store).get_run(run_id).data.metrics
    assert result_metrics(result, decisions) == {k: v for k, v in logged.items() if ".curve." not in k}


# --- issue 33, N5: names from files, failures, their causes -----------------------------------


def test_odd_names_from_files_never_lose_the_other_figures(store):
    from kieval_core.output.tracking import run_params

    long_name = "m" * 240
    result = evaluate(GT, {long_name: WEAK, "weak": WEAK})
    run_id = log_mlflow(result, tracking_uri=store, decisions=DecisionOptions(resamples=0))
    run = MlflowClient(tracking_uri=store).get_run(run_id)
    assert run.info.status == "FINISHED"
    metrics = run.data.metrics
    hashed = [k for k in metrics if k.startswith("m" * 100) and k.endswith(".kieval.aligned")]
    assert len(hashed) == 1 and metrics[hashed[0]] == metrics["weak.kieval.aligned"]
    assert all(len(k) <= 250 for k in metrics)
    report = json.loads(render_report(result, DecisionOptions(resamples=0)).text)
    report["comparators"] = {"a/../b": "date:dmy", "a/_/b": "number", "./c": "alnum", "x" * 300: "casefold"}
    params = run_params(report)
    assert params["comparators.a/_/b"] == "date:dmy" and params["comparators.a/_/b-2"] == "number"
    assert params["comparators../c"] == "alnum" and all(len(k) <= 250 for k in params)


def test_a_failed_log_marks_the_run_failed_and_names_the_cause(store, monkeypatch):
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    def refuse(self, run_id, metrics=(), params=(), tags=()):
        raise MlflowException("Invalid value 'x' for parameter 'key'", error_code=INVALID_PARAMETER_VALUE)

    monkeypatch.setattr(MlflowClient, "log_batch", refuse)
    with pytest.raises(KievalOptionError) as info:
        log_mlflow(evaluate(GT, WEAK), tracking_uri=store)
    said = f"MLflow at {store} refused the run's data: Invalid value 'x' for parameter 'key'"
    assert str(info.value) == said  # not a hint about writable stores
    monkeypatch.undo()
    client = MlflowClient(tracking_uri=store)
    (run,) = client.search_runs([client.get_experiment_by_name("kieval").experiment_id])
    assert run.info.status == "FAILED"
