"""Suspect ground truth (SPEC 2f): labels the models agree against.

Vocabulary:

* a **slot** is where a value sits: (document, group type, GT group, entity type); the GT
  group is -1 for the non-group, and a model's value is in a slot when it sits in the
  non-group or in a predicted group matched to that GT group;
* a **suspect value** is a GT value that at least ``k`` models replace, in its slot, by
  one and the same value (equal under the field's comparator): the engine paired each
  model's wrong value with the GT value it substitutes (:func:`~kieval_core.count.engine.
  pair_substitutions`), so "against the GT value" is read from the models' own matchings;
* a **suspect gap** is a value at least ``k`` models predict in a slot where the GT holds
  no such value (the models' deletions there).

Every suspect carries its evidence: the models that agree (sorted by name), their raw
values and confidences, the **score** (share of the models that agree) and the mean
confidence of the agreeing models (which breaks ties). With one model the evidence is
**weak**: only its predictions with confidence >= 0.99 that disagree with the GT.

Everything runs on the engine's tables of all models at once (one concatenated frame,
grouped by integer keys); the only per-row Python is on the suspects themselves.

>>> import pandas as pd
>>> from kieval_core import Dataset, evaluate
>>> def ds(name, rows):
...     e = pd.DataFrame(rows, columns=["doc_id", "entity_type", "value"]).assign(
...         group_type="", group=-1, confidence=float("nan"))
...     return Dataset(name, name, e, ("d",))
>>> gt = ds("gt", [("d", "zip", "B1750")])
>>> preds = {m: ds(m, [("d", "zip", "81750")]) for m in ("a", "b")}
>>> evaluate(gt, preds).suspects[["doc_id", "gt_value", "proposed_value", "score"]]
  doc_id gt_value proposed_value  score
0      d    B1750          81750    1.0
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ..count.engine import Counted
from ..count.normalize import Normalizer
from ..exceptions import KievalOptionError
from ..rules import FieldRules
from ..safe_text import csv_text
from .label_fixes import group_field

#: Columns of :func:`rank_suspects` (``group`` is the GT group index, -1 for the non-group).
SUSPECT_COLUMNS = ["doc_id", "entity_type", "group_type", "group", "kind", "gt_value", "proposed_value",
                   "models", "values", "confidences", "score", "mean_confidence", "weak"]
#: The confidence a single model's disagreement needs to be listed (weak evidence).
WEAK_CONFIDENCE = 0.99
_SLOT = ["doc_id", "group_type", "group", "entity_type"]


def no_suspects() -> pd.DataFrame:
    """An empty table of suspects."""
    return pd.DataFrame(columns=SUSPECT_COLUMNS)


def default_agreement(n_models: int) -> int:
    """The default ``k``: more than half of the models, and at least 2 (1 for one model).

    >>> [default_agreement(n) for n in (1, 2, 3, 4, 7)]
    [1, 2, 2, 3, 4]
    """
    return 1 if n_models == 1 else max(2, n_models // 2 + 1)


def field_forms(values: np.ndarray, entity_types: np.ndarray, normalizer: Normalizer,
                rules: FieldRules | None = None) -> np.ndarray:
    """The comparable code of each value under its entity type's field rule: the one place
    this module asks which comparator judges a field (SPEC 2b, 2d). The comparators are the
    field rules' (:meth:`~kieval_core.rules.FieldRules.comparator_pairs`); without rules, the
    normaliser's own."""
    if rules:
        normalizer = dataclasses.replace(normalizer, comparators=rules.comparator_pairs())
    type_codes, type_names = pd.factorize(entity_types, sort=True)
    return normalizer.comparable_codes(values, list(type_names), type_codes)[2]


