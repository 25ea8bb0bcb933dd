"""Loaders against the bare parse of the same bytes, in every input format.

Writes the receipts of :func:`bench_core.generate` (GT and predictions) in every format
of SPEC 6 (:mod:`formats`), then times, in one run and per format:

* **parse**: the bare parse of the same files (``pandas.read_csv`` as text for CSV/TSV,
  ``pyarrow.parquet.read_table``, ``json.loads`` of every line or file, splitting lines
  into cells for the official CSV and IOB2): the floor any loader pays;
* **load**: ``kieval_core.read.load`` of both sides, in this process;
* **evaluate**: ``kieval evaluate --metrics kieval --json`` end to end, in a subprocess.

Each format is also compared with long CSV holding the same entities (its twin: the
content the format can carry), and the two reports' figures must be equal. Then the
official KIEval CSV sample, replicated to 20,000 documents, is timed against the paper's
own implementation (skipped with a message when ``/work/shared/reference`` is absent).
Usage::

    python bench/bench_loaders.py [--docs 65000] [--formats csv,nested-jsonl,...] [--out bench/out]
    python bench/bench_loaders.py --docs 0 --repeats 3 [--before OTHER_CHECKOUT]  # the official comparison
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_core import generate  # noqa: E402
from formats import Case, write_formats  # noqa: E402

from kieval_core import load  # noqa: E402

REFERENCE = Path("/work/shared/reference/official_kieval")
OFFICIAL_SAMPLE = HERE.parent / "sample_data" / "kieval_official_cord"


# --- the bare parse of each format -----------------------------------------------------------


def _read_csv(path: Path) -> None:
    pd.read_csv(path, dtype=str, keep_default_na=False, sep="\t" if path.suffix == ".tsv" else ",")


def _json_lines(path: Path) -> None:
    with path.open("rb") as lines:
        [json.loads(line) for line in lines if line.strip()]


def _json_files(path: Path) -> None:
    [json.loads(p.read_bytes()) for p in sorted(path.iterdir())]


def _cells(path: Path) -> None:
    [[line.split("\t") for line in p.read_text("utf-8").splitlines()] for p in sorted(path.iterdir())]


def _tokens(path: Path) -> None:
    [line.split() for line in path.read_text("utf-8").splitlines()]


PARSE: dict[str, Callable[[Path], None]] = {
    "csv": _read_csv, "tsv": _read_csv, "parquet": pq.read_table, "table-jsonl": _json_lines,
    "nested-jsonl": _json_lines, "json": lambda p: json.loads(p.read_bytes()), "json-dir": _json_files,
    "kieval-csv": _cells, "cord": _json_lines, "lists": _json_lines, "iob2": _tokens,
}


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _evaluate(gt: Path, pred: Path, out: Path, options: list[str]) -> tuple[float, dict]:
    command = [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt), "--pred", str(pred),
               "--metrics", "kieval", "--json", str(out), *options]
    seconds = _timed(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE, cwd=HERE.parent))
    return seconds, json.loads(out.read_text("utf-8"))


def _figures(report: dict) -> dict:
    (model,) = report["models"].values()
    return {k: model[k] for k in ("n_documents", "kieval", "entity_f1")}


def bench_format(case: Case, out: Path) -> dict:
    parse = PARSE.get(case.name, PARSE["csv"])
    parse_s = _timed(lambda: (parse(case.gt), parse(case.pred)))
    load_s = _timed(lambda: (load(case.gt), load(case.pred)))
    eval_s, report = _evaluate(case.gt, case.pred, out / f"{case.name}.json", case.cli)
    return {"format": case.name, "twin": case.twin, "parse": parse_s, "load": load_s,
            "evaluate": eval_s, "figures": _figures(report)}


def print_formats(rows: list[dict]) -> None:
    by_name = {r["format"]: r for r in rows}
    print(f"\n{'format':13} {'parse s':>8} {'load s':>7} {'eval s':>7} {'load/parse':>10} "
          f"{'eval/parse':>10} {'load/twin':>9} {'eval/twin':>9}  same figures")
    for r in rows:
        if r["format"].startswith("csv-"):
            continue
        twin = by_name[r["twin"]]
        same = "yes" if r["figures"] == twin["figures"] else "NO"
        print(f"{r['format']:13} {r['parse']:8.2f} {r['load']:7.2f} {r['evaluate']:7.2f} "
              f"{r['load'] / r['parse']:9.1f}x {r['evaluate'] / r['parse']:9.1f}x "
              f"{r['load'] / twin['load']:8.2f}x {r['evaluate'] / twin['evaluate']:8.2f}x  {same}")


# --- the official KIEval CSV against the official implementation ---------------------------

OFFICIAL_SCRIPT = """
import glob, sys, time
start = time.perf_counter()
sys.path.insert(0, {reference!r})
from KIEval.kieval import kieval
gold = sorted(glob.glob({gt!r} + "/*.csv"))
pred = sorted(glob.glob({pred!r} + "/*.csv"))
_, _, totals = kieval(gold, pred, {keys!r}, empty_token="<empty>", grouping_strategy="hungarian",
                      value_delimiter="||", entity_type_delimiter="\\t", split_merged_value=True,
                      include_empty_token_in_score_calculation=False, print_score=False)
