"""One document, pair by pair: how its groups were matched and which value stands for
which (the engine's own pairing, so the view and the counts never disagree).

* :func:`group_pairs`: every pair of the document (the non-group pair first, then per
  group type the matched pairs and unmatched GT groups by GT index, then unmatched
  predicted groups) with S, its status and its corrections;
* :func:`document_alignment`: one row per aligned entity: the GT value beside the
  predicted value it was matched or substituted with, an added GT value or a deleted
  prediction alone;
* :func:`differences`: where a substituted value differs from the GT, character by
  character (the first :data:`DIFF_CHARS` of each).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein

from ..read.locations import LOCATION_COLUMNS, has_locations
from .engine import Counted

#: Characters of each value the character diff (:func:`differences`) aligns.
DIFF_CHARS = 2_000
_PAIR_KEYS = ["group_type", "gt_group", "pred_group"]


def group_pairs(counted: Counted, doc_id: str) -> pd.DataFrame:
    """The pairs of one document in display order.

    Columns ``group_type, gt_group, pred_group, shared, status, n_gt, n_pred, corrections``;
    status is one of ``non-group``, ``exact``, ``partial``, ``unmatched GT`` or ``unmatched
    prediction`` (-1 marks a missing side).
    """
    cells = counted.cells[counted.cells["doc_id"] == doc_id]
    pairs = counted.pairs[counted.pairs["doc_id"] == doc_id]
    non_group = cells[(cells["gt_group"] < 0) & (cells["pred_group"] < 0)]
    frame = pd.DataFrame({
        "group_type": pairs["group_type"].astype(object).tolist(),
        "gt_group": pairs["gt_group"].tolist(),
        "pred_group": pairs["pred_group"].tolist(),
        "shared": pairs["shared"].tolist(),
        "exact": pairs["exact"].tolist(),
    })
    if len(non_group):
        head = pd.DataFrame({"group_type": [""], "gt_group": [-1], "pred_group": [-1],
                             "shared": [int(non_group["tp"].sum())], "exact": [False]})
        frame = pd.concat([head, frame], ignore_index=True)
    sums = cells.assign(group_type=cells["group_type"].astype(object)).groupby(_PAIR_KEYS)[
        ["n_gt", "n_pred", "substitution", "addition", "deletion"]].sum()
    sums = sums.reindex(pd.MultiIndex.from_frame(frame[_PAIR_KEYS]), fill_value=0)
    frame["n_gt"] = sums["n_gt"].to_numpy(np.int64)
    frame["n_pred"] = sums["n_pred"].to_numpy(np.int64)
    frame["corrections"] = (sums["substitution"] + sums["addition"] + sums["deletion"]).to_numpy(np.int64)
    frame["status"] = np.select(
        [(frame["gt_group"] < 0) & (frame["pred_group"] < 0), frame["pred_group"] < 0,
         frame["gt_group"] < 0, frame["exact"].astype(bool)],
        ["non-group", "unmatched GT", "unmatched prediction", "exact"], "partial")
    first_seen = {t: i for i, t in enumerate(dict.fromkeys(frame["group_type"]))}
    order = np.lexsort((
        frame["pred_group"].to_numpy(),
        np.where(frame["gt_group"] < 0, np.iinfo(np.int64).max, frame["gt_group"]),
        frame["group_type"].map(first_seen).to_numpy(),
        (frame["status"] != "non-group").to_numpy(),
    ))
    columns = ["group_type", "gt_group", "pred_group", "shared", "status", "n_gt", "n_pred", "corrections"]
    return frame.iloc[order][columns].reset_index(drop=True)


def document_alignment(counted: Counted, doc_id: str) -> pd.DataFrame:
    """The document's entities aligned pair by pair.

    Columns ``group_type, gt_group, pred_group, entity_type, gt_value, pred_value,
    confidence, status, cause`` (status of the GT entity, or ``deleted`` for a prediction
    without a partner; cause: SPEC 2c, None when correct); rows follow :func:`group_pairs`,
    GT reading order within a pair, predictions without a GT partner last.
    """
    return _alignment(counted, doc_id).drop(columns=["gt_row", "pred_row"])


def _alignment(counted: Counted, doc_id: str, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`document_alignment` with ``gt_row, pred_row``: the rows of the two entities
    in the engine's tables (-1 for none); ``pairs`` is :func:`group_pairs` when known."""
    g_rows = np.flatnonzero((counted.gt_entities["doc_id"] == doc_id).to_numpy())
    p_rows = np.flatnonzero((counted.pred_entities["doc_id"] == doc_id).to_numpy())
    g = counted.gt_entities.iloc[g_rows]
    p = counted.pred_entities.iloc[p_rows]
    partner = g["partner"].to_numpy()
    with_partner = partner >= 0
    pred_rows = counted.pred_entities.iloc[partner[with_partner]]
    pred_value = np.full(len(g), None, object)
    confidence = np.full(len(g), np.nan)
    pred_value[with_partner] = pred_rows["value"].to_numpy(object)
    confidence[with_partner] = pred_rows["confidence"].to_numpy(np.float64)
    gt_side = pd.DataFrame({
        "group_type": g["group_type"].astype(object).to_numpy(),
        "gt_group": g["group"].to_numpy(),
        "pred_group": g["paired_group"].to_numpy(),
        "entity_type": g["entity_type"].astype(object).to_numpy(),
        "gt_value": pd.Series(g["value"].to_numpy(object), dtype=object),
        "pred_value": pd.Series(pred_value, dtype=object),
        "confidence": confidence,
        "status": g["status"].astype(object).to_numpy(),
        "cause": _causes(g),
        "gt_row": g_rows,
        "pred_row": partner,
        "_within": g["position"].to_numpy(np.float64),
    })
    is_alone = (p["partner"] < 0).to_numpy()
    alone = p[is_alone]
    pred_side = pd.DataFrame({
        "group_type": alone["group_type"].astype(object).to_numpy(),
        "gt_group": alone["paired_group"].to_numpy(),
        "pred_group": alone["group"].to_numpy(),
        "entity_type": alone["entity_type"].astype(object).to_numpy(),
        "gt_value": pd.Series(np.full(len(alone), None, object), dtype=object),
        "pred_value": pd.Series(alone["value"].to_numpy(object), dtype=object),
        "confidence": alone["confidence"].to_numpy(np.float64),
        "status": alone["status"].astype(object).to_numpy(),
        "cause": _causes(alone),
        "gt_row": np.full(len(alone), -1, np.int64),
        "pred_row": p_rows[is_alone],
        "_within": alone["position"].to_numpy(np.float64) + 1e12,
    })
    rows = pd.concat([gt_side, pred_side], ignore_index=True)
    pairs = group_pairs(counted, doc_id) if pairs is None else pairs
    rank = {key: i for i, key in enumerate(zip(*(pairs[c] for c in _PAIR_KEYS), strict=True))}
    rows["_pair"] = [rank.get(key, len(rank)) for key in
                     zip(rows["group_type"], rows["gt_group"].astype(int), rows["pred_group"].astype(int),
                         strict=True)]
    rows = rows.sort_values(["_pair", "_within"], kind="stable")
    return rows.drop(columns=["_pair", "_within"]).reset_index(drop=True)


