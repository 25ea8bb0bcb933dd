"""Startup time: ``import kieval_core`` and ``kieval --help`` against ``import pandas``.

Usage: ``python bench/bench_startup.py [--runs 15] [--source DIR]``. Each command runs in a
fresh interpreter, the commands interleaved round by round so that a busy moment of the
machine touches all of them; the table gives the median wall time and its ratio to
``python -c "import pandas"`` of the same run. ``--source`` puts another checkout first
on the path (the before figures: a worktree of an earlier commit).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "python -c 'import pandas' (baseline)": "import pandas",
    "python -c 'import kieval_core'": "import kieval_core",
    "python -c 'from kieval_core import evaluate'": "from kieval_core import evaluate",
    "kieval --help": "import sys; sys.argv = ['kieval', '--help']; from kieval_core.cli import main; main()",
    "kieval evaluate --help": ("import sys; sys.argv = ['kieval', 'evaluate', '--help']; "
                               "from kieval_core.cli import main; main()"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--source", type=Path, help="checkout to import kieval_core from")
    args = parser.parse_args()
    env = dict(os.environ)
    source = (args.source or Path(__file__).resolve().parent.parent).resolve()
    env["PYTHONPATH"] = str(source)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, code in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, cwd=source, check=False,
                           stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times[next(iter(COMMANDS))])
    print(f"| command ({args.runs} runs, median) | seconds | ratio to import pandas |")
    print("|---|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()
