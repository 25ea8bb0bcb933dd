"""nTED and Donut field F1: hand-worked values, properties, and the Donut/zss oracle."""

import importlib
import warnings
from collections import Counter

import donut_reference as donut
import pytest
from conftest import SAMPLE_DATA
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from zss import Node

from kieval_core.count.peer.nted import (
    LabelTree,
    donut_field_f1,
    donut_fields,
    donut_normalize,
    nted,
    nted_corpus,
    tree_edit_distance,
)
from kieval_core.read.load import load

nted_module = importlib.import_module("kieval_core.count.peer.nted")  # the package exports a function nted


def oracle_nted(gt, pred):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy division warnings on an empty GT
        return donut.cal_acc(pred, gt)


# --- hand-worked values ---------------------------------------------------------------


def test_classic_zhang_shasha_tree_layout():
    # f(d(a, c(b)), e): postorder a b c d e f
    tree = LabelTree.from_nested(("f", [("d", [("a", []), ("c", [("b", [])])]), ("e", [])]))
    assert tree.labels == ("a", "b", "c", "d", "e", "f")
    assert tree.leftmost.tolist() == [0, 1, 1, 0, 4, 0]
    assert tree.keyroots.tolist() == [2, 4, 5]


@pytest.mark.parametrize(
    ("gt", "pred", "expected"),
    [
        # GT tree: menu, <subtree>, nm, <leaf>cake(4), cnt, <leaf>2(1) -> 9; one relabel.
        ({"menu": [{"nm": "cake", "cnt": "2"}]}, {"menu": [{"nm": "cake", "cnt": "3"}]}, 8 / 9),
        ({"items": ["a", "b"]}, {"items": ["b", "a"]}, 1 / 3),  # two relabels of 3
        ({"a": "xy"}, {}, 0.0),  # everything inserted
        ({"a": "xy"}, {"a": "xy", "b": "long value"}, 0.0),  # clipped at 0
        ({"b": "1", "a": "2"}, {"a": "2", "b": "1"}, 1.0),  # keys are sorted first
        ({"a": "x"}, {"a": "x", "b": 0}, 1.0),  # 0 is falsy: dropped
        ({"a": "x", "b": " "}, {"a": "x"}, 2 / 3),  # " " stays as an empty leaf (cost 0)
        ({"a": [" "]}, {}, 1.0),  # ...but inside a list it is dropped: GT is empty
    ],
)
def test_hand_worked_values(gt, pred, expected):
    assert nted(gt, pred) == pytest.approx(expected, abs=1e-12)
    if donut.normalize_dict(gt):
        assert oracle_nted(gt, pred) == pytest.approx(expected, abs=1e-12)


def test_empty_ground_truth_deviation():
    # Donut divides by zero: numpy gives nan or -inf and max(0, ...) returns 0.
    assert oracle_nted({}, {}) == 0
    assert oracle_nted({}, {"a": "x"}) == 0
    assert nted({}, {}) == 1.0
    assert nted({}, {"a": "x"}) == 0.0


def test_tree_edit_distance_hand_worked():
    # relabel cake -> cakes (1), insert cnt (1) and its leaf "2" (1)
    a = LabelTree.from_nested(("<root>", [("nm", [("<leaf>cake", [])])]))
    b = LabelTree.from_nested(
        ("<root>", [("nm", [("<leaf>cakes", [])]), ("cnt", [("<leaf>2", [])])])
    )
    assert tree_edit_distance(a, b) == 3.0
    assert tree_edit_distance(b, a) == 3.0


def test_field_f1_hand_worked():
    gts = [{"menu": [{"nm": "tea", "cnt": "2"}, {"nm": "cake", "cnt": "1"}], "total": "9"}]
    preds = [{"menu": [{"nm": "tea", "cnt": "1"}], "total": "9", "tax": "1"}]
    result = donut_field_f1(gts, preds)
    # TP: menu.nm tea, menu.cnt 1, total 9; FP: tax; FN: menu.nm cake, menu.cnt 2
    assert (result.tp, result.fp, result.fn) == (3, 1, 2)
    assert result.f1 == pytest.approx(3 / (3 + 3 / 2))
    assert result.f1 == pytest.approx(donut.cal_f1(preds, gts))
    assert (result.precision, result.recall) == (0.75, 0.6)


def test_field_f1_rejects_unpaired_inputs_and_handles_empty():
    with pytest.raises(ValueError, match="1 gts, 2 preds"):
        donut_field_f1([{}], [{}, {}])
    assert donut_field_f1([{}], [{}]).f1 == 1.0  # Donut: ZeroDivisionError


