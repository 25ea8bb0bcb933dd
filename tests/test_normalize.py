"""Normalisers: hand-worked values, idempotence, and their effect through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from builders import write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import Normalizer
from kieval_core.cli import main
from kieval_core.count.normalize import text_codes


@pytest.mark.parametrize(("normalizer", "raw", "expected"), [
    (Normalizer(), "  Ice \t Tea\n", "Ice Tea"),
    (Normalizer(), "Cafe\u0301", "Caf\u00e9"),  # NFC
    (Normalizer(), "7000", "7000"),
    (Normalizer(casefold=True), "STRASSE Stra\u00dfe", "strasse strasse"),
    (Normalizer(number_punctuation=True), "45,500", "45500"),
    (Normalizer(number_punctuation=True), "45.500", "45500"),
    (Normalizer(number_punctuation=True), "@28,000", "@28000"),
    (Normalizer(number_punctuation=True), "Rp 45,500", "Rp 45,500"),
    (Normalizer(number_punctuation=True), "1X", "1X"),
])
def test_hand_worked(normalizer, raw, expected):
    assert normalizer(raw) == expected


@given(st.text(max_size=20), st.booleans(), st.booleans())
def test_idempotent(text, casefold, numbers):
    normalizer = Normalizer(casefold=casefold, number_punctuation=numbers)
    once = normalizer(text)
    assert normalizer(once) == once


def test_unknown_option():
    with pytest.raises(ValueError, match="unknown normaliser"):
        Normalizer.from_names("lowercase")


def test_cli_normalize_option(tmp_path):
    gt = write_jsonl(tmp_path / "gt.jsonl",
                     [{"doc_id": "a", "gt_parse": {"total": "45,500", "store": "ACME"}}])
    pred = write_jsonl(tmp_path / "p.jsonl",
                       [{"doc_id": "a", "prediction": {"total": "45500", "store": "Acme"}}])
    scores = {}
    for option in ("default", "numbers", "casefold,numbers"):
        out = tmp_path / f"{option}.json"
        assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--normalize", option,
                     "--json", str(out)]) == 0
        scores[option] = json.loads(out.read_text())["models"]["p"]["kieval"]["entity"]["tp"]
    assert scores == {"default": 0, "numbers": 1, "casefold,numbers": 2}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.sampled_from("ab é\u0301"), max_size=3), max_size=20))
def test_text_codes_are_pandas_factorize_for_every_kind_of_text_column(values):
    """Arrow-backed text (encoded by Arrow), a categorical and plain objects give the codes
    and distinct values of ``pd.factorize``."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=False)
    arrow = pd.concat([pd.Series(values[:3], dtype="string[pyarrow]"),
                       pd.Series(values[3:], dtype="string[pyarrow]")], ignore_index=True)  # two chunks
    for column in (arrow, pd.Categorical(values), np.asarray(values, dtype=object)):
        got_codes, got_uniques = text_codes(column)
        assert got_codes.tolist() == codes.tolist() and got_uniques.tolist() == list(uniques)
