"""Peer metrics computed on the same loaded data as KIEval (SPEC section 5).

Each module holds pure functions and frozen result objects:

* :mod:`.anls` - ANLS* (``anls-star`` 1.0.1 semantics);
* :mod:`.nted` - Donut's nTED accuracy and field F1 (``donut-python`` 1.0.9);
* :mod:`.oi` - reading-order-independent OIECER, OIEWER, OINerval, bag-of-tagged-words
  and bag-of-entities (``ie-eval`` 0.2.0);
* :mod:`.lists` - item, positional and row-alignment scores for parallel lists;
* :mod:`.tokens` - SCORE-style tokens found / tokens added.
"""

from .anls import ANLSCorpus, anls_star, anls_star_corpus
from .lists import ListResult, RowAlignment, list_metrics
from .nted import DonutFieldF1, NTEDCorpus, donut_field_f1, nted, nted_corpus
from .oi import BagScore, Detection, ErrorRate, OIResult, oi_metrics
from .tokens import TokenCounts, TokenResult, token_diagnostics, word_tokens

__all__ = [
    "ANLSCorpus",
    "BagScore",
    "Detection",
    "DonutFieldF1",
    "ErrorRate",
    "ListResult",
    "NTEDCorpus",
    "OIResult",
    "RowAlignment",
    "TokenCounts",
    "TokenResult",
    "anls_star",
    "anls_star_corpus",
    "donut_field_f1",
    "list_metrics",
    "nted",
    "nted_corpus",
    "oi_metrics",
    "token_diagnostics",
    "word_tokens",
]
