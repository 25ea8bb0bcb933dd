"""The kieval command line: batch evaluation for scripts and CI gates.

Exit codes: 0 success, 1 internal error, 2 bad input or options, 3 a gate was missed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# only light modules here: `kieval --help` must not wait for pandas, scipy or pyarrow (nor for
# the outputs' tempfile, ctypes and signals); each command imports what it needs, and only
# the chosen command's options are built
from .exceptions import KievalInputError, KievalOptionError, UndefinedMetricWarning
from .limits import LIMITS, SPECS, WHOLE, Limits

if TYPE_CHECKING:
    import pandas as pd

    from .output.outputs import OutputSet
    from .result.registry import Metric

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_GATE = 0, 1, 2, 3


def _pair(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        msg = f"{what} must look like NAME=VALUE, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return key.strip(), value.strip()


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; the options of ``evaluate`` are built only when ``command`` is
    ``evaluate``. They name the formats and comparators from their registries and the
    families and engines from :mod:`kieval_core.choices`, none of which imports anything
    heavy: no ``--help`` imports pandas."""
    parser = argparse.ArgumentParser(prog="kieval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="score prediction files against a ground truth",
                        description="Score prediction files against a ground truth; print a summary, "
                                    "write the JSON report and the error list, and check CI gates.")
    if command == "evaluate":
        _evaluate_options(ev)
    dash = sub.add_parser("dashboard", help="start the Streamlit dashboard",
                          description="Start the dashboard. Options after -- (or any --server.* "
                                      "option) are passed to Streamlit's server.")
    dash.add_argument("run", nargs="?", type=Path, help="a saved run to open (from --save-run DIR)")
    dash.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    dash.add_argument("--host", default="localhost",
                      help="address to listen on (default localhost: this machine only; 0.0.0.0 for all)")
    dash.add_argument("--images", type=Path, metavar="DIR",
                      help="page images of the documents: DOC_ID.png|jpg|jpeg|webp|tif, DOC_ID/PAGE.png "
                           "or DOC_ID.pdf (shown on the Documents page with the boxes)")
    dash.add_argument("--delete-any-run", action="store_true",
                      help="let every visitor delete every saved run (default: a session deletes only the "
                           "runs it saved; `kieval runs` manages them all)")
    _limit_options(dash.add_argument_group("limits of the server (each also an environment variable)"), "app")
    route = sub.add_parser("route", help="apply a decision file to new predictions (no ground truth)",
                           description="Mark every prediction automate or review and every document "
                                       "straight_through or open, as a decision file says; print the counts.")
    if command == "route":
        _route_options(route)
    sub.add_parser("metrics", help="list every metric with its definition")
    runs_dir = argparse.ArgumentParser(add_help=False)  # before or after the action: both read
    runs_dir.add_argument("--dir", type=Path, metavar="DIR", default=argparse.SUPPRESS,
                          help="the runs directory (default: $KIEVAL_RUNS_DIR, else ~/.kieval/runs)")
    runs = sub.add_parser("runs", help="list, remove or prune saved runs", parents=[runs_dir],
                          description="The saved runs of the runs directory (the dashboard's Save this run).")
    action = runs.add_subparsers(dest="action", required=True)
    action.add_parser("list", help="every saved run: id, date, size, models, ground truth",
                      parents=[runs_dir])
    rm = action.add_parser("rm", help="remove saved runs by id", parents=[runs_dir])
    rm.add_argument("ids", nargs="+", metavar="ID")
    prune = action.add_parser("prune", help="remove runs older than DAYS, then the oldest until the rest fit "
                                            "in N MiB", parents=[runs_dir])
    prune.add_argument("--older-than", type=float, metavar="DAYS")
    prune.add_argument("--max-total-mb", type=float, metavar="N")
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    return parser


