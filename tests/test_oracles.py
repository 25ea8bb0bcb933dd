"""The fast paths against the naive oracles of ``oracles.py``, under hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from builders import dataset
from hypothesis import example, given, settings
from hypothesis import strategies as st
from oracles import isclose, naive_bootstrap, naive_counts, naive_field_thresholds, naive_review
from test_invariance import corpus

from kieval_core import Normalizer, evaluate
from kieval_core.count.engine import _count_pair, corpus_counts
from kieval_core.count.scores import aligned_score
from kieval_core.result.suggest import COUNT_KEYS, counts_under, model_counts_under, rescored_aligned
from kieval_core.review.automation import Costs, with_costs
from kieval_core.review.calibration import auroc, average_ranks, calibration
from kieval_core.review.field_thresholds import per_field_thresholds
from kieval_core.review.uncertainty import bootstrap, holdout, random_half


def _model(gt, pred):
    return evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}).models["m"]


@settings(max_examples=50, deadline=None)
@given(corpus())
def test_count_equals_enumeration(data):
    gt, pred = data
    m = _model(gt, pred)
    expected = naive_counts(gt, pred)
    c = m.corrections
    got = {"tp": m.entity.tp, "fp": m.entity.fp, "fn": m.entity.fn, "substitution": c.substitution,
           "addition": c.addition, "deletion": c.deletion}
    assert got == {k: expected[k] for k in got}
    if m.group is not None:
        assert (m.group.tp, m.group.fp, m.group.fn) == (
            expected["group_tp"], expected["group_fp"], expected["group_fn"])


# values that some comparators make equal ("1" and "1.0" as numbers, "A" and "a" ignoring case)
FORMATTED = st.sampled_from(["1", "1.0", "A", "a", "B"])


@st.composite
def formatted_corpus(draw):
    def document():
        rows = [("", "", draw(st.sampled_from(["company", "total"])), draw(FORMATTED), math.nan)
                for _ in range(draw(st.integers(0, 3)))]
        for g in range(draw(st.integers(0, 4))):
            rows += [("menu", str(g), draw(st.sampled_from(["menu.nm", "menu.price"])), draw(FORMATTED),
                      math.nan) for _ in range(draw(st.integers(1, 3)))]
        return rows

    n = draw(st.integers(1, 5))
    return {f"d{i}": document() for i in range(n)}, {f"d{i}": document() for i in range(n)}


@settings(max_examples=60, deadline=None)
@given(formatted_corpus(), st.dictionaries(st.sampled_from(["company", "total", "menu.nm", "menu.price"]),
                                           st.sampled_from(["exact", "number", "casefold", "alnum"])))
def test_corpus_counts_equal_the_full_count(data, comparators):
    gt, pred = data
    normalizer = Normalizer.from_names(None, [f"{t}={c}" for t, c in comparators.items()])
    gt_set, pred_set = dataset(gt, "gt"), dataset(pred, "m")
    m = evaluate(gt_set, {"m": pred_set}, normalizer=normalizer).models["m"]
    counts = corpus_counts(gt_set, pred_set, normalizer)
    assert (counts["tp"], counts["fp"], counts["fn"]) == (m.entity.tp, m.entity.fp, m.entity.fn)
    corrections = m.corrections
    assert (counts["substitution"], counts["addition"], counts["deletion"]) == (
        corrections.substitution, corrections.addition, corrections.deletion)


COMPARED = st.dictionaries(st.sampled_from(["company", "total", "menu.nm", "menu.price"]),
                           st.sampled_from(["exact", "number", "casefold", "alnum"]))


@settings(max_examples=60, deadline=None)
@given(formatted_corpus(), COMPARED, COMPARED)
def test_rescoring_only_the_changed_documents_equals_counting_all(data, own, declared):
    gt, pred = data
    normalizer = Normalizer.from_names(None, [f"{t}={c}" for t, c in own.items()])
    gt_set, pred_set = dataset(gt, "gt"), dataset(pred, "m")
    result = evaluate(gt_set, {"m": pred_set}, normalizer=normalizer)
    both = Normalizer.from_names(None, [f"{t}={c}" for t, c in [*own.items(), *declared.items()]])
    counts = corpus_counts(gt_set, pred_set, both)
    error = counts["substitution"] + counts["addition"] + counts["deletion"]
    assert rescored_aligned(result, "m", declared) == aligned_score(counts["tp"], error)


@st.composite
def blocks_corpus(draw):
    """Documents with non-group values and the groups of two group types (three blocks
    each), some documents missing from the predictions."""
    def document():
        rows = [("", "", "total", draw(FORMATTED), math.nan) for _ in range(draw(st.integers(0, 2)))]
        for group_type, fields in (("menu", ["menu.nm", "menu.price"]), ("sub", ["sub.tax", "sub.price"])):
            for g in range(draw(st.integers(0, 3))):
                rows += [(group_type, str(g), draw(st.sampled_from(fields)), draw(FORMATTED), math.nan)
                         for _ in range(draw(st.integers(1, 3)))]
        return rows

    n = draw(st.integers(1, 5))
    pred = {f"d{i}": document() for i in range(n) if draw(st.booleans()) or i == 0}
    return {f"d{i}": document() for i in range(n)}, pred


BLOCK_FIELDS = st.dictionaries(st.sampled_from(["total", "menu.nm", "menu.price", "sub.tax", "sub.price"]),
                               st.sampled_from(["exact", "number", "casefold", "alnum"]))


_MENU = [("menu", "0", "menu.nm", "A", math.nan), ("menu", "0", "menu.price", "1", math.nan)]
_MENU_PRED = [("menu", "0", "menu.nm", "a", math.nan), ("menu", "0", "menu.price", "1.0", math.nan)]


@settings(max_examples=80, deadline=None)
@given(blocks_corpus(), BLOCK_FIELDS, BLOCK_FIELDS, BLOCK_FIELDS)
# one block both re-counts change, menu.price compared otherwise by the second only
@example(({"d0": _MENU}, {"d0": _MENU_PRED}), {}, {"menu.nm": "casefold"},
         {"menu.nm": "casefold", "menu.price": "number"})
def test_recounting_only_the_changed_blocks_equals_counting_all(data, own, first, second):
    """Every count under other comparators, re-counted block by block, equals the count of
    the whole corpus: the first re-count counting apart the blocks the second changes alike
    (``ahead``), the second reading them (and each re-count reading the changed blocks the
    other kept)."""
    gt, pred = data
    normalizer = Normalizer.from_names(None, [f"{t}={c}" for t, c in own.items()])
    gt_set, pred_set = dataset(gt, "gt"), dataset(pred, "m")
    result = evaluate(gt_set, {"m": pred_set}, normalizer=normalizer)
    sets = [{**result.comparators, **declared} for declared in (first, second)]
    model = result.models["m"]
    got = [model_counts_under(model, result.normalizer, result.comparators, sets[0], ahead=sets[1]),
           counts_under(result, "m", sets[1])]
    for comparators, counts in zip(sets, got, strict=True):
        whole = corpus_counts(gt_set, pred_set, Normalizer.from_names(None, [f"{t}={c}" for t, c in
                                                                             comparators.items()]))
        assert counts == {k: whole[k] for k in COUNT_KEYS}


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(corpus())
def test_curve_equals_simulated_review(data):
    gt, pred = data
    # the oracle reads a missing confidence as 1.0; the default policy (never automated) is
    # checked against it through a file that writes them as 0.0 (test_review_modes)
    m = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}, missing_confidence="automate").models["m"]
    curve = with_costs(m.curve, Costs(), m.n_documents)
    for row in curve.to_dict("records"):
        expected = naive_review(m.counted, row["threshold"])
        for key, value in expected.items():
            assert isclose(row[key], value), (key, row["threshold"], row[key], value)
    assert curve["kieval_aligned"].iloc[0] == m.aligned
    assert (np.diff(curve["kieval_aligned"]) >= -1e-12).all()
    assert (np.diff(curve["auto_rate"]) <= 1e-12).all()
    assert (np.diff(curve["straight_through_rate"]) <= 1e-12).all()
    assert (np.diff(curve["document_accuracy"]) >= -1e-12).all()


@settings(max_examples=30, deadline=None)
@given(corpus(), st.sampled_from([0.5, 0.7, 0.8, 0.9]), st.sampled_from([None, 0.6, 0.95]))
def test_per_field_thresholds_equal_enumeration(data, target, floor):
    gt, pred = data
    m = _model(gt, pred)
    if not m.has_confidence or len(m.review.entity_types) > 4:
        return
    floors = {} if floor is None else {m.review.entity_types[0]: floor}
    fast = per_field_thresholds(m.review, target, floors)
    expected = naive_field_thresholds(m, target, floors)
    assert fast.exact
    if expected is None:
        assert not fast.reachable
        return
    assert fast.reachable
    reviews, accuracy = expected
    assert fast.reviews == reviews
    from kieval_core.review.automation import review_at

    assert isclose(review_at(m.review, fast.thresholds).kieval_aligned, accuracy)


def test_per_field_thresholds_never_need_more_reviews_than_one_threshold():
    gt = {f"d{i}": [("", "", "a", "1", np.nan), ("", "", "b", "2", np.nan)] for i in range(20)}
    rng = np.random.default_rng(3)
    pred = {d: [("", "", "a", "1" if rng.random() < 0.9 else "x", float(rng.random())),
                ("", "", "b", "2" if rng.random() < 0.6 else "y", float(rng.random()))] for d in gt}
    m = _model(gt, pred)
    single = m.recommend(0.9)
    fields = per_field_thresholds(m.review, 0.9)
    assert single.reachable and fields.reachable
    assert fields.reviews <= single.reviews


# --- uncertainty --------------------------------------------------------------------------


def _calibrated(n_docs: int, seed: int):
    """A synthetic model whose confidences are perfectly calibrated: a prediction with
    confidence c is right with probability c."""
    rng = np.random.default_rng(seed)
    gt, pred = {}, {}
    for i in range(n_docs):
        gt[f"d{i}"] = [("", "", f"f{k}", "v", np.nan) for k in range(4)]
        rows = []
        for k in range(4):
            c = float(rng.uniform(0.3, 1.0))
            rows.append(("", "", f"f{k}", "v" if rng.random() < c else "w", round(c, 3)))
        pred[f"d{i}"] = rows
    return _model(gt, pred)


def test_bootstrap_is_deterministic_for_a_seed():
    m = _calibrated(200, 0)
    a = bootstrap(m.review, 0.9, resamples=200, seed=7)
    b = bootstrap(m.review, 0.9, resamples=200, seed=7)
    c = bootstrap(m.review, 0.9, resamples=200, seed=8)
    assert a.threshold == b.threshold and a.band.equals(b.band)
    assert a.threshold != c.threshold or not a.band.equals(c.band)
    low, high = a.threshold
    rec = m.recommend(0.9)
    assert low <= rec.threshold <= high
    assert (a.band["low"] <= a.band["high"]).all()


def _same_bootstrap(fast, naive: dict) -> None:
    """Exact equality: every count is a whole number, so both ways give the same floats."""
    assert fast.threshold == naive["threshold"]
    assert fast.auto_rate == naive["auto_rate"]
    assert fast.reachable_share == naive["reachable_share"]
    if naive["band"] is not None:
        assert [fast.band[k].tolist() for k in ("threshold", "low", "high")] == naive["band"]


@settings(max_examples=40, deadline=None)
@given(corpus(), st.sampled_from([0.0, 0.5, 0.8, 0.9, 1.0]), st.integers(1, 9), st.integers(1, 4),
       st.integers(1, 6), st.integers(0, 3))
def test_bootstrap_equals_one_resample_at_a_time(data, target, resamples, chunk, band_points, seed):
    gt, pred = data
    review = _model(gt, pred).review
    fast = bootstrap(review, target, resamples, seed, band_points=band_points, chunk=chunk)
    _same_bootstrap(fast, naive_bootstrap(review, target, resamples, seed, band_points, chunk))


@pytest.mark.parametrize(("target", "cells"), [(0.8, None), (0.9, None), (0.97, None), (0.9, 1)])
def test_bootstrap_of_a_calibrated_model_equals_one_resample_at_a_time(target, cells, monkeypatch):
    if cells is not None:  # one resample at a time through the running sums
        monkeypatch.setattr("kieval_core.review.uncertainty._CELLS", cells)
    review = _calibrated(60, 2).review
    fast = bootstrap(review, target, resamples=30, seed=5, band_points=50, chunk=7)
    _same_bootstrap(fast, naive_bootstrap(review, target, 30, 5, band_points=50, chunk=7))


def test_holdout_on_a_calibrated_model_reaches_the_target_within_its_interval():
    """The target lies within the interval on the other half; the threshold carries over
    only when the whole interval lies at or above it (SPEC 4d)."""
    m = _calibrated(600, 1)
    check = holdout(m.review, 0.9, random_half(m.n_documents, seed=0), resamples=500)
    assert check.threshold is not None
    low, high = check.interval_checked
    assert low <= 0.9 <= high or check.accuracy_checked >= 0.9
    assert check.carries_over == (low >= 0.9)


def test_holdout_flags_a_threshold_that_does_not_carry_over():
    """Half the documents come from a model whose confidences lie: the threshold chosen on
    the honest half does not reach the target on the other."""
    gt = {f"d{i}": [("", "", "f", "v", np.nan)] * 3 for i in range(200)}
    pred = {}
    for i in range(200):
        liar = i % 2 == 1
        pred[f"d{i}"] = [("", "", "f", "w" if liar else "v", 0.99), ("", "", "f", "v", 0.99),
                         ("", "", "f", "v" if not liar else "w", 0.2 if not liar else 0.99)]
    m = _model(gt, pred)
    honest = np.array([not d.endswith(("1", "3", "5", "7", "9")) for d in m.doc_ids])
    check = holdout(m.review, 0.95, honest, resamples=200)
    assert check.threshold is not None and not check.carries_over


# --- calibration ---------------------------------------------------------------------------


def test_calibration_figures_by_hand():
    gt = {"d": [("", "", "a", "1", np.nan), ("", "", "a", "2", np.nan), ("", "", "b", "3", np.nan)]}
    pred = {"d": [("", "", "a", "1", 0.9), ("", "", "a", "x", 0.3), ("", "", "b", "3", np.nan)]}
    table = calibration(_model(gt, pred).review).set_index("entity_type", drop=False)
    overall = table.iloc[0]
    assert overall["predictions"] == 3 and overall["with_confidence"] == 2
    assert overall["coverage"] == pytest.approx(2 / 3)
    assert overall["brier"] == pytest.approx(((0.9 - 1) ** 2 + (0.3 - 0) ** 2) / 2)
    assert overall["ece"] == pytest.approx((0.1 + 0.3) / 2)
    assert overall["auroc"] == 1.0
    assert math.isnan(table.loc["b", "ece"]) if table.loc["b", "ece"] is not None else True


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.5, 0.5, 0.9]), st.booleans()), min_size=2, max_size=30))
def test_auroc_equals_pair_counting(rows):
    conf = np.array([r[0] for r in rows])
    correct = np.array([r[1] for r in rows])
    pos, neg = conf[correct], conf[~correct]
    if not len(pos) or not len(neg):
        assert auroc(conf, correct) is None
        return
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    assert auroc(conf, correct) == pytest.approx(wins / (len(pos) * len(neg)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0]), max_size=30))
def test_average_ranks_equal_scipy_rankdata(values):
    from scipy.stats import rankdata

    x = np.array(values, dtype=np.float64)
    assert average_ranks(x).tolist() == rankdata(x).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=60), st.lists(st.integers(0, 40), max_size=60), st.booleans())
def test_keys_counted_in_sorted_order_by_either_path(keys_a, keys_b, in_order):
    """``_count_pair(sort=True)``: the sort of keys that mostly come in order and the hash
    table of others both give the distinct keys sorted, each side's codes and counts."""
    a, b = (np.sort(np.array(k, np.int64)) if in_order else np.array(k, np.int64) for k in (keys_a, keys_b))
    codes_a, codes_b, uniques, count_a, count_b = _count_pair(a, b, sort=True)
    expected = np.unique(np.concatenate([a, b]))
    assert uniques.tolist() == expected.tolist()
    assert uniques[codes_a].tolist() == a.tolist() and uniques[codes_b].tolist() == b.tolist()
    assert count_a.tolist() == [int((a == k).sum()) for k in expected]
    assert count_b.tolist() == [int((b == k).sum()) for k in expected]
