"""Nested JSON end to end against the bare ``json.loads`` of the same files (issue 16, item 10).

Writes the receipts of :func:`bench_core.generate` (GT and predictions with confidences)
as nested JSONL (``formats.write_nested_jsonl``: scored leaves), then, round after round
so that a busy moment of the shared machine touches every command alike:

* **parse**: ``json.loads`` of every line of both files, in a fresh interpreter;
* **after**: ``kieval evaluate --gt GT --pred PRED --json OUT`` (default options) from
  this checkout;
* **before** (``--before LABEL=DIR``, repeatable): the same command from another checkout
  (put first on ``PYTHONPATH``); the table says whether its report is byte-identical to
  this one's.

Each command's CPU seconds (user + system of the child) and wall seconds; the table gives
medians and ratios to the parse of the same run. CPU is what a busy machine disturbs
least. ``--stages`` then runs this checkout's evaluation once in this process and prints
the CPU seconds of each stage (reading, scoring, each part of the report). Usage::

    python bench/bench_nested_json.py [--docs 20000] [--runs 3] [--before LABEL=DIR ...] [--stages]
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import importlib
import io
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PARSE = """
import json, sys
for name in sys.argv[1:]:
    with open(name, "rb") as lines:
        [json.loads(line) for line in lines if line.strip()]
"""


def write_files(docs: int, out: Path) -> tuple[Path, Path]:
    """The nested JSONL ground truth and predictions of ``docs`` receipts (kept between runs)."""
    gt_path, pred_path = out / f"gt_{docs}.jsonl", out / f"pred_{docs}.jsonl"
    if not (gt_path.exists() and pred_path.exists()):
        from bench_core import generate  # imports pandas: only when the files are written
        from formats import write_nested_jsonl

        out.mkdir(parents=True, exist_ok=True)
        gt, pred = generate(docs)
        write_nested_jsonl(gt, gt_path)
        write_nested_jsonl(pred, pred_path)
    return gt_path, pred_path


def child(command: list[str], source: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   cwd=source or HERE.parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def end_to_end(gt: Path, pred: Path, out: Path, runs: int, before: list[tuple[str, Path]],
               parse: str = "bare `json.loads` of every line of both files", code: str = PARSE,
               options: tuple[str, ...] = ()) -> None:
    """Round after round, ``code`` (the bare parse of both files, named ``parse``) and
    ``kieval evaluate ... OPTIONS --json`` of each checkout, each a fresh child process;
    the table of medians (the bench of the long CSV uses it too)."""
    def evaluate(report: Path) -> list[str]:
        return [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt), "--pred", str(pred),
                *options, "--json", str(report)]

    commands: dict[str, tuple[list[str], Path | None]] = {
        parse: ([sys.executable, "-c", code, str(gt), str(pred)], None)}
    for k, (label, source) in enumerate(before):
        commands[label] = (evaluate(out / f"report_before_{k}.json"), source.resolve())
    commands["after (this checkout)"] = (evaluate(out / "report_after.json"), None)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (command, source) in commands.items():
            times[name].append(child(command, source))
    medians = {name: tuple(statistics.median(x) for x in zip(*values, strict=True))
               for name, values in times.items()}
    wall_0, cpu_0 = medians[parse]
    print(f"\n| {gt.stem} + {pred.stem}, median of {runs} | wall | CPU | / parse (wall) | / parse (CPU) "
          "| / parse (CPU), per round: median [range] | report identical to after |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for k, (name, (wall, cpu)) in enumerate(medians.items()):
        same = ""
        if 0 < k <= len(before):
            same = "yes" if filecmp.cmp(out / f"report_before_{k - 1}.json", out / "report_after.json",
                                        shallow=False) else "no"
        ratios = [c / c_0 for (_, c), (_, c_0) in zip(times[name], times[parse], strict=True)]
        per_round = f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]"
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {wall / wall_0:.1f}x | {cpu / cpu_0:.2f}x "
              f"| {per_round} | {same} |")
    print("CPU seconds per round (user + system of the child):")
    for name, values in times.items():
        print(f"  {name}: " + ", ".join(f"{c:.2f}" for _, c in values))


#: Functions timed by ``--stages`` (module, name), in the order of the pipeline; a stage
#: nested in another is part of its caller's time too.
STAGES = [
    ("kieval_core.read.load", "load"),
    ("kieval_core.result.scoring", "score_model"),
    ("kieval_core.count.engine", "count"),
    ("kieval_core.count.engine", "encode"),
    ("kieval_core.count.engine", "match"),
    ("kieval_core.count.engine", "label"),
    ("kieval_core.count.engine", "label_causes"),
    ("kieval_core.result.tally", "Tally.from_counted"),
    ("kieval_core.output.render", "render_report"),
    ("kieval_core.review.decisions", "automation_section"),
    ("kieval_core.review.uncertainty", "bootstrap_and_assured"),
    ("kieval_core.review.uncertainty", "bootstrap"),
    ("kieval_core.review.uncertainty", "holdout"),
    ("kieval_core.review.field_thresholds", "per_field_thresholds"),
    ("kieval_core.review.calibration", "calibration"),
    ("kieval_core.review.decisions", "document_review_section"),
    ("kieval_core.output.render", "records_json"),
]


def stages(gt: Path, pred: Path, out: Path) -> None:
    """CPU seconds of each stage of one run of the CLI in this process: every module that
    holds a stage's function gets a timed wrapper in its place."""
    start = time.process_time()
    modules = {name: importlib.import_module(name) for name in ["kieval_core.cli", *(m for m, _ in STAGES)]}
    spent: dict[str, float] = {"imports": time.process_time() - start}

    def timed(name: str, function: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            begin = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - begin
        return wrapper

    for module_name, attribute in STAGES:
        owner_name, _, name = attribute.rpartition(".")
        owner = getattr(modules[module_name], owner_name) if owner_name else modules[module_name]
        original = getattr(owner, name)
        wrapped = timed(attribute, original)
        if owner_name:  # a classmethod: wrap the underlying function
            setattr(owner, name, classmethod(timed(attribute, original.__func__)))
            continue
        for module in list(sys.modules.values()):
            ours = getattr(module, "__name__", "").startswith("kieval_core")
            if ours and getattr(module, name, None) is original:
                setattr(module, name, wrapped)
    sys.argv = ["kieval", "evaluate", "--gt", str(gt), "--pred", str(pred), "--json",
                str(out / "stages.json")]
    begin = time.process_time()
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with quiet[0], quiet[1], contextlib.suppress(SystemExit):
        modules["kieval_core.cli"].main()
    spent["the whole run after the imports"] = time.process_time() - begin
    print("\n| stage (CPU seconds, one run in this process) | seconds |\n|---|---:|")
    for name, seconds in spent.items():
        print(f"| {name} | {seconds:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", action="append", default=[], metavar="LABEL=DIR",
                        help="a checkout of the code before a change (repeatable)")
    parser.add_argument("--stages", action="store_true", help="CPU seconds per stage, in this process")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "nested_json")
    args = parser.parse_args()
    gt, pred = write_files(args.docs, args.out)
    if args.runs:
        before = [(label, Path(path)) for label, _, path in (b.partition("=") for b in args.before)]
        end_to_end(gt, pred, args.out, args.runs, before)
    if args.stages:
        stages(gt, pred, args.out)


if __name__ == "__main__":
    main()