def _evaluate_options(ev: argparse.ArgumentParser) -> None:
    from .choices import (
        CONFIDENCE_FROM,
        CSV_FORMULAS,
        ENGINES,
        FAMILIES,
        MAX_RESAMPLES,
        MISSING_POLICIES,
        REVIEW_CHOICES,
        STRUCTURES,
    )
    from .count.comparators import COMPARATORS
    from .read.readers import FORMATS

    read = ev.add_argument_group("reading files")
    read.add_argument("--gt", required=True, help="ground-truth file or directory")
    read.add_argument("--pred", required=True, action="append", metavar="[NAME=]PATH",
                      help="prediction file or directory; repeat for several models")
    read.add_argument("--format", default="auto", choices=FORMATS, help="input format (default: auto)")
    read.add_argument("--key", help="key holding each record's structure (default: auto)")
    read.add_argument("--alias", action="append", default=[], metavar="OLD=NEW",
                      type=lambda t: _pair(t, "--alias"), help="rename a key while reading JSON")
    read.add_argument("--meta", action="append", default=[], metavar="KEY",
                      help="record-level metadata key (split, vendor, ...): kept per document, never "
                           "scored; automation figures are also given per value")
    read.add_argument("--score-key", action="append", default=[], metavar="KEY",
                      help="score a top-level ground-truth key that no prediction file has (such a "
                           "key, e.g. split, is otherwise kept as metadata and not scored)")
    read.add_argument("--related-fields", default="", metavar="A,B,C",
                      help="format lists: the parallel fields whose i-th values form row i")
    read.add_argument("--list-sep", default="|", metavar="SEP",
                      help="format lists: the separator inside list fields (default |)")
    _limit_options(ev.add_argument_group("limits (each also an environment variable; see the README)"),
                   "cli")
    score = ev.add_argument_group("scoring")
    score.add_argument("--normalize", default="default", metavar="OPTS",
                       help="value normaliser: default, or casefold and/or numbers (comma-separated)")
    score.add_argument("--compare", action="append", default=[], metavar="TYPE=NAME",
                       help="compare an entity type (a glob such as '*.price' allowed; repeatable) with "
                            f"a comparator: {', '.join(COMPARATORS)} (default exact)")
    score.add_argument("--ignore", action="append", default=[], metavar="TYPE",
                       help="leave an entity type (or glob) out of scoring on both sides; counted and "
                            "named in the report (repeatable)")
    score.add_argument("--rules", action="append", default=[], metavar="FILE|suggested",
                       help="field rules: a JSON Schema whose properties carry x-kieval-comparator / "
                            "x-kieval-ignore, stickler's x-aws-stickler-comparator or extract-bench's "
                            "evaluation_config; or 'suggested' to apply the rules inferred from the files. "
                            "--compare and --ignore come first")
    score.add_argument("--near-miss", type=float, default=0.8, metavar="X",
                       help="a substitution whose values have a normalised Levenshtein similarity of at "
                            "least X is a near miss (default 0.8)")
    score.add_argument("--metrics", default="kieval", metavar="FAMILIES",
                       help=f"metric families: {', '.join(FAMILIES)} or all (default: kieval)")
    score.add_argument("--cer-threshold", type=float, default=0.30, metavar="T",
                       help="OINerval's CER threshold in [0, 1] (default 0.30)")
    score.add_argument("--peer-structure", default="uploaded", choices=STRUCTURES,
                       help="what ANLS* and nTED score: the files' own JSON (default) or both sides' "
                            "entities re-nested (reported as anls_star_renested, nted_renested)")
    run = ev.add_argument_group("where to run")
    run.add_argument("--engine", default="local", choices=ENGINES,
                     help="local: this process (default); dask: partition by partition on a Dask "
                          "cluster, same figures; inputs are files or directories/globs of shards "
                          "(kieval metrics only)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="with --engine dask: a running Dask scheduler (tcp://host:8786); default: a "
                          "LocalCluster on this machine's cores")
    labels = ev.add_argument_group("suspect labels (SPEC 2f)")
    labels.add_argument("--suspects", type=Path, metavar="OUT",
                        help="write the suspect ground-truth values and gaps (values most models agree on "
                             "against the GT), strongest evidence first; CSV or JSON by the file's suffix")
    labels.add_argument("--suspect-agreement", type=int, metavar="K",
                        help="how many models must agree for a suspect (default: more than half, at least 2)")
    labels.add_argument("--gt-fixes", type=Path, metavar="FILE",
                        help="a label-fix file (JSON list of {doc_id, entity_type, group, gt_value, "
                             "fixed_value, note}): score against the fixed GT and report the figures "
                             "before the fixes too (*_before_fixes); the GT file is not changed")
    decide = ev.add_argument_group("threshold decisions")
    decide.add_argument("--target-accuracy", type=float, default=0.95, metavar="A",
                        help="accuracy after review for the recommended threshold (default 0.95)")
    decide.add_argument("--document-target", type=float, metavar="A",
                        help="share of documents right after review, for the document-level "
                             "recommendation reviewing single predictions (default: the target "
                             "accuracy); a line under the summary names the τ it chose")
    decide.add_argument("--cost", action="append", default=[], metavar="NAME=VALUE",
                        type=lambda t: _pair(t, "--cost"),
                        help="review=1, document=0, substitution=10, addition=10, deletion=10 "
                             "(escaped=V sets all three error kinds); defaults as shown")
    decide.add_argument("--review", default="both", choices=REVIEW_CHOICES,
                        help="what a person reviews: the predictions below τ, every document with one "
                             "below τ (whole, missing values added), or both (default)")
    decide.add_argument("--missing-confidence", default="review", choices=MISSING_POLICIES,
                        help="a prediction without confidence is reviewed at every τ, 0 included "
                             "(default), or automated (counts as 1.0)")
    decide.add_argument("--assurance", type=float, default=0.95, metavar="C",
                        help="the assured τ is the smallest whose one-sided lower C-bound of accuracy "
                             "after review (document bootstrap) reaches the target (default 0.95)")
    decide.add_argument("--per-field-thresholds", action="store_true",
                        help="decide one τ per field (every field at or above its floor, or reviewed "
                             "whole) instead of one τ for every field; the report has both plans")
    decide.add_argument("--field-floor", action="append", default=[], metavar="TYPE=A",
                        type=lambda t: _pair(t, "--field-floor"),
                        help="accuracy after review a field must reach in per-field plans (default: the "
                             "target accuracy); a field that cannot is reviewed whole and named")
    decide.add_argument("--confidence-from", default="model", choices=CONFIDENCE_FROM,
                        help="consensus: a model without confidences gets, per prediction, the share of "
                             "the other models (3 or more loaded) predicting the same value in the same "
                             "document; models with their own keep them")
    decide.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                        help=f"bootstrap resamples for intervals (default 1000, at most {MAX_RESAMPLES:,}; "
                             "0 turns them off)")
    decide.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and holdout split")
    out = ev.add_argument_group("outputs and gates")
    out.add_argument("--json", type=Path, metavar="OUT", help="write the JSON report here")
    out.add_argument("--errors-csv", type=Path, metavar="OUT", help="write every error here")
    out.add_argument("--decision-out", type=Path, metavar="FILE",
                     help="write the decision (thresholds, what they were chosen for and on) as JSON for "
                          "'kieval route': one τ (the assured τ when the bootstrap assures one) or one τ "
                          "per field with --per-field-thresholds; reviewing whole documents with --review "
                          "documents; needs one model")
    out.add_argument("--csv-formulas", default="escape", choices=CSV_FORMULAS,
                     help="escape (default): a cell beginning with = + - @ tab or CR gets a leading ' so a "
                          "spreadsheet shows it as text; keep: write cells as they are (for pipelines)")
    out.add_argument("--save-run", type=Path, metavar="DIR",
                     help="save the run (figures, errors, matchings, curves; Parquet and a manifest) for "
                          "'kieval dashboard DIR'; replaces an earlier run there, whole")
    out.add_argument("--force", action="store_true",
                     help="let --save-run replace a directory that holds other files (they are deleted)")
    out.add_argument("--mlflow", nargs="?", const="", metavar="EXPERIMENT",
                     help="log the evaluation as one MLflow run (parameters, every metric per model, the "
                          "automation curve, the report, errors, saved run and charts) to "
                          "MLFLOW_TRACKING_URI (default ./mlruns), in EXPERIMENT (default: "
                          "MLFLOW_EXPERIMENT_NAME or kieval); needs pip install 'kieval-workbench[mlflow]'")
    out.add_argument("--no-hints", action="store_true",
                     help="leave out the 'try:' line (the comparators that would fix the most format "
                          "errors, each model re-counted with them: a quarter of a second on 20,000 "
                          "documents); no figure changes")
    out.add_argument("--gate", action="append", default=[], metavar="'KEY>=V'",
                     help="exit 3 unless KEY (e.g. kieval.aligned>=0.8, oi.oiecer<=0.2) holds for "
                          "every model; the operator must follow the metric's direction")
    out.add_argument("--fail-under", action="append", default=[], metavar="KEY=V",
                     type=lambda t: _pair(t, "--fail-under"),
                     help="same as --gate 'KEY>=V' (for metrics where higher is better)")


