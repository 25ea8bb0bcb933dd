"""Write the JSON reports and error lists of the sample, the official sample and SROIE.

``python bench/snapshot_reports.py OUT_DIR`` runs ``kieval evaluate --metrics all`` on each
corpus; ``diff -r BEFORE AFTER`` then shows which figures a change moved. SROIE is read
from ``../shared/data`` and skipped when absent.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample_data"
SROIE = HERE.parent.parent / "shared" / "data" / "sroie"
if not SROIE.exists():
    SROIE = Path("/work/shared/data/sroie")

CORPORA = {
    "sample": (SAMPLE / "cord_v2_gt.jsonl", sorted(SAMPLE.glob("sim_*.jsonl"))),
    "official": (SAMPLE / "kieval_official_cord" / "gt_csv", [SAMPLE / "kieval_official_cord" / "pred_csv"]),
    "sroie": (SROIE / "sroie_test_gt.jsonl", sorted((SROIE / "predictions").glob("*.jsonl"))),
}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, (gt, preds) in CORPORA.items():
        if not gt.exists():
            print(f"{name}: skipped ({gt} is absent)")
            continue
        command = [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt), "--metrics", "all",
                   "--json", str(out / f"{name}.json"), "--errors-csv", str(out / f"{name}_errors.csv")]
        for pred in preds:
            command += ["--pred", str(pred)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        (out / f"{name}_summary.txt").write_text(done.stdout)
        print(f"{name}: exit {done.returncode}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="folder for the reports (created)")
    main(parser.parse_args().out)
