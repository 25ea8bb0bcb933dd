"""SIGTERM at five points of ``kieval evaluate --save-run D --json r.json --errors-csv e.csv``
on a large corpus, with D, r.json and e.csv holding an earlier run: every output must be
either the earlier one or the complete new one, D must always open, nothing temporary may
be left, and the process must end with exit 143 and one line.

The five points, found by watching the output folder (not by timing alone):

1. reading the inputs (the outputs are staged, so the signal handlers are in place; a
   signal during the imports before them ends the process by the default action: exit
   143 in a shell, nothing written, but no message);
2. scoring (35% of an uninterrupted run's time);
3. writing the JSON report (its staged file is no longer empty);
4. writing the saved run's tables (the staged run holds a Parquet file);
5. writing the error CSV (its staged file is no longer empty).

The commit itself (renaming the staged outputs into place) holds signals back; the
in-process tests (tests/test_outputs.py) send the signal there. Usage::

    python bench/bench_interrupt.py [--docs 150000] [--out bench/out/interrupt]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_core import generate  # noqa: E402

from kieval_core.output.outputs import TEMP_MARK  # noqa: E402
from kieval_core.output.runs import load_run  # noqa: E402

OUTPUTS = ("r.json", "e.csv", "D/report.json")


def command(folder: Path, gt: Path, pred: Path) -> list[str]:
    return [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt), "--pred", str(pred),
            "--save-run", str(folder / "D"), "--json", str(folder / "r.json"),
            "--errors-csv", str(folder / "e.csv")]


def hashes(folder: Path) -> dict[str, str | None]:
    paths = {name: folder / name for name in OUTPUTS}
    return {name: hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
            for name, p in paths.items()}


def staged(folder: Path, name: str) -> list[Path]:
    return list(folder.glob(f".{name}{TEMP_MARK}*"))


def nonempty(folder: Path, name: str) -> bool:
    return any(p.is_file() and p.stat().st_size > 0 for p in staged(folder, name))


def run_tables(folder: Path) -> bool:
    return any(any(p.glob("models/*/*.parquet")) for p in staged(folder, "D"))


def points(total_s: float) -> dict[str, Callable[[Path, float], bool]]:
    return {
        "reading the inputs": lambda folder, t: bool(staged(folder, "r.json")) and t >= 1.0,
        "scoring": lambda folder, t: t >= 0.35 * total_s,
        "writing the JSON report": lambda folder, t: nonempty(folder, "r.json"),
        "writing the run's tables": lambda folder, t: run_tables(folder),
        "writing the error CSV": lambda folder, t: nonempty(folder, "e.csv"),
    }


def interrupted(folder: Path, args: list[str], when: Callable[[Path, float], bool]) -> dict:
    start = time.monotonic()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sent = None
    while process.poll() is None:
        elapsed = time.monotonic() - start
        if sent is None and when(folder, elapsed):
            process.send_signal(signal.SIGTERM)
            sent = elapsed
        time.sleep(0.05)
    err = process.stderr.read() if process.stderr else ""
    return {"code": process.returncode, "sent_s": sent, "ended_s": time.monotonic() - start,
            "last_line": err.strip().splitlines()[-1] if err.strip() else "", "traceback": "Traceback" in err}


def check_point(point: str, when: float, work: Path, earlier: Path, big: tuple[Path, Path], before: dict,
                after: dict) -> bool:
    """Interrupt a run at one point; print what it left and whether that is as it should be."""
    shutil.rmtree(work)
    shutil.copytree(earlier, work)
    outcome = interrupted(work, command(work, *big), when)
    now = hashes(work)
    kept = {name: {before[name]: "earlier", after[name]: "complete"}.get(now[name], "BROKEN")
            for name in OUTPUTS}
    try:
        load_run(work / "D")
        opens = "opens"
    except Exception as exc:  # the check's whole point: report anything
        opens = f"DOES NOT OPEN ({type(exc).__name__}: {exc})"
    left = sorted(p.name for p in work.iterdir() if TEMP_MARK in p.name)
    said = outcome["last_line"].startswith("kieval: stopped by SIGTERM")
    good = (outcome["code"] == 143 and not outcome["traceback"] and "BROKEN" not in kept.values()
            and opens == "opens" and not left and said)
    sent = "never" if outcome["sent_s"] is None else f"{outcome['sent_s']:.1f} s"
    print(f"- {point}: SIGTERM at {sent}, ended at {outcome['ended_s']:.1f} s, exit {outcome['code']}; "
          f"r.json {kept['r.json']}, e.csv {kept['e.csv']}, D {kept['D/report.json']} and {opens}; "
          f"temporary files left: {left or 0}; stderr: {outcome['last_line']!r}"
          f"{' (with a traceback)' if outcome['traceback'] else ''}{'' if good else '  <-- FAILED'}")
    return good


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=150_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "interrupt")
    args = parser.parse_args()
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    inputs, earlier, complete, work = (out / n for n in ("inputs", "earlier", "complete", "work"))
    for folder in (inputs, earlier, complete, work):
        folder.mkdir(parents=True)
    for name, n_docs in (("big", args.docs), ("small", 2_000)):
        gt, pred = generate(n_docs, seed=1 if name == "small" else 0)
        gt.to_csv(inputs / f"{name}_gt.csv", index=False)
        pred.to_csv(inputs / f"{name}_pred.csv", index=False)
        del gt, pred
    big = (inputs / "big_gt.csv", inputs / "big_pred.csv")
    small = (inputs / "small_gt.csv", inputs / "small_pred.csv")

    subprocess.run(command(earlier, *small), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    subprocess.run(command(complete, *big), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total_s = time.monotonic() - start
    print(f"{args.docs:,} documents; an uninterrupted run takes {total_s:.1f} s")
    before, after = hashes(earlier), hashes(complete)

    failures = 0
    for point, when in points(total_s).items():
        failures += not check_point(point, when, work, earlier, big, before, after)
    print(f"{failures} FAILED" if failures else "all five points: every output earlier or complete, D opens")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
