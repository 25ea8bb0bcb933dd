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
ROOT = st.dictionaries(  # "prediction" alone is a wrapper key when every document has only it
    st.sampled_from(["company", "date", "total", "menu", "sub_total", "id", "prediction"]),
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


def _split(n: int, cuts: list[int]) -> list[slice]:
    bounds = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return [slice(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ROOT, ROOT), min_size=1, max_size=7), st.lists(st.integers(0, 7), max_size=4),
       st.integers(1, 4), st.booleans(), st.booleans())
def test_any_split_into_batches_and_blocks_equals_evaluate(tmp_path_factory, pairs, cuts, block, named,
                                                          single):
    """However the documents are split into updates (one document as two dicts, or lists)
    and however many are read at a time, compute() gives evaluate()'s report on the file."""
    tmp_path = tmp_path_factory.mktemp("acc")
    gt_docs, pred_docs = [g for g, _ in pairs], [p for _, p in pairs]
    ids = [f"doc-{i}" for i in range(len(pairs))] if named else [str(i) for i in range(len(pairs))]
    try:
        expected = _evaluate_files(tmp_path, ids, gt_docs, pred_docs)
    except KievalInputError as error:  # e.g. a wrapper key every document has, holding a list
        expected = error
    acc = Accumulator(block=block)
    try:
        for part in _split(len(pairs), cuts):
            if single and part.stop - part.start == 1:
                acc.update(gt_docs[part.start], pred_docs[part.start], ids[part.start] if named else None)
            else:
                acc.update(gt_docs[part], pred_docs[part], ids[part] if named else None)
        result = acc.compute()
    except KievalInputError as error:  # the same document refused for the same reason
        assert isinstance(expected, KievalInputError), error
        assert (error.where, error.problem) == (expected.where, expected.problem)
        return
    assert not isinstance(expected, Exception), expected
    assert _figures(result) == _figures(expected)
    assert acc.doc_ids() == ids


@pytest.mark.parametrize("block", [1, 2, 1000])
def test_wrapped_documents_are_unwrapped_only_when_every_one_is(tmp_path, block):
    """A structure key every document consists of alone is a wrapper, as in a file; once one
    document does not, it is content for all (blocks read before are read as content)."""
    wrapped = [{"gt_parse": {"total": "5"}}, {"gt_parse": {"total": "6"}}]
    acc = Accumulator(block=block)
    acc.update(wrapped, [{"gt_parse": {"total": "5"}}, {"gt_parse": {"total": "7"}}])
    assert acc.compute().models["model"].by_entity_type["entity_type"].tolist() == ["total"]
    acc.update({"gt_parse": {"total": "8"}, "id": "x"}, {"total": "8"})
    ids = ["0", "1", "2"]
    expected = _evaluate_files(tmp_path, ids, [*wrapped, {"gt_parse": {"total": "8"}, "id": "x"}],
                               [{"gt_parse": {"total": "5"}}, {"gt_parse": {"total": "7"}}, {"total": "8"}])
    assert _figures(acc.compute()) == _figures(expected)
    assert acc.compute().models["model"].by_entity_type["entity_type"].tolist() == [
        "gt_parse.total", "id", "total"]


def test_boxes_alternatives_and_metadata_across_blocks(tmp_path):
    """What a block's reader numbers or counts over the file (alternative sets, dropped boxes,
    metadata rows) comes out as the whole file's reader gives it."""
    gt = [{"date": {"any_of": ["01/02/2019", "1 Feb 2019"]}, "total": {"value": "5", "bbox": [1, 2, 3, 4]},
           "split": "a"},
          {"date": {"any_of": ["x", "y"]}, "total": {"value": "6", "bbox": [1, 2]}, "split": "b"},
          {"total": {"value": "7", "bbox": "bad"}},
          {"date": {"any_of": ["z", "1 Feb 2019"]}, "split": "a"}]
    pred = [{"date": "1 Feb 2019", "total": "5"},
            {"date": "y", "total": {"value": "6", "bbox": [0, 0, 1, 1]}}, {"total": "8"}, {"date": "z"}]
    options = LoadOptions(meta=("split",))
    ids = [f"r{i}" for i in range(len(gt))]
    expected = _evaluate_files(tmp_path, ids, gt, pred, load_options=options)
    for block in (1, 3):
        acc = Accumulator(load_options=options, block=block)
        for i in range(len(gt)):
            acc.update(gt[i], pred[i], ids[i])
        result = acc.compute()
        assert _figures(result) == _figures(expected)
        assert result.gt.entities.equals(expected.gt.entities)
        warnings = tuple(w.replace(str(tmp_path / "gt.json"), "ground truth (accumulated)")
                         for w in expected.gt.warnings)
        assert result.gt.meta.equals(expected.gt.meta) and result.gt.warnings == warnings
        assert "(1 more in this file)" in warnings[0]
        assert result.models["model"].error_list.equals(expected.models["model"].error_list)
    first, second = Accumulator(load_options=options, block=1), Accumulator(load_options=options, block=1)
    for i in range(len(gt)):  # without ids: the second worker's documents are renamed on merge
        (first if i < 1 else second).update(gt[i], pred[i])
    single = Accumulator(load_options=options)
    single.update(gt, pred)
    merged = first.merge(pickle.loads(pickle.dumps(second))).compute()
    assert _figures(merged) == _figures(single.compute())
    assert merged.gt.warnings == single.compute().gt.warnings
    assert merged.gt.meta.equals(single.compute().gt.meta)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(ROOT, ROOT), min_size=2, max_size=6), st.data())
def test_merged_workers_equal_one_accumulator(pairs, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(pairs)), min_size=1, max_size=3)))
    workers, start = [], 0
    for cut in [*cuts, len(pairs)]:
        worker = Accumulator(block=data.draw(st.integers(1, 3)))
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
    try:
        expected = _figures(single.compute())
    except KievalInputError as error:  # a wrapper key every document has, holding no object
        with pytest.raises(KievalInputError) as caught:
            merged.compute()
        assert (caught.value.where, caught.value.problem) == (error.where, error.problem)
        return
    assert _figures(merged.compute()) == expected


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
    with pytest.raises(KievalInputError, match="'0' was given explicitly"):
        clash.update({"a": "1"}, {"a": "1"}, doc_ids="0")
    clash.update([{"a": "1"}], [{"a": "1"}], doc_ids=["2"])  # at position 1
    with pytest.raises(KievalInputError, match="'2' was given explicitly"):
        clash.update({}, {})  # position 2
    assert clash.doc_ids() == ["0", "2"]
    named = Accumulator()
    named.update({"a": "1"}, {"a": "1"}, doc_ids="1")
    with pytest.raises(KievalInputError, match="'1' was given explicitly"):
        named.update([{}, {}], [{}, {}])
    worker = Accumulator()
    worker.update({"a": "1"}, {"a": "1"})
    with pytest.raises(KievalInputError, match="'1' was given explicitly"):
        named.merge(worker)
    bad_conf = Accumulator()
    bad_conf.update({"a": "1"}, {"a": {"value": "1", "confidence": 1.5}})
    with pytest.raises(KievalInputError, match="outside"):
        bad_conf.compute()
    with pytest.raises(KievalInputError, match="no documents"):
        Accumulator().compute()
    with pytest.raises(KievalOptionError, match="block must be a whole number of documents >= 1, got 0"):
        Accumulator(block=0)
