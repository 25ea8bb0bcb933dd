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
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import menu_document
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from kieval_core.count.alignment import DIFF_CHARS, differences
from kieval_core.count.causes import substitution_causes
from kieval_core.count.comparators import PARSED_CHARS, canonicalise
from kieval_core.count.similarity import near_misses, similarity_bound
from kieval_core.figures.diff import diff_html
from kieval_core.limits import BYTES_PER_ENTITY, LimitExceeded, Limits
from kieval_core.read.formats import LoadOptions, load_bytes, load_estimate
from kieval_core.read.load import load

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
        files = ["--gt", str(_write(tmp_path / f"{name}_gt.jsonl", "gt_parse", gt)),
                 "--pred", str(_write(tmp_path / f"{name}_pred.jsonl", "prediction", pred)), *compare]
        done, seconds = run_bounded(["evaluate", *files])  # the default limits: refused by name
        assert done.returncode == 2 and "above the limit of 100,000 characters" in done.stderr, done.stderr
        done, seconds = run_bounded(["evaluate", *files, "--max-value-chars", "1000000",
                                     "--json", str(tmp_path / f"{name}.json")])  # raised: scored
        assert done.returncode == 0, done.stderr
        assert "MemoryError" not in done.stderr
        assert seconds < 30, (name, seconds)


# --- the cost of scoring an input, from a scan before the work (N8, N7) ---------------------


@pytest.mark.skipif(sys.platform != "linux", reason="address-space limit")
@pytest.mark.parametrize("lines", [5_000, 25_000])
def test_a_document_too_large_to_match_is_refused_by_name_before_matching(tmp_path, lines):
    gt = menu_document(tmp_path / "gt.jsonl", "gt_parse", lines)
    pred = menu_document(tmp_path / "pred.jsonl", "prediction", lines)
    done, seconds = run_bounded(["evaluate", "--gt", str(gt), "--pred", str(pred)])
    assert done.returncode == 2, done.stderr
    assert "MemoryError" not in done.stderr and "out of memory" not in done.stderr
    assert (f"gt.jsonl, document 'big': {lines:,} groups of type 'menu' (matching them costs their number "
            "squared) is above the limit of 2,000 groups (raise it with --max-groups-per-doc or "
            "KIEVAL_MAX_GROUPS_PER_DOC)") in done.stderr
    assert seconds < 30  # before: 28 s and 3.9 GiB at 5,000 lines, out of memory at 25,000


def test_a_long_value_is_refused_by_name(tmp_path):
    gt = _write(tmp_path / "gt.jsonl", "gt_parse", {"a": "x", "b": "y" * 100_001})
    with pytest.raises(LimitExceeded) as info:
        load(gt, LoadOptions())
    assert str(info.value) == (f"{gt}, document 'd1': 100,001 characters in a value of 'b' is above the "
                               "limit of 100,000 characters (raise it with --max-value-chars or "
                               "KIEVAL_MAX_VALUE_CHARS)")
    app = Limits.defaults("app")
    assert (app.value_chars, app.groups_per_doc) == (10_000, 1_000)
    with pytest.raises(LimitExceeded, match="10,001 characters"):
        load_bytes((tmp_path / "gt.jsonl").read_bytes().replace(b"y" * 100_001, b"y" * 10_001), "gt.jsonl",
                   LoadOptions(limits=app))
    assert load(gt, LoadOptions(limits=replace(Limits.defaults("cli"), value_chars=100_001))).n_entities == 2


def test_a_dense_table_is_estimated_by_its_lines():
    lines = b"".join(b"d%d,e%d,%d\n" % (i // 20, i % 20, i % 999) for i in range(200_000))
    dense = b"doc_id,entity,value\n" + lines
    assert load_estimate(dense, "dense.csv") >= 200_000 * BYTES_PER_ENTITY  # before: 5 a byte, 4.4x less
    assert load_estimate(dense, "dense.jsonl") == 5 * len(dense)  # nested JSON: by its bytes


def test_a_dataset_built_in_python_is_checked_too():
    from kieval_core import evaluate

    gt = load_bytes(_menu_line_bytes("gt_parse", 2_001), "gt.jsonl", LoadOptions(
        limits=replace(Limits.defaults("cli"), groups_per_doc=5_000)))
    with pytest.raises(LimitExceeded, match="2,001 groups of type 'menu'"):
        evaluate(gt, {"same": gt})


def _menu_line_bytes(key: str, lines: int) -> bytes:
    menu = [{"nm": {"value": f"ITEM {i}"}} for i in range(lines)]
    return (json.dumps({"doc_id": "big", key: {"menu": menu}}) + "\n").encode()


@pytest.mark.skipif(sys.platform != "linux", reason="address-space limit")
def test_many_values_of_one_type_in_one_group_are_refused_by_name(tmp_path):
    """5,000 wrong values of one type outside any group: their pairing took 26 s and 3.3 GiB."""
    for side, letter in (("gt", "A"), ("pred", "B")):
        rows = "".join(f"d,item,{letter}{i}\n" for i in range(5_000))
        (tmp_path / f"{side}.csv").write_text("doc_id,entity,value\n" + rows)
    done, seconds = run_bounded(["evaluate", "--gt", str(tmp_path / "gt.csv"),
                                 "--pred", str(tmp_path / "pred.csv")])
    assert done.returncode == 2 and seconds < 30
    assert ("gt.csv, document 'd': 5,000 values of 'item' outside any group (pairing them costs their number "
            "squared) is above the limit of 2,000 values (raise it with --max-values-per-group or "
            "KIEVAL_MAX_VALUES_PER_GROUP)") in done.stderr
    lines = [{"nm": {"value": "x"}, "sub": [{"nm": {"value": f"s{i}"}} for i in range(3)]}]
    grouped = {"doc_id": "d", "gt_parse": {"menu": [{"nm": {"value": f"v{i}"}} for i in range(3)] + lines}}
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(grouped) + "\n")
    with pytest.raises(LimitExceeded, match="3 values of 'menu.sub.nm' in one 'menu' group"):
        load(path, LoadOptions(limits=replace(Limits.defaults("cli"), values_per_group=1)))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["d1", "d2", None]), st.sampled_from(["", "menu", None]),
                          st.integers(-1, 3), st.sampled_from(["a", "b", None])), min_size=1, max_size=40),
       st.booleans())
def test_the_most_values_of_a_cell_equal_the_groupby_that_names_them(rows, categorical):
    """The packed integer key counts what the groupby of the limit's message counts (rows
    with a missing key left out), whether the columns are text or categorical; so does the
    count per document checked first."""
    from kieval_core.read.formats import CELL_KEYS, _most_rows

    frame = pd.DataFrame(rows, columns=list(CELL_KEYS))
    if categorical:
        frame = frame.astype({c: "category" for c in ("doc_id", "group_type", "entity_type")})
    for keys in (CELL_KEYS, ("doc_id",)):  # a cell, and the bound every cell of a document is under
        sizes = frame.groupby(list(keys), sort=False, observed=True).size()
        assert _most_rows(frame, keys) == (int(sizes.max()) if len(sizes) else None)