def _route_options(route: argparse.ArgumentParser) -> None:
    from .choices import MISSING_POLICIES
    from .read.readers import FORMATS

    route.add_argument("--decision", required=True, type=Path, metavar="FILE",
                       help="a decision file (kieval evaluate --decision-out, or the Automation page)")
    route.add_argument("--pred", required=True, metavar="[NAME=]PATH",
                       help="the predictions to route (any format evaluate reads); NAME: the model's name "
                            "(default: the file's name)")
    route.add_argument("--out", type=Path, metavar="FILE",
                       help="write every prediction with its mark: .jsonl or .csv")
    route.add_argument("--format", default="auto", choices=FORMATS, help="input format (default: auto)")
    route.add_argument("--key", help="key holding each record's structure (default: auto)")
    route.add_argument("--alias", action="append", default=[], metavar="OLD=NEW",
                       type=lambda t: _pair(t, "--alias"), help="rename a key while reading JSON")
    route.add_argument("--missing-confidence", choices=MISSING_POLICIES,
                       help="refuse the decision unless it was chosen with this policy (default: the "
                            "decision's own)")


def _limit_options(group: argparse._ArgumentGroup, context: str) -> None:
    """One option per limit of :mod:`kieval_core.limits` (the session limit and the heavy
    loads at once only for the dashboard); unset options leave the environment variable or
    the default."""
    defaults = Limits.defaults(context)
    for spec in LIMITS:
        if spec.field in ("session_mb", "heavy_loads") and context == "cli":
            continue
        kind = int if spec.field in WHOLE else float
        shown = f"{getattr(defaults, spec.field):,g}"
        group.add_argument(spec.option, dest=spec.field, type=kind, default=None,
                           metavar=spec.unit.upper() if spec.unit != "x" else "RATIO",
                           help=f"{spec.meaning} (default {shown} {spec.unit}; {spec.env})")


