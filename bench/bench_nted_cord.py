"""nTED on 10,000 CORD-like receipts: the dashboard's ``nted`` family, one model at a time.

The 100 CORD v2 receipts of ``sample_data`` and a simulated model's predictions are
copied ``--copies`` times (doc ids suffixed). By default every copy relabels the
characters 0-9 and A-Z of every value with its own seeded permutation (the same on the
ground truth and the predictions), so errors keep their shape but no two documents are
equal. ``--duplicates`` keeps the copies identical instead, as in the dashboard run that
prompted this benchmark; the corpus scorer then computes each distinct document once.

Times ``FAMILY_FUNCTIONS["nted"]`` with the default options (canonical structures):
building both sides' structures, nTED for every document and Donut's field F1. Files are
read before the clock starts.

Usage: ``python bench/bench_nted_cord.py [--copies 100] [--models sim_weak ...]
[--duplicates] [--repeat 3]``. Prints one Markdown row per model (best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kieval_core.count.peer_families import FAMILY_FUNCTIONS, PeerOptions  # noqa: E402
from kieval_core.read.formats import load_bytes  # noqa: E402

SAMPLE = ROOT / "sample_data"
CHARACTERS = string.digits + string.ascii_uppercase


def relabel(value, table):
    if isinstance(value, dict):
        return {k: v if k == "confidence" else relabel(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [relabel(v, table) for v in value]
    return value.translate(table) if isinstance(value, str) else value


def copies_of(name: str, field: str, copies: int, duplicates: bool):
    records = [json.loads(line) for line in (SAMPLE / f"{name}.jsonl").read_text().splitlines() if line]
    lines = []
    for k in range(copies):
        shuffled = random.Random(k).sample(CHARACTERS, len(CHARACTERS))
        table = {} if duplicates or k == 0 else str.maketrans(CHARACTERS, "".join(shuffled))
        for record in records:
            copy = {**record, "doc_id": f"{record['doc_id']}_{k:03d}", field: relabel(record[field], table)}
            lines.append(json.dumps(copy))
    return load_bytes("\n".join(lines).encode(), f"{name}.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--models", nargs="+", default=["sim_strong", "sim_llm", "sim_weak"])
    parser.add_argument("--duplicates", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    gt = copies_of("cord_v2_gt", "gt_parse", args.copies, args.duplicates)
    kind = "duplicated" if args.duplicates else "distinct"
    print(f"{len(gt.doc_ids)} {kind} receipts, Python {sys.version.split()[0]}\n")
    print("| model | documents | seconds | mean nTED |")
    print("|---|---:|---:|---:|")
    for model in args.models:
        pred = copies_of(model, "prediction", args.copies, args.duplicates)
        seconds = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = FAMILY_FUNCTIONS["nted"](gt, pred, PeerOptions())
            seconds.append(time.perf_counter() - start)
        print(f"| {model} | {len(gt.doc_ids)} | {min(seconds):.2f} | {result.figures['nted']:.6f} |")


if __name__ == "__main__":
    main()
