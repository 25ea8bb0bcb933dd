"""Tables of the "Suspect labels" page (SPEC 2f): the suspects with the reviewer's verdicts,
one suspect's evidence (the GT beside every model's values), the fix file of the verdicts,
and the figures with the fixes beside the figures as given.

A **verdict** is a dict ``{verdict: "wrong" | "right" | "skip", fixed_value, note}`` kept
per suspect under :func:`suspect_key`; only ``wrong`` verdicts become fixes.

>>> import pandas as pd
>>> row = pd.Series({"doc_id": "d", "entity_type": "zip", "group_type": "", "group": -1,
...                  "gt_value": "B1750", "proposed_value": "81750"})
>>> suspect_key(row)
'["d", "zip", "", -1, "B1750"]'
>>> verdicts = {suspect_key(row): {"verdict": "wrong", "fixed_value": "81750", "note": "receipt"}}
>>> fix_rows_of(pd.DataFrame([row]), verdicts)[0]["fixed_value"]
'81750'
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..result.results import EvaluationResult
from ..review.label_fixes import group_field

#: The verdicts a reviewer gives a suspect, and how the page names them.
VERDICTS = {"wrong": "label is wrong: use this value", "right": "label is right", "skip": "skip"}
#: Headline figures shown with and without the fixes: label -> corpus column.
HEADLINE = {"KIEval_Aligned": "aligned", "KIEval entity F1": "f1", "KIEval group F1": "group_f1",
            "Flat entity F1": "flat_f1", "Corrections": "corrections"}


def suspect_key(row) -> str:
    """A suspect's identity across reruns and saved runs: its slot and GT value, as JSON
    text (no separator inside a value can make two suspects share one)."""
    parts = [row["doc_id"], row["entity_type"], row["group_type"], int(row["group"]), row["gt_value"]]
    return json.dumps(parts, ensure_ascii=False)


def suspect_keys(suspects: pd.DataFrame) -> list[str]:
    """:func:`suspect_key` of every suspect, in order."""
    return [suspect_key(row) for _, row in suspects.iterrows()]


def suspect_list(suspects: pd.DataFrame, verdicts: Mapping[str, dict], fields: list[str] | None = None
                 ) -> pd.DataFrame:
    """The suspects as the page lists them, strongest evidence first: field filter applied,
    with the number of agreeing models and the verdict given so far (``""`` if none)."""
    shown = suspects if not fields else suspects[suspects["entity_type"].isin(fields)]
    keys = suspect_keys(shown)
    return pd.DataFrame({
        "key": keys,
        "doc_id": shown["doc_id"].to_numpy(object),
        "field": shown["entity_type"].to_numpy(object),
        "group": [group_label(t, g) for t, g in zip(shown["group_type"], shown["group"], strict=True)],
        "ground truth": shown["gt_value"].to_numpy(object),
        "models say": shown["proposed_value"].to_numpy(object),
        "models": [len(m) for m in shown["models"]],
        "score": shown["score"].to_numpy(np.float64),
        "mean confidence": shown["mean_confidence"].to_numpy(np.float64),
        "verdict": [VERDICTS.get(verdicts.get(k, {}).get("verdict"), "") for k in keys],
    })


def group_label(group_type: str, group: int) -> str:
    """``(non-group)`` or the GT group as ``menu 3`` (index within the document)."""
    return "(non-group)" if group < 0 else f"{group_type} {int(group)}"


def evidence_table(result: EvaluationResult, suspect: pd.Series) -> pd.DataFrame:
    """One row per model: what it predicts in the suspect's slot (its values there, with
    confidences), whether it agrees with the proposal, and its status against the GT."""
    rows = []
    agreeing = set(suspect["models"])
    for name, model in result.models.items():
        pred = model.detail().pred_entities
        in_slot = ((pred["doc_id"].astype(object) == suspect["doc_id"])
                   & (pred["entity_type"].astype(object) == suspect["entity_type"])
                   & (pred["group_type"].astype(object) == suspect["group_type"])
                   & (np.where(pred["group"] >= 0, pred["paired_group"], -1) == suspect["group"]))
        here = pred[in_slot]
        values = " | ".join(map(str, here["value"])) if len(here) else "(nothing)"
        confidences = " | ".join("" if c != c else f"{c:.4f}" for c in here["confidence"])
        rows.append({"model": name, "value": values, "confidence": confidences,
                     "status": " | ".join(map(str, here["status"].astype(object))),
                     "agrees": name in agreeing})
    return pd.DataFrame(rows, columns=["model", "value", "confidence", "status", "agrees"])


def fix_rows_of(suspects: pd.DataFrame, verdicts: Mapping[str, dict]) -> list[dict]:
    """The label-fix file (SPEC 2f) of the verdicts that say a label is wrong, in the
    suspects' order."""
    rows = []
    for _, row in suspects.iterrows():
        verdict = verdicts.get(suspect_key(row))
        if not verdict or verdict.get("verdict") != "wrong":
            continue
        rows.append({"doc_id": row["doc_id"], "entity_type": row["entity_type"],
                     "group": group_field(row["group_type"], row["group"]),
                     "gt_value": row["gt_value"], "fixed_value": verdict.get("fixed_value") or None,
                     "note": verdict.get("note") or ""})
    return rows