def _limits(args: argparse.Namespace, context: str) -> Limits:
    return Limits.from_env(context, **{s.field: getattr(args, s.field, None) for s in LIMITS})


class _Progress:
    """A one-line progress report on stderr, only on a terminal and only for slow runs."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.enabled or time.monotonic() - self.start < 2.0:
            return
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:40]:<40}")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _format_summary(frame: pd.DataFrame) -> str:
    """Metrics as rows, models as columns; counts with thousands separators, fractions
    with four decimals, thresholds as :func:`~kieval_core.review.automation.threshold_text`
    writes them (just above the largest confidence is "> 1 (review all)", not 1.0000)."""
    from .output.render import THRESHOLD_ROWS, WHOLE_ROWS
    from .result.tables import cell_text
    from .review.automation import threshold_text

    def text_of(value, row: str) -> str:
        if row in THRESHOLD_ROWS and isinstance(value, float):
            return threshold_text(value)
        return cell_text(value, row in WHOLE_ROWS)

    shown = frame.set_index("model").astype(object).T
    text = shown.apply(lambda row: row.map(lambda v: text_of(v, row.name)), axis=1)
    return text.to_string()


# --- gates ---------------------------------------------------------------------------------

_GATE = re.compile(r"^\s*([\w.]+)\s*(>=|<=)\s*(\S+)\s*$")


@dataclass(frozen=True)
class Gate:
    """A CI bar: ``key operator bar`` for every model."""

    key: str
    operator: str
    bar: float

    def holds(self, value) -> bool:
        if value is None:
            return False
        return value >= self.bar if self.operator == ">=" else value <= self.bar

    def __str__(self) -> str:
        return f"{self.key} {self.operator} {self.bar:g}"


def parse_gates(gates: list[str], fail_under: list[tuple[str, str]]) -> list[Gate]:
    """Validate gates before any work is done: known keys, numbers, and for registry
    metrics the operator of the metric's direction."""
    from .output.render import DECISION_ROWS
    from .result.registry import METRICS

    registry = {m.key: m for m in METRICS}
    decision_keys = set(DECISION_ROWS.values())
    parsed = []
    texts = [(g, None) for g in gates] + [(f"{k}>={v}", f"--fail-under {k}={v}") for k, v in fail_under]
    for text, shown in texts:
        shown = shown or f"--gate {text!r}"
        match = _GATE.match(text)
        if match is None:
            msg = f"{shown}: write it as KEY>=VALUE or KEY<=VALUE"
            raise KievalOptionError(msg)
        key, operator, raw = match.groups()
        try:
            bar = float(raw)
        except ValueError:
            msg = f"{shown}: {raw!r} is not a number"
            raise KievalOptionError(msg) from None
        metric: Metric | None = registry.get(key)
        if metric is None and key not in decision_keys:
            known = ", ".join([*registry, *sorted(decision_keys)])
            msg = f"{shown}: unknown key {key!r}; known: {known}"
            raise KievalOptionError(msg)
        if metric is not None and operator != metric.operator:
            msg = (f"{shown}: {key} is {metric.direction}, so its gate is "
                   f"--gate '{key}{metric.operator}{raw}'")
            raise KievalOptionError(msg)
        parsed.append(Gate(key, operator, bar))
    return parsed


def _failures(report: dict, gates: list[Gate]) -> list[str]:
    from .output.render import value_at

    failures = []
    for gate in gates:
        for name, figures in report["models"].items():
            value = value_at(figures, gate.key)
            if not gate.holds(value):
                shown = f"{value:.4f}" if value is not None else "n/a" + (
                    " (not reachable, or no confidences)" if gate.key.startswith("automation.") else "")
                failures.append(f"{name}: {gate.key} = {shown}, gate {gate}")
    return failures


