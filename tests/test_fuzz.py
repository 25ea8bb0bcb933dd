"""Fuzzing the loaders and the evaluate path: any input ends in a result or in the
project's input error, never another exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kieval_core import KievalInputError, evaluate, load_bytes

NAMES = st.sampled_from(["f.jsonl", "f.json", "f.csv", "f.tsv", "f.parquet", "f.zip", "f.txt", "f"])

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["doc_id", "value", "confidence", "menu", "nm", "fields",
                                       "gt_parse", "id", "valid_line", "words", "text",
                                       "category", "group_id", "a.b", "field_confidence"]),
                      children, max_size=5),
    max_leaves=20,
)


def _load_or_input_error(data: bytes, name: str):
    try:
        return load_bytes(data, name)
    except KievalInputError as exc:
        assert str(exc).startswith(name)
        return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), NAMES)
def test_any_bytes(data, name):
    _load_or_input_error(data, name)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(JSON_VALUES, min_size=1, max_size=4), st.sampled_from(["f.jsonl", "f.json"]))
def test_any_json_values(values, name):
    if name.endswith(".jsonl"):
        data = "\n".join(json.dumps(v) for v in values).encode()
    else:
        data = json.dumps(values[0] if len(values) == 1 else values).encode()
    dataset = _load_or_input_error(data, name)
    if dataset is not None:  # whatever loads must also evaluate against itself
        model = evaluate(dataset, {"same": dataset}).models["same"]
        assert model.corrections.total == 0


CSV_CELLS = st.text(alphabet=st.sampled_from(list('ab1.,;"\t\n ')), max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CSV_CELLS, min_size=1, max_size=6), min_size=1, max_size=6),
       st.booleans())
def test_any_csv(rows, with_header):
    header = ["doc_id,entity,value,group,confidence"] if with_header else []
    data = "\n".join(header + [",".join(r) for r in rows]).encode()
    dataset = _load_or_input_error(data, "f.csv")
    if dataset is not None:
        evaluate(dataset, {"same": dataset})


RECORDS = st.lists(
    st.fixed_dictionaries({"doc_id": st.text(min_size=1, max_size=3)},
                          optional={"fields": JSON_VALUES, "field_confidence": JSON_VALUES,
                                    "menu": JSON_VALUES, "x": JSON_VALUES}),
    min_size=1, max_size=4,
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS, RECORDS)
def test_structured_records_evaluate(gt_records, pred_records):
    """Near-valid JSONL on both sides: loading and scoring never crash, and scores are
    fractions."""
    def data(records):
        return "\n".join(json.dumps(r) for r in records).encode()

    gt = _load_or_input_error(data(gt_records), "gt.jsonl")
    pred = _load_or_input_error(data(pred_records), "pred.jsonl")
    if gt is None or pred is None:
        return
    try:
        model = evaluate(gt, {"pred": pred}).models["pred"]
    except KievalInputError as exc:  # e.g. no document in common
        assert str(exc).startswith("pred.jsonl")
        return
    for value in (model.entity.f1, model.aligned, model.entity_f1.f1):
        assert 0.0 <= value <= 1.0
    curve = model.curve
    assert curve["kieval_aligned"].between(0, 1).all()


REGRESSIONS = sorted((Path(__file__).parent / "fuzz_regressions").glob("*"))
FUZZ_NAMES = ["f.jsonl", "f.json", "f.csv", "f.tsv", "f.parquet", "f.zip", "f.bio", "f"]


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_fuzz_regressions(path):
    """Inputs found by bench/fuzz_loaders.py (first byte picks the file name)."""
    data = path.read_bytes()
    dataset = _load_or_input_error(data[1:], FUZZ_NAMES[data[0] % len(FUZZ_NAMES)])
    if dataset is not None:
        assert evaluate(dataset, {"same": dataset}).models["same"].corrections.total == 0
