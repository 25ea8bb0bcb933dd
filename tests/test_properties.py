"""Hypothesis properties of the KIEval engine, the matcher and the automation curve."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from builders import dataset
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import brute_force_match

from kieval_core.count import matching
from kieval_core.count.matching import EXACT_BOUND, match_block, match_stack
from kieval_core.evaluate import evaluate

VALUES = st.sampled_from(["1", "2", "10", "A", "B", "x y"])
NON_GROUP_TYPES = st.sampled_from(["company", "date", "total"])
GROUP_ENTITY = st.sampled_from(["nm", "cnt", "price"])
CONF = st.one_of(st.none(), st.sampled_from([0.1, 0.3, 0.5, 0.5, 0.8, 0.95, 1.0]))


@st.composite
def document(draw, with_conf=False):
    rows = []
    for _ in range(draw(st.integers(0, 3))):
        conf = draw(CONF) if with_conf else None
        rows.append(("", "", draw(NON_GROUP_TYPES), draw(VALUES), np.nan if conf is None else conf))
    for gtype in ("menu", "total"):
        for g in range(draw(st.integers(0, 3 if gtype == "menu" else 1))):
            for _ in range(draw(st.integers(1, 3))):
                conf = draw(CONF) if with_conf else None
                rows.append((gtype, str(g), f"{gtype}.{draw(GROUP_ENTITY)}", draw(VALUES),
                             np.nan if conf is None else conf))
    return rows


@st.composite
def corpus(draw, with_conf=False):
    n = draw(st.integers(1, 3))
    gt = {f"d{i}": draw(document()) for i in range(n)}
    pred = {f"d{i}": draw(document(with_conf=with_conf)) for i in range(n)}
    return gt, pred


def _model(gt_docs, pred_docs):
    return evaluate(dataset(gt_docs, "gt"), {"m": dataset(pred_docs, "m")}).models["m"]


def _figures(m):
    group = None if m.group is None else (m.group.tp, m.group.fp, m.group.fn)
    return (m.entity.tp, m.entity.fp, m.entity.fn, m.corrections.substitution,
            m.corrections.addition, m.corrections.deletion, group,
            m.entity_f1.tp, m.entity_f1.fp, m.entity_f1.fn)


@settings(max_examples=75, deadline=None)
@given(corpus())
def test_perfect_prediction_scores_one(data):
    gt, _ = data
    m = _model(gt, gt)
    assert m.entity.f1 == 1.0 and m.aligned == 1.0 and m.entity_f1.f1 == 1.0
    assert m.corrections.total == 0
    assert m.group is None or m.group.f1 == 1.0


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(corpus(), st.randoms(use_true_random=False))
def test_shuffling_changes_nothing(data, rnd):
    gt, pred = data

    def shuffle(docs):
        out = {}
        for doc_id in rnd.sample(list(docs), len(docs)):
            rows = list(docs[doc_id])
            rnd.shuffle(rows)
            keys = list(dict.fromkeys((r[0], r[1]) for r in rows))
            names = [f"g{i}" for i in range(len(keys))]
            rnd.shuffle(names)
            relabel = dict(zip(keys, names, strict=True))  # distinct new names in a new order
            out[doc_id] = [(r[0], relabel[(r[0], r[1])] if r[0] else "", *r[2:]) for r in rows]
        return out

    assert _figures(_model(gt, pred)) == _figures(_model(shuffle(gt), shuffle(pred)))


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(corpus())
def test_count_identities(data):
    gt, pred = data
    m = _model(gt, pred)
    n_pred = sum(len(rows) for rows in pred.values())
    n_gt = sum(len(rows) for rows in gt.values())
    assert m.entity.tp + m.entity.fp == n_pred
    assert m.entity.tp + m.entity.fn == n_gt
    assert m.entity_f1.tp + m.entity_f1.fp == n_pred
    assert m.corrections.substitution + m.corrections.deletion == m.entity.fp
    assert m.corrections.substitution + m.corrections.addition == m.entity.fn
    assert m.entity.tp <= m.entity_f1.tp  # grouping can only lose matches
    docs = m.documents
    assert docs["tp"].sum() == m.entity.tp and docs["corrections"].sum() == m.corrections.total
    assert 0.0 <= m.aligned <= m.entity.f1 + 1e-12 or m.entity.tp == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_hungarian_equals_brute_force(n, m, data):
    def matrix(top):
        cells = data.draw(st.lists(st.integers(0, top), min_size=n * m, max_size=n * m))
        return np.array(cells).reshape(n, m)

    shared, subst, exact = matrix(2), matrix(2), matrix(1)
    rows, cols = match_block(shared, subst, exact)
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == brute_force_match(shared, subst, exact)


@st.composite
def assignment_problems(draw):
    """Stacks of small integer matrices (many ties), wide or tall, maybe with forbidden
    edges around one allowed pairing of size min(N, M)."""
    k, n, m = draw(st.integers(1, 3)), draw(st.integers(1, 7)), draw(st.integers(1, 7))
    top = draw(st.sampled_from([1, 2, 3, 50, 2**40]))
    cells = k * n * m
    cost = np.array(draw(st.lists(st.integers(0, top), min_size=cells, max_size=cells))).reshape(k, n, m)
    if not draw(st.booleans()):
        return cost, None
    allowed = np.array(draw(st.lists(st.booleans(), min_size=cells, max_size=cells))).reshape(k, n, m)
    size = min(n, m)
    for b in range(k):
        rows = draw(st.permutations(range(n)))[:size]
        cols = draw(st.permutations(range(m)))[:size]
        allowed[b, rows, cols] = True
    return cost, allowed


@settings(max_examples=400, deadline=None)
@given(assignment_problems(), st.booleans())
def test_assignment_is_scipys_pairing_ties_included(problem, maximize):
    from scipy.optimize import linear_sum_assignment

    cost, allowed = problem
    rows, cols = matching.assignment(cost, allowed, maximize=maximize)
    for b in range(len(cost)):
        c = cost[b] if allowed is None else np.where(allowed[b], cost[b].astype(float),
                                                     -np.inf if maximize else np.inf)
        expected = linear_sum_assignment(c, maximize=maximize)
        assert [rows[b].tolist(), cols[b].tolist()] == [x.tolist() for x in expected]
    with mock.patch.object(matching, "NUMPY_SOLVER_SIZE", 0):  # SciPy itself: the same
        assert all(np.array_equal(a, b) for a, b in zip(
            matching.assignment(cost, allowed, maximize=maximize), (rows, cols), strict=True))


# folded weights, the tight graph after one folded solve, the tight graph one criterion at a time
BOUNDS = st.sampled_from([EXACT_BOUND, 1e4, 0.0])


@st.composite
def tied_blocks(draw):
    """A stack of blocks whose rows and columns repeat a few distinct ones, so that many
    pairings tie on S, W and X (and on the sum of (N - n)(M - m) as well)."""
    n, m, k = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 3))
    distinct_rows, distinct_cols = draw(st.integers(1, n)), draw(st.integers(1, m))
    row_of = draw(st.lists(st.integers(0, distinct_rows - 1), min_size=n, max_size=n))
    col_of = draw(st.lists(st.integers(0, distinct_cols - 1), min_size=m, max_size=m))

    def stack(top):
        base = np.array(draw(st.lists(st.integers(0, top), min_size=k * distinct_rows * distinct_cols,
                                      max_size=k * distinct_rows * distinct_cols)))
        return base.reshape(k, distinct_rows, distinct_cols)[:, row_of][:, :, col_of]

    return stack(3), stack(2), stack(1)


@settings(max_examples=300, deadline=None)
@given(tied_blocks(), BOUNDS, st.booleans())
def test_ties_go_to_the_lexicographically_smallest_sequence(blocks, bound, enumerate_small):
    """SPEC 3.2: every method (pairings enumerated at once, one solve of the folded weight,
    the tight graph) gives the one pairing enumeration names, block by block."""
    shared, subst, exact = blocks
    matching._injections.cache_clear()
    with mock.patch.object(matching, "MAX_ENUMERATED", matching.MAX_ENUMERATED if enumerate_small else 0):
        rows, cols = match_stack(shared, subst, exact, bound=bound)
    matching._injections.cache_clear()
    for i in range(len(shared)):
        pairs = sorted(zip(rows[i].tolist(), cols[i].tolist(), strict=True))
        assert pairs == brute_force_match(shared[i], subst[i], exact[i])


def test_the_index_proxy_ties_where_the_sequence_does_not():
    """Hand-worked: one shared value, between predicted rows 0 and 2 and GT column 1.
    Pairings (0, 2, 1) and (1, 0, 2) (GT index per predicted row) both have S = 1 and
    the same sum of (N - n)(M - m) = 3*3 + 2*1 + 1*2 = 3*2 + 2*3 + 1*1 = 13; SPEC 3.2 takes
    the lexicographically smaller (0, 2, 1)."""
    shared = np.array([[0, 1, 0], [0, 0, 0], [0, 1, 0]])
    zeros = np.zeros((3, 3), int)
    for bound in (EXACT_BOUND, 0.0):
        rows, cols = match_stack(shared[None], zeros[None], zeros[None], bound=bound)
        assert rows[0].tolist() == [0, 1, 2] and cols[0].tolist() == [0, 2, 1]
    # rows with nothing to gain still read in order; an unmatched row reads as M
    rows, cols = match_block(np.array([[0], [1], [0]]), np.zeros((3, 1), int))
    assert rows.tolist() == [1] and cols.tolist() == [0]
    rows, cols = match_block(np.zeros((3, 1), int), np.zeros((3, 1), int))
    assert rows.tolist() == [0] and cols.tolist() == [0]


def test_the_engine_pairs_groups_by_the_lexicographic_rule():
    """The hand-worked block above, as files: predicted lines [A Z] < [B] < [C Z] and GT
    lines [D] < [E Z] < [F] in canonical order share only Z (first and last predicted
    line with the middle GT line); every pairing has W = 3 and no exact pair."""
    def menu(lines):
        return [("menu", str(i), "menu.nm", v) for i, line in enumerate(lines) for v in line]

    pred = {"d": menu([["C", "Z"], ["B"], ["A", "Z"]])}
    gt = {"d": menu([["F"], ["E", "Z"], ["D"]])}
    pairs = _model(gt, pred).counted.pairs
    got = sorted(zip(pairs["pred_group"].tolist(), pairs["gt_group"].tolist(), strict=True))
    # input indices: predicted [A Z] is 2, [B] 1, [C Z] 0; GT [D] is 2, [E Z] 1, [F] 0
    assert got == [(0, 1), (1, 0), (2, 2)]


def test_curve_without_predictions():
    curve = _model({"d": [("", "", "total", "5")] * 3}, {"d": []}).curve
    assert curve["auto_rate"].tolist() == [1.0] and curve["kieval_aligned"].tolist() == [0.0]


def test_group_counts_do_not_depend_on_group_order():
    """Found by hypothesis: a tie on S and W where only one pairing is a group TP."""
    gt = {"d": [("menu", "0", "menu.nm", "1")] * 3 + [("menu", "1", "menu.nm", "1")]}
    pred = {"d": [("menu", "a", "menu.nm", "1"), ("menu", "b", "menu.nm", "2")]}
    swapped = {"d": pred["d"][::-1]}
    assert _figures(_model(gt, pred)) == _figures(_model(gt, swapped))
    assert _model(gt, pred).group.tp == 1