# --- commands ------------------------------------------------------------------------------


def _predictions(items: list[str]) -> dict[str, str]:
    from .read.shards import input_name

    predictions: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or os.path.exists(item):
            name, path = input_name(item), item
        if name in predictions:
            msg = f"two prediction sets are named {name!r}; name them with NAME=PATH"
            raise KievalOptionError(msg)
        predictions[name] = path
    return predictions


def _evaluate(args: argparse.Namespace) -> int:
    from .count.normalize import Normalizer
    from .count.peer_families import PeerOptions
    from .evaluate import evaluate
    from .output.outputs import OutputSet
    from .output.render import render_report, summary_frame
    from .output.tracking import MlflowTarget
    from .read.formats import LoadOptions
    from .review.automation import Costs
    from .review.decisions import DecisionOptions
    from .rules import FieldRules

    _batch_memory_pool()
    related = tuple(f.strip() for f in args.related_fields.split(",") if f.strip())
    options = LoadOptions(format=args.format, key=args.key, aliases=tuple(args.alias),
                          meta=tuple(dict.fromkeys(args.meta)), limits=_limits(args, "cli"),
                          related_fields=related, list_separator=args.list_sep)
    gates = parse_gates(args.gate, args.fail_under)
    decisions = DecisionOptions(target=args.target_accuracy, document_target=args.document_target,
                                costs=Costs.from_pairs(args.cost), resamples=args.bootstrap, seed=args.seed,
                                slices=options.meta, review=args.review, floors=_floors(args.field_floor),
                                per_field=args.per_field_thresholds, assurance=args.assurance)
    normalizer = Normalizer.from_names(args.normalize, (), args.near_miss)
    rules = FieldRules.of([*args.rules, FieldRules.from_options(args.compare, args.ignore)])
    peer = PeerOptions(args.cer_threshold, args.peer_structure)
    engine = _engine(args)
    # the store is found (or the missing extra named) before the work starts
    tracker = MlflowTarget.open(args.mlflow or None) if args.mlflow is not None else None
    with OutputSet() as outputs:  # every output is staged before the work starts, then committed together
        json_out, csv_out, suspects_out, run, decision_out = _staged(outputs, args)
        if run is not None and args.engine == "dask":
            engine["run_dir"] = run.path
        progress = _Progress()
        with warnings.catch_warnings(record=True) as caught:  # undefined scores, shown once below
            warnings.simplefilter("always", UndefinedMetricWarning)
            result = evaluate(args.gt, _predictions(args.pred), normalizer=normalizer, rules=rules,
                              metrics=args.metrics,
                              load_options=options, progress=progress, peer_options=peer,
                              missing_confidence=args.missing_confidence,
                              confidence_from=args.confidence_from, gt_fixes=args.gt_fixes,
                              suspect_agreement=args.suspect_agreement, score_keys=args.score_key, **engine)
            report = render_report(result, decisions)
            progress.close()
            summary = _format_summary(summary_frame(result, report.figures))
        undefined = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
        _say_results(args, result, report.figures, summary, undefined)
        _write(args, result, report, json_out, csv_out, suspects_out, run)
        if decision_out is not None:
            decision_out.path.write_text(_decision(result, decisions, args), encoding="utf-8")
        outputs.commit()
    if tracker is not None:
        run_id = tracker.log(result, report, options=_options(args), run_dir=args.save_run,
                             csv_formulas=args.csv_formulas)
        _say(f"MLflow: run {run_id} of experiment {tracker.experiment!r} at {tracker.uri}")
    failures = _failures(report.figures, gates)
    for failure in failures:
        _say(f"gate failed: {failure}")
    return EXIT_GATE if failures else EXIT_OK


def _engine(args: argparse.Namespace) -> dict:
    """evaluate()'s engine options: the local engine, or Dask (the workers write the detail
    and return the error lists, if asked)."""
    if args.engine == "dask":
        return {"engine": "dask", "scheduler": args.scheduler,
                "collect_error_list": args.errors_csv is not None or args.mlflow is not None}
    if args.scheduler is not None:
        raise KievalOptionError("--scheduler needs --engine dask")
    return {}