print(totals["total.kieval"]["exact_match"], totals["total.kieval"]["kieval_aligned"])
"""


def replicate_official(out: Path, copies: int, distinct: bool = False) -> tuple[Path, Path]:
    """The official sample's 100 documents, ``copies`` times under new names; with
    ``distinct``, copy ``k`` has its values' digits and letters shifted by ``k`` (the same
    shift on both sides, so which values are equal, differ in case or only in punctuation
    stays; the values themselves differ from copy to copy, as in a real corpus)."""
    dirs = []
    for side in ("gt_csv", "pred_csv"):
        target = out / ("official_distinct" if distinct else "official") / side
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for source in sorted((OFFICIAL_SAMPLE / side).glob("*.csv")):
            data = source.read_bytes()
            for k in range(copies):
                copy = _shifted(data.decode("utf-8"), k).encode("utf-8") if distinct else data
                (target / f"{k:04d}_{source.name}").write_bytes(copy)
        dirs.append(target)
    return dirs[0], dirs[1]


def _shifted(text: str, k: int) -> str:
    """The values of an official CSV with digits shifted by ``k`` (mod 10) and letters by
    ``k`` (mod 26, case kept); index lines, headers, types and ``<empty>`` unchanged."""
    import string

    low, up, dig = string.ascii_lowercase, string.ascii_uppercase, string.digits
    table = str.maketrans(low + up + dig, low[k % 26:] + low[:k % 26] + up[k % 26:] + up[:k % 26]
                          + dig[k % 10:] + dig[:k % 10])
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        header = i > 0 and lines[i - 1].strip().isdigit()
        if header or line.strip().isdigit() or "\t" not in line:
            out.append(line)
            continue
        cells = line.split("\t")
        # a non-group line is type<TAB>value: its first cell is a type
        start = 1 if not _in_group(lines, i) else 0
        out.append("\t".join(c if j < start or c == "<empty>" else
                             "||".join(v if v == "<empty>" else v.translate(table) for v in c.split("||"))
                             for j, c in enumerate(cells)))
    return "\n".join(out)


def _in_group(lines: list[str], i: int) -> bool:
    """Whether line ``i`` is in a group block (its block opens with an index line)."""
    while i > 0 and lines[i - 1].strip():
        i -= 1
    return lines[i].strip().isdigit()


def ontology_keys() -> list[str]:
    """Every entity type written in the sample's ground-truth CSVs (headers and fields)."""
    keys: set[str] = set()
    for path in (OFFICIAL_SAMPLE / "gt_csv").glob("*.csv"):
        for block in path.read_text("utf-8").strip().split("\n\n"):
            lines = block.strip().splitlines()
            if lines[0].strip().isdigit():
                keys.update(lines[1].split("\t"))
            else:
                keys.update(line.split("\t", 1)[0] for line in lines)
    return sorted(keys)


def _child_run(command: list[str], cwd: Path = HERE.parent) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: What any program reading the two directories pays (the floors of the comparison).
READ_ALL = """
import os, sys
for folder in sys.argv[1:]:
    for entry in os.scandir(folder):
        with open(entry.path, "rb") as file:
            file.read()
"""


