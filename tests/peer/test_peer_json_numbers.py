"""ANLS* and nTED on files with JSON numbers agree with anls-star and Donut's evaluator fed
with what ``json.load`` reads from the same files (SPEC 5, last paragraph); KIEval keeps
the JSON text (SPEC 1)."""

import json
import warnings

import donut_reference as donut
import pytest
from anls_star import anls_score
from builders import json_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kieval_core import evaluate
from kieval_core.read.formats.jsontext import JsonNumber  # a bare number in a test file

#: Number texts whose json.load value is written differently (1.50 -> 1.5, 1e3 -> 1000.0).
NUMBERS = ["1.50", "1.5", "30000", "1e3", "1000.0", "-0.0", "2.0", "10", "0.10", "-7"]


def write(path, documents: dict) -> list[str]:
    lines = [json_text({"doc_id": doc_id, "fields": fields}) for doc_id, fields in documents.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def scores(tmp_path, gt: dict, pred: dict):
    """Our per-document ANLS* and nTED and the references' on json.load of the same lines."""
    gt_lines, pred_lines = write(tmp_path / "gt.jsonl", gt), write(tmp_path / "p.jsonl", pred)
    model = evaluate(tmp_path / "gt.jsonl", {"p": tmp_path / "p.jsonl"},
                     metrics=["anls_star", "nted"]).models["p"]
    ours = model.documents.set_index("doc_id")
    gt_read = {r["doc_id"]: r["fields"] for r in map(json.loads, gt_lines)}
    pred_read = {r["doc_id"]: r["fields"] for r in map(json.loads, pred_lines)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anls = {d: anls_score(gt_read[d], pred_read.get(d, {})) for d in gt_read}
        nted = {d: donut.cal_acc(pred_read.get(d, {}), gt_read[d]) for d in gt_read}
    return model, ours, anls, nted


def test_a_json_number_reaches_the_peer_metrics_as_json_load_reads_it(tmp_path):
    gt = {"d": {"tax": JsonNumber("1.50"), "total": "10"}}
    pred = {"d": {"tax": "1.5", "total": "10"}}
    model, ours, anls, nted = scores(tmp_path, gt, pred)
    assert anls["d"] == 1.0 and nted["d"] == 1.0  # the references see 1.5 on both sides
    assert ours.loc["d", "anls_star"] == 1.0 and ours.loc["d", "nted"] == 1.0
    assert model.entity.tp == 1 and model.corrections.substitution == 1  # KIEval: "1.50" != "1.5"


scalars = st.one_of(st.sampled_from(NUMBERS).map(JsonNumber),
                    st.sampled_from(["1.5", "1.50", "10", "ab", ""]))
fields = st.dictionaries(
    st.sampled_from(["tax", "total", "menu"]),
    st.one_of(scalars, st.lists(st.dictionaries(st.sampled_from(["nm", "price"]), scalars, min_size=1,
                                                max_size=2), min_size=1, max_size=3)),
    max_size=3,
)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(fields, fields), min_size=1, max_size=3))
def test_files_with_json_numbers_agree_with_the_references(tmp_path, pairs):
    gt = {f"d{i}": g for i, (g, _) in enumerate(pairs)}
    pred = {f"d{i}": p for i, (_, p) in enumerate(pairs)}
    _, ours, anls, nted = scores(tmp_path, gt, pred)
    for doc_id in gt:
        assert ours.loc[doc_id, "anls_star"] == pytest.approx(anls[doc_id], abs=1e-9)
        if donut.normalize_dict(json.loads(json_text(gt[doc_id]))):  # Donut divides by zero otherwise
            assert ours.loc[doc_id, "nted"] == pytest.approx(nted[doc_id], abs=1e-9)
