"""An evaluation as one MLflow run (``kieval evaluate --mlflow``, or :func:`log_mlflow`).

What a run holds, all read from the JSON report so a tracked figure is the report's figure:

* **parameters**: the ground truth's format and each model's, the normaliser (and the
  comparators when the report names them), the metric families, the decision options
  (target, costs, bootstrap, seed) and, from the CLI, the reading options;
* **metrics**, named by the registry keys under the model's name
  (``<model>.kieval.aligned``, ``<model>.entity_f1.f1``, ... and the decision figures such
  as ``<model>.automation.recommended.threshold``); the automation curve as step metrics
  ``<model>.automation.curve.{threshold,auto_rate,kieval_aligned}``, step = the operating
  point's rank in the report's curve;
* **artifacts**: ``report.json``, ``errors.csv`` (formulas neutralised as in the CLI's
  export), ``run/`` (a saved run: ``kieval dashboard`` opens it once downloaded) and
  ``charts.html`` (the Overview's corrections chart and each model's automation chart,
  the dashboard's plotly figures with plotly.js inline, so the file opens offline). No
  PNG: plotly's static export needs kaleido and a Chrome, which the extra does not bring.

MLflow is the optional extra ``pip install 'kieval-workbench[mlflow]'`` (``mlflow-skinny``,
with SQLAlchemy and Alembic for a SQLite store); without it, one message says so. The
tracking store is ``MLFLOW_TRACKING_URI``, else where MLflow itself logs by default
(``mlflow.get_tracking_uri()``: from MLflow 3.7 on, ``sqlite:///mlflow.db`` in the working
directory, or ``./mlruns`` when that already holds runs), so ``mlflow ui`` or ``mlflow
server`` started there shows the runs. MLflow 3 refuses file stores unless
``MLFLOW_ALLOW_FILE_STORE=true``; logging to one sets that for this process. MLflow's own
usage telemetry is turned off (``MLFLOW_DISABLE_TELEMETRY=true`` unless set otherwise):
logging sends nothing anywhere but to the store.

Every name taken from a file (a model's name in the metric names, an entity type in the
parameters) is made a valid MLflow name (:func:`mlflow_name`): other characters become
``_``, path segments that would resolve elsewhere (``..``, ``.``, empty) are renamed, and a
name too long is cut with a short hash of the whole, so one odd name never loses the others.
A failure marks the run FAILED and its message names the cause (a store that cannot be
written is named with how to choose another).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .._version import __version__
from ..exceptions import KievalOptionError
from ..read.dataset import DatasetSummary
from ..result.registry import METRICS
from ..result.results import EvaluationResult, all_error_lists
from ..review.decisions import DecisionOptions
from ..safe_text import csv_text
from .render import DECISION_ROWS, Report, build_report, render_report, value_at

INSTALL = "pip install 'kieval-workbench[mlflow]'"
#: The experiment of a run when none is named (nor ``MLFLOW_EXPERIMENT_NAME`` set).
DEFAULT_EXPERIMENT = "kieval"
#: The automation curve's columns logged as step metrics.
CURVE_COLUMNS = ("threshold", "auto_rate", "kieval_aligned")
_MAX_PARAM = 6000  # MLflow's longest parameter value
_MAX_NAME = 250  # MLflow's longest metric or parameter name
#: Longest model prefix of a metric name: the longest key after it still fits in _MAX_NAME.
_MAX_PREFIX = 120
_BATCH = 1000  # MLflow's most metrics per log_batch call
_UNSAFE = re.compile(r"[^\w-]")
_NOT_IN_NAMES = re.compile(r"[^\w.\- :/]")  # MLflow's names: letters, digits, _ - . space : /


def _mlflow():
    # MLflow 3 reports usage to its makers over the network; kieval logs to the store it is
    # given and nowhere else, unless the user turns the telemetry back on explicitly
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    try:
        import mlflow  # noqa: F401  (checks that the extra is there)
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError:
        msg = f"logging to MLflow needs the mlflow extra: {INSTALL}"
        raise KievalOptionError(msg) from None
    return MlflowClient, MlflowException


def tracking_uri(uri: str | None = None) -> str:
    """The tracking store: ``uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's own default
    (``sqlite:///mlflow.db`` from MLflow 3.7 on; ``./mlruns`` when that holds runs already)."""
    if uri or os.environ.get("MLFLOW_TRACKING_URI"):
        return uri or os.environ["MLFLOW_TRACKING_URI"]
    _mlflow()
    import mlflow

    return mlflow.get_tracking_uri()


def mlflow_name(text: str, limit: int = _MAX_NAME) -> str:
    """``text`` as a valid MLflow metric or parameter name: characters MLflow refuses become
    ``_``; a path segment that would resolve to another name (``..``, ``.``, an empty one)
    becomes ``_`` too; a name above ``limit`` characters keeps its start and ends with ``-``
    and 8 hex digits of its SHA-256, so distinct names stay distinct.

    >>> mlflow_name("comparators.a/../b"), mlflow_name("x" * 300)[-12:], len(mlflow_name("x" * 300))
    ('comparators.a/_/b', 'xxx-0d4e2ca9', 250)
    """
    import hashlib

    name = _NOT_IN_NAMES.sub("_", text)
    name = "/".join(part if part not in ("", ".", "..") else "_" for part in name.split("/")) or "_"
    if len(name) > limit:
        name = f"{name[:limit - 9]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    return name


def is_file_store(uri: str) -> bool:
    """A local directory (a path or a ``file:`` URI), not a server or a database.

    >>> is_file_store("file:///tmp/mlruns"), is_file_store("./mlruns"), is_file_store("http://host:5000")
    (True, True, False)
    """
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")  # C:\\ on Windows


def metric_name(model: str, key: str) -> str:
    """``<model>.<key>``, the model's name kept to letters, digits, ``_`` and ``-`` (MLflow
    names allow few characters, and a dot in a model's name would read as a key).

    >>> metric_name("sim strong/v2.1", "kieval.aligned")
    'sim_strong_v2_1.kieval.aligned'
    """
    return f"{_UNSAFE.sub('_', model) or '_'}.{key}"


def model_prefixes(names: list[str]) -> dict[str, str]:
    """Each model's prefix in metric names, distinct even when two names sanitise alike."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        prefix = mlflow_name(metric_name(name, "")[:-1], _MAX_PREFIX)
        base, k = prefix, 2
        while prefix in taken:
            prefix, k = f"{base}-{k}", k + 1
        taken.add(prefix)
        out[name] = prefix
    return out


def metric_values(report: Mapping[str, Any]) -> dict[str, float]:
    """Every scalar figure of a report's models under its MLflow name: the registry's metrics
    and the decision figures, the number of documents; undefined figures left out. Also what
    a training loop logs per epoch with any tracker."""
    keys = ["n_documents", *(m.key for m in METRICS), *DECISION_ROWS.values()]
    prefixes = model_prefixes(list(report["models"]))
    out = {}
    for name, figures in report["models"].items():
        for key in dict.fromkeys(keys):
            value = value_at(figures, key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{prefixes[name]}.{key}"] = float(value)
    return out


#: Decisions for figures logged every epoch: no bootstrap (it only adds intervals).
EPOCH_DECISIONS = DecisionOptions(resamples=0)


def result_metrics(result: EvaluationResult,
                   decisions: DecisionOptions = EPOCH_DECISIONS) -> dict[str, float]:
    """:func:`metric_values` of a result, without writing the report's tables: what a training
    loop logs after each validation pass (``mlflow.log_metrics(result_metrics(r), step=epoch)``)."""
    return metric_values(build_report(result, decisions, records=lambda frame: None))


def curve_values(report: Mapping[str, Any]) -> dict[str, list[float]]:
    """Each model's automation curve from the report, per column (``<model>.automation.curve.
    <column>``), in the report's order: the step metrics."""
    prefixes = model_prefixes(list(report["models"]))
    out = {}
    for name, figures in report["models"].items():
        curve = (figures.get("automation") or {}).get("curve") or []
        for column in CURVE_COLUMNS:
            out[f"{prefixes[name]}.automation.curve.{column}"] = [float(p[column]) for p in curve]
    return out


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, child in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), child, out)
    elif value is not None:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out[prefix] = text if len(text) <= _MAX_PARAM else text[: _MAX_PARAM - 1] + "…"


