"""Token diagnostics after SCORE (Li et al., Unstructured, 2025): omission vs hallucination.

Per document, the GT values and the predicted values are each tokenised into one bag
(multiset) of tokens, order ignored:

* tokens found = |GT bag ∩ predicted bag| / |GT bag|  (recall of GT tokens; 1.0 when
  the GT has no token): low values mean omissions.
* tokens added = (|predicted bag| - |GT bag ∩ predicted bag|) / |predicted bag|  (share
  of predicted tokens absent from the GT; 0.0 when nothing was predicted): high values
  mean hallucinations.

Corpus figures sum the counts over documents before dividing (micro average).
The default tokenizer, :func:`word_tokens`, splits on Unicode word characters and
keeps each punctuation mark as its own token; it does not change case. SCORE uses
tiktoken's BPE tokens instead (see ``docs/peer_metrics.md``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd

__all__ = ["TokenCounts", "TokenResult", "token_diagnostics", "word_tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def word_tokens(text: str) -> list[str]:
    r"""Split text into Unicode words and single punctuation marks (regex ``\w+|[^\w\s]``).

    Examples
    --------
    >>> word_tokens("Total: 1,250.00 EUR")
    ['Total', ':', '1', ',', '250', '.', '00', 'EUR']
    """
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class TokenCounts:
    """Bag-of-token counts: GT tokens, predicted tokens and tokens in both (multiset)."""

    gt_tokens: int
    pred_tokens: int
    common: int

    @property
    def found(self) -> float:
        """Share of GT tokens present in the prediction (1.0 without GT tokens)."""
        return self.common / self.gt_tokens if self.gt_tokens else 1.0

    @property
    def added(self) -> float:
        """Share of predicted tokens absent from the GT (0.0 without predicted tokens)."""
        return (self.pred_tokens - self.common) / self.pred_tokens if self.pred_tokens else 0.0


@dataclass(frozen=True, eq=False)
class TokenResult:
    """Corpus counts and a per-document table.

    ``documents`` (index: input position) has ``gt_tokens``, ``pred_tokens``,
    ``common``, ``found`` and ``added``.
    """

    corpus: TokenCounts
    documents: pd.DataFrame


def token_diagnostics(
    docs: Iterable[tuple[Iterable[str], Iterable[str]]],
    tokenizer: Callable[[str], list[str]] = word_tokens,
) -> TokenResult:
    """Tokens found and tokens added per document and for the corpus.

    Parameters
    ----------
    docs : iterable of (gt_values, pred_values)
        Per document, the GT and the predicted value strings.
    tokenizer : callable, default :func:`word_tokens`
        Turns one value into its tokens.

    Returns
    -------
    TokenResult

    Examples
    --------
    >>> result = token_diagnostics([(["ACME Ltd", "10.00"], ["ACME", "10.00", "VAT"])])
    >>> result.corpus
    TokenCounts(gt_tokens=5, pred_tokens=5, common=4)
    >>> result.corpus.found, result.corpus.added
    (0.8, 0.2)
    """
    rows = []
    for gt_values, pred_values in docs:
        gt = Counter(token for value in gt_values for token in tokenizer(value))
        pred = Counter(token for value in pred_values for token in tokenizer(value))
        rows.append((gt.total(), pred.total(), (gt & pred).total()))
    documents = pd.DataFrame(rows, columns=["gt_tokens", "pred_tokens", "common"], dtype="int64")
    common, gt_tokens, pred_tokens = documents.common, documents.gt_tokens, documents.pred_tokens
    documents["found"] = (common / gt_tokens.where(gt_tokens > 0)).fillna(1.0)
    documents["added"] = ((pred_tokens - common) / pred_tokens.where(pred_tokens > 0)).fillna(0.0)
    totals = documents[["gt_tokens", "pred_tokens", "common"]].sum()
    return TokenResult(TokenCounts(*(int(totals[c]) for c in totals.index)), documents)
