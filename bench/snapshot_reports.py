"""Write the JSON reports, error lists and saved runs of the sample, the official sample,
SROIE and a generated corpus.

``python bench/snapshot_reports.py OUT_DIR`` runs ``kieval evaluate --metrics all
--save-run`` on each corpus; ``diff -r BEFORE AFTER`` then shows which figures a change
moved. SROIE is read from ``../shared/data`` and skipped when absent; the generated corpus
(``bench_core.generate``: 2,000 receipts with menu groups, seeded) is written to
``bench/out/snapshot_inputs`` (the same path for both snapshots of one checkout, since the
report names its inputs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "out" / "snapshot_inputs"
SAMPLE = HERE.parent / "sample_data"
SROIE = HERE.parent.parent / "shared" / "data" / "sroie"
if not SROIE.exists():
    SROIE = Path("/work/shared/data/sroie")

CORPORA = {
    "sample": (SAMPLE / "cord_v2_gt.jsonl", sorted(SAMPLE.glob("sim_*.jsonl"))),
    "official": (SAMPLE / "kieval_official_cord" / "gt_csv", [SAMPLE / "kieval_official_cord" / "pred_csv"]),
    "sroie": (SROIE / "sroie_test_gt.jsonl", sorted((SROIE / "predictions").glob("*.jsonl"))),
    "generated": (GENERATED / "gt.csv", [GENERATED / "pred.csv"]),
}


def write_generated() -> None:
    from bench_core import generate

    GENERATED.mkdir(parents=True, exist_ok=True)
    gt, pred = generate(2_000, seed=7)
    gt.to_csv(GENERATED / "gt.csv", index=False)
    pred.to_csv(GENERATED / "pred.csv", index=False)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_generated()
    for name, (gt, preds) in CORPORA.items():
        if not gt.exists():
            print(f"{name}: skipped ({gt} is absent)")
            continue
        command = [sys.executable, "-m", "kieval_core.cli", "evaluate", "--gt", str(gt), "--metrics", "all",
                   "--json", str(out / f"{name}.json"), "--errors-csv", str(out / f"{name}_errors.csv"),
                   "--save-run", str(out / f"{name}_run")]
        for pred in preds:
            command += ["--pred", str(pred)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        (out / f"{name}_summary.txt").write_text(done.stdout)
        print(f"{name}: exit {done.returncode}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="folder for the reports (created)")
    main(parser.parse_args().out)