def run_params(report: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The run's parameters: how the inputs were read and scored, from the report (and the
    CLI's options under ``option.``)."""
    params: dict[str, str] = {}
    prefixes = model_prefixes(list(report["models"]))
    _flat("", {"format": report["ground_truth"]["format"], "normalizer": report["normalizer"],
               "metrics": ",".join(report["metrics"]), "decisions": report["decisions"]}, params)
    for key in ("options", "comparators"):  # the comparators, when the report names them
        if report.get(key):
            _flat(key, report[key], params)
    for name, figures in report["models"].items():
        _flat(f"{prefixes[name]}.format", (figures.get("inputs") or {}).get("format"), params)
        _flat("decisions.cost", (figures.get("automation") or {}).get("cost"), params)  # the same for all
    if options:
        _flat("option", {k: v for k, v in options.items() if v not in (None, "", [], ())}, params)
    return _unique_names(params)


def _unique_names(params: Mapping[str, str]) -> dict[str, str]:
    """The parameters under valid MLflow names (:func:`mlflow_name`), two names that become
    one told apart by ``-2``, ``-3``..."""
    out: dict[str, str] = {}
    for key, value in params.items():
        name = base = mlflow_name(key, _MAX_NAME - 4)
        k = 2
        while name in out:
            name, k = f"{base}-{k}", k + 1
        out[name] = value
    return out


def charts_html(result: EvaluationResult, report: Mapping[str, Any]) -> str:
    """The Overview's corrections chart and each model's automation chart (marked at the
    report's recommended threshold) in one page, plotly.js inline (opens offline)."""
    import html

    from ..figures.charts import automation_figure, corrections_figure

    target = report["decisions"]["target_accuracy"]
    parts = [("Corrections a person must make, beside FP + FN", corrections_figure(result))]
    for name, model in result.models.items():
        if model.has_confidence:
            tau = report["models"][name]["automation"]["recommended"]["threshold"]
            title = f"{name}: accuracy after review and automation at every threshold (target {target:.0%})"
            parts.append((title, automation_figure(model, target, tau)))
    body = []
    for i, (title, fig) in enumerate(parts):
        div = fig.to_html(full_html=False, include_plotlyjs=i == 0)
        body.append(f"<h3>{html.escape(title)}</h3>{div}")
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>KIEval charts</title></head>'
            f'<body style="font-family:sans-serif">{"".join(body)}</body></html>')


