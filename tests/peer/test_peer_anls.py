"""ANLS*: hand-worked values, properties, and agreement with anls-star 1.0.1."""

import warnings

import numpy as np
import pytest
from anls_star import anls_score
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from munkres import Munkres, make_cost_matrix

from kieval_core.count.peer.anls import _munkres, anls_star, anls_star_corpus


def reference(gt, pred):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package warns in its VQA compatibility mode
        return anls_score(gt, pred)


@pytest.mark.parametrize(
    ("gt", "pred", "expected"),
    [
        ("hello", "hallo", 1 - 1 / 5),
        ("ab", "ax", 0.5),  # exactly at the threshold: kept
        ("abc", "axy", 0.0),  # 1/3 < 0.5: dropped
        ("Hello  World", " hello world", 1.0),  # case and white space are normalised
        (10, "10", 1.0),
        (True, "true", 1.0),
        ({"a": "x", "b": "y"}, {"a": "x"}, 0.5),  # missing key
        ({"a": "x"}, {"a": "x", "b": "z"}, 0.5),  # hallucinated key
        ({"a": None}, {}, 1.0),
        ({"a": None}, {"a": ""}, 1.0),
        ({"a": ""}, {"a": None}, 0.0),  # not symmetric: a GT leaf never matches None
        (["a", "b"], ["b", "a"], 1.0),
        (["apple", "pear"], ["pear"], 0.5),
        ("x", ["x", "y"], 0.0),  # a list against a leaf scores 0 over 2 leaves
        (("01/02/2019", "2019-02-01"), "2019-02-01", 1.0),
        (["a", "b"], "b", 1.0),  # list of strings vs string: the list becomes alternatives
        ({}, {}, 1.0),
        ({"a": []}, {"a": []}, 1.0),
        ({"a": []}, {}, 0.0),
        # the package's own docstring example: (5/6 + 1 + 1 + 1 + 0) / 5
        (
            {"a": ("hello", "world"), "b": ["this", "is", "a", "test"]},
            {"a": "hello!", "b": ["a", "test", "this", "be"]},
            (5 / 6 + 3) / 5,
        ),
    ],
)
def test_hand_worked_values(gt, pred, expected):
    assert anls_star(gt, pred) == pytest.approx(expected, abs=1e-12)
    assert reference(gt, pred) == pytest.approx(expected, abs=1e-12)


def test_hallucinated_none_key_counts_in_denominator_only():
    # Quirk of anls-star 1.0.1: the key adds no score but one unit of length.
    assert anls_star({"a": "x"}, {"a": "x", "b": None}) == 0.5
    assert anls_star({"a": "x"}, {"a": "x", "b": []}) == 0.5


def test_munkres_tie_breaking_decides_the_score():
    # Both GT items have mean 0.5 against the single prediction, but different lengths:
    # munkres pairs the first row, so the GT list order changes the score.
    short = {"a": "x", "b": "q"}
    long = {"a": "x", "b": "w", "c": "1", "d": "2"}
    pred = [{"a": "x", "b": "w"}]
    assert anls_star([short, long], pred) == pytest.approx(1 / 6)  # (1 + 0) / (2 + 4)
    assert anls_star([long, short], pred) == pytest.approx(2 / 6)  # (1 + 1) / (4 + 2)
    assert reference([short, long], pred) == anls_star([short, long], pred)
    assert reference([long, short], pred) == anls_star([long, short], pred)


def test_empty_gt_list_against_string_is_scored_not_raised():
    # Deviation: anls-star turns [] into an empty tuple and raises ValueError.
    with pytest.raises(ValueError):
        reference([], "x")
    assert anls_star([], "x") == 0.0


@pytest.mark.parametrize(
    ("gt", "pred"),
    [({"a": {1, 2}}, {}), ({}, {"a": ("x",)}), ((), "x"), ({"a": b"x"}, {"a": "x"})],
)
def test_unsupported_values_raise(gt, pred):
    with pytest.raises(ValueError):
        anls_star(gt, pred)


def test_corpus_mean_and_per_document():
    result = anls_star_corpus([({"a": "hello"}, {"a": "hallo"}), ({"a": "x"}, {"b": "x"})])
    assert result.per_document == pytest.approx((0.8, 0.0))
    assert result.mean == pytest.approx(0.4)
    per_document, mean = result
    assert (per_document, mean) == (result.per_document, result.mean)
    with pytest.raises(ValueError):
        anls_star_corpus([])


# --- property tests -----------------------------------------------------------------

words = st.text(alphabet="abc ", max_size=4)
leaves = words | st.none() | st.integers(0, 3) | st.booleans() | st.sampled_from([0.5, 1.0])


def structures(allow_tuples: bool):
    def extend(children):
        options = [
            st.lists(children, max_size=4),
            st.dictionaries(st.sampled_from("xyz"), children, max_size=3),
        ]
        if allow_tuples:
            options.append(st.lists(children, min_size=1, max_size=3).map(tuple))
        return st.one_of(options)

    return st.recursive(leaves, extend, max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(structures(allow_tuples=True), structures(allow_tuples=False))
def test_agrees_with_anls_star_package(gt, pred):
    assume(not (gt == [] and isinstance(pred, str)))
    assert anls_star(gt, pred) == pytest.approx(reference(gt, pred), abs=1e-9)


kie_documents = st.dictionaries(
    st.sampled_from(["company", "date", "total"]),
    words
    | st.lists(st.dictionaries(st.sampled_from(["nm", "cnt"]), words, max_size=2), max_size=4),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(kie_documents, kie_documents)
def test_agrees_on_kie_shaped_documents(gt, pred):
    assert anls_star(gt, pred) == pytest.approx(reference(gt, pred), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(structures(allow_tuples=False))
def test_identity_scores_one(doc):
    assert anls_star(doc, doc) == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(words, max_size=6), st.lists(words, max_size=6), st.randoms())
def test_string_lists_are_order_free(gt, pred, rnd):
    shuffled = list(pred)
    rnd.shuffle(shuffled)
    assert anls_star({"k": gt}, {"k": shuffled}) == pytest.approx(
        anls_star({"k": gt}, {"k": pred}), abs=1e-12
    )


@settings(max_examples=100, deadline=None)
@given(structures(allow_tuples=True), structures(allow_tuples=False))
def test_score_is_within_bounds(gt, pred):
    assume(not (gt == [] and isinstance(pred, str)))
    assert 0.0 <= anls_star(gt, pred) <= 1.0


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda n: st.lists(
            st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1 / 3]), min_size=n, max_size=n),
            min_size=1,
            max_size=5,
        )
    )
)
def test_munkres_port_replays_the_munkres_package(profit):
    expected = [tuple(pair) for pair in Munkres().compute(make_cost_matrix(profit))]
    assert _munkres(np.array(profit)) == expected
