"""Where the review model's confidences come from (SPEC 4c): the model's own, agreement
between the loaded models (consensus), or none; and what a missing one counts as.

Consensus confidence: with three or more models on one ground truth, a prediction gets
the share of the *other* loaded models that predict the same normalised (entity type,
value) in the same document. Every model votes; only models without any confidence of
their own take consensus confidences, and the result says which did and why the others
did not (:func:`with_confidence_sources`). The shares are exact fractions k / (N - 1),
computed for all models at once from integer codes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..choices import CONFIDENCE_FROM as CONFIDENCE_FROM
from ..count.normalize import Normalizer
from ..exceptions import KievalOptionError
from ..review.automation import MISSING_POLICIES, ReviewModel
from .results import EvaluationResult, ModelResult

#: Where confidences come from: each model's own, or consensus for models without any.
#: Fewest loaded models consensus needs (with two, every share is 0 or 1).
MIN_MODELS = 3


#: What a prediction without confidence means for review, per policy (SPEC 4c).
_POLICY_TEXT = {"automate": "count them as 1.0: automated, reviewed only when everything is "
                            "(--missing-confidence automate)",
                "review": "never automate them: reviewed at every threshold, 0 included "
                          "(--missing-confidence automate counts them as 1.0)"}


def missing_confidence_warning(review: ReviewModel, policy: str) -> str | None:
    """The warning of a model some of whose predictions have no confidence (None when all
    or none have one)."""
    n = review.n_predictions
    n_no_conf = int((~review.has_confidence).sum())
    if not n_no_conf or n_no_conf == n:
        return None
    return (f"{n_no_conf:,} of {n:,} predictions have no confidence; the automation figures "
            f"{_POLICY_TEXT[policy]}")



def consensus_confidence(predictions: Mapping[str, pd.DataFrame], normalizer: Normalizer = Normalizer()
                         ) -> dict[str, np.ndarray]:
    """Per model, the consensus confidence of each of its predictions (rows of its frame of
    ``doc_id, entity_type, value``): how many of the other models predict the same
    normalised (entity type, value) in the same document, over the number of other models.

    >>> frame = lambda *values: pd.DataFrame({"doc_id": "d", "entity_type": "total", "value": values})
    >>> shares = consensus_confidence({"a": frame("10.00"), "b": frame("10.00 "), "c": frame("9.00")})
    >>> {name: share.tolist() for name, share in shares.items()}
    {'a': [0.5], 'b': [0.5], 'c': [0.0]}
    """
    names = list(predictions)
    if len(names) < MIN_MODELS:
        msg = f"consensus confidence needs at least {MIN_MODELS} models, got {len(names)}"
        raise KievalOptionError(msg)
    frames = [predictions[name] for name in names]
    sizes = np.array([len(f) for f in frames])
    if not sizes.sum():
        return {name: np.zeros(0) for name in names}
    model = np.repeat(np.arange(len(names)), sizes)

    def codes(column: str) -> np.ndarray:
        parts = [f[column] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):  # the engine's tables: no copies
            names = pd.Index(pd.unique(np.concatenate([p.cat.categories.to_numpy(object) for p in parts])))
            return np.concatenate([names.get_indexer(p.cat.categories)[p.cat.codes.to_numpy()] for p in parts]
                                  ).astype(np.int64)
        return pd.factorize(np.concatenate([p.to_numpy(object) for p in parts]))[0].astype(np.int64)

    raw = np.concatenate([f["value"].to_numpy(object) for f in frames])
    values, normalised = normalizer.sorted_codes(raw)
    kinds = codes("entity_type")
    doc_type = pd.factorize(codes("doc_id") * (int(kinds.max()) + 1) + kinds)[0]
    key = pd.factorize(doc_type.astype(np.int64) * max(len(normalised), 1) + values)[0].astype(np.int64)
    voted = np.unique(key * len(names) + model)  # one vote per (key, model)
    voters = np.bincount(voted // len(names), minlength=int(key.max()) + 1)
    share = (voters[key] - 1) / (len(names) - 1)
    return dict(zip(names, np.split(share, np.cumsum(sizes)[:-1]), strict=True))


def consensus_review(model: ModelResult, confidence: np.ndarray, only_own: bool = False) -> ReviewModel:
    """``model``'s review model with consensus confidences (one per predicted entity, in
    the engine's order). ``only_own``: only predictions that carry their own confidence
    count as having one (to compare both on the same predictions)."""
    counted = model.detail()
    has = None
    if only_own:
        has = ~np.isnan(counted.pred_entities["confidence"].to_numpy(np.float64))
    return ReviewModel.from_counted(counted, confidence, has)


def with_confidence_sources(result: EvaluationResult, missing: str = "review",
                            source: str = "model") -> EvaluationResult:
    """The result reviewed under a missing-confidence policy (``review``: a prediction
    without confidence is never automated; ``automate``: it counts as 1.0) and with confidences from
    ``source``: ``model`` (their own) or ``consensus`` (for every model without any
    confidence; models with their own keep them and are compared with consensus in
    calibration). Whatever was used instead of what was asked, and why, is added to the
    result's warnings; nothing changes silently."""
    if missing not in MISSING_POLICIES:
        msg = f"unknown missing-confidence policy {missing!r}; choose {' or '.join(MISSING_POLICIES)}"
        raise KievalOptionError(msg)
    if source not in CONFIDENCE_FROM:
        msg = f"unknown confidence source {source!r}; choose {' or '.join(CONFIDENCE_FROM)}"
        raise KievalOptionError(msg)
    models = dict(result.models)
    notes: list[str] = []
    if source == "consensus":
        models, notes = _with_consensus(result)
    for name, model in models.items():
        said = missing_confidence_warning(model.review, model.missing_confidence)
        now = missing_confidence_warning(model.review, missing)
        warnings = tuple(now if w == said else w for w in model.warnings)
        review = model.review.with_missing(missing)
        models[name] = dataclasses.replace(model, tally=dataclasses.replace(model.tally, review=review),
                                           missing_confidence=missing, warnings=warnings)
    return dataclasses.replace(result, models=models, warnings=(*result.warnings, *notes))