@dataclass(frozen=True)
class MlflowTarget:
    """An experiment of a tracking store, found (or created) before any work is done, so a
    store that cannot be reached or written is reported before a long evaluation."""

    uri: str
    experiment: str
    experiment_id: str
    client: Any

    @classmethod
    def open(cls, experiment: str | None = None, uri: str | None = None) -> MlflowTarget:
        client_type, mlflow_error = _mlflow()
        uri = tracking_uri(uri)
        experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        if is_file_store(uri):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        try:
            client = client_type(tracking_uri=uri)
            found = client.get_experiment_by_name(experiment)
            experiment_id = found.experiment_id if found is not None else client.create_experiment(experiment)
        except ImportError as exc:  # a SQLite store without SQLAlchemy or Alembic
            msg = (f"cannot log to MLflow at {uri}: its store needs {exc.name or 'a package'} "
                   f"({INSTALL}), or set MLFLOW_TRACKING_URI to another store")
            raise KievalOptionError(msg) from None
        except (mlflow_error, OSError) as exc:
            raise cannot_log(uri, exc) from None
        return cls(uri, experiment, experiment_id, client)

    def log(self, result: EvaluationResult, report: Report | None = None, *,
            decisions: DecisionOptions = DecisionOptions(), run_name: str | None = None,
            options: Mapping[str, Any] | None = None, run_dir: str | Path | None = None,
            csv_formulas: str = "escape") -> str:
        """Log one evaluation as one run; returns the run's id. ``report`` is the rendered
        report (rendered here with ``decisions`` when None); ``run_dir`` a saved run to log
        as it is (else the run is saved into the artifacts here; a distributed result keeps
        its run only where ``--save-run`` put it)."""
        _, mlflow_error = _mlflow()
        from mlflow.entities import Metric, Param

        report = report or render_report(result, decisions)
        figures = json.loads(report.text)  # the report's own values, curves included
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in metric_values(figures).items()]
        for key, values in curve_values(figures).items():
            metrics += [Metric(key, v, now, step) for step, v in enumerate(values)]
        params = [Param(k, v) for k, v in run_params(figures, options).items()]
        tags = {"kieval.version": __version__,
                "kieval.ground_truth": str(figures["ground_truth"]["source"])[:_MAX_PARAM]}
        run_id = None
        try:
            run = self.client.create_run(self.experiment_id, run_name=run_name or "kieval evaluate",
                                         tags=tags)
            run_id = run.info.run_id
            for i in range(0, len(params), 100):
                self.client.log_batch(run_id, params=params[i:i + 100])
            for i in range(0, len(metrics), _BATCH):
                self.client.log_batch(run_id, metrics=metrics[i:i + _BATCH])
            with tempfile.TemporaryDirectory(prefix="kieval-mlflow-") as tmp:
                folder = Path(tmp)
                self._artifacts(result, report, folder, options, run_dir, csv_formulas)
                self.client.log_artifacts(run_id, str(folder))
            self.client.set_terminated(run_id, "FINISHED")
        except (mlflow_error, OSError) as exc:
            if run_id is not None:
                with contextlib.suppress(mlflow_error, OSError):
                    self.client.set_terminated(run_id, "FAILED")
            raise cannot_log(self.uri, exc) from None
        return run_id

    @staticmethod
    def _artifacts(result: EvaluationResult, report: Report, folder: Path, options: Mapping[str, Any] | None,
                   run_dir: str | Path | None, csv_formulas: str) -> None:
        from .runs import write_run

        (folder / "report.json").write_text(report.text, "utf-8")
        csv_text(all_error_lists(result), folder / "errors.csv", csv_formulas)
        (folder / "charts.html").write_text(charts_html(result, report.figures), "utf-8")
        if run_dir is not None:
            shutil.copytree(Path(run_dir), folder / "run")
        elif not isinstance(result.gt, DatasetSummary):  # a distributed run's partitions are elsewhere
            inputs = {"gt": {"source": result.gt.source, "digest": None},
                      "models": {n: {"source": m.source, "digest": None} for n, m in result.models.items()}}
            write_run(result, folder / "run", report.text, inputs, dict(options or {}))