def _staged(outputs: OutputSet, args: argparse.Namespace) -> tuple:
    """The outputs asked for (--json, --errors-csv, --suspects, --save-run, --decision-out), each
    staged (None when not asked)."""
    from .output.outputs import StagedFile
    from .output.runs import RunStage

    json_out = outputs.add(lambda: StagedFile(args.json, "--json")) if args.json else None
    csv_out = outputs.add(lambda: StagedFile(args.errors_csv, "--errors-csv")) if args.errors_csv else None
    suspects_out = outputs.add(lambda: StagedFile(args.suspects, "--suspects")) if args.suspects else None
    run = outputs.add(lambda: RunStage(args.save_run, force=args.force)) if args.save_run else None
    decision = outputs.add(lambda: StagedFile(args.decision_out, "--decision-out")) \
        if args.decision_out else None
    return json_out, csv_out, suspects_out, run, decision


def _write(args: argparse.Namespace, result, report, json_out, csv_out, suspects_out, run) -> None:
    """The staged outputs written (committed together by the caller)."""
    from .result.results import all_error_lists
    from .review.suspects import write_suspects
    from .safe_text import csv_text

    if json_out is not None:
        json_out.path.write_text(report.text, encoding="utf-8")
    if run is not None:
        run.write(result, report.text, _inputs(args.gt, args.pred), _options(args))
    if csv_out is not None:
        csv_text(all_error_lists(result), csv_out.path, args.csv_formulas)
    if suspects_out is not None:
        write_suspects(result.suspects, suspects_out.path, args.csv_formulas,
                       as_json=args.suspects.suffix.lower() == ".json")


def _say_results(args: argparse.Namespace, result, figures: dict, summary: str, undefined: list[str]) -> None:
    """The warnings that may change a figure (on stderr, before the figures), then the
    summary and the lines under it on stdout; the undefined scores last."""
    from .output.render import decision_notes, document_target_line, per_field_lines, rules_lines
    from .result.suggest import hint_lines
    from .review.suspects import label_lines
    from .safe_text import for_terminal

    lines = [*summary.splitlines(), *decision_notes(figures)]
    if args.per_field_thresholds:
        lines += per_field_lines(figures)
    if args.document_target is not None:  # its figures have no row of the table
        lines.append(document_target_line(figures))
    lines += rules_lines(result) + label_lines(result)
    lines += [] if args.no_hints else [f"try: {line}" for line in hint_lines(result)]
    for warning in result.all_warnings:  # each may change a figure: said before the figures
        _say(f"warning: {warning}")
    print("\n".join(for_terminal(line) for line in lines))
    for warning in dict.fromkeys(undefined):
        _say(f"warning: {warning}")


def _decision(result, decisions, args: argparse.Namespace) -> str:
    """The JSON of ``--decision-out``: the decision of the one model loaded."""
    from .output.runs import digest
    from .review.operating_point import decide

    if len(result.models) != 1:
        msg = f"--decision-out needs one model, {len(result.models)} are loaded"
        raise KievalOptionError(msg)
    (model,) = result.models.values()
    chosen_on = {"gt_sha256": digest(args.gt), "pred_sha256": digest(_predictions(args.pred)[model.name])}
    return decide(model, decisions, chosen_on).to_json()


def _route(args: argparse.Namespace) -> int:
    from .read.formats import LoadOptions
    from .read.load import load
    from .review.deploy import Decision
    from .safe_text import for_terminal

    decision = Decision.load(args.decision)
    ((name, path),) = _predictions([args.pred]).items()
    options = LoadOptions(format=args.format, key=args.key, aliases=tuple(args.alias))
    routing = decision.route(load(path, options, name=name, keep_structures=False), args.missing_confidence)
    if args.out is not None:
        routing.write(args.out)
    s = routing.summary
    expected = decision.expected
    lines = [f"{decision.model}: {s['predictions']:,} predictions: {s['automate']:,} automate "
             f"({s['auto_rate']:.2%}), {s['review']:,} review; {s['documents']:,} documents: "
             f"{s['straight_through']:,} straight through ({s['straight_through_rate']:.2%}), "
             f"{s['open']:,} open",
             f"decision: {decision.review} reviewed below {_thresholds_text(decision.thresholds)}; chosen on "
             f"{decision.chosen_on.get('documents', '?')} documents: {expected.get('auto_rate', 0):.2%} "
             f"automated, {expected.get('straight_through_rate', 0):.2%} straight through"]
    for line in lines:
        print(for_terminal(line))
    return EXIT_OK


def _thresholds_text(thresholds: dict) -> str:
    from .review.automation import threshold_text

    return ", ".join(f"{'every field' if k == '*' else k} "
                     + ("(whole)" if v is None else f"τ {threshold_text(v)}") for k, v in thresholds.items())


