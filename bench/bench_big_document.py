"""One document with thousands of groups: how matching time and memory grow.

Usage: ``python bench/bench_big_document.py [--groups 1000 2000 4000]``. Each run builds
one receipt with G menu lines (name, count, price) on both sides, 10% of the lines'
prices shifted, and times ``kieval_core.evaluate``; memory is the peak RSS of a
child process per size.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def child(groups: int) -> None:
    import numpy as np

    sys.path.insert(0, ".")
    from kieval_core import evaluate, load_bytes

    rng = np.random.default_rng(0)
    names = [f"ITEM {i}" for i in rng.integers(0, groups // 2, groups)]
    prices = [f"{p},000" for p in rng.integers(1, 99, groups)]
    shifted = prices[:]
    for i in np.flatnonzero(rng.random(groups) < 0.1):
        shifted[i] = prices[(i + 1) % groups]

    def build(price_list, name):
        lines = ["doc_id,group_type,group,entity,value"]
        fields = (("nm", names), ("cnt", ["1"] * groups), ("price", price_list))
        lines += [f'doc,menu,{i},menu.{k},"{v[i]}"' for i in range(groups) for k, v in fields]
        return load_bytes("\n".join(lines).encode(), f"{name}.csv")

    gt, pred = build(prices, "gt"), build(shifted, "pred")
    start = time.perf_counter()
    model = evaluate(gt, {"pred": pred}).models["pred"]
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"groups": groups, "seconds": round(seconds, 2), "peak_mib": round(peak),
                      "group_f1": round(model.group.f1, 4)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    for groups in args.groups:
        subprocess.run([sys.executable, __file__, "--child", str(groups)], check=True)


if __name__ == "__main__":
    main()
