"""Speed of consensus confidences (SPEC 4c): 7 models x 10,000 receipts.

Generates a ground truth of 10,000 receipts (12 fields each) and seven prediction sets
that copy it with different error rates, scores them once (not timed), then times in the
same run:

* baseline: ``pandas.factorize`` of every model's ``(doc_id, entity_type, value)`` rows,
  the floor of any method that compares values across models;
* ``consensus_confidence``: the shares of every prediction of every model;
* ``with_confidence_sources(result, source="consensus")``: the shares and every model's
  review model rebuilt with them (what ``--confidence-from consensus`` adds to a run);
* the naive per-prediction loop of the tests (``tests/oracles.py``) on the first 1,000
  receipts, scaled to the whole, for scale.

Goal (issue 19): consensus for 7 models x 10,000 documents under 2 s. Usage::

    python bench/bench_consensus.py [--docs 10000] [--models 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kieval_core import Normalizer, evaluate
from kieval_core.read.formats.builder import DatasetBuilder
from kieval_core.result.consensus import consensus_confidence, with_confidence_sources

FIELDS = [f"field_{i}" for i in range(12)]


def generate(n_docs: int, n_models: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 500, (n_docs, len(FIELDS))).astype(str).astype(object)
    gt = DatasetBuilder("gt", "gt", "rows")
    models = [DatasetBuilder(f"m{k}", f"m{k}", "rows") for k in range(n_models)]
    error_rate = np.linspace(0.03, 0.3, n_models)
    for d in range(n_docs):
        doc = f"doc_{d}"
        gt.add(doc, doc, [("", "", f, truth[d, i], np.nan) for i, f in enumerate(FIELDS)])
        for k, builder in enumerate(models):
            wrong = rng.random(len(FIELDS)) < error_rate[k]
            values = np.where(wrong, "x" + truth[d], truth[d])
            builder.add(doc, doc, [("", "", f, values[i], np.nan) for i, f in enumerate(FIELDS)])
    built = [b.build() for b in models]
    return gt.build(), {m.name: m for m in built}


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=7)
    args = parser.parse_args(argv)
    gt, preds = generate(args.docs, args.models)
    result = evaluate(gt, preds)
    frames = {n: m.counted.pred_entities[["doc_id", "entity_type", "value"]]
              for n, m in result.models.items()}
    n_pred = sum(len(f) for f in frames.values())

    def floor():
        joined = pd.concat(frames.values(), ignore_index=True)
        return [pd.factorize(joined[c])[0] for c in joined.columns]

    t_floor, _ = timed(floor)
    t_shares, _ = timed(lambda: consensus_confidence(frames, Normalizer()))
    t_apply, _ = timed(lambda: with_confidence_sources(result, source="consensus"), repeat=1)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from oracles import naive_consensus

    part = max(args.docs // 10, 1)
    keep = {f"doc_{d}" for d in range(part)}
    rows = {n: [r for r in f.itertuples(index=False, name=None) if r[0] in keep] for n, f in frames.items()}
    t_naive, _ = timed(lambda: naive_consensus(rows, Normalizer()), repeat=1)
    t_naive *= args.docs / part
    print(f"{args.models} models x {args.docs:,} documents, {n_pred:,} predictions")
    print(f"baseline (factorize the rows)        {t_floor:7.3f} s")
    print(f"consensus_confidence                 {t_shares:7.3f} s  ({t_shares / t_floor:.1f}x baseline)")
    print(f"with_confidence_sources (consensus)  {t_apply:7.3f} s  ({t_apply / t_floor:.1f}x baseline)")
    print(f"naive loop, scaled from {part:,} docs    {t_naive:7.3f} s  ({t_naive / t_shares:.0f}x consensus)")
    print(f"goal: consensus under 2 s: {'met' if t_apply < 2.0 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
