"""Normalisers: hand-worked values, idempotence, and their effect through the CLI."""

from __future__ import annotations

import json

import pytest
from builders import write_jsonl
from hypothesis import given
from hypothesis import strategies as st

from kieval_core import Normalizer
from kieval_core.cli import main


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
