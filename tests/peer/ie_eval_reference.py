"""Reference: ie-eval's scorer classes (ie-eval 0.2.0) fed document by document, as its own
evaluation loop does. The OI family is checked against it (``test_peer_oi.py``) and timed
against it (``bench/bench_peer.py``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

logging.disable(logging.INFO)  # ie-eval configures INFO logging on import
from ie_eval.scorer import (  # noqa: E402
    BagOfWords,
    MicroAverageErrorRate,
    MicroAverageFScore,
    OiEcerEwer,
    OiNerval,
)


def tagged_words(doc):
    """``[(category, text), ...]`` as ``[(category, word), ...]`` (bag-of-tagged-words)."""
    return [(category, word) for category, text in doc for word in text.split()]


@dataclass
class IeEvalScores:
    """The scorers after a corpus, each under the label ``total``."""

    ecer: MicroAverageErrorRate = field(default_factory=MicroAverageErrorRate)
    ewer: MicroAverageErrorRate = field(default_factory=MicroAverageErrorRate)
    nerval: MicroAverageFScore = field(default_factory=MicroAverageFScore)
    botw: MicroAverageFScore = field(default_factory=MicroAverageFScore)
    boe: MicroAverageFScore = field(default_factory=MicroAverageFScore)
    botw_errors: MicroAverageErrorRate = field(default_factory=MicroAverageErrorRate)
    boe_errors: MicroAverageErrorRate = field(default_factory=MicroAverageErrorRate)


def ie_eval_scores(pairs, threshold_percent: float) -> IeEvalScores:
    """ie-eval's OIECER, OIEWER, OINerval (``threshold_percent``: its CER threshold in
    percent), bag-of-tagged-words and bag-of-entities over ``(gt, pred)`` pairs of
    ``[(category, text), ...]``."""
    scores = IeEvalScores()
    for gt, pred in pairs:
        scores.ecer.update("total", OiEcerEwer(gt, pred, compute_ecer=True))
        scores.ewer.update("total", OiEcerEwer(gt, pred, compute_ecer=False))
        scores.nerval.update("total", OiNerval(gt, pred, nerval_threshold=float(threshold_percent)))
        words = BagOfWords(tagged_words(gt), tagged_words(pred))
        scores.botw.update("total", words)
        scores.botw_errors.update("total", words)
        bag = BagOfWords(gt, pred)
        scores.boe.update("total", bag)
        scores.boe_errors.update("total", bag)
    return scores