def rank_suspects(gt_values: pd.Series, counted: Mapping[str, Counted], normalizer: Normalizer,
                  rules: FieldRules | None = None, k: int | None = None) -> pd.DataFrame:
    """The suspects of one evaluation, strongest evidence first.

    Parameters
    ----------
    gt_values
        The ground truth's raw values, in the order of its entity table (the engine's
        ``partner`` indices point into it).
    counted
        Each model's engine tables, all counted against that ground truth.
    normalizer, rules
        The value comparison and the field rules in force (:func:`field_forms`).
    k
        How many models must agree (default :func:`default_agreement`).

    Returns a frame of :data:`SUSPECT_COLUMNS`, sorted by score, then mean confidence
    (missing last), then document, field, group type, the values, and the GT group's index
    (which refers to the file's order of the groups).
    """
    n_models = len(counted)
    if n_models == 0:
        return no_suspects()
    k = default_agreement(n_models) if k is None else int(k)
    if not 1 <= k <= n_models:
        msg = f"the agreement k must be between 1 and the number of models ({n_models}), got {k}"
        raise KievalOptionError(msg)
    weak = n_models == 1
    names = sorted(counted)
    # one model: only its confident wrong values count, picked before the table is built
    least = WEAK_CONFIDENCE if weak else -np.inf
    candidates = pd.concat([_wrong_values(counted[name], rank, least) for rank, name in enumerate(names)],
                           ignore_index=True)
    if candidates.empty:
        return no_suspects()
    candidates = candidates.assign(form=field_forms(candidates["value"].to_numpy(object),
                                                    candidates["entity_type"].to_numpy(object), normalizer,
                                                    rules))
    key = candidates.groupby([*_SLOT, "gt_row", "form"], sort=False, observed=True).ngroup().to_numpy()
    candidates = candidates.assign(key=key)
    # one vote per model and key: its most confident copy
    votes = candidates.sort_values(["key", "model", "confidence", "value"],
                                   ascending=[True, True, False, True], na_position="last", kind="stable")
    votes = votes.drop_duplicates(["key", "model"])
    n_agree = np.bincount(votes["key"].to_numpy(), minlength=int(key.max()) + 1)
    chosen = votes[n_agree[votes["key"].to_numpy()] >= k]
    if chosen.empty:
        return no_suspects()
    return _evidence(chosen, gt_values, names, n_models, weak)


def _wrong_values(counted: Counted, model: int, least: float = -np.inf) -> pd.DataFrame:
    """A model's predictions that are not TPs, in a slot: the non-group, or a predicted
    group matched to a GT group; with a confidence of at least ``least`` when it is finite
    (a missing confidence is then left out). ``gt_row`` is the GT value a substitution
    replaces (-1 for a deletion, which proposes a value the slot lacks)."""
    pred = counted.pred_entities
    grouped = pred["group"].to_numpy() >= 0
    paired = pred["paired_group"].to_numpy()
    keep = (pred["status"] != "correct").to_numpy() & (~grouped | (paired >= 0))  # on the codes
    if least > -np.inf:
        keep &= pred["confidence"].to_numpy(np.float64) >= least
    rows = pred[keep]
    substituted = (rows["status"] == "substituted").to_numpy()
    return pd.DataFrame({
        "doc_id": rows["doc_id"].astype(object).to_numpy(),
        "group_type": rows["group_type"].astype(object).to_numpy(),
        "group": np.where(rows["group"].to_numpy() >= 0, rows["paired_group"].to_numpy(), -1),
        "entity_type": rows["entity_type"].astype(object).to_numpy(),
        "gt_row": np.where(substituted, rows["partner"].to_numpy(), -1),
        "value": rows["value"].to_numpy(object),
        "confidence": rows["confidence"].to_numpy(np.float64),
        "model": model,
    })


def _evidence(votes: pd.DataFrame, gt_values: pd.Series, names: list[str], n_models: int,
              weak: bool) -> pd.DataFrame:
    """One row per suspect key: the agreeing models and their values, the proposal (the raw
    value most of them wrote; ties: the smallest), score and mean confidence."""
    votes = votes.sort_values(["key", "model"], kind="stable")
    by_key = votes.groupby("key", sort=True)
    first = by_key.first()
    value_counts = votes.groupby(["key", "value"], sort=True).size().rename("n").reset_index()
    proposal = (value_counts.sort_values(["key", "n", "value"], ascending=[True, False, True], kind="stable")
                .drop_duplicates("key").set_index("key")["value"])
    model_names = np.asarray(names, dtype=object)
    gt_row = first["gt_row"].to_numpy()
    raw_gt = np.append(gt_values.to_numpy(object), None)  # never empty
    out = pd.DataFrame({
        "doc_id": first["doc_id"].to_numpy(object),
        "entity_type": first["entity_type"].to_numpy(object),
        "group_type": first["group_type"].to_numpy(object),
        "group": first["group"].to_numpy(np.int64),
        "kind": np.where(gt_row >= 0, "value", "gap"),
        # None for a gap (a str column would make it NaN)
        "gt_value": pd.Series(np.where(gt_row >= 0, raw_gt[np.maximum(gt_row, 0)], None), dtype=object),
        "proposed_value": proposal.reindex(first.index).to_numpy(object),
        "models": [tuple(model_names[m]) for m in by_key["model"].agg(list)],
        "values": [tuple(v) for v in by_key["value"].agg(list)],
        "confidences": [tuple(map(_confidence, cs)) for cs in by_key["confidence"].agg(list)],
        "score": by_key.size().to_numpy() / n_models,
        "mean_confidence": by_key["confidence"].mean().to_numpy(np.float64),
        "weak": weak,
    })
    return sorted_suspects(out)