def headline_with_fixes(result: EvaluationResult) -> pd.DataFrame:
    """Per model and headline figure: as given, with the fixes, the change; and each model's
    rank by KIEval_Aligned before and after (does the order of the models change?)."""
    before = result.before_fixes
    rows = []
    ranks = {}
    for which, res in (("as given", before), ("fixed", result)):
        aligned = pd.Series({n: m.aligned for n, m in res.models.items()})
        ranks[which] = aligned.rank(ascending=False, method="min").astype(int)
    for name, model in result.models.items():
        old = before.models[name]
        for label, column in HEADLINE.items():
            a, b = old.corpus_value(column), model.corpus_value(column)
            rows.append({"model": name, "figure": label, "as given": a, "with fixes": b,
                         "change": None if a is None or b is None else b - a})
        rank_before, rank_after = int(ranks["as given"][name]), int(ranks["fixed"][name])
        rows.append({"model": name, "figure": "Rank by KIEval_Aligned", "as given": rank_before,
                     "with fixes": rank_after, "change": rank_after - rank_before})
    return pd.DataFrame(rows, columns=["model", "figure", "as given", "with fixes", "change"])


def fields_with_fixes(result: EvaluationResult, name: str) -> pd.DataFrame:
    """Per entity type of one model: KIEval_Aligned and corrections as given and fixed."""
    columns = ["aligned", "corrections"]
    old = result.before_fixes.models[name].by_entity_type.set_index("entity_type")[columns]
    new = result.models[name].by_entity_type.set_index("entity_type")[columns]
    both = old.merge(new, how="outer", left_index=True, right_index=True,
                     suffixes=(" as given", " with fixes"))
    both["aligned change"] = both["aligned with fixes"] - both["aligned as given"]
    both["corrections change"] = both["corrections with fixes"] - both["corrections as given"]
    return both.reset_index()


def automation_with_fixes(result: EvaluationResult, target: float) -> pd.DataFrame:
    """Per model: the recommended threshold for ``target`` accuracy and its automation, as
    given and with the fixes (None where the target is not reachable with automation)."""
    rows = []
    for name, model in result.models.items():
        old, new = result.before_fixes.models[name].recommend(target), model.recommend(target)
        rows.append({"model": name,
                     "threshold as given": None if old is None else old.threshold,
                     "threshold with fixes": None if new is None else new.threshold,
                     "automation as given": None if old is None else old.auto_rate,
                     "automation with fixes": None if new is None else new.auto_rate})
    return pd.DataFrame(rows)


def headline_text(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`headline_with_fixes` as shown: scores in percent (two decimals), their change in
    points, counts and ranks as whole numbers; indexed by model and figure.

    >>> shown = headline_text(pd.DataFrame({"model": ["a", "a"], "figure": ["KIEval_Aligned", "Corrections"],
    ...     "as given": [0.8, 12], "with fixes": [0.8125, 10], "change": [0.0125, -2]}))
    >>> shown.values.tolist()
    [['80.00%', '81.25%', '+1.25 pts'], ['12', '10', '-2']]
    """
    counts = table["figure"].isin(["Corrections", "Rank by KIEval_Aligned"]).to_numpy()

    def text(value, count: bool, change: bool) -> str:
        if value is None or value != value:
            return "n/a"
        if count:
            return f"{int(value):+,d}" if change else f"{int(value):,d}"
        return f"{value * 100:+.2f} pts" if change else f"{value:.2%}"

    out = table[["model", "figure"]].copy()
    for column in ("as given", "with fixes", "change"):
        out[column] = [text(v, c, column == "change") for v, c in zip(table[column], counts, strict=True)]
    return out.set_index(["model", "figure"])