def test_corpus():
    result = nted_corpus([({"a": "x"}, {"a": "x"}), ({"a": "x"}, {})])
    assert result == ((1.0, 0.0), 0.5)
    with pytest.raises(ValueError):
        nted_corpus([])


# --- random trees against zss ----------------------------------------------------------

labels = st.sampled_from(
    ["<root>", "a", "b", "<subtree>", "<leaf>", "<leaf>ab", "<leaf>ba", "<leaf>abc", "x<leaf>"]
)
trees = st.recursive(
    st.tuples(labels, st.just(())),
    lambda children: st.tuples(labels, st.lists(children, max_size=4).map(tuple)),
    max_leaves=15,
)


def to_zss(node) -> Node:
    label, children = node
    zss_node = Node(label)
    for child in children:
        zss_node.addkid(to_zss(child))
    return zss_node


def zss_distance(a, b) -> float:
    return donut.tree_distance(to_zss(a), to_zss(b))


def size(tree) -> int:
    return 1 + sum(map(size, tree[1]))


@st.composite
def deep_trees(draw):
    """A small tree under a chain of 5-20 ancestors, each with up to two leaf siblings
    on either side: key roots nested many levels deep."""
    tree = draw(trees)
    for _ in range(draw(st.integers(5, 20))):
        before = tuple(draw(st.lists(st.tuples(labels, st.just(())), max_size=2)))
        after = tuple(draw(st.lists(st.tuples(labels, st.just(())), max_size=2)))
        tree = (draw(labels), (*before, tree, *after))
    return tree


small_trees = st.recursive(
    st.tuples(labels, st.just(())),
    lambda children: st.tuples(labels, st.lists(children, max_size=3).map(tuple)),
    max_leaves=4,
)
wide_trees = st.tuples(labels, st.lists(small_trees, min_size=6, max_size=20).map(tuple))
any_trees = st.one_of(trees, deep_trees(), wide_trees)


@settings(max_examples=200, deadline=None)
@given(trees, trees)
def test_zhang_shasha_agrees_with_zss(a, b):
    expected = zss_distance(a, b)
    assert tree_edit_distance(LabelTree.from_nested(a), LabelTree.from_nested(b)) == expected


@settings(max_examples=30, deadline=None)
@given(any_trees, any_trees)
def test_zhang_shasha_agrees_with_zss_on_deep_and_wide_trees(a, b):
    assert tree_edit_distance(LabelTree.from_nested(a), LabelTree.from_nested(b)) == zss_distance(a, b)


@pytest.mark.parametrize("batch_cells", [None, 64])
@settings(max_examples=8, deadline=None)
@given(pairs=st.lists(st.tuples(any_trees, any_trees), min_size=1, max_size=8))
def test_batched_distances_agree_with_zss(pairs, batch_cells):
    # many pairs of different shapes in one pass, or (64 cells) nearly one batch each
    label_trees = [(LabelTree.from_nested(a), LabelTree.from_nested(b)) for a, b in pairs]
    with pytest.MonkeyPatch.context() as patch:
        if batch_cells:
            patch.setattr(nted_module, "_BATCH_CELLS", batch_cells)
        distances = nted_module._tree_distances(label_trees).tolist()
    assert distances == [zss_distance(a, b) for a, b in pairs]


forests = st.lists(trees, max_size=3).map(tuple)


@settings(max_examples=100, deadline=None)
@given(labels, forests, forests, forests, forests, st.lists(labels, max_size=2))
def test_strip_common_keeps_the_distance(root, head, a, b, tail, ancestors):
    # shared leading/trailing children under equal roots, below lone equal ancestors
    source, target = (root, head + a + tail), (root, head + b + tail)
    for label in ancestors:
        source, target = (label, (source,)), (label, (target,))
    stripped = nted_module._strip_common(source, target)
    assert zss_distance(*stripped) == zss_distance(source, target)
    assert size(stripped[0]) + size(stripped[1]) <= size(source) + size(target)
    if head or tail or ancestors:
        assert size(stripped[0]) + size(stripped[1]) < size(source) + size(target)


@settings(max_examples=100, deadline=None)
@given(labels, forests, trees)
def test_childless_root_shortcut(root, forest, other):
    # equal roots, one side without children: the other side's weight, no Zhang-Shasha
    problems = [((root, ()), (root, forest)), ((root, forest), (root, ())), ((root, ()), other)]
    assert nted_module._distances(problems) == [zss_distance(a, b) for a, b in problems]


# --- random documents against Donut's evaluator ----------------------------------------

values = st.text(alphabet="ab c", max_size=4) | st.sampled_from([0, 1, 2.5, None, True])
keys = st.sampled_from(["a", "b", "ab", "nm"])
documents = st.dictionaries(
    keys,
    st.recursive(
        values,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=3)
        ),
        max_leaves=10,
    ),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(documents, documents)