#: Columns of :func:`document_boxes`.
BOX_COLUMNS = ["row", "side", "status", "entity_type", "value", "confidence", "pair", "page",
               "x0", "y0", "x1", "y1"]


def pair_numbers(pairs: pd.DataFrame) -> dict[tuple[str, int, int], int]:
    """Number 1, 2, ... of every matched group pair (both sides present), in display order;
    the document view writes it beside both groups."""
    matched = pairs[(pairs["gt_group"] >= 0) & (pairs["pred_group"] >= 0)]
    keys = zip(matched["group_type"], matched["gt_group"], matched["pred_group"], strict=True)
    return {(t, int(g), int(p)): i + 1 for i, (t, g, p) in enumerate(keys)}


def document_boxes(counted: Counted, doc_id: str) -> pd.DataFrame:
    """Every located entity of one document, as the document view draws it.

    One row per box (:data:`BOX_COLUMNS`): ``row`` is the entity's row in
    :func:`document_alignment` (a GT value and the prediction beside it share it), ``side``
    ``gt`` or ``pred``; ``status`` is ``correct`` or ``substituted`` on both sides,
    ``added`` on the GT side (the missing value's GT box) and ``deleted`` on the predicted
    side (the spurious value's box); ``pair`` numbers the matched group pair (0 outside
    one); ``confidence`` is the prediction's. Entities without a box are left out; the
    table is empty when neither side carries locations.
    """
    return document_view_tables(counted, doc_id)[0]


