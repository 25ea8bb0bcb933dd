"""Cost of ranking the suspect labels (SPEC 2f) against the rest of ``kieval evaluate``,
measured in the same run.

The receipts of ``bench_core.generate`` (about 16 GT entities per document) and seven
prediction sets, each with its own mistakes (5% of values mistyped, 2% dropped, lower
confidences on wrong values); 1% of the GT values are then changed (label errors every
model agrees against). The files are written as long tables (CSV) and timed as the CLI
runs them, in one process:

* read: the GT and the seven prediction files;
* score: ``evaluate`` on the read datasets (the KIEval family, seven models);
* report: ``render_report``, the JSON report (its ``suspects[]`` from the ranking below);
* suspects: ``result.suspects`` (:func:`~kieval_core.review.suspects.rank_suspects` on the
  seven models' engine tables) and their records for the report.

The ratio is suspects / (read + score + report without the suspects): what ranking them
adds to ``kieval evaluate``. Usage::

    python bench/bench_suspects.py [--docs 100000] [--models 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from bench_core import generate  # noqa: E402

from kieval_core import LoadOptions, Normalizer, evaluate, load  # noqa: E402
from kieval_core.output.render import render_report  # noqa: E402
from kieval_core.review.suspects import suspect_records  # noqa: E402

RULES = Normalizer(comparators=(("date", "date"), ("*.price", "number"), ("total.*", "number")))


def predictions(gt: pd.DataFrame, seed: int) -> pd.DataFrame:
    """One model's predictions of ``gt``: its own mistyped and dropped values."""
    rng = np.random.default_rng(100 + seed)
    pred = gt.copy()
    n = len(pred)
    wrong = rng.random(n) < 0.05
    pred.loc[wrong, "value"] = pred.loc[wrong, "value"] + rng.choice(["x", "7", "O"], int(wrong.sum()))
    pred["confidence"] = np.where(wrong, rng.beta(2, 3, n), rng.beta(12, 1.5, n)).round(4)
    return pred[rng.random(n) >= 0.02]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--models", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gt, _ = generate(args.docs)
    paths = []
    for i in range(args.models):
        path = args.out / f"suspects_pred_{i}.csv"
        predictions(gt, i).to_csv(path, index=False)
        paths.append(path)
    label_errors = np.random.default_rng(7).random(len(gt)) < 0.01
    gt.loc[label_errors, "value"] = gt.loc[label_errors, "value"] + "9"
    gt_path = args.out / "suspects_gt.csv"
    gt.to_csv(gt_path, index=False)
    del gt

    options = LoadOptions(format="table")
    start = time.perf_counter()
    gt_set = load(gt_path, options, name="ground truth")
    preds = {f"model_{i}": load(p, options, name=f"model_{i}") for i, p in enumerate(paths)}
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    result = evaluate(gt_set, preds, normalizer=RULES)
    score_s = time.perf_counter() - start
    start = time.perf_counter()
    suspects = result.suspects  # ranked once, cached on the result: the report reads it
    rank_s = time.perf_counter() - start
    start = time.perf_counter()
    records = suspect_records(suspects)
    records_s = time.perf_counter() - start
    start = time.perf_counter()
    render_report(result)
    report_s = time.perf_counter() - start
    suspects_s = rank_s + records_s
    rest_s = read_s + score_s + report_s - records_s  # the report writes the records too
    print(f"documents {args.docs:,}, models {args.models}, GT entities {gt_set.n_entities:,}, "
          f"label errors planted {int(label_errors.sum()):,}")
    print(f"read          {read_s:7.2f} s")
    print(f"score         {score_s:7.2f} s")
    print(f"report        {report_s:7.2f} s (with the suspects' records)")
    print(f"suspects      {suspects_s:7.2f} s: ranking {rank_s:.2f} s, records {records_s:.2f} s "
          f"({len(records):,} suspects)")
    print(f"ratio         {suspects_s / rest_s:7.3f} of the rest of kieval evaluate (goal <= 0.20); "
          f"{suspects_s / (read_s + score_s):.3f} of reading and scoring alone")
    found = suspects["gt_value"].notna().sum()
    print(f"value suspects {found:,}, gaps {len(suspects) - found:,}")


if __name__ == "__main__":
    main()
