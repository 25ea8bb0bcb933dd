"""The Dask engine (``kieval evaluate --engine dask``): throughput, memory per worker, and
a 10-million-entity run, against the local engine.

Data: ``bench_core.py``'s receipts as long-table Parquet shards, written chunk by chunk
(never the whole corpus in memory): GT in ``--shards`` files, predictions in twice as
many files with documents spread differently, so the run shuffles (GT and predicted rows
of a document sit in unrelated shards).

Measured, each on a fresh ``LocalCluster`` of single-threaded worker processes limited to
``--memory-limit``:

* throughput of ``evaluate(engine="dask")`` on ``--throughput-docs`` receipts with 1 and
  2 workers (GT + predicted entities per second of wall time, read to merged result);
* the full run (``--docs`` receipts, about 20 entities each per side) with 2 workers:
  wall time, JSON report time, peak RSS of every worker process (psutil, sampled every
  0.2 s), the peak of the client process (it holds the merged tally);
* the local engine's peak RSS (a child process: evaluate + JSON report, ``ru_maxrss``)
  at several smaller sizes, fitted by least squares as ``a + b * entities`` and
  extrapolated to the full run;
* ``--check-local``: the local engine on the full data too, and whether its report is
  byte-identical to the Dask run's.

Usage::

    python bench/bench_dask.py [--docs 500000] [--shards 20] [--out bench/out/dask]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_core import generate  # noqa: E402

from kieval_core import DecisionOptions, evaluate  # noqa: E402
from kieval_core.output.render import render_report  # noqa: E402

DECISIONS = DecisionOptions(resamples=200)


def write_corpus(folder: Path, n_docs: int, n_shards: int, seed: int = 0) -> dict:
    """GT shard c holds chunk c of the receipts; the predictions of chunk c are split over
    two shards by a random half of its documents, shards numbered so that no prediction
    shard lines up with a GT shard. Returns the entity counts (cached in ``corpus.json``)."""
    marker = folder / "corpus.json"
    wanted = {"docs": n_docs, "shards": n_shards, "seed": seed}
    if marker.exists() and json.loads(marker.read_text())["wanted"] == wanted:
        return {side: json.loads(marker.read_text())[side] for side in ("gt", "pred")}
    for side in ("gt", "pred"):
        (folder / side).mkdir(parents=True, exist_ok=True)
        for old in (folder / side).glob("*.parquet"):
            old.unlink()
    counts = {"gt": 0, "pred": 0}
    per_chunk = -(-n_docs // n_shards)
    rng = np.random.default_rng(seed)
    for c in range(n_shards):
        n = min(per_chunk, n_docs - c * per_chunk)
        gt, pred = generate(n, seed=seed + c)
        for frame in (gt, pred):
            frame["doc_id"] = frame["doc_id"].str.replace("receipt_", f"receipt_{c:03d}_", regex=False)
        gt.to_parquet(folder / "gt" / f"part-{c:03d}.parquet", index=False)
        docs = pred["doc_id"].unique()
        half = set(docs[rng.random(len(docs)) < 0.5])
        first = pred["doc_id"].isin(half).to_numpy()
        for part, number in ((pred[first], 2 * c + 1), (pred[~first], 2 * c + 2)):
            part.to_parquet(folder / "pred" / f"part-{number % (2 * n_shards):03d}.parquet", index=False)
        counts["gt"] += len(gt)
        counts["pred"] += len(pred)
    marker.write_text(json.dumps({"wanted": wanted, **counts}))
    return counts


class Peaks:
    """Peak RSS of each worker process and of this (client) process, sampled in a thread;
    CPU seconds of the workers between start and stop."""

    def __init__(self, client) -> None:
        self.processes = {addr: psutil.Process(pid) for addr, pid in client.run(os.getpid).items()}
        self.baseline = {a: p.memory_info().rss for a, p in self.processes.items()}
        self.peak = dict(self.baseline)
        self.client_peak = psutil.Process().memory_info().rss
        self.cpu0 = {a: sum(p.cpu_times()[:2]) for a, p in self.processes.items()}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self.stopped.wait(0.2):
            for addr, process in self.processes.items():
                with contextlib.suppress(psutil.Error):  # a worker that is going away
                    self.peak[addr] = max(self.peak[addr], process.memory_info().rss)
            self.client_peak = max(self.client_peak, me.memory_info().rss)

    def stop(self) -> dict:
        self.stopped.set()
        self.thread.join()
        cpu = {a: sum(p.cpu_times()[:2]) - self.cpu0[a] for a, p in self.processes.items()}
        gib = 2.0**30
        return {"worker_peak_gib": [round(v / gib, 2) for v in self.peak.values()],
                "worker_baseline_gib": [round(v / gib, 2) for v in self.baseline.values()],
                "client_peak_gib": round(self.client_peak / gib, 2),
                "worker_cpu_s": [round(v, 1) for v in cpu.values()]}


def dask_run(folder: Path, workers: int, memory_limit: str, report: bool) -> dict:
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit=memory_limit,
                      dashboard_address=None, silence_logs=40) as cluster, Client(cluster) as client:
        startup = time.perf_counter() - start
        peaks = Peaks(client)
        start, cpu = time.perf_counter(), time.process_time()
        result = evaluate(str(folder / "gt"), {"pred": str(folder / "pred")}, engine="dask", client=client)
        seconds = time.perf_counter() - start
        out = {"workers": workers, "startup_s": round(startup, 1), "evaluate_s": round(seconds, 1),
               "client_cpu_s": round(time.process_time() - cpu, 1)}
        if report:
            start = time.perf_counter()
            text = render_report(result, DECISIONS).text
            out["report_s"] = round(time.perf_counter() - start, 1)
            (folder / f"report-dask-{workers}.json").write_text(text, "utf-8")
        out.update(peaks.stop())
        spilled = [w["metrics"].get("spilled_bytes", {}).get("disk", 0)
                   for w in client.scheduler_info()["workers"].values()]
        out["spilled_gib"] = round(sum(spilled) / 2**30, 2)
    return out


def local_child(folder: str) -> None:
    """Child process: the local engine on ``folder``'s shards, evaluate + JSON report."""
    start = time.perf_counter()
    cpu = time.process_time()
    result = evaluate(f"{folder}/gt", {"pred": f"{folder}/pred"})
    evaluate_s, evaluate_cpu = time.perf_counter() - start, time.process_time() - cpu
    text = render_report(result, DECISIONS).text
    report_s = time.perf_counter() - start - evaluate_s
    Path(folder, "report-local.json").write_text(text, "utf-8")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"evaluate_s": round(evaluate_s, 1), "evaluate_cpu_s": round(evaluate_cpu, 1),
                      "report_s": round(report_s, 1), "peak_gib": round(peak, 2)}))