def _with_consensus(result: EvaluationResult) -> tuple[dict[str, ModelResult], list[str]]:
    models = dict(result.models)
    without = [name for name, m in models.items() if not m.has_confidence]
    with_own = [name for name, m in models.items() if m.has_confidence]
    if len(models) < MIN_MODELS:
        who = ", ".join(without) or "no model"
        loaded = f"{len(models)} {'is' if len(models) == 1 else 'are'} loaded"
        return models, [f"consensus confidence needs at least {MIN_MODELS} models on one ground truth and "
                        f"{loaded}: none was derived, so {who} without confidences keep none (no automation "
                        "figures)"]
    detached = [name for name, m in models.items() if m.counted is None]
    if detached:
        msg = (f"consensus confidence needs each model's entities, which a distributed run does not keep "
               f"({', '.join(detached)}); run it with the local engine")
        raise KievalOptionError(msg)
    frames = {name: m.counted.pred_entities[["doc_id", "entity_type", "value"]] for name, m in models.items()}
    shares = consensus_confidence(frames, result.normalizer)
    voters = len(models) - 1
    for name, model in models.items():
        if name in without:
            models[name] = dataclasses.replace(
                model, tally=dataclasses.replace(model.tally, review=consensus_review(model, shares[name])),
                consensus_of=voters)
        else:  # kept as they are; consensus only beside them, for calibration
            models[name] = dataclasses.replace(model, consensus=consensus_review(model, shares[name], True))
    notes = []
    if with_own:
        notes.append(f"{', '.join(with_own)}: own confidences kept (consensus confidence is derived only for "
                     "models without any; calibration compares both)")
    if not without:
        notes.append("consensus confidence asked for, but every model carries its own confidences: none "
                     "was derived")
    return models, notes
