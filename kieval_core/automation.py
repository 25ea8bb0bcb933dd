"""The RPA automation trade-off (SPEC 4): review predictions below a confidence threshold.

The curve is computed from one sort of the predictions and cumulative sums: every
prediction carries what reviewing it changes (one review; for an FP, one fewer wrong
value left, and one more TP when it is among the first ``g`` reviewed FPs of a cell
whose GT side misses ``g`` values). Reading the sums at every distinct confidence gives
the exact curve, not a grid approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .engine import run_ranks
from .scores import aligned_score


@dataclass(frozen=True)
class Recommendation:
    """The threshold that reaches a target accuracy with the most automation."""

    target: float
    threshold: float | None
    auto_rate: float | None
    kieval_aligned: float | None
    reviews: int | None
    reviews_per_1000_documents: float | None
    best_reachable: float

    @property
    def reachable(self) -> bool:
        return self.threshold is not None

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def review_effects(pred_entities: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Per prediction: its confidence (missing = 1.0) and the effect of reviewing it.

    Columns ``confidence, entity_type, fp (0/1), gain (0/1: becomes a TP when reviewed)``.
    An FP gains when it is among the first ``g`` reviewed FPs of its cell, ``g`` being the
    cell's FN count; reviews go in ascending confidence, so that rank is fixed up front.
    """
    conf = pred_entities["confidence"].fillna(1.0).to_numpy(np.float64)
    is_fp = (pred_entities["status"] != "correct").to_numpy()
    cell = pred_entities["cell"].to_numpy()
    gain = np.zeros(len(conf), np.int64)
    fps = np.flatnonzero(is_fp)
    order = fps[np.lexsort((fps, conf[fps], cell[fps]))]
    gain[order] = run_ranks(cell[order]) < cells["fn"].to_numpy()[cell[order]]
    return pd.DataFrame({
        "confidence": conf,
        "entity_type": pred_entities["entity_type"],
        "fp": is_fp.astype(np.int64),
        "gain": gain,
    })


def automation_curve(effects: pd.DataFrame, tp: int, addition: int) -> pd.DataFrame:
    """The exact curve: ``threshold, auto_rate, kieval_aligned, reviewed``.

    Evaluated at 0, at every distinct confidence and just above the largest one. A
    prediction with confidence c is reviewed at threshold t when c < t.
    """
    conf = effects["confidence"].to_numpy(np.float64)
    order = np.argsort(conf, kind="stable")
    conf_sorted = conf[order]
    cum_fp = np.concatenate([[0], np.cumsum(effects["fp"].to_numpy()[order])])
    cum_gain = np.concatenate([[0], np.cumsum(effects["gain"].to_numpy()[order])])
    ends = [np.nextafter(conf_sorted[-1], np.inf)] if len(conf_sorted) else []
    thresholds = np.unique(np.concatenate([[0.0], conf_sorted, ends]))
    reviewed = np.searchsorted(conf_sorted, thresholds, side="left")
    n = len(conf)
    total_fp = cum_fp[-1]
    tp_after = tp + cum_gain[reviewed]
    wrong_left = total_fp - cum_fp[reviewed]
    return pd.DataFrame({
        "threshold": thresholds,
        "auto_rate": 1.0 - reviewed / n if n else np.ones(len(thresholds)),
        "kieval_aligned": aligned_score(tp_after, wrong_left + addition),
        "reviewed": reviewed.astype(np.int64),
    })


def recommend(curve: pd.DataFrame, target: float, n_documents: int) -> Recommendation:
    """Smallest threshold whose accuracy after review reaches ``target`` (SPEC 4).

    >>> curve = pd.DataFrame({"threshold": [0.0, 0.5, 0.9], "auto_rate": [1.0, 0.5, 0.0],
    ...                       "kieval_aligned": [0.6, 0.9, 0.95], "reviewed": [0, 5, 10]})
    >>> recommend(curve, 0.85, 2).threshold
    0.5
    """
    reached = np.flatnonzero(curve["kieval_aligned"].to_numpy() >= target - 1e-12)
    best = float(curve["kieval_aligned"].max()) if len(curve) else 0.0
    if not len(reached):
        return Recommendation(target, None, None, None, None, None, best)
    row = curve.iloc[int(reached[0])]
    reviews = int(row["reviewed"])
    per_1000 = 1000.0 * reviews / n_documents if n_documents else 0.0
    return Recommendation(
        target=target,
        threshold=float(row["threshold"]),
        auto_rate=float(row["auto_rate"]),
        kieval_aligned=float(row["kieval_aligned"]),
        reviews=reviews,
        reviews_per_1000_documents=per_1000,
        best_reachable=best,
    )


def curves_by_entity_type(effects: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """One curve per entity type (cells are per entity type, so the model decomposes)."""
    per_type = cells.groupby("entity_type").agg(tp=("tp", "sum"), addition=("addition", "sum"))
    frames = []
    for entity_type, part in effects.groupby("entity_type", sort=True):
        row = per_type.loc[entity_type]
        curve = automation_curve(part, int(row["tp"]), int(row["addition"]))
        frames.append(curve.assign(entity_type=entity_type))
    columns = ["entity_type", "threshold", "auto_rate", "kieval_aligned", "reviewed"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