def local_run(folder: Path) -> dict:
    command = [sys.executable, __file__, "--local-child", str(folder)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=500_000)
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--throughput-docs", type=int, default=100_000)
    parser.add_argument("--local-docs", type=int, nargs="+", default=[25_000, 50_000, 100_000])
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "dask")
    parser.add_argument("--check-local", action="store_true",
                        help="also run the local engine on the full data and compare the reports")
    parser.add_argument("--skip", nargs="*", default=[], choices=["throughput", "local", "full"])
    parser.add_argument("--local-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.local_child:
        local_child(args.local_child)
        return
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    results: dict = {}
    if "throughput" not in args.skip:
        folder = args.out / f"docs-{args.throughput_docs}"
        counts = write_corpus(folder, args.throughput_docs, max(4, args.shards // 5))
        entities = counts["gt"] + counts["pred"]
        for workers in (1, 2):
            run = dask_run(folder, workers, args.memory_limit, report=False)
            run["entities_per_s"] = round(entities / run["evaluate_s"])
            results[f"throughput_{workers}"] = {**counts, **run}
            print(f"throughput, {workers} worker(s): {json.dumps(results[f'throughput_{workers}'])}")
    if "local" not in args.skip:
        points = []
        for n in args.local_docs:
            folder = args.out / f"docs-{n}"
            counts = write_corpus(folder, n, max(4, args.shards // 5))
            run = {"docs": n, "entities": counts["gt"] + counts["pred"], **local_run(folder)}
            points.append(run)
            print(f"local engine: {json.dumps(run)}")
        x = np.array([p["entities"] for p in points], float)
        y = np.array([p["peak_gib"] for p in points], float)
        slope, intercept = np.polyfit(x, y, 1)
        results["local"] = {"points": points, "fit": {"intercept_gib": round(intercept, 3),
                                                      "gib_per_million_entities": round(slope * 1e6, 3)}}
        print(f"local peak fit: {intercept:.3f} GiB + {slope * 1e6:.3f} GiB per million entities")
    if "full" not in args.skip:
        folder = args.out / f"docs-{args.docs}"
        start = time.perf_counter()
        counts = write_corpus(folder, args.docs, args.shards)
        print(f"corpus: {counts['gt']:,} GT + {counts['pred']:,} predicted entities "
              f"({time.perf_counter() - start:.0f} s to write or find)")
        run = {**counts, **dask_run(folder, 2, args.memory_limit, report=True)}
        results["full"] = run
        print(f"full run, 2 workers: {json.dumps(run)}")
        if "local" in results:
            fit = results["local"]["fit"]
            millions = (counts["gt"] + counts["pred"]) / 1e6
            projected = fit["intercept_gib"] + fit["gib_per_million_entities"] * millions
            results["local_projected_peak_gib"] = round(projected, 2)
            print(f"local engine, projected peak for the full run: {projected:.2f} GiB")
        if args.check_local:
            local = local_run(folder)
            same = (folder / "report-local.json").read_bytes() == (folder / "report-dask-2.json").read_bytes()
            results["full_local"] = {**local, "report_identical": same}
            print(f"local engine on the full run: {json.dumps(results['full_local'])}")
    (args.out / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
