"""Token diagnostics (SCORE tokens found / tokens added)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core.count.peer.tokens import TokenCounts, token_diagnostics, word_tokens


def test_tokenizer_splits_words_and_punctuation_and_keeps_case():
    assert word_tokens("Jl. Sudirman No.5, Café") == [
        "Jl",
        ".",
        "Sudirman",
        "No",
        ".",
        "5",
        ",",
        "Café",
    ]
    assert word_tokens("  ") == []


def test_hand_worked_document():
    # GT tokens: ACME, Ltd, 10, ., 00 (5); predicted: ACME, 10, ., 00, VAT, VAT (6)
    result = token_diagnostics([(["ACME Ltd", "10.00"], ["ACME", "10.00", "VAT VAT"])])
    assert result.corpus == TokenCounts(gt_tokens=5, pred_tokens=6, common=4)
    assert result.corpus.found == pytest.approx(4 / 5)
    assert result.corpus.added == pytest.approx(2 / 6)


def test_repeated_tokens_count_as_a_multiset():
    result = token_diagnostics([(["a a a"], ["a"])])
    assert (result.corpus.found, result.corpus.added) == (pytest.approx(1 / 3), 0.0)


def test_corpus_is_micro_averaged_and_empty_sides_have_defined_values():
    result = token_diagnostics([(["a b c d"], ["a b c d"]), ([], ["x"]), (["y"], [])])
    documents = result.documents
    assert documents.found.tolist() == [1.0, 1.0, 0.0]
    assert documents.added.tolist() == [0.0, 1.0, 0.0]
    assert result.corpus.found == pytest.approx(4 / 5)  # not the mean 2/3 of documents
    assert result.corpus.added == pytest.approx(1 / 5)


def test_custom_tokenizer():
    result = token_diagnostics([(["10.00 EUR"], ["10.00EUR"])], tokenizer=str.split)
    assert result.corpus.common == 0


values = st.lists(st.text(alphabet="ab .", max_size=6), max_size=4)


@settings(max_examples=100, deadline=None)
@given(st.lists(values, min_size=1, max_size=3))
def test_identity_finds_everything_and_adds_nothing(docs):
    result = token_diagnostics([(d, d) for d in docs])
    assert (result.corpus.found, result.corpus.added) == (1.0, 0.0)


@settings(max_examples=100, deadline=None)
@given(values, values, st.randoms())
def test_order_free_and_bounded(gt, pred, rnd):
    shuffled = list(pred)
    rnd.shuffle(shuffled)
    a = token_diagnostics([(gt, pred)]).corpus
    assert a == token_diagnostics([(gt, shuffled)]).corpus
    assert 0.0 <= a.found <= 1.0 and 0.0 <= a.added <= 1.0
    gt_tokens = [t for v in gt for t in word_tokens(v)]
    pred_tokens = [t for v in pred for t in word_tokens(v)]
    common = sum(min(gt_tokens.count(t), pred_tokens.count(t)) for t in set(gt_tokens))
    assert a == TokenCounts(len(gt_tokens), len(pred_tokens), common)