def _floors(pairs: list[tuple[str, str]]) -> tuple[tuple[str, float], ...]:
    """``--field-floor TYPE=A`` pairs as (field, share); a floor that is no number is named."""
    floors = {}
    for field, raw in pairs:
        try:
            floors[field] = float(raw)
        except ValueError:
            msg = f"--field-floor {field}={raw}: {raw!r} is not a number"
            raise KievalOptionError(msg) from None
    return tuple(floors.items())


def _batch_memory_pool() -> None:
    """Arrow buffers from the C allocator in this one-shot process, unless
    ``ARROW_DEFAULT_MEMORY_POOL`` chooses: Arrow's default (mimalloc) hands freed pages back
    to the system at once, and a run that makes and drops many large temporary arrays pays
    for it in system time (0.3 of 3.4 s CPU on the official sample x200, bench/README.md).

    The C allocator (glibc) keeps freed blocks for reuse too: by default a block above
    32 MiB is mapped afresh and unmapped when freed, and the top of the heap is given back
    past 128 KiB, so every large temporary array faulted in its pages again (1.0 million
    page faults and 4.2 s of system time at 100,000 official documents, against 0.14
    million at 20,000: the part of the run that grew faster than the documents)."""
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    _keep_freed_memory()


#: ``mallopt`` parameters of glibc (malloc.h) and the size below which blocks are kept.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX, _KEEP_BELOW = -1, -3, -8, 1 << 30


def _keep_freed_memory() -> None:
    """Blocks up to 1 GiB from the heap, and freed memory kept in it; one heap for every
    thread (the thread that parses an input while the next is read would get its own,
    which maps each block above 64 MiB afresh). glibc only, not under ``MALLOC_*``
    tunables the user set: they choose."""
    if any(k.startswith("MALLOC_") for k in os.environ):
        return
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, _KEEP_BELOW)
        libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_BELOW)
        libc.mallopt(_M_ARENA_MAX, 1)
    except (AttributeError, OSError, ValueError):  # not glibc (no confstr, name or mallopt)
        return


def _say(line: str) -> None:
    """One line on stderr; text from the inputs in it cannot act on the terminal."""
    from .safe_text import for_terminal

    print(for_terminal(line), file=sys.stderr)


def _inputs(gt: str, preds: list[str]) -> dict:
    """Each input's path and digest, for the manifest of a saved run."""
    from .output.runs import digest

    models = {name: {"source": path, "digest": digest(path)} for name, path in _predictions(preds).items()}
    return {"gt": {"source": gt, "digest": digest(gt)}, "models": models}


def _options(args: argparse.Namespace) -> dict:
    """The reading and scoring options of a run (JSON values, for its manifest)."""
    keys = ("format", "key", "alias", "meta", "score_key", "related_fields", "list_sep", "normalize",
            "compare", "ignore", "rules", "near_miss", "metrics", "cer_threshold", "peer_structure", "engine",
            "missing_confidence", "confidence_from")
    return {k: getattr(args, k) for k in keys}


def _dashboard(args: argparse.Namespace, server_options: list[str]) -> int:
    from .read.page_images import INSTALL_HINT, missing_dashboard_packages

    missing = missing_dashboard_packages()
    if missing:  # the core alone was installed: one line saying what to add
        named = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
        raise KievalOptionError(f"the dashboard needs {named}: {INSTALL_HINT}")
    from kieval_app.serving.launch import launch  # the app is only needed to start it

    from .output.runs import load_run

    limits = _limits(args, "app")  # checked now, given to the server as its environment
    if args.run is not None:
        load_run(args.run)  # a clear error now rather than in the browser
    if args.images is not None and not args.images.is_dir():
        raise KievalInputError(str(args.images), None, "no such directory (--images takes a directory)")
    return launch(args.port, args.host, server_options, args.run, limits.environ(), args.images,
                  args.delete_any_run)


def _runs(args: argparse.Namespace) -> int:
    from .output.retention import linked_entries
    from .safe_text import for_terminal

    folder = getattr(args, "dir", None)
    if folder is not None and not folder.is_dir():
        raise KievalOptionError(for_terminal(f"--dir {folder}: no such directory"))
    linked = [for_terminal(f"skipped {name} (a symbolic link)") for name in linked_entries(folder)]
    if args.action == "list":
        return _runs_list(folder, linked)
    if args.action == "rm":
        return _runs_rm(folder, args.ids)
    return _runs_prune(folder, args, linked)


def _runs_list(folder: Path | None, linked: list[str]) -> int:
    from .output.retention import default_runs_dir, format_runs, list_runs
    from .safe_text import for_terminal

    runs = list_runs(folder)
    for line in linked:
        _say(line)
    if not runs:
        where = folder or default_runs_dir()
        print(for_terminal(f"no saved runs in {where} (another folder: --dir DIR or KIEVAL_RUNS_DIR)"))
        return EXIT_OK
    print(format_runs(runs))
    return EXIT_OK


