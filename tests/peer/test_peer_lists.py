"""List metrics for parallel lists: the worked examples, a brute-force oracle, properties."""

from collections import Counter
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core.count.peer.lists import list_metrics
from kieval_core.read.formats.lists import parse_parallel_lists, split_parallel_lists

GT = {
    "desc": ["EFTPOS", "ATM", "Purchase"],
    "date": ["01/03", "02/03", "03/03"],
    "amount": ["$50", "$100", "$75"],
}


def test_two_false_positives_give_p60_r100_f75():
    gt = {"transaction": ["EFTPOS $50", "ATM $100", "Purchase $75"]}
    pred = {"transaction": ["EFTPOS $50", "Fee $2", "ATM $100", "Purchase $75", "Fee $2"]}
    result = list_metrics([(gt, pred)])
    assert (result.items.tp, result.items.fp, result.items.fn) == (3, 2, 0)
    assert (result.items.precision, result.items.recall, result.items.f1) == (0.6, 1.0, 0.75)


def test_swapping_the_first_two_leaves_one_positional_match():
    gt = {"transaction": ["EFTPOS $50", "ATM $100", "Purchase $75"]}
    pred = {"transaction": ["ATM $100", "EFTPOS $50", "Purchase $75"]}
    result = list_metrics([(gt, pred)])
    assert result.items.f1 == 1.0
    assert result.positional.tp == 1
    assert result.positional.precision == result.positional.recall == pytest.approx(1 / 3)


def test_rotated_descriptions_break_every_row():
    pred = {**GT, "desc": ["ATM", "Purchase", "EFTPOS"]}
    result = list_metrics([(GT, pred)])
    assert result.rows.strict == 0.0
    assert result.rows.partial == pytest.approx(2 / 3)  # dates and amounts: 6 of 9 cells
    assert result.items.f1 == 1.0  # every value is there
    assert result.fields.loc["desc", "pos_tp"] == 0
    assert result.fields.loc["date", "pos_f1"] == 1.0


def test_strict_rows_are_matched_one_to_one():
    gt = {"a": ["x", "x"], "b": ["1", "1"]}
    pred = {"a": ["x"], "b": ["1"]}
    result = list_metrics([(gt, pred)])
    assert (result.rows.rows.tp, result.rows.rows.fn) == (1, 1)
    assert result.rows.strict == 0.5
    assert result.rows.partial == 0.5  # the second GT row has no partner


def test_related_fields_restrict_the_rows():
    gt = {"a": ["x", "y"], "b": ["1", "2"], "note": ["n", None]}
    pred = {"a": ["x", "y"], "b": ["1", "2"], "note": ["other", None]}
    assert list_metrics([(gt, pred)]).rows.strict == 0.5
    assert list_metrics([(gt, pred)], related_fields=["a", "b"]).rows.strict == 1.0


def test_empty_slots_keep_rows_aligned():
    gt = {"a": ["x", None, "z"], "b": ["1", "2", None]}
    pred = {"a": ["x", "", "z"], "b": ["1", "2", None]}
    result = list_metrics([(gt, pred)])
    assert result.rows.strict == 1.0
    assert result.positional.f1 == 1.0
    assert result.rows.gt_cells == 4


def test_documents_table():
    result = list_metrics([(GT, GT), ({}, {"a": ["x"]})])
    documents = result.documents
    assert documents.loc[0, "strict"] == 1.0
    assert documents.loc[1, ["tp", "fp", "fn"]].tolist() == [0, 1, 0]
    assert documents.loc[1, "precision"] == 0.0
    assert documents.loc[1, "strict"] == 1.0  # nothing to reproduce


def test_parse_parallel_lists():
    record = {"desc": "EFTPOS | ATM|Purchase", "amount": "$50|$100|", "date": ["01", 2, None]}
    rows = parse_parallel_lists(record, ["desc", "amount", "date"])
    assert rows == [
        {"desc": "EFTPOS", "amount": "$50", "date": "01"},
        {"desc": "ATM", "amount": "$100", "date": "2"},
        {"desc": "Purchase"},
    ]
    assert parse_parallel_lists({"a": "x;;y"}, ["a"], sep=";") == [{"a": "x"}, {"a": "y"}]
    assert parse_parallel_lists({}, ["a"]) == []


@pytest.mark.parametrize("value", [{"x": 1}, 3, [["x"]], [True]])
def test_split_rejects_other_values(value):
    with pytest.raises(ValueError, match="'amount'"):
        split_parallel_lists({"amount": value}, ["amount"])


def test_bad_documents_are_named():
    with pytest.raises(ValueError, match="document 0: prediction field 'a'"):
        list_metrics([({"a": ["x"]}, {"a": "x"})])


# --- oracle and properties ----------------------------------------------------------------

cells = st.sampled_from(["x", "y", "z", None])
fields = ["a", "b", "c"]
documents = st.integers(0, 4).flatmap(
    lambda n: st.fixed_dictionaries({f: st.lists(cells, min_size=n, max_size=n) for f in fields})
)


def brute_force_partial(gt: dict, pred: dict) -> tuple[int, int]:
    gt_rows = [r for r in zip(*(gt[f] for f in fields), strict=True) if any(r)]
    pred_rows = [r for r in zip(*(pred[f] for f in fields), strict=True) if any(r)]
    gt_cells = sum(v is not None for row in gt_rows for v in row)
    small, large = (gt_rows, pred_rows) if len(gt_rows) <= len(pred_rows) else (pred_rows, gt_rows)
    best = 0
    for chosen in permutations(large, len(small)):
        pairs = (
            zip(small, chosen, strict=True) if small is gt_rows else zip(chosen, small, strict=True)
        )
        best = max(
            best,
            sum(g is not None and g == p for gr, pr in pairs for g, p in zip(gr, pr, strict=True)),
        )
    return best, gt_cells


@settings(max_examples=150, deadline=None)
@given(documents, documents)
def test_partial_alignment_matches_brute_force(gt, pred):
    result = list_metrics([(gt, pred)])
    assert (result.rows.matched_cells, result.rows.gt_cells) == brute_force_partial(gt, pred)


@settings(max_examples=150, deadline=None)
@given(documents, documents)
def test_strict_alignment_is_row_multiset_intersection(gt, pred):
    def rows(doc):
        return Counter(r for r in zip(*(doc[f] for f in fields), strict=True) if any(r))

    result = list_metrics([(gt, pred)])
    assert result.rows.rows.tp == (rows(gt) & rows(pred)).total()


@settings(max_examples=100, deadline=None)
@given(st.lists(documents, min_size=1, max_size=3))
def test_identity_is_perfect(docs):
    result = list_metrics([(d, d) for d in docs])
    assert result.items.f1 == result.positional.f1 == 1.0
    assert result.rows.strict == result.rows.partial == 1.0


@settings(max_examples=100, deadline=None)
@given(documents, documents, st.randoms())
def test_row_permutations_change_only_positional_scores(gt, pred, rnd):
    order = list(range(len(pred["a"])))
    rnd.shuffle(order)
    shuffled = {f: [pred[f][i] for i in order] for f in fields}
    a, b = list_metrics([(gt, pred)]), list_metrics([(gt, shuffled)])
    assert a.items == b.items
    assert a.rows == b.rows


@settings(max_examples=100, deadline=None)
@given(documents, documents)
def test_bounds(gt, pred):
    result = list_metrics([(gt, pred)])
    assert result.positional.tp <= result.items.tp
    for value in (result.items.f1, result.positional.f1, result.rows.strict, result.rows.partial):
        assert 0.0 <= value <= 1.0
    assert result.rows.matched_cells <= result.rows.gt_cells
