"""Where ``kieval evaluate`` spends its time, per stage, in one process.

Runs the CLI's ``main`` with the stage functions wrapped by timers (no profiler, so
per-call Python costs are not inflated) and prints seconds per stage::

    python bench/bench_stages.py -- evaluate --gt GT --pred PRED --format kieval-csv --json out.json

Stages: the argument parser (with what it imports), reading (every input, ``_datasets``), counting
(``count``), tallying (``Tally.from_counted``), the rules and suggested figures
(``rule_figures``), the ``try:`` hint (``hint_lines``), the report (``render_report``
and writing the outputs); ``other`` is the rest of the process after start-up.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

START = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SECONDS: dict[str, float] = defaultdict(float)
CPU: dict[str, float] = defaultdict(float)
#: Stages under way, innermost last: a stage's time excludes the stages it calls.
OPEN: list[list] = []


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _add(stage: str, since: tuple[float, float], now: tuple[float, float]) -> None:
    SECONDS[stage] += now[0] - since[0]
    CPU[stage] += now[1] - since[1]


def timed(stage: str, function: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        now = _clocks()
        if OPEN:  # the caller's stage pauses
            _add(OPEN[-1][0], OPEN[-1][1], now)
        OPEN.append([stage, now])
        try:
            return function(*args, **kwargs)
        finally:
            now = _clocks()
            _add(stage, OPEN.pop()[1], now)
            if OPEN:
                OPEN[-1][1] = now
    return wrapper


def patch(module_names: list[str], attribute: str, stage: str) -> None:
    """Wrap ``attribute`` wherever the named modules bind it."""
    for name in module_names:
        module = importlib.import_module(name)
        setattr(module, attribute, timed(stage, getattr(module, attribute)))


def main() -> None:
    argv = sys.argv[1:]
    argv = argv[1:] if argv[:1] == ["--"] else argv
    from kieval_core import cli

    cli._parser = timed("argument parser", cli._parser)
    cli_start = _clocks()
    from kieval_core.result import results, scoring, suggest, tally

    evaluate_module = importlib.import_module("kieval_core.evaluate")  # the package binds the function
    datasets = evaluate_module._datasets  # a generator: every input is read within the timer
    evaluate_module._datasets = timed("reading", lambda *args, **kw: iter(list(datasets(*args, **kw))))
    scoring.count = timed("counting", scoring.count)
    tally.Tally.from_counted = classmethod(timed("tallying", tally.Tally.from_counted.__func__))
    results.EvaluationResult.rule_figures.func = timed("rules / suggested figures",
                                                       results.EvaluationResult.rule_figures.func)
    suggest.hint_lines = timed("hint (try:)", suggest.hint_lines)
    patch(["kieval_core.output.render"], "render_report", "report")
    cli._write = timed("report", cli._write)
    _add("imports of the evaluate path", cli_start, _clocks())
    try:
        cli.main(argv)
    finally:
        total, cpu = time.perf_counter() - START, time.process_time()
        title = "stage (each without the stages it calls)"
        print(f"\n{title:42s} {'wall s':>7s} {'CPU s':>7s}", file=sys.stderr)
        for stage, seconds in SECONDS.items():
            print(f"  {stage:40s} {seconds:7.2f} {CPU[stage]:7.2f}", file=sys.stderr)
        print(f"  {'stages':40s} {sum(SECONDS.values()):7.2f} {sum(CPU.values()):7.2f}", file=sys.stderr)
        print(f"  {'process (after start-up)':40s} {total:7.2f} {cpu:7.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