def test_nted_agrees_with_donut(gt, pred):
    assume(donut.normalize_dict(gt))
    assert nted(gt, pred) == oracle_nted(gt, pred)


def expected_nted(gt, pred) -> float:
    if not donut.normalize_dict(gt):  # Donut divides by zero; we score 1 or 0
        return 0.0 if donut.normalize_dict(pred) else 1.0
    return oracle_nted(gt, pred)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(documents, min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=10),
)
def test_corpus_with_duplicates_and_empty_documents_agrees_with_donut(pool, picks):
    # index len(pool) and beyond picks an empty document; repeated picks repeat pairs
    pick = [*pool, {}]
    pairs = [(pick[min(i, len(pool))], pick[min(j, len(pool))]) for i, j in picks]
    scores = [expected_nted(gt, pred) for gt, pred in pairs]
    assert nted_corpus(pairs) == (tuple(scores), sum(scores) / len(scores))


@pytest.fixture(scope="module")
def cord_pairs():
    """Every third CORD sample receipt against each simulated model (Donut's shapes)."""
    gt = load(SAMPLE_DATA / "cord_v2_gt.jsonl")
    pairs = []
    for model in ("sim_strong", "sim_llm", "sim_weak"):
        pred = load(SAMPLE_DATA / f"{model}.jsonl")
        pairs += [(gt.structures[d], pred.structures.get(d, {})) for d in gt.doc_ids[::3]]
    return pairs


@pytest.mark.slow
def test_corpus_agrees_with_donut_on_cord_sample(cord_pairs):
    scores = nted_corpus(cord_pairs).per_document
    assert scores == tuple(oracle_nted(gt, pred) for gt, pred in cord_pairs)
    assert nted_corpus(cord_pairs * 2).per_document == scores * 2


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(documents, documents), min_size=1, max_size=4))
def test_field_f1_agrees_with_donut(pairs):
    gts, preds = [g for g, _ in pairs], [p for _, p in pairs]
    result = donut_field_f1(gts, preds)
    assume(result.tp + result.fp + result.fn)
    assert result.f1 == pytest.approx(donut.cal_f1(preds, gts), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_fields_are_donuts_flattened_normalised_document(doc):
    assert donut_fields(doc) == donut.flatten(donut.normalize_dict(doc))
    assert donut_normalize(doc) == donut.normalize_dict(doc)


@settings(max_examples=100, deadline=None)
@given(documents)
def test_identity_scores_one(doc):
    assert nted(doc, doc) == 1.0


@settings(max_examples=100, deadline=None)
@given(documents, documents)
def test_nted_bounds_and_key_order_invariance(gt, pred):
    score = nted(gt, pred)
    assert 0.0 <= score <= 1.0
    assert nted(dict(reversed(gt.items())), dict(reversed(pred.items()))) == score


# --- field F1 equals the flat multiset entity F1 on clean values -----------------------

clean = st.text(alphabet="abc", min_size=1, max_size=3)
clean_documents = st.dictionaries(st.sampled_from(["company", "total"]), clean, max_size=2).flatmap(
    lambda root: st.fixed_dictionaries(
        {
            "menu": st.lists(
                st.dictionaries(st.sampled_from(["nm", "cnt"]), clean, min_size=1), max_size=3
            )
        }
    ).map(lambda menu: {**root, **menu})
)


def flat_pairs(doc: dict) -> Counter:
    pairs = Counter()
    for key, value in doc.items():
        if isinstance(value, list):
            pairs.update((f"{key}.{sub}", text) for row in value for sub, text in row.items())
        else:
            pairs[key, value] += 1
    return pairs


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(clean_documents, clean_documents), min_size=1, max_size=4))
def test_field_f1_is_flat_multiset_entity_f1_on_clean_values(pairs):
    tp = fp = fn = 0
    for gt, pred in pairs:
        g, p = flat_pairs(gt), flat_pairs(pred)
        common = sum((g & p).values())
        tp, fp, fn = tp + common, fp + sum(p.values()) - common, fn + sum(g.values()) - common
    result = donut_field_f1([g for g, _ in pairs], [p for _, p in pairs])
    assert (result.tp, result.fp, result.fn) == (tp, fp, fn)
    flat_f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
    assert result.f1 == pytest.approx(flat_f1, abs=1e-12)


def test_normalize_examples():
    assert donut_normalize({"b": [1, {"x": 1}, True, None], "a": {"c": " v "}}) == {
        "a": [{"c": ["v"]}],
        "b": ["1"],
    }
