"""The ``kieval`` command line: batch evaluation for scripts and CI gates (SPEC 7).

Exit codes: 0 success, 1 internal error, 2 bad input or options, 3 a ``--fail-under`` bar
was missed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from .errors import KievalInputError, UndefinedMetricWarning
from .evaluate import evaluate
from .loaders import FORMATS, LoadOptions
from .normalize import Normalizer
from .peer_families import PeerOptions
from .registry import FAMILIES, METRICS, Metric
from .report import report_json

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_FAIL_UNDER = 0, 1, 2, 3
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _pair(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        msg = f"{what} must look like NAME=VALUE, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return key.strip(), value.strip()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kieval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="score prediction files against a ground truth")
    ev.add_argument("--gt", required=True, help="ground-truth file or directory")
    ev.add_argument("--pred", required=True, action="append", metavar="[NAME=]PATH",
                    help="prediction file or directory; repeat for several models")
    ev.add_argument("--format", default="auto", choices=FORMATS, help="input format (default: auto)")
    ev.add_argument("--key", help="JSONL key holding each document's structure (default: auto)")
    ev.add_argument("--alias", action="append", default=[], metavar="OLD=NEW",
                    type=lambda t: _pair(t, "--alias"), help="rename a key while reading JSON")
    ev.add_argument("--ignore-key", action="append", default=[], metavar="KEY",
                    help="top-level record key that is metadata, not an entity (e.g. split)")
    ev.add_argument("--related-fields", default="", metavar="A,B,C",
                    help="format lists: the parallel fields whose i-th values form row i")
    ev.add_argument("--list-sep", default="|", metavar="SEP",
                    help="format lists: the separator inside list fields (default |)")
    ev.add_argument("--max-file-size", type=float, default=1024, metavar="MB",
                    help="refuse inputs larger than this many MiB (default 1024)")
    ev.add_argument("--normalize", default="default", metavar="OPTS",
                    help="value normaliser: default, or casefold and/or numbers (comma-separated)")
    ev.add_argument("--metrics", default="kieval", metavar="FAMILIES",
                    help=f"metric families: {', '.join(FAMILIES)} or all (default: kieval)")
    ev.add_argument("--cer-threshold", type=float, default=0.30, metavar="T",
                    help="OINerval's CER threshold in [0, 1] (default 0.30)")
    ev.add_argument("--peer-structure", default="canonical", choices=("canonical", "uploaded"),
                    help="what ANLS* and nTED score: re-nested entities (default) or the files' JSON")
    ev.add_argument("--target-accuracy", type=float, default=0.95, metavar="A",
                    help="accuracy after review for the recommended threshold (default 0.95)")
    ev.add_argument("--json", type=Path, metavar="OUT", help="write the JSON report here")
    ev.add_argument("--errors-csv", type=Path, metavar="OUT", help="write every error here")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                    type=lambda t: _pair(t, "--fail-under"),
                    help="exit 3 when METRIC (a report key such as kieval.aligned) is below VALUE")
    dash = sub.add_parser("dashboard", help="start the Streamlit dashboard")
    dash.add_argument("--port", type=int, default=8501)
    dash.add_argument("streamlit_args", nargs=argparse.REMAINDER,
                      help="further options passed to 'streamlit run'")
    sub.add_parser("metrics", help="list every metric with its definition")
    return parser


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


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _format_summary(frame: pd.DataFrame) -> str:
    """Metrics as rows, models as columns; integers stay integers."""
    shown = frame.set_index("model").astype(object).T
    return shown.map(_cell).to_string()


def _parse_bars(bars: list[tuple[str, str]]) -> list[tuple[Metric, float]]:
    """Validate ``--fail-under`` before any work is done."""
    by_key = {m.key: m for m in METRICS}
    parsed = []
    for key, raw in bars:
        if key not in by_key:
            msg = f"--fail-under: unknown metric {key!r}; known: {', '.join(by_key)}"
            raise ValueError(msg)
        try:
            parsed.append((by_key[key], float(raw)))
        except ValueError:
            msg = f"--fail-under: {raw!r} is not a number"
            raise ValueError(msg) from None
    return parsed


def _failures(result, bars: list[tuple[Metric, float]]) -> list[str]:
    failures = []
    for metric, bar in bars:
        for name, model in result.models.items():
            value = metric.get(model)
            if value is None or value < bar:
                shown = "n/a" if value is None else f"{value:.4f}"
                failures.append(f"{name}: {metric.key} = {shown} < {bar}")
    return failures


def _evaluate(args: argparse.Namespace) -> int:
    related = tuple(f.strip() for f in args.related_fields.split(",") if f.strip())
    options = LoadOptions(format=args.format, key=args.key, aliases=tuple(args.alias),
                          ignore_keys=tuple(args.ignore_key), max_bytes=int(args.max_file_size * 2**20),
                          related_fields=related, list_separator=args.list_sep)
    bars = _parse_bars(args.fail_under)
    predictions: dict[str, str] = {}
    for item in args.pred:
        name, sep, path = item.partition("=")
        if not sep or os.path.exists(item):
            name, path = Path(item).stem if not Path(item).is_dir() else Path(item).name, item
        if name in predictions:
            msg = f"two prediction sets are named {name!r}; name them with NAME=PATH"
            raise ValueError(msg)
        predictions[name] = path
    progress = _Progress()
    with warnings.catch_warnings(record=True) as caught:  # undefined scores, shown once below
        warnings.simplefilter("always", UndefinedMetricWarning)
        result = evaluate(args.gt, predictions, normalizer=Normalizer.from_names(args.normalize),
                          metrics=args.metrics, target_accuracy=args.target_accuracy,
                          load_options=options, progress=progress,
                          peer_options=PeerOptions(args.cer_threshold, args.peer_structure))
        progress.close()
        print(_format_summary(result.summary()))
        report = report_json(result) if args.json else None
        failures = _failures(result, bars)
    undefined = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    for warning in [*result.warnings, *dict.fromkeys(undefined)]:
        print(f"warning: {warning}", file=sys.stderr)
    if report is not None:
        args.json.write_text(report, encoding="utf-8")
    if args.errors_csv:
        frames = [m.errors.assign(model=name) for name, m in result.models.items()]
        errors = pd.concat(frames, ignore_index=True)
        errors[["model", *errors.columns[:-1]]].to_csv(args.errors_csv, index=False)
    for failure in failures:
        print(f"fail-under: {failure}", file=sys.stderr)
    return EXIT_FAIL_UNDER if failures else EXIT_OK


def _dashboard(args: argparse.Namespace) -> int:
    command = [sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "app.py"),
               "--server.port", str(args.port), *args.streamlit_args]
    return subprocess.call(command, cwd=PROJECT_ROOT)  # .streamlit/config.toml is read from the cwd


def _list_metrics() -> int:
    for metric in METRICS:
        print(f"{metric.key}  ({metric.family}, {metric.direction})\n    {metric.definition}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "evaluate":
            return _evaluate(args)
        if args.command == "dashboard":
            return _dashboard(args)
        return _list_metrics()
    except KievalInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Exception as exc:  # the last line of defence: no traceback for users
        print(f"internal error: {type(exc).__name__}: {exc}. Please report it with the input "
              "that caused it.", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