def sorted_suspects(suspects: pd.DataFrame) -> pd.DataFrame:
    """Suspects strongest evidence first: score, mean confidence (missing last), then the
    content (document, field, group type, values) and the GT group's index (its place in
    the file) last. Suspects of disjoint sets of documents (a distributed run's partitions),
    concatenated and sorted, are those of the whole."""
    content = ("proposed_value", "gt_value", "group_type", "entity_type", "doc_id")
    texts = [suspects[c].fillna("").astype(str).to_numpy() for c in content]
    evidence = [-np.nan_to_num(suspects["mean_confidence"].to_numpy(np.float64), nan=-1.0),
                -suspects["score"].to_numpy(np.float64)]
    order = np.lexsort((suspects["group"].to_numpy(), *texts, *evidence))
    text = {c: object for c in ("doc_id", "entity_type", "group_type", "kind", "gt_value", "proposed_value")}
    return suspects.iloc[order].reset_index(drop=True)[SUSPECT_COLUMNS].astype(text)


def _confidence(value: float) -> float | None:
    return None if value != value else float(value)


def suspect_records(suspects: pd.DataFrame) -> list[dict]:
    """The suspects as the report's ``suspects[]`` (SPEC 2f): ``group`` is null for the
    non-group, else ``{"type", "index"}``; confidences null where a model gave none."""
    records = []
    for row in suspects.itertuples(index=False):
        records.append({
            "doc_id": row.doc_id, "entity_type": row.entity_type,
            "group": group_field(row.group_type, row.group),
            "kind": row.kind, "gt_value": row.gt_value, "proposed_value": row.proposed_value,
            "models": list(row.models), "values": list(row.values), "confidences": list(row.confidences),
            "score": float(row.score),
            "mean_confidence": _confidence(row.mean_confidence),
            "weak": bool(row.weak),
        })
    return records


def suspect_table(suspects: pd.DataFrame) -> pd.DataFrame:
    """The suspects as a flat table (CSV export): list columns joined by `` | ``."""
    out = suspects.copy()
    for column in ("models", "values"):
        out[column] = [" | ".join(map(str, v)) for v in out[column]]
    out["confidences"] = [" | ".join("" if c is None else f"{c:g}" for c in v) for v in out["confidences"]]
    out["group"] = out["group"].astype("Int64").where(out["group"] >= 0, pd.NA)
    return out


def write_suspects(suspects: pd.DataFrame, path, formulas: str = "escape", *, as_json: bool = False) -> None:
    """The suspects as a JSON list (:func:`suspect_records`) or a CSV table
    (:func:`suspect_table`, formulas neutralised unless ``formulas="keep"``)."""
    if as_json:
        Path(path).write_text(json.dumps(suspect_records(suspects), ensure_ascii=False, indent=2) + "\n",
                              encoding="utf-8")
    else:
        csv_text(suspect_table(suspects), path, formulas)


def label_lines(result) -> list[str]:
    """The CLI summary's lines about the labels: how many suspects (when the engine's
    tables were kept) and, with label fixes, KIEval_Aligned before and after per model."""
    lines = []
    if result.has_suspects and result.models:
        suspects = result.suspects
        n_models = len(result.models)
        k = result.suspect_agreement or default_agreement(n_models)
        evidence = f"k = {k} of {n_models} models"
        if n_models == 1:
            evidence = f"weak evidence: one model, confidence >= {WEAK_CONFIDENCE}"
        lines.append(f"suspect labels: {len(suspects)} ({evidence}; --suspects OUT lists them)")
    if result.before_fixes is not None:
        lines.append(f"label fixes: {len(result.label_fixes)} applied; KIEval_Aligned as given -> fixed:")
        for name, model in result.models.items():
            before = result.before_fixes.models[name].aligned
            lines.append(f"  {name}: {before:.4f} -> {model.aligned:.4f}")
    return lines