def document_view_tables(counted: Counted, doc_id: str, pairs: pd.DataFrame | None = None
                         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`document_boxes` and :func:`document_alignment` with the ``pair`` number of
    every row, from one alignment of the document (the view draws the first and lists the
    second beside it); ``pairs`` is :func:`group_pairs` of the document when known."""
    pairs = group_pairs(counted, doc_id) if pairs is None else pairs
    table = _alignment(counted, doc_id, pairs)
    numbers = pair_numbers(pairs)
    keys = zip(table["group_type"], table["gt_group"].tolist(), table["pred_group"].tolist(), strict=True)
    pair = np.fromiter((numbers.get(k, 0) for k in keys), np.int64, len(table))
    frames = []
    for side, entities, rows, value in (("gt", counted.gt_entities, table["gt_row"], "gt_value"),
                                        ("pred", counted.pred_entities, table["pred_row"], "pred_value")):
        if not has_locations(entities):
            continue
        rows = rows.to_numpy(np.int64)
        has = rows >= 0
        located = np.column_stack([entities[c].to_numpy(np.float64)[rows[has]] for c in LOCATION_COLUMNS])
        frames.append(pd.DataFrame({
            "row": np.flatnonzero(has), "side": side, "status": table["status"].to_numpy(object)[has],
            "entity_type": table["entity_type"].to_numpy(object)[has],
            "value": table[value].to_numpy(object)[has],
            "confidence": table["confidence"].to_numpy(np.float64)[has],
            "pair": pair[has], **dict(zip(LOCATION_COLUMNS, located.T, strict=True)),
        }))
    boxes = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=BOX_COLUMNS)
    boxes = boxes[boxes[["x0", "y0", "x1", "y1"]].notna().all(axis=1)] if len(boxes) else boxes
    alignment = table.drop(columns=["gt_row", "pred_row"]).assign(pair=pair)
    return boxes[BOX_COLUMNS].reset_index(drop=True), alignment


def _causes(entities: pd.DataFrame) -> pd.Series:
    """The cause of each entity's correction (SPEC 2c; None when correct or not labelled)."""
    if "cause" not in entities:
        return pd.Series(np.full(len(entities), None, object), dtype=object)
    cause = entities["cause"].astype(object).to_numpy()
    return pd.Series(np.where(pd.isna(cause), None, cause), dtype=object)


def differences(gt: str, pred: str) -> list[tuple[str, str, str]]:
    """Where a predicted value differs from the ground truth, character by character:
    ``(tag, gt part, predicted part)`` with tag ``equal``, ``replace``, ``delete`` (in the
    GT only) or ``insert`` (in the prediction only), from the Levenshtein alignment.

    The alignment covers the first :data:`DIFF_CHARS` characters of each value (its cost
    grows with the product of the lengths); the rest of a longer value follows as one
    ``("beyond", gt rest, predicted rest)``, not compared.

    >>> differences("L/RA 458", "L/RA458")
    [('equal', 'L/RA', 'L/RA'), ('delete', ' ', ''), ('equal', '458', '458')]
    >>> differences("ab" * 1_500, "ab" * 1_100)[-1][0]
    'beyond'
    """
    parts = [(op.tag, gt[op.src_start:op.src_end], pred[op.dest_start:op.dest_end])
             for op in Levenshtein.opcodes(gt[:DIFF_CHARS], pred[:DIFF_CHARS])]
    if len(gt) > DIFF_CHARS or len(pred) > DIFF_CHARS:
        parts.append(("beyond", gt[DIFF_CHARS:], pred[DIFF_CHARS:]))
    return parts
