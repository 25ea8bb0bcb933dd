"""Work bounded per item (issue 33, N2 and N10): long values cost a length check, not a
quadratic comparison or a parse of the whole value.

The near-miss test is checked against the brute force (rapidfuzz's similarity without
bounds); the CLI is run on the red team's inputs (300,000-character substitutions, 400 KB
"date" values) under an 8 GB address-space limit.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from kieval_app.diff import diff_html
from kieval_core.count.alignment import DIFF_CHARS, differences
from kieval_core.count.causes import substitution_causes
from kieval_core.count.comparators import PARSED_CHARS, canonicalise
from kieval_core.count.similarity import near_misses, similarity_bound

from .commands import kieval_command

THRESHOLDS = st.sampled_from([0.0, 0.5, 2 / 3, 0.75, 0.8, 0.8 + 1e-12, 0.9, 1.0])
TEXT = st.text(alphabet="abc ", max_size=14)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6), THRESHOLDS)
def test_near_misses_agree_with_the_brute_force(pairs, threshold):
    gt, pred = zip(*pairs, strict=True)
    brute = [Levenshtein.normalized_similarity(a, b) >= threshold for a, b in pairs]
    assert near_misses(gt, pred, threshold).tolist() == brute


@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT)
def test_the_length_bound_is_an_upper_bound_reached_by_a_prefix(a, b):
    bound = similarity_bound(np.array([len(a)]), np.array([len(b)]))[0]
    assert Levenshtein.normalized_similarity(a, b) <= bound
    short, long = sorted((a, b), key=len)
    assert Levenshtein.normalized_similarity(long[:len(short)], long) == bound


def test_the_bound_holds_at_the_threshold_itself():
    # 4 of 5 characters: similarity exactly 0.8, a near miss at 0.8, not above it
    assert near_misses(["abcd"], ["abcde"], 0.8).tolist() == [True]
    assert near_misses(["abcd"], ["abcde"], 0.8 + 1e-12).tolist() == [False]
    assert near_misses(["abc"], ["abcde"], 0.8).tolist() == [False]


def _value(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghij ") for _ in range(n))


def test_a_pair_of_long_values_costs_little():
    a, b = _value(300_000, 1), _value(300_000, 2)
    near = a[:150_000] + "x" * 3_000 + a[153_000:]
    started = time.perf_counter()
    assert near_misses([a, a, a], [b, near, a[:100]], 0.8).tolist() == [False, True, False]
    assert time.perf_counter() - started < 3  # unbounded: ~3 s per pair


def test_numbers_and_dates_are_parsed_only_in_values_of_plausible_length():
    date = "01 Feb 2019"
    padded = date + " " * (PARSED_CHARS - len(date))
    long_date = date + " " * (PARSED_CHARS + 1 - len(date))
    for comparator in ("date", "date:mdy", "date:ymd"):
        forms, parsed = canonicalise(comparator, [padded, long_date])
        assert parsed.tolist() == [True, False], comparator
    forms, parsed = canonicalise("number", ["1" * PARSED_CHARS, "1" * (PARSED_CHARS + 1)])
    assert parsed.tolist() == [True, False]
    started = time.perf_counter()
    huge = "01 Feb 2019 " * 34_000
    assert substitution_causes([huge], [huge[:-3]]).tolist() == ["near_miss"]
    assert time.perf_counter() - started < 3  # unbounded: ~60 s in dateutil


def test_the_character_diff_shows_the_first_part_and_says_so():
    gt, pred = _value(300_000, 3), _value(300_000, 4)
    started = time.perf_counter()
    parts = differences(gt, pred)
    left, right = diff_html(gt, pred)
    assert time.perf_counter() - started < 3  # unbounded: a 300,000 x 300,000 alignment
    assert parts[-1] == ("beyond", gt[DIFF_CHARS:], pred[DIFF_CHARS:])
    assert "".join(a for tag, a, _ in parts[:-1]) == gt[:DIFF_CHARS]
    assert f"{300_000 - DIFF_CHARS:,} more characters, not compared" in left
    assert f"{300_000 - DIFF_CHARS:,} more characters, not compared" in right
    assert differences("abc", "abd")[-1][0] != "beyond"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (8_000_000 * 1024, 8_000_000 * 1024))


def _write(path: Path, key: str, fields: dict[str, str]) -> Path:
    path.write_text(json.dumps({"doc_id": "d1", key: {k: {"value": v} for k, v in fields.items()}}) + "\n")
    return path


def run_bounded(args: list[str], timeout: float = 30) -> tuple[subprocess.CompletedProcess, float]:
    """The CLI under ``ulimit -v 8000000``; the result and its wall time."""
    started = time.perf_counter()
    done = subprocess.run([kieval_command(), *args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_limit_memory, check=False)
    return done, time.perf_counter() - started


@pytest.mark.skipif(sys.platform != "linux", reason="address-space limit")
@pytest.mark.parametrize("compare", [[], ["--compare", "date=date"]])
def test_the_cli_on_long_values_ends_within_30_s(tmp_path, compare):
    long = {k: _value(300_000, i) for i, k in enumerate("abc")}
    dates = {"date": "01 Feb 2019 " * 34_000}
    cases = {
        "n2": (long, {k: _value(300_000, 10 + i) for i, k in enumerate("abc")}),
        "n10": (dates, {"date": dates["date"][:-5] + "x"}),
    }
    for name, (gt, pred) in cases.items():
        done, seconds = run_bounded(["evaluate", "--gt", str(_write(tmp_path / f"{name}_gt.jsonl", "gt_parse", gt)),
                                     "--pred", str(_write(tmp_path / f"{name}_pred.jsonl", "prediction", pred)),
                                     "--json", str(tmp_path / f"{name}.json"),
                                     *compare])
        assert done.returncode == 0, done.stderr
        assert "MemoryError" not in done.stderr
        assert seconds < 30, (name, seconds)
