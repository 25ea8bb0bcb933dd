"""What declaring comparators would bring: the comparator that fixes a field's format
errors, and the figures re-scored with it (the CLI's hint line, the app's one-click choice).

>>> from kieval_core import evaluate  # doctest: +SKIP
>>> result = evaluate("gt.jsonl", {"m": "pred.jsonl"})  # doctest: +SKIP
>>> suggested_comparators(result.models["m"], result.normalizer)  # doctest: +SKIP
  entity_type comparator  fixes  format
0        date   date:dmy    347     347
>>> rescored_aligned(result, "m", {"date": "date:dmy"})  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..count.causes import fixing_comparators
from ..count.comparators import FORMAT_COMPARATORS
from ..count.engine import Counted, tp_and_error
from ..count.normalize import Normalizer
from ..count.scores import aligned_score
from ..read.dataset import ENTITY_COLUMNS, Dataset
from .results import EvaluationResult, ModelResult

SUGGESTION_COLUMNS = ["entity_type", "comparator", "fixes", "format"]


def suggested_comparators(model: ModelResult, normalizer: Normalizer) -> pd.DataFrame:
    """Per entity type with ``format`` substitutions: the comparator that makes most of
    them equal (ties: the order of :data:`~kieval_core.count.comparators.FORMAT_COMPARATORS`,
    dates first), how many it fixes and how many there are; most format errors first."""
    error_list = model.error_list
    if "cause" not in error_list:
        return pd.DataFrame(columns=SUGGESTION_COLUMNS)
    subs = error_list[(error_list["kind"] == "substitution") & (error_list["cause"] == "format")]
    if subs.empty:
        return pd.DataFrame(columns=SUGGESTION_COLUMNS)
    codes, distinct = pd.factorize(pd.concat([subs["gt_value"], subs["pred_value"]]).astype(object))
    normalised = np.array([normalizer(v) for v in distinct], dtype=object)[codes]
    fixing = fixing_comparators(normalised[: len(subs)], normalised[len(subs):])
    per_type = pd.DataFrame(fixing.astype(np.int64), columns=list(FORMAT_COMPARATORS))
    per_type["entity_type"] = subs["entity_type"].astype(object).to_numpy()
    sums = per_type.groupby("entity_type", sort=True).sum()
    best = sums.to_numpy().argmax(axis=1)
    out = pd.DataFrame({
        "entity_type": sums.index.astype(object),
        "comparator": np.asarray(FORMAT_COMPARATORS, dtype=object)[best],
        "fixes": sums.to_numpy()[np.arange(len(sums)), best],
        "format": per_type.groupby("entity_type", sort=True).size().to_numpy(),
    })
    out = out.sort_values(["format", "entity_type"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def _dataset(frame: pd.DataFrame, name: str, doc_ids: tuple[str, ...]) -> Dataset:
    entities = pd.DataFrame({c: frame[c].astype(object) if frame[c].dtype.name == "category" else frame[c]
                             for c in ENTITY_COLUMNS})
    return Dataset(name, name, entities.reset_index(drop=True), doc_ids)


def rescored_aligned(result: EvaluationResult, name: str, comparators: Mapping[str, str]) -> float:
    """KIEval_Aligned of model ``name`` counted again with ``comparators`` ({entity type:
    comparator}) declared on top of the evaluation's own, from the engine's tables (no
    file is read again).

    Only the documents where the new comparators compare some values differently are
    counted again; the others keep their counts. That is exact: a document's TP and Error
    follow from the values that are equal within each of its entity types alone (the
    matching's S and W optimum, SPEC 3.2; which of several tied pairings it takes does not
    change them)."""
    model = result.models[name]
    counted = model.detail()
    normalizer = dataclasses.replace(result.normalizer,
                                     comparators=result.normalizer.comparators + tuple(comparators.items()))
    changed = changed_documents(counted, result.normalizer, normalizer, list(comparators))
    kept = model.tally.documents.drop(index=list(changed))
    tp = int(kept["tp"].sum())
    error = int(kept[["substitution", "addition", "deletion"]].to_numpy().sum())
    if changed:
        doc_ids = tuple(d for d in counted.doc_ids if d in changed)
        pred_ids = tuple(d for d in doc_ids if d not in set(model.missing_documents))

        def of_changed(frame: pd.DataFrame) -> pd.DataFrame:
            return frame[frame["doc_id"].isin(changed).to_numpy()]

        gt = _dataset(of_changed(counted.gt_entities), "ground truth", doc_ids)
        more_tp, more_error = tp_and_error(gt, _dataset(of_changed(counted.pred_entities), name, pred_ids),
                                           normalizer)
        tp, error = tp + more_tp, error + more_error
    return float(aligned_score(tp, error))


def changed_documents(counted: Counted, before: Normalizer, after: Normalizer, types: list[str]) -> set[str]:
    """Documents in which ``after`` splits the values of one of ``types`` into equal ones
    otherwise than ``before`` does (GT and predicted values together)."""
    frame = pd.concat([f.loc[f["entity_type"].isin(types).to_numpy(), ["doc_id", "entity_type", "value"]]
                       .astype(object) for f in (counted.gt_entities, counted.pred_entities)])
    if frame.empty:
        return set()
    type_codes, type_names = pd.factorize(frame["entity_type"])
    doc_codes, doc_names = pd.factorize(frame["doc_id"])
    values = frame["value"].to_numpy(object)
    keys = pd.DataFrame({
        "part": doc_codes.astype(np.int64) * len(type_names) + type_codes,
        "before": before.comparable_codes(values, list(type_names), type_codes)[2],
        "after": after.comparable_codes(values, list(type_names), type_codes)[2],
    })
    # two partitions of one set are equal when each has as many parts as their meet
    distinct = keys.groupby("part").nunique()
    meet = keys.drop_duplicates().groupby("part").size()
    parts = distinct.index[(distinct["before"] != meet) | (distinct["after"] != meet)]
    return set(doc_names[np.unique(parts.to_numpy() // len(type_names))])


def option_name(comparator: str) -> str:
    """How a comparator is written on the command line (``date:dmy`` is ``date``)."""
    return "date" if comparator == "date:dmy" else comparator


def hint_lines(result: EvaluationResult, fields: int = 3) -> list[str]:
    """Per model with format errors: the comparators to try for (at most) the ``fields``
    fields with the most format errors, and what they would change: ``--compare date=date
    would raise KIEval_Aligned from a to b`` (models without the engine's tables, a
    distributed run, give none)."""
    lines = []
    for name, model in result.models.items():
        if model.counted is None:
            continue
        suggestions = suggested_comparators(model, result.normalizer)
        suggestions = suggestions[suggestions["fixes"] > 0].head(fields)
        if suggestions.empty:
            continue
        chosen = dict(zip(suggestions["entity_type"], suggestions["comparator"], strict=True))
        after = rescored_aligned(result, name, chosen)
        options = " ".join(f"--compare {t}={option_name(c)}" for t, c in chosen.items())
        verb = "raise" if after >= model.aligned else "change"
        lines.append(f"{name}: {options} would {verb} KIEval_Aligned from {model.aligned:.4f} to {after:.4f}")
    return lines
