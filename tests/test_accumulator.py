"""The training-loop accumulator gives what evaluate() gives on the same documents."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import (
    DecisionOptions,
    KievalInputError,
    KievalOptionError,
    LoadOptions,
    evaluate,
    render_report,
)
from kieval_core.accumulator import Accumulator

DECISIONS = DecisionOptions(target=0.8, resamples=20)
#: The report's sections that hold figures (not where the inputs came from).
NOT_FIGURES = ("source", "inputs", "warnings")

TEXT = st.sampled_from(["1", "2", "10", "A", "B", "x y", "", " ", "Tea"])
SCALAR = st.one_of(TEXT, st.sampled_from([5, 10, 1.5, 2.25, 1e16, -0.0, True, None]))
CONF = st.sampled_from([0.1, 0.3, 0.5, 0.8, 0.95, 1.0, 1])
LEAF = st.one_of(SCALAR, st.lists(TEXT, max_size=2),
                 st.builds(lambda v, c: {"value": v, "confidence": c}, SCALAR, CONF),
                 st.builds(lambda v: {"value": v}, TEXT))
GROUP = st.dictionaries(st.sampled_from(["nm", "cnt", "price", "sub"]), LEAF, max_size=3)
ROOT = st.dictionaries(
    st.sampled_from(["company", "date", "total", "menu", "sub_total", "id"]),
    st.one_of(LEAF, GROUP, st.lists(GROUP, max_size=3)),
    max_size=4,
)


def _figures(result) -> str:
    """A model's report without the keys that name where its inputs came from, as JSON text."""
    report = json.loads(render_report(result, DECISIONS).text)
    ((name, model),) = report["models"].items()
    return json.dumps({k: v for k, v in model.items() if k not in NOT_FIGURES}, indent=1)


def _evaluate_files(tmp_path, ids, gt_docs, pred_docs, **options):
    """evaluate() on the documents written as ``{doc_id: document}`` files."""
    gt_file, pred_file = tmp_path / "gt.json", tmp_path / "model.json"
    for path, docs in ((gt_file, gt_docs), (pred_file, pred_docs)):
        path.write_text(json.dumps(dict(zip(ids, docs, strict=True)), indent=1, ensure_ascii=False), "utf-8")
    return evaluate(gt_file, {"model": pred_file}, **options)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(ROOT, ROOT), min_size=1, max_size=5), st.integers(1, 3), st.booleans())
def test_compute_equals_evaluate_on_the_same_documents(tmp_path_factory, pairs, batch, named):
    tmp_path = tmp_path_factory.mktemp("acc")
    gt_docs, pred_docs = [g for g, _ in pairs], [p for _, p in pairs]
    ids = [f"doc-{i}" for i in range(len(pairs))] if named else [str(i) for i in range(len(pairs))]
    acc = Accumulator()
    for start in range(0, len(pairs), batch):
        chunk = slice(start, start + batch)
        if batch == 1:
            acc.update(gt_docs[start], pred_docs[start], ids[start] if named else None)
        else:
            acc.update(gt_docs[chunk], pred_docs[chunk], ids[chunk] if named else None)
    expected = _evaluate_files(tmp_path, ids, gt_docs, pred_docs)
    assert _figures(acc.compute()) == _figures(expected)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(ROOT, ROOT), min_size=2, max_size=6), st.data())
def test_merged_workers_equal_one_accumulator(pairs, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(pairs)), min_size=1, max_size=3)))
    workers, start = [], 0
    for cut in [*cuts, len(pairs)]:
        worker = Accumulator()
        for gt, pred in pairs[start:cut]:
            worker.update(gt, pred)
        workers.append(pickle.loads(pickle.dumps(worker)))  # as all_gather_object carries them
        start = max(start, cut)
    merged = workers[0]
    for worker in workers[1:]:
        merged.merge(worker)
    single = Accumulator()
    single.update([g for g, _ in pairs], [p for _, p in pairs])
    assert len(merged) == len(pairs)
    assert _figures(merged.compute()) == _figures(single.compute())


