"""Peak memory of reading one upload, as the dashboard reads it.

Writes prediction files of about 50 MB and 150 MB in two formats: nested JSONL with a
scored leaf for every value (``sample_data/sim_strong.jsonl`` repeated under new
document ids) and long CSV (the same entities, one row each). Each case runs in its own
process: the file's bytes are read first, then ``kieval_core.load_bytes(data, name)``
(the dashboard's call); the case reports the peak resident memory above what the process
held before the call (imports and the bytes), as a multiple of the file size. Usage::

    python bench/bench_memory.py [--sizes 50,150] [--out bench/out/memory]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]
from builders import replicated_jsonl  # noqa: E402

SAMPLE = HERE.parent / "sample_data" / "sim_strong.jsonl"

CASE = """
import resource, sys, time
sys.path.insert(0, {root!r})
import kieval_core
path = {path!r}
with open(path, "rb") as f:
    data = f.read()
def rss_mib():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS")) / 1024
before = rss_mib()
start = time.perf_counter()
ds = kieval_core.load_bytes(data, path.rsplit("/", 1)[-1])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(before, peak, seconds, len(ds.entities))
"""


def write_csv(jsonl: Path, path: Path) -> None:
    from kieval_core import load

    entities = load(jsonl).entities
    table = entities.rename(columns={"entity_type": "entity"}).assign(
        group=entities["group"].where(entities["group"] >= 0).astype("Int64").astype(str).replace("<NA>", ""))
    table[["doc_id", "entity", "value", "group", "group_type", "confidence"]].to_csv(path, index=False)


def measure(path: Path) -> dict:
    script = CASE.format(root=str(HERE.parent), path=str(path))
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    before, peak, seconds, n = done.stdout.split()
    size = path.stat().st_size / 2**20
    extra = float(peak) - float(before)
    return {"file": path.name, "MiB": size, "entities": int(n), "seconds": float(seconds),
            "peak above held MiB": extra, "ratio": extra / size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,150", help="target sizes in MB")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "memory")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{'file':22} {'MiB':>6} {'entities':>10} {'load s':>7} {'peak above held':>16} {'x file':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        jsonl = args.out / f"pred_{size}mb.jsonl"
        replicated_jsonl(SAMPLE, jsonl, size)
        csv = args.out / f"pred_{size}mb.csv"
        write_csv(jsonl, csv)
        for path in (jsonl, csv):
            r = measure(path)
            print(f"{r['file']:22} {r['MiB']:6.0f} {r['entities']:10,} {r['seconds']:7.2f} "
                  f"{r['peak above held MiB']:12.0f} MiB {r['ratio']:6.2f}x", flush=True)


if __name__ == "__main__":
    main()