def cannot_log(uri: str, exc: BaseException) -> KievalOptionError:
    """One line naming the cause: MLflow's refusal of a value as it is, or a store that
    cannot be reached or written with how to choose another."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(reason) > 300:
        reason = reason[:299] + "…"
    if getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE":
        return KievalOptionError(f"MLflow at {uri} refused the run's data: {reason}")
    msg = (f"cannot log to MLflow at {uri}: {reason} (set MLFLOW_TRACKING_URI to a store you can write, "
           "or run where the default store can be created)")
    return KievalOptionError(msg)


def log_mlflow(result: EvaluationResult, experiment: str | None = None, *, tracking_uri: str | None = None,
               decisions: DecisionOptions = DecisionOptions(), run_name: str | None = None) -> str:
    """Log an evaluation (from :func:`~kieval_core.evaluate`, an
    :class:`~kieval_core.accumulator.Accumulator` or a saved run) as one MLflow run of
    ``experiment``; returns the run's id. See the module docstring for what is logged.

    >>> run_id = log_mlflow(evaluate("gt.jsonl", {"m": "pred.jsonl"}), "receipts")  # doctest: +SKIP
    """
    return MlflowTarget.open(experiment, tracking_uri).log(result, decisions=decisions, run_name=run_name)


__all__ = [
    "INSTALL", "MlflowTarget", "curve_values", "log_mlflow", "metric_values", "result_metrics", "run_params",
]