def test_a_worked_receipt_and_numpy_numbers():
    gt = {"company": "ACME", "menu": [{"nm": "A", "price": "100"}, {"nm": "B", "price": "200"}]}
    pred = {"company": {"value": "ACME", "confidence": np.float32(0.5)},
            "menu": [{"nm": "B", "price": np.int64(200)}, {"nm": "A", "price": "150"}]}
    acc = Accumulator("donut")
    acc.update(gt, pred, doc_ids="r1")
    model = acc.compute().models["donut"]
    assert (model.entity.tp, model.entity.fp, model.entity.fn) == (4, 1, 1)
    assert model.corrections.substitution == 1 and model.group.tp == 1
    assert model.doc_ids == ("r1",)
    review = model.review  # a missing confidence is never automated (SPEC 4c): below every τ
    assert 0.5 in review.confidence and np.isneginf(review.confidence[~review.has_confidence]).all()


def test_reading_options_apply_to_the_documents():
    options = LoadOptions(format="jsonl", aliases=(("subtotal", "sub_total"),), meta=("split",))
    acc = Accumulator(load_options=options)
    acc.update({"sub_total": "5", "split": "val"}, {"subtotal": "5", "split": "val"}, doc_ids="a")
    model = acc.compute().models["model"]
    assert acc.load_options.format == "json" and acc.load_options.limits == options.limits
    assert model.entity.tp == 1 and model.entity.fp == 0  # renamed, and the metadata key is not scored
    assert model.slice_labels("split").tolist() == ["val"]


def test_reset_and_the_peer_families():
    acc = Accumulator(metrics="anls_star")
    acc.update({"a": "x"}, {"a": "y"})
    acc.reset()
    acc.update({"a": "x"}, {"a": "x"})
    model = acc.compute().models["model"]
    assert model.aligned == 1.0 and model.peer["anls_star"].figures["anls_star"] == 1.0


@pytest.mark.parametrize(
    ("gt", "pred", "message"),
    [
        ("not a dict", {}, "must be a dict (one document) or a list of dicts (a batch), got str"),
        ({}, None, "must be a dict (one document) or a list of dicts (a batch), got None"),
        ([{}, {}], [{}], "a batch of 2 ground-truth documents and 1 predictions"),
        ([{}, "x"], [{}, {}], "item 1 of the batch: "
         "the ground truth must be a JSON object (a dict), got str"),
        ({}, [{}], "give one document as two dicts, or a batch as two lists of dicts"),
    ],
)
def test_bad_input_gives_one_clear_error(gt, pred, message):
    acc = Accumulator()
    with pytest.raises(KievalInputError, match="accumulated") as caught:
        acc.update(gt, pred)
    assert message in str(caught.value)
    assert len(acc) == 0


def test_bad_ids_and_content_are_named():
    acc = Accumulator()
    acc.update({"a": "1"}, {"a": "1"}, doc_ids="x")
    with pytest.raises(KievalInputError, match="'x' was already given"):
        acc.update({"a": "1"}, {"a": "1"}, doc_ids="x")
    with pytest.raises(KievalOptionError, match="1 document id"):
        acc.update([{}, {}], [{}, {}], doc_ids="ab")
    other = Accumulator()
    other.update({"a": "1"}, {"a": "1"}, doc_ids="x")
    with pytest.raises(KievalInputError, match="'x' was already given"):
        acc.merge(other)
    with pytest.raises(KievalOptionError, match="evaluate differently"):
        acc.merge(Accumulator("other"))
    acc.update({"a": "1"}, {"a": {1, 2}})
    with pytest.raises(KievalInputError, match=r"document '1' \(update 1\): a set is not JSON"):
        acc.compute()
    clash = Accumulator()
    clash.update({"a": "1"}, {"a": "1"})
    clash.update({"a": "1"}, {"a": "1"}, doc_ids="0")
    with pytest.raises(KievalInputError, match="'0' was given explicitly"):
        clash.compute()
    bad_conf = Accumulator()
    bad_conf.update({"a": "1"}, {"a": {"value": "1", "confidence": 1.5}})
    with pytest.raises(KievalInputError, match="outside"):
        bad_conf.compute()
    with pytest.raises(KievalInputError, match="no documents"):
        Accumulator().compute()
