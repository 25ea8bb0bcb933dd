"""Hypothesis properties of the KIEval engine, the matcher and the automation curve."""

from __future__ import annotations

import numpy as np
from builders import dataset
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core.evaluate import evaluate
from kieval_core.matching import brute_force_match, match_block, tie_break_weights

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
    assert docs["tp"].sum() == m.entity.tp and docs["errors"].sum() == m.corrections.total
    assert 0.0 <= m.aligned <= m.entity.f1 + 1e-12 or m.entity.tp == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_hungarian_equals_brute_force(n, m, data):
    def matrix(top):
        cells = data.draw(st.lists(st.integers(0, top), min_size=n * m, max_size=n * m))
        return np.array(cells).reshape(n, m)

    shared, subst, exact = matrix(2), matrix(2), matrix(1)
    rows, cols = match_block(shared, subst, exact)
    fast = sorted(zip(rows.tolist(), cols.tolist(), strict=True))
    best = brute_force_match(shared, subst, exact)
    tie = tie_break_weights(n, m)

    def key(pairs):
        return tuple(sum(int(x[a, b]) for a, b in pairs) for x in (shared, subst, exact, tie))

    assert len(fast) == min(n, m)
    assert key(fast) == key(best)


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
