"""The training-loop accumulator on 10,000 receipts: ``update`` bookkeeping and ``compute``.

The receipts are the 100 CORD v2 validation receipts of ``sample_data`` and the simulated
strong model's predictions (with confidences), repeated to ``--docs`` documents. Times,
in the same run:

* ``update`` one document per call, and in batches of 32, against a bare loop that only
  appends the two dicts to two lists (the floor of any bookkeeping);
* ``compute()`` against ``evaluate()`` on the same documents read from ``{doc_id:
  document}`` JSON files (the figures are checked equal);
* memory: what the accumulator holds after the updates when it is the only holder of the
  documents (each update gets dicts fresh from ``json.loads``, as a model's decoding makes
  them), and the peak of ``compute()`` above it; Python's allocations (``tracemalloc``,
  numpy's included) plus Arrow's (``pyarrow.total_allocated_bytes``).

Times are CPU seconds of this process (``time.process_time``), best of ``--repeat``.

Usage::

    python bench/bench_accumulator.py [--docs 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kieval_core import evaluate  # noqa: E402
from kieval_core.accumulator import Accumulator  # noqa: E402


def receipts(n: int) -> tuple[list[dict], list[dict]]:
    def read(name: str, key: str) -> dict[str, dict]:
        lines = (ROOT / "sample_data" / name).read_text("utf-8").splitlines()
        return {r["doc_id"]: r[key] for r in map(json.loads, lines)}

    gt, pred = read("cord_v2_gt.jsonl", "gt_parse"), read("sim_strong.jsonl", "prediction")
    ids = sorted(gt)
    return [gt[ids[i % len(ids)]] for i in range(n)], [pred[ids[i % len(ids)]] for i in range(n)]


def best_of(repeat: int, work) -> float:
    """The least CPU time of ``repeat`` runs (this process's: on a shared machine, wall time
    measures the neighbours too)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def memory(gt: list[dict], pred: list[dict]) -> tuple[float, float]:
    """MiB held by an accumulator that alone holds the documents, after the updates; and
    the peak of ``compute()`` above what was held before it."""
    texts = [(json.dumps(g), json.dumps(p)) for g, p in zip(gt, pred, strict=True)]
    tracemalloc.start()
    arrow = pa.total_allocated_bytes()
    acc = Accumulator()
    for g, p in texts:
        acc.update(json.loads(g), json.loads(p))
    held, _ = tracemalloc.get_traced_memory()
    held += pa.total_allocated_bytes() - arrow
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    acc.compute()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held / 2**20, (peak - before) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    gt, pred = receipts(args.docs)
    n = len(gt)

    def floor() -> None:
        a, b = [], []
        for g, p in zip(gt, pred, strict=True):
            a.append(g)
            b.append(p)

    def one_by_one() -> Accumulator:
        acc = Accumulator()
        for g, p in zip(gt, pred, strict=True):
            acc.update(g, p)
        return acc

    def batches() -> Accumulator:
        acc = Accumulator()
        for i in range(0, n, 32):
            acc.update(gt[i:i + 32], pred[i:i + 32])
        return acc

    t_floor = best_of(args.repeat, floor)
    t_one = best_of(args.repeat, one_by_one)
    t_batch = best_of(args.repeat, batches)
    acc = one_by_one()
    t_compute = best_of(min(args.repeat, 3), acc.compute)
    with tempfile.TemporaryDirectory() as tmp:
        ids = acc.doc_ids()
        files = {}
        for side, docs in (("gt", gt), ("model", pred)):
            files[side] = Path(tmp) / f"{side}.json"
            files[side].write_text(json.dumps(dict(zip(ids, docs, strict=True))), "utf-8")
        t_eval = best_of(min(args.repeat, 3), lambda: evaluate(files["gt"], {"model": files["model"]}))
        expected = evaluate(files["gt"], {"model": files["model"]}).models["model"]
    got = acc.compute().models["model"]
    assert (got.entity, got.corrections, got.aligned) == (
        expected.entity, expected.corrections, expected.aligned)
    print(f"{n:,} receipts ({sum(map(len, map(json.dumps, gt))) / 2**20:.1f} MiB of GT JSON), CPU time, "
          f"best of {args.repeat}")
    print(f"bare loop appending both dicts   {t_floor * 1e6 / n:6.2f} µs per document")
    print(f"update(), one document per call  {t_one * 1e6 / n:6.2f} µs per document "
          f"({t_one / t_floor:.1f}x the bare loop)")
    print(f"update(), batches of 32          {t_batch * 1e6 / n:6.2f} µs per document")
    print(f"compute()                        {t_compute:6.2f} s")
    print(f"evaluate() on the same JSON files {t_eval:6.2f} s "
          f"(compute / evaluate: {t_compute / t_eval:.2f}x)")
    print(f"update + compute per document    {(t_one + t_compute) * 1e6 / n:6.0f} µs")
    held, peak = memory(gt, pred)
    print(f"held after the updates           {held:6.1f} MiB (the accumulator alone holding the documents)")
    print(f"compute() peak above that        {peak:6.1f} MiB (Python and numpy; Arrow's not traced)")


if __name__ == "__main__":
    main()