def _runs_rm(folder: Path | None, ids: list[str]) -> int:
    """Each run in turn; one that cannot be removed is said and the others still go."""
    from .output.retention import describe_size, remove_run
    from .safe_text import for_terminal

    failed = 0
    for run_id in ids:
        try:
            removed = remove_run(run_id, folder)
        except KievalOptionError as exc:  # not a run id: the message shows it shortened
            failed += 1
            _say(for_terminal(f"error: {exc}"))
            continue
        except (KievalInputError, OSError) as exc:
            failed += 1
            _say(for_terminal(f"not removed {run_id}: {getattr(exc, 'problem', None) or exc}"))
            continue
        print(for_terminal(f"removed {removed.id} ({describe_size(removed.bytes)})"))
    return EXIT_INPUT if failed else EXIT_OK


def _runs_prune(folder: Path | None, args: argparse.Namespace, linked: list[str]) -> int:
    from .output.retention import describe_size, prune_runs, saved_at
    from .safe_text import for_terminal

    if args.older_than is None and args.max_total_mb is None:
        raise KievalOptionError("kieval runs prune needs --older-than DAYS and/or --max-total-mb N")
    pruned = prune_runs(folder, args.older_than, args.max_total_mb, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for run in pruned.removed:
        print(for_terminal(f"{verb} {run.id} ({describe_size(run.bytes)}, saved {saved_at(run)})"))
    for line in linked:
        print(line)
    for run_id, reason in pruned.failed:
        _say(for_terminal(f"not removed {run_id}: {reason}"))
    failed = f"; {len(pruned.failed)} could not be removed" if pruned.failed else ""
    size = describe_size(sum(r.bytes for r in pruned.removed))
    print(f"{verb} {len(pruned.removed)} run(s), {size}{failed}")
    return EXIT_INPUT if pruned.failed else EXIT_OK


def _list_metrics() -> int:
    from .result.registry import METRICS

    for metric in METRICS:
        print(f"{metric.key}  ({metric.family}, {metric.direction})\n    {metric.definition}")
    return EXIT_OK


_SERVER_OPTION = re.compile(r"^--[a-z]+\.[A-Za-z.]+(=.*)?$")


def split_server_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """Streamlit's own options of ``kieval dashboard`` (everything after ``--``, and any
    dotted option such as ``--server.maxUploadSize 500``) apart from ours.

    >>> split_server_options(["dashboard", "run", "--server.headless", "true", "--port", "1"])
    (['dashboard', 'run', '--port', '1'], ['--server.headless', 'true'])
    """
    ours, server = [], []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            server += argv[i + 1:]
            break
        if _SERVER_OPTION.match(token):
            server.append(token)
            if "=" not in token and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                server.append(argv[i + 1])
                i += 1
        else:
            ours.append(token)
        i += 1
    return ours, server


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(argv[0] if argv else None)
    server_options: list[str] = []
    if argv[:1] == ["dashboard"]:
        argv, server_options = split_server_options(argv)
    args = parser.parse_args(argv)  # --help and wrong options end here
    from .output.outputs import Interrupted, stop_on_signals

    try:
        with stop_on_signals():
            if args.command == "evaluate":
                return _evaluate(args)
            if args.command == "dashboard":
                return _dashboard(args, server_options)
            if args.command == "runs":
                return _runs(args)
            if args.command == "route":
                return _route(args)
            return _list_metrics()
    except Interrupted as stop:  # SIGINT / SIGTERM: what was not finished was removed
        _say(f"kieval: stopped by {stop}; outputs not yet complete were not written")
        return stop.exit_code
    except BrokenPipeError:  # the reader went away (kieval ... | head): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (KievalInputError, KievalOptionError) as exc:
        _say(f"error: {exc}")
        return EXIT_INPUT
    except OSError as exc:  # an output path that cannot be written
        _say(f"error: {exc}")
        return EXIT_INPUT
    except MemoryError:  # beyond the estimates of kieval_core.limits: still a limit, named
        budget = SPECS["memory_mb"]
        _say(f"error: out of memory (the memory budget is {_limits(args, 'cli').memory_mb:,.0f} MiB, the "
             f"machine may have less free); split the input (--engine dask reads shards one at a time) "
             f"or lower {budget.option} ({budget.env}) so inputs are refused before they are read")
        return EXIT_INPUT
    except Exception as exc:  # the last line of defence: no traceback for users
        _say(f"internal error: {type(exc).__name__}: {exc}. Please report it with the input that caused it.")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
