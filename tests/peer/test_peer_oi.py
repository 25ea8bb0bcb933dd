"""Reading-order-independent metrics: hand-worked values, properties, ie-eval agreement."""

import logging
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ie_eval_reference import ie_eval_scores, tagged_words

from kieval_core.count.peer.oi import Detection, oi_metrics

logging.disable(logging.INFO)  # ie-eval configures INFO logging on import
from ie_eval.scorer import BagOfWords, MicroAverageErrorRate, OiEcerEwer, OiNerval  # noqa: E402


def test_hand_worked_document():
    gt = [("name", "Anna Smith"), ("date", "1890")]
    pred = [("date", "1891"), ("name", "Ana Smith")]
    result = oi_metrics([(gt, pred)])
    # name: 1 char of 10, 1 word of 2; date: 1 char of 4, 1 word of 1
    assert result.oiecer.errors == pytest.approx(0.1 + 0.25)
    assert result.oiecer.rate == pytest.approx(0.35 / 2)
    assert result.oiewer.rate == pytest.approx((0.5 + 1.0) / 2)
    assert result.oinerval == Detection(2, 0, 0)
    # tagged words: (name, Smith) is the only one in both bags
    assert (result.bag_of_tagged_words.tp, result.bag_of_tagged_words.fp) == (1, 2)
    assert result.bag_of_tagged_words.errors == 2
    assert result.bag_of_entities == result.bag_of_entities.__class__(0, 2, 2, 2)


def test_category_mismatch_costs_one_and_per_category_scores_alone():
    result = oi_metrics([([("A", "x")], [("B", "x")])])
    assert result.oiecer.rate == 1.0
    assert result.oinerval == Detection(0, 1, 1)
    categories = result.categories
    assert categories.loc["A", "ecer_errors"] == 1.0  # GT entity of A left unpaired
    assert categories.loc["B", "ecer_errors"] == 1.0  # prediction of B left unpaired
    assert math.isnan(categories.loc["B", "oiecer"])  # no GT entity of B
    assert categories.loc["B", "nerval_fp"] == 1


def test_rate_is_not_capped():
    result = oi_metrics([([("A", "x")], [("A", "x"), ("A", "y"), ("A", "z")])])
    assert result.oiecer.rate == 2.0
    errors = MicroAverageErrorRate()
    errors.update("total", OiEcerEwer([("A", "x")], [("A", "x"), ("A", "y"), ("A", "z")], True))
    assert errors.error_rate["total"] == 100  # ie-eval caps its printed rate


@pytest.mark.parametrize(("threshold", "tp"), [(0.25, 1), (0.2499, 0), (0.0, 0), (1.0, 1)])
def test_nerval_threshold_is_inclusive(threshold, tp):
    result = oi_metrics([([("A", "abcd")], [("A", "abcx")])], cer_threshold=threshold)
    assert result.oinerval.tp == tp


def test_bag_of_tagged_words_and_entities():
    gt = [("name", "Anna Smith")]
    pred = [("name", "Smith Anna"), ("date", "Anna")]
    result = oi_metrics([(gt, pred)])
    words = result.bag_of_tagged_words
    assert (words.tp, words.fp, words.fn, words.errors) == (2, 1, 0, 1)
    assert words.error_rate == 0.5
    entities = result.bag_of_entities
    assert (entities.tp, entities.fp, entities.fn, entities.errors) == (0, 2, 1, 2)
    assert entities.error_rate == 2.0


def test_empty_gt_text_does_not_divide_by_zero():
    result = oi_metrics([([("A", ""), ("B", "")], [("A", ""), ("B", "x")])])
    assert result.oiecer.errors == 1.0  # "" vs "" costs 0, "" vs "x" costs 1
    assert result.oinerval.tp == 1


def test_documents_table_and_empty_documents():
    result = oi_metrics([([], []), ([("A", "x")], [])])
    documents = result.documents
    assert documents.index.tolist() == [0, 1]
    assert documents.loc[0, ["n_gt", "n_pred", "ecer_errors"]].tolist() == [0, 0, 0]
    assert math.isnan(documents.loc[0, "oiecer"])
    assert documents.loc[1, "oiecer"] == 1.0
    assert documents.loc[1, "nerval_recall"] == 0.0
    assert documents.loc[0, "nerval_f1"] == 1.0


@pytest.mark.parametrize("threshold", [-0.1, 1.5, 30.0])
def test_threshold_out_of_range(threshold):
    with pytest.raises(ValueError, match="cer_threshold"):
        oi_metrics([], cer_threshold=threshold)


def test_malformed_entity_names_document_and_position():
    with pytest.raises(ValueError, match=r"document 1: predicted entity 0"):
        oi_metrics([([], []), ([], [("A", 3)])])