def bench_official(out: Path, copies: int, repeats: int = 3, before: Path | None = None,
                   distinct: bool = False) -> None:
    """The official implementation and ``kieval evaluate --format kieval-csv`` (default
    options), alternately ``repeats`` times with the floors (Python's startup, a bare loop
    reading every file, importing pandas, numpy and pyarrow) and, with ``before``, the
    same command from another checkout; medians of wall and CPU seconds (CPU is what a
    busy shared machine disturbs least). The two checkouts' JSON reports must be equal."""
    if not REFERENCE.exists():
        print(f"\nofficial implementation: skipped ({REFERENCE} is absent)")
        return
    gt, pred = replicate_official(out, copies, distinct)
    os.sync()  # the copies are on disk before any timing: no write-back under the first rounds
    script = OFFICIAL_SCRIPT.format(reference=str(REFERENCE), gt=str(gt), pred=str(pred),
                                    keys=ontology_keys())

    def ours(json_out: Path) -> list[str]:
        return [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt), "--pred", str(pred),
                "--format", "kieval-csv", "--json", str(json_out)]

    python = [sys.executable, "-c"]
    commands = {
        "python startup": ([*python, "pass"], HERE.parent),
        "read every file": ([*python, READ_ALL, str(gt), str(pred)], HERE.parent),
        "import pandas, numpy, pyarrow": ([*python, "import pandas, numpy, pyarrow"], HERE.parent),
        "official": ([*python, script], HERE.parent),
        "ours": (ours(out / "official.json"), HERE.parent),
    }
    if before is not None:  # ``-m`` imports kieval_core from the working directory
        commands["before"] = (ours(out / "official_before.json"), before)
    load_start = os.getloadavg()
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for _ in range(repeats):
        for name, (command, cwd) in commands.items():
            runs[name].append(_child_run(command, cwd))
    load_end = os.getloadavg()
    medians = {k: tuple(statistics.median(x) for x in zip(*v, strict=True)) for k, v in runs.items()}
    report = json.loads((out / "official.json").read_text("utf-8"))
    entity = report["models"]["pred_csv"]["kieval"]["entity"]
    print(f"\nofficial KIEval CSV sample x{copies}{' (distinct values per copy)' if distinct else ''} "
          f"({100 * copies:,} documents a side), median of {repeats}, "
          f"load average {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end "
          f"({os.cpu_count()} cores)")
    wall_o, cpu_o = medians["official"]
    for name, (wall, cpu) in medians.items():
        ratio = "" if name == "official" else \
            f"   official / this: wall {wall_o / wall:5.2f}x  CPU {cpu_o / cpu:5.2f}x"
        print(f"  {name:32s} wall {wall:6.2f} s  CPU {cpu:6.2f} s{ratio}")
    floor = medians["read every file"][1] + medians["import pandas, numpy, pyarrow"][1]
    print(f"  TP {entity['tp']:,}; 5x the official code is CPU {cpu_o / 5:.2f} s; reading every file and "
          f"the three imports already take {floor:.2f} s")
    if before is not None:
        same = (out / "official.json").read_bytes() == (out / "official_before.json").read_bytes()
        print(f"  JSON reports of before and after: {'byte-identical' if same else 'DIFFERENT'}")
    load_s = _timed(lambda: (load(gt), load(pred)))
    parse_s = _timed(lambda: (_cells(gt), _cells(pred)))
    print(f"  kieval_core.read.load of both dirs: {load_s:6.2f} s   (bare split into cells {parse_s:.2f} s, "
          f"{load_s / parse_s:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=65000, help="0: only the official comparison")
    parser.add_argument("--formats", default="", help="comma-separated subset (default: all)")
    parser.add_argument("--official-copies", type=int, default=200, help="0 skips the official comparison")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "loaders")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side of the official comparison")
    parser.add_argument("--before", type=Path, help="another checkout, timed in the official comparison too")
    parser.add_argument("--distinct", action="store_true",
                        help="official comparison: shift each copy's values (distinct documents)")
    args = parser.parse_args()
    if not args.docs:  # the official comparison alone
        bench_official(args.out, args.official_copies, args.repeats, args.before, args.distinct)
        return
    gt, pred = generate(args.docs)
    print(f"documents {args.docs:,}, GT entities {len(gt):,}, predicted entities {len(pred):,}")
    start = time.perf_counter()
    cases = write_formats(gt, pred, args.out)
    print(f"wrote every format in {time.perf_counter() - start:.0f} s under {args.out}")
    chosen = [f for f in args.formats.split(",") if f] or list(cases)
    wanted = set(chosen) | {cases[n].twin for n in chosen}
    load(cases["csv"].gt)  # warm up: the first read imports Arrow's readers
    rows = [bench_format(case, args.out) for name, case in cases.items() if name in wanted]
    print_formats(rows)
    if args.official_copies:
        bench_official(args.out, args.official_copies, args.repeats, args.before, args.distinct)


if __name__ == "__main__":
    main()
