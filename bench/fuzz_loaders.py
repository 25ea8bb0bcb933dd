"""Coverage-guided fuzzing of every loader and the evaluate path with atheris.

Any input must end in a result or in ``KievalInputError``; anything else is a finding.
The first bytes choose the file name (and so the format); the rest is the content. A
successful load is evaluated against itself, which must give zero corrections.

Usage (atheris is a development tool, not a test dependency)::

    pip install atheris
    python bench/fuzz_loaders.py -atheris_runs=200000 bench/fuzz/corpus

Crashing inputs are written by libFuzzer as ``crash-*`` files; copy them into
``tests/fuzz_regressions/`` where ``tests/test_fuzz.py`` replays them.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from kieval_core import KievalInputError, evaluate, load_bytes

NAMES = ["f.jsonl", "f.json", "f.csv", "f.tsv", "f.parquet", "f.zip", "f.bio", "f"]


def one_input(data: bytes) -> None:
    if not data:
        return
    name = NAMES[data[0] % len(NAMES)]
    try:
        dataset = load_bytes(data[1:], name)
    except KievalInputError:
        return
    model = evaluate(dataset, {"same": dataset}).models["same"]
    if model.corrections.total:
        raise AssertionError("a dataset evaluated against itself needs corrections")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
