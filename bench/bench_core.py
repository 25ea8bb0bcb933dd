"""Speed of ``kieval evaluate --metrics kieval`` against ``pandas.read_csv`` of the same files.

Generates about one million GT and one million predicted entities (~65k receipts with
menu groups) as long CSV, then times, in the same run:

* baseline: ``pandas.read_csv`` of both files (the floor any evaluator pays);
* the CLI run end to end (``python -m kieval_core.cli evaluate ... --json``).

Prints the ratios to two baselines (default dtypes, and every column as text as the
loader reads it) and the memory peak of the CLI run. With ``--rounds N`` (and
``--before LABEL=DIR``, repeatable), the text read and each checkout's evaluation are
run round after round instead, each a fresh child process, and the table gives CPU and
wall medians (``bench_nested_json.end_to_end``; the files are kept between runs). Usage::

    python bench/bench_core.py [--docs 65000] [--out bench/out] [--rounds 3 --before LABEL=DIR ...]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def generate(n_docs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Receipts: 4-6 menu lines (nm, cnt, price), a subtotal/total group, two non-group fields.

    Predictions: 5% of values mistyped, 2% dropped, 1% hallucinated, 5% of receipts with
    prices shifted by one line; confidences lower for wrong values.
    """
    rng = np.random.default_rng(seed)
    lines = rng.integers(4, 7, n_docs)
    doc_of_line = np.repeat(np.arange(n_docs), lines)
    line_no = np.arange(len(doc_of_line)) - np.repeat(np.cumsum(lines) - lines, lines)
    n_lines = len(doc_of_line)
    names = np.array([f"ITEM {i}" for i in range(5000)], dtype=object)[rng.integers(0, 5000, n_lines)]
    counts = rng.integers(1, 4, n_lines).astype(str).astype(object)
    prices = np.char.add(rng.integers(1, 90, n_lines).astype(str), ",000").astype(object)
    doc_ids = np.char.add("receipt_", np.arange(n_docs).astype(str)).astype(object)

    menu = pd.DataFrame({
        "doc_id": np.repeat(doc_ids[doc_of_line], 3),
        "entity": np.tile(["menu.nm", "menu.cnt", "menu.price"], n_lines),
        "value": np.column_stack([names, counts, prices]).ravel(),
        "group": np.repeat(line_no, 3).astype(str),
        "group_type": "menu",
    })
    totals = pd.DataFrame({
        "doc_id": np.repeat(doc_ids, 3),
        "entity": np.tile(["total.subtotal_price", "total.tax_price", "total.total_price"], n_docs),
        "value": np.char.add(rng.integers(10, 999, 3 * n_docs).astype(str), ",000").astype(object),
        "group": "t",
        "group_type": "total",
    })
    header = pd.DataFrame({
        "doc_id": np.repeat(doc_ids, 2),
        "entity": np.tile(["store", "date"], n_docs),
        "value": np.column_stack([
            np.array([f"STORE {i}" for i in range(300)], dtype=object)[rng.integers(0, 300, n_docs)],
            np.char.add("2019-03-", rng.integers(10, 29, n_docs).astype(str)).astype(object),
        ]).ravel(),
        "group": "",
        "group_type": "",
    })
    gt = pd.concat([header, menu, totals], ignore_index=True).sort_values("doc_id", kind="stable")

    pred = gt.copy()
    n = len(pred)
    wrong = rng.random(n) < 0.05
    pred.loc[wrong, "value"] = pred.loc[wrong, "value"].str.replace("0", "O", n=1) + "x"
    shifted_docs = doc_ids[rng.random(n_docs) < 0.05]
    shift = pred["doc_id"].isin(shifted_docs).to_numpy() & (pred["entity"] == "menu.price").to_numpy()
    pred.loc[shift, "group"] = (pred.loc[shift, "group"].astype(int) + 1).astype(str)
    keep = rng.random(n) >= 0.02
    pred["confidence"] = np.where(wrong, rng.beta(2, 3, n), rng.beta(12, 1.5, n)).round(4)
    extra = pred.sample(frac=0.01, random_state=seed).assign(entity="total.discount_price",
                                                            confidence=0.3)
    pred = pd.concat([pred[keep], extra], ignore_index=True).sort_values("doc_id", kind="stable")
    return gt, pred


TEXT_READ_LABEL = "bare `pandas.read_csv(dtype=str, keep_default_na=False)` of both files"
TEXT_READ = """
import sys
import pandas as pd
for name in sys.argv[1:]:
    pd.read_csv(name, dtype=str, keep_default_na=False)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=65000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--rounds", type=int, default=0, help="interleaved rounds against the text read")
    parser.add_argument("--before", action="append", default=[], metavar="LABEL=DIR",
                        help="with --rounds: a checkout of the code before a change (repeatable)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gt_path, pred_path = args.out / f"gt_{args.docs}.csv", args.out / f"pred_{args.docs}.csv"
    if not (args.rounds and gt_path.exists() and pred_path.exists()):
        gt, pred = generate(args.docs)
        gt.to_csv(gt_path, index=False)
        pred.to_csv(pred_path, index=False)
        print(f"documents {args.docs}, GT entities {len(gt)}, predicted entities {len(pred)}")
    if args.rounds:
        from bench_nested_json import end_to_end

        before = [(label, Path(path)) for label, _, path in (b.partition("=") for b in args.before)]
        end_to_end(gt_path, pred_path, args.out, args.rounds, before, TEXT_READ_LABEL, TEXT_READ,
                   ("--metrics", "kieval"))
        return

    def read_time(**options) -> float:
        start = time.perf_counter()
        for path in (gt_path, pred_path):
            pd.read_csv(path, **options)
        return time.perf_counter() - start

    read_default = read_time()
    read_text = read_time(dtype=str, keep_default_na=False)  # every column as text, as we read

    start = time.perf_counter()
    command = [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt_path),
               "--pred", str(pred_path), "--metrics", "kieval", "--json", str(args.out / "report.json")]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    eval_time = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    print(f"pandas.read_csv of both files:              {read_default:6.2f} s")
    print(f"pandas.read_csv(dtype=str) of both files:   {read_text:6.2f} s")
    print(f"kieval evaluate --metrics kieval (end to end): {eval_time:6.2f} s  "
          f"({eval_time / read_default:.1f}x default read, {eval_time / read_text:.1f}x text read)")
    print(f"memory peak of the evaluate run: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