# --- agreement with ie-eval's scorer classes ---------------------------------------------

texts = st.lists(st.text(alphabet="ab", min_size=1, max_size=3), min_size=1, max_size=3).map(
    " ".join
)
entities = st.lists(st.tuples(st.sampled_from(["P", "L", "D"]), texts), max_size=5)
corpora = st.lists(st.tuples(entities, entities), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(corpora, st.sampled_from([0, 10, 25, 30, 50, 100]))
def test_agrees_with_ie_eval(corpus, percent):
    result = oi_metrics(corpus, cer_threshold=percent / 100)
    ref = ie_eval_scores(corpus, percent)
    assert result.oiecer.errors == pytest.approx(ref.ecer.error_count["total"], abs=1e-9)
    assert result.oiewer.errors == pytest.approx(ref.ewer.error_count["total"], abs=1e-9)
    if ref.ecer.label_word_count["total"]:
        capped = min(100 * result.oiecer.rate, 100)
        assert capped == pytest.approx(ref.ecer.error_rate["total"], abs=1e-9)
    for ours, theirs, errors in [
        (result.oinerval, ref.nerval, None),
        (result.bag_of_tagged_words, ref.botw, ref.botw_errors),
        (result.bag_of_entities, ref.boe, ref.boe_errors),
    ]:
        assert (ours.tp, ours.fp, ours.fn) == (
            theirs.true_positives["total"],
            theirs.false_positives["total"],
            theirs.false_negatives["total"],
        )
        assert 100 * ours.precision == pytest.approx(theirs.precision["total"], abs=1e-9)
        assert 100 * ours.recall == pytest.approx(theirs.recall["total"], abs=1e-9)
        assert 100 * ours.f1 == pytest.approx(theirs.f1["total"], abs=1e-9)
        if errors is not None:
            assert ours.errors == errors.error_count["total"]


@settings(max_examples=100, deadline=None)
@given(corpora)
def test_per_category_rows_score_each_category_alone(corpus):
    result = oi_metrics(corpus)
    for category, row in result.categories.iterrows():
        ecer = nerval_tp = 0.0
        words = entities_tp = 0
        for gt, pred in corpus:
            g = [e for e in gt if e[0] == category]
            p = [e for e in pred if e[0] == category]
            ecer += OiEcerEwer(g, p, compute_ecer=True).errors
            nerval_tp += OiNerval(g, p, nerval_threshold=30.0).true_positives
            words += BagOfWords(tagged_words(g), tagged_words(p)).errors
            entities_tp += BagOfWords(g, p).true_positives
        assert row.ecer_errors == pytest.approx(ecer, abs=1e-9)
        assert row.nerval_tp == nerval_tp
        assert row.botw_errors == words
        assert row.boe_tp == entities_tp


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(corpora)
def test_identity_is_perfect(corpus):
    result = oi_metrics([(gt, gt) for gt, _ in corpus])
    assert result.oiecer.errors == 0.0
    assert result.oiewer.errors == 0.0
    assert result.oinerval.f1 == 1.0
    assert result.bag_of_tagged_words.f1 == 1.0
    assert result.bag_of_entities.errors == 0


@settings(max_examples=100, deadline=None)
@given(corpora, st.randoms())
def test_reading_order_does_not_matter(corpus, rnd):
    shuffled = []
    for gt, pred in corpus:
        gt, pred = list(gt), list(pred)
        rnd.shuffle(gt)
        rnd.shuffle(pred)
        shuffled.append((gt, pred))
    a, b = oi_metrics(corpus), oi_metrics(shuffled)
    assert a.oiecer.errors == pytest.approx(b.oiecer.errors, abs=1e-9)
    assert a.oiewer.errors == pytest.approx(b.oiewer.errors, abs=1e-9)
    assert (a.oinerval, a.bag_of_tagged_words, a.bag_of_entities) == (
        b.oinerval,
        b.bag_of_tagged_words,
        b.bag_of_entities,
    )


@settings(max_examples=100, deadline=None)
@given(corpora)
def test_bounds(corpus):
    result = oi_metrics(corpus)
    n_gt = sum(len(gt) for gt, _ in corpus)
    n_pred = sum(len(pred) for _, pred in corpus)
    assert 0.0 <= result.oiecer.errors <= sum(max(len(g), len(p)) for g, p in corpus)
    assert result.oinerval.tp <= min(n_gt, n_pred)
    for score in (result.oinerval, result.bag_of_tagged_words, result.bag_of_entities):
        assert 0.0 <= score.precision <= 1.0
        assert 0.0 <= score.recall <= 1.0
        assert 0.0 <= score.f1 <= 1.0
    assert result.documents.n_gt.sum() == n_gt
    assert result.categories.n_pred.sum() == n_pred
