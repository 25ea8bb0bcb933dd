"""Cost of the error causes (SPEC 2c) and of a ``date`` + ``number`` comparator (SPEC 2b)
against plain KIEval counting, in the same run.

The receipts of ``bench_core.generate`` (about one million GT and one million predicted
entities), with a third of the predicted dates written DD/MM/YYYY (format errors), are
loaded once; then, alternating, each timed ``--repeat`` times (median reported):

* baseline: ``engine.count(..., causes=False)`` with the default normaliser, and the tally;
* causes + comparators: ``engine.count`` with causes and ``date=date``, ``*.price=number``,
  ``total.*=number``, and the tally.

Usage::

    python bench/bench_causes.py [--docs 65000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_core import generate  # noqa: E402

from kieval_core.count.engine import count  # noqa: E402
from kieval_core.count.normalize import Normalizer  # noqa: E402
from kieval_core.read.formats import LoadOptions
from kieval_core.read.load import load  # noqa: E402
from kieval_core.result.tally import Tally  # noqa: E402

COMPARED = Normalizer(comparators=(("date", "date"), ("*.price", "number"), ("total.*", "number")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=65000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gt, pred = generate(args.docs)
    rng = np.random.default_rng(1)
    dates = (pred["entity"] == "date").to_numpy() & (rng.random(len(pred)) < 1 / 3)
    iso = pred.loc[dates, "value"].str.split("-")
    pred.loc[dates, "value"] = iso.str[2] + "/" + iso.str[1] + "/" + iso.str[0]
    paths = args.out / "causes_gt.csv", args.out / "causes_pred.csv"
    gt.to_csv(paths[0], index=False)
    pred.to_csv(paths[1], index=False)
    gt_set = load(paths[0], LoadOptions(format="table"), name="gt")
    pred_set = load(paths[1], LoadOptions(format="table"), name="pred")
    print(f"documents {args.docs}, GT entities {gt_set.n_entities:,}, predicted {pred_set.n_entities:,}")

    def plain():
        return Tally.from_counted(count(gt_set, pred_set, Normalizer(), causes=False))

    def with_causes():
        return Tally.from_counted(count(gt_set, pred_set, COMPARED, causes=True))

    times: dict[str, list[float]] = {"plain": [], "causes": []}
    for _ in range(args.repeat):
        for name, run in (("plain", plain), ("causes", with_causes)):
            start = time.perf_counter()
            tally = run()
            times[name].append(time.perf_counter() - start)
    plain_s, causes_s = statistics.median(times["plain"]), statistics.median(times["causes"])
    totals = tally.totals
    print(f"plain KIEval            {plain_s:6.2f} s (median of {args.repeat})")
    print(f"causes + date + number  {causes_s:6.2f} s")
    print(f"ratio                   {causes_s / plain_s:6.2f}x (goal <= 1.3x)")
    print("causes: " + ", ".join(f"{c} {int(totals[c]):,}" for c in totals.index if "_" in c
                                  and c.split("_")[0] in ("substitution", "addition", "deletion")))
    print(f"unparsed: GT {int(totals['unparsed_gt']):,}, predictions {int(totals['unparsed_pred']):,}")


if __name__ == "__main__":
    main()
