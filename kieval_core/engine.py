"""KIEval counting engine (SPEC 3): one pass that yields every count, matching and error.

Everything is computed on integer-coded, vectorised tables; the only Python loop runs
once per (document, group type) block that needs a Hungarian solve.

Vocabulary used below:

* a **block** is the set of groups of one group type in one document;
* a **cell** is (document, group type, paired GT group, entity type): the place where the
  SPEC's per-pair counts TP^e, FP^e, FN^e live. The non-group pseudo-groups of a
  document always share one cell per entity type; a predicted group left unmatched gets
  cells of its own (all FP), so does an unmatched GT group (all FN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .matching import match_block
from .model import Dataset
from .normalize import Normalizer

_UNMATCHED = -1


@dataclass(frozen=True)
class Counted:
    """Everything the derived figures need; built once per (GT, model) pair.

    Attributes
    ----------
    cells : DataFrame
        One row per cell: ``doc_id, group_type, gt_group, pred_group, entity_type,
        n_gt, n_pred, tp, fp, fn, substitution, addition, deletion``
        (``gt_group`` / ``pred_group`` are -1 for the side that is unmatched; both are -1
        for the non-group cell).
    pairs : DataFrame
        One row per GT or predicted group (non-group excluded): ``doc_id, group_type,
        pred_group, gt_group, shared, exact`` where unmatched sides are -1; ``shared`` is S
        and ``exact`` marks a group TP.
    gt_entities, pred_entities : DataFrame
        Input entities with ``status`` (correct / substituted / added / deleted), the
        paired group and, for substitutions, the value on the other side.
    flat : DataFrame
        Flat entity counts per (doc_id, entity_type): ``tp, n_gt, n_pred``.
    doc_ids : tuple of str
        The scored documents (those of the ground truth).
    """

    cells: pd.DataFrame
    pairs: pd.DataFrame
    gt_entities: pd.DataFrame
    pred_entities: pd.DataFrame
    flat: pd.DataFrame
    doc_ids: tuple[str, ...]


def count(gt: Dataset, pred: Dataset, normalizer: Normalizer = Normalizer()) -> Counted:
    """Match and count one prediction set against the ground truth.

    Predicted documents absent from the ground truth must already be removed (the
    caller reports them); GT documents absent from the predictions simply have no
    predicted entities.
    """
    g, p, vocab = _encode(gt.entities, pred.entities, gt.doc_ids, normalizer)
    pairs = _match(g, p)
    _assign_cells(g, p, pairs)
    cells, tp_by_value = _cells(g, p)
    _label(g, p, cells, tp_by_value)
    flat = _flat(g, p, vocab)
    return Counted(
        cells=_decode_cells(cells, vocab),
        pairs=_decode_pairs(_mark_exact(pairs, cells), vocab),
        gt_entities=_decode_entities(g, vocab, side="gt"),
        pred_entities=_decode_entities(p, vocab, side="pred"),
        flat=flat,
        doc_ids=tuple(gt.doc_ids),
    )


# --- encoding -------------------------------------------------------------------------


def _encode(gt: pd.DataFrame, pred: pd.DataFrame, doc_ids: tuple[str, ...], normalizer: Normalizer):
    """Integer codes shared by both sides: doc, group type, entity type, (type, value)."""
    n_gt = len(gt)
    both = pd.concat([gt, pred], ignore_index=True)
    doc_index = pd.Index(doc_ids)
    doc = doc_index.get_indexer(both["doc_id"])
    gtype_codes, gtype_names = pd.factorize(both["group_type"], sort=True)
    etype_codes, etype_names = pd.factorize(both["entity_type"], sort=True)
    norm = normalizer.series(both["value"])
    value_codes, _ = pd.factorize(norm)
    tv = etype_codes.astype(np.int64) * (int(value_codes.max(initial=0)) + 1) + value_codes

    def frame(sl: slice) -> pd.DataFrame:
        return pd.DataFrame({
            "doc": doc[sl].astype(np.int64),
            "gtype": gtype_codes[sl].astype(np.int64),
            "grp": both["group"].to_numpy(np.int64)[sl],
            "etype": etype_codes[sl].astype(np.int64),
            "tv": tv[sl],
            "pos": np.arange(sl.stop - sl.start if sl.stop is not None else len(both) - sl.start),
            "value": both["value"].to_numpy(object)[sl],
            "confidence": both["confidence"].to_numpy(np.float64)[sl],
        })

    return frame(slice(0, n_gt)), frame(slice(n_gt, None)), _Vocab(doc_index, gtype_names, etype_names)


@dataclass(frozen=True)
class _Vocab:
    """Names behind the integer codes."""

    doc_ids: pd.Index
    gtypes: pd.Index
    etypes: pd.Index

    def names(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        return {
            "doc_id": self.doc_ids.to_numpy(object)[frame["doc"].to_numpy()],
            "group_type": self.gtypes.to_numpy(object)[frame["gtype"].to_numpy()],
        }

    def etype(self, codes: np.ndarray) -> np.ndarray:
        return self.etypes.to_numpy(object)[codes]


# --- group matching -------------------------------------------------------------------


def _group_sizes(side: pd.DataFrame) -> pd.DataFrame:
    grouped = side[side["grp"] >= 0]
    return grouped.groupby(["doc", "gtype", "grp", "etype"], sort=False).size().rename("n").reset_index()


def _match(g: pd.DataFrame, p: pd.DataFrame) -> pd.DataFrame:
    """Pairs (doc, gtype, pgrp, ggrp) with S, for every GT and predicted group.

    Unmatched groups appear with -1 on the other side.
    """
    key = ["doc", "gtype"]
    g_groups = g.loc[g["grp"] >= 0, [*key, "grp"]].drop_duplicates()
    p_groups = p.loc[p["grp"] >= 0, [*key, "grp"]].drop_duplicates()
    n_g = g_groups.groupby(key).size().rename("M")
    n_p = p_groups.groupby(key).size().rename("N")
    blocks = pd.concat([n_p, n_g], axis=1).fillna(0).astype(np.int64).reset_index()
    both = blocks[(blocks["N"] > 0) & (blocks["M"] > 0)]

    # S per candidate pair: multiset intersection of (type, value) between groups.
    cg = g[g["grp"] >= 0].groupby([*key, "grp", "tv", "etype"], sort=False).size().rename("ng").reset_index()
    cp = p[p["grp"] >= 0].groupby([*key, "grp", "tv"], sort=False).size().rename("np").reset_index()
    shared = cp.merge(cg, on=[*key, "tv"], suffixes=("_p", "_g"))
    shared["s"] = np.minimum(shared["np"], shared["ng"])
    s_e = shared.groupby([*key, "grp_p", "grp_g", "etype"], sort=False)["s"].sum().reset_index()

    # W per candidate pair: sum over shared entity types of min(FP^e, FN^e).
    sizes_g, sizes_p = _group_sizes(g), _group_sizes(p)
    multi = both[(both["N"] > 1) | (both["M"] > 1)][key]
    sizes_g = sizes_g.merge(multi, on=key)
    sizes_p = sizes_p.merge(multi, on=key)
    typed = sizes_p.merge(sizes_g, on=[*key, "etype"], suffixes=("_p", "_g"))
    typed = typed.rename(columns={"grp_p": "grp_p", "grp_g": "grp_g"})
    typed = typed.merge(s_e, on=[*key, "grp_p", "grp_g", "etype"], how="left")
    typed["s"] = typed["s"].fillna(0).astype(np.int64)
    typed["w"] = np.minimum(typed["n_p"] - typed["s"], typed["n_g"] - typed["s"])
    weights = typed.groupby([*key, "grp_p", "grp_g"], sort=False).agg(s=("s", "sum"), w=("w", "sum")).reset_index()

    s_pair = s_e.groupby([*key, "grp_p", "grp_g"], sort=False)["s"].sum()

    matched = [_match_single_blocks(both, g_groups, p_groups, s_pair)]
    matched.append(_match_multi_blocks(both, weights))
    pairs = pd.concat(matched, ignore_index=True)
    pairs["s"] = s_pair.reindex(pd.MultiIndex.from_frame(pairs[[*key, "grp_p", "grp_g"]])).fillna(0).to_numpy(np.int64)

    # Unmatched groups on either side.
    left_p = p_groups.merge(pairs[[*key, "grp_p"]].rename(columns={"grp_p": "grp"}), how="left", indicator=True)
    left_p = left_p[left_p["_merge"] == "left_only"]
    left_g = g_groups.merge(pairs[[*key, "grp_g"]].rename(columns={"grp_g": "grp"}), how="left", indicator=True)
    left_g = left_g[left_g["_merge"] == "left_only"]
    unmatched = pd.concat([
        pd.DataFrame({"doc": left_p["doc"], "gtype": left_p["gtype"], "grp_p": left_p["grp"],
                      "grp_g": _UNMATCHED, "s": 0}),
        pd.DataFrame({"doc": left_g["doc"], "gtype": left_g["gtype"], "grp_p": _UNMATCHED,
                      "grp_g": left_g["grp"], "s": 0}),
    ], ignore_index=True)
    out = pd.concat([pairs, unmatched], ignore_index=True).astype(np.int64)
    return out.sort_values([*key, "grp_g", "grp_p"], kind="stable", ignore_index=True)


def _match_single_blocks(both: pd.DataFrame, g_groups, p_groups, s_pair) -> pd.DataFrame:
    """1 x 1 blocks: the only pairing is the trivial one."""
    single = both[(both["N"] == 1) & (both["M"] == 1)][["doc", "gtype"]]
    gp = single.merge(p_groups, on=["doc", "gtype"]).rename(columns={"grp": "grp_p"})
    gp = gp.merge(g_groups, on=["doc", "gtype"]).rename(columns={"grp": "grp_g"})
    return gp[["doc", "gtype", "grp_p", "grp_g"]]


def _match_multi_blocks(both: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """Blocks with more than one group on a side: one Hungarian solve each."""
    multi = both[(both["N"] > 1) | (both["M"] > 1)].reset_index(drop=True)
    if multi.empty:
        return pd.DataFrame(columns=["doc", "gtype", "grp_p", "grp_g"], dtype=np.int64)
    block_of = pd.Series(np.arange(len(multi)), index=pd.MultiIndex.from_frame(multi[["doc", "gtype"]]))
    weights = weights.assign(block=block_of.reindex(pd.MultiIndex.from_frame(weights[["doc", "gtype"]])).to_numpy())
    weights = weights.sort_values("block", kind="stable")
    bounds = np.searchsorted(weights["block"].to_numpy(), np.arange(len(multi) + 1))
    wp, wg = weights["grp_p"].to_numpy(), weights["grp_g"].to_numpy()
    ws, ww = weights["s"].to_numpy(), weights["w"].to_numpy()
    sizes_n, sizes_m = multi["N"].to_numpy(), multi["M"].to_numpy()
    out_block, out_p, out_g = [], [], []
    for b in range(len(multi)):
        n, m = int(sizes_n[b]), int(sizes_m[b])
        lo, hi = bounds[b], bounds[b + 1]
        shared = np.zeros((n, m), np.int64)
        subst = np.zeros((n, m), np.int64)
        shared[wp[lo:hi], wg[lo:hi]] = ws[lo:hi]
        subst[wp[lo:hi], wg[lo:hi]] = ww[lo:hi]
        rows, cols = match_block(shared, subst)
        out_block.append(np.full(len(rows), b))
        out_p.append(rows)
        out_g.append(cols)
    block = np.concatenate(out_block)
    return pd.DataFrame({
        "doc": multi["doc"].to_numpy()[block],
        "gtype": multi["gtype"].to_numpy()[block],
        "grp_p": np.concatenate(out_p),
        "grp_g": np.concatenate(out_g),
    })


# --- cells ----------------------------------------------------------------------------


def _assign_cells(g: pd.DataFrame, p: pd.DataFrame, pairs: pd.DataFrame) -> None:
    """Give every entity its pair: ``cg`` (GT group of the pair) and ``cp`` (pred group).

    A pair is identified by (doc, gtype, cg, cp); for non-group both are -1.
    """
    key = ["doc", "gtype"]
    lookup_p = pairs[pairs["grp_p"] >= 0].set_index([*key, "grp_p"])["grp_g"]
    lookup_g = pairs[pairs["grp_g"] >= 0].set_index([*key, "grp_g"])["grp_p"]
    grouped_p = p["grp"].to_numpy() >= 0
    grouped_g = g["grp"].to_numpy() >= 0
    p["cp"] = p["grp"]
    g["cg"] = g["grp"]
    p["cg"] = np.where(
        grouped_p, lookup_p.reindex(pd.MultiIndex.from_frame(p[[*key, "grp"]])).fillna(_UNMATCHED).to_numpy(np.int64), -1
    )
    g["cp"] = np.where(
        grouped_g, lookup_g.reindex(pd.MultiIndex.from_frame(g[[*key, "grp"]])).fillna(_UNMATCHED).to_numpy(np.int64), -1
    )


_CELL = ["doc", "gtype", "cg", "cp", "etype"]


def _cells(g: pd.DataFrame, p: pd.DataFrame) -> pd.DataFrame:
    """Per cell: n_gt, n_pred, tp and the correction counts of SPEC 3.3-3.4."""
    vg = g.groupby([*_CELL, "tv"], sort=False).size().rename("ng")
    vp = p.groupby([*_CELL, "tv"], sort=False).size().rename("np")
    v = pd.concat([vg, vp], axis=1).fillna(0).astype(np.int64)
    v["tp"] = np.minimum(v["ng"], v["np"])
    cells = v.groupby(level=_CELL, sort=False).sum().reset_index()
    cells = cells.rename(columns={"ng": "n_gt", "np": "n_pred"})
    cells["fp"] = cells["n_pred"] - cells["tp"]
    cells["fn"] = cells["n_gt"] - cells["tp"]
    cells["substitution"] = np.minimum(cells["fp"], cells["fn"])
    cells["addition"] = cells["fn"] - cells["substitution"]
    cells["deletion"] = cells["fp"] - cells["substitution"]
    return cells, v["tp"]


def _label(g: pd.DataFrame, p: pd.DataFrame, cells: pd.DataFrame, tp_by_value: pd.Series) -> None:
    """Status of every entity, and the partner value of each substitution.

    Among identical copies in a cell, the highest-confidence predictions are the TPs
    (SPEC 4); GT copies are matched in reading order. Within a cell, the leftover FPs and
    FNs are paired in reading order: the first ``substitution`` of each are substitutions.
    """
    cell_index = pd.MultiIndex.from_frame(cells[_CELL])
    subs = pd.Series(cells["substitution"].to_numpy(), index=cell_index)

    conf_key = -p["confidence"].fillna(1.0)
    order_p = np.lexsort((p["pos"].to_numpy(), conf_key.to_numpy()))
    order_g = np.argsort(g["pos"].to_numpy(), kind="stable")
    for side, order in ((g, order_g), (p, order_p)):
        keys = [*_CELL, "tv"]
        ranked = side.iloc[order]
        rank = ranked.groupby(keys, sort=False).cumcount().to_numpy()
        tp = tp_by_value.reindex(pd.MultiIndex.from_frame(ranked[keys])).to_numpy()
        is_tp = np.empty(len(side), bool)
        is_tp[order] = rank < tp
        side["is_tp"] = is_tp
        err = side[~side["is_tp"]].sort_values("pos", kind="stable")
        err_rank = err.groupby(_CELL, sort=False).cumcount().to_numpy()
        err_subs = subs.reindex(pd.MultiIndex.from_frame(err[_CELL])).to_numpy()
        side["err_rank"] = -1
        side.loc[err.index, "err_rank"] = err_rank
        side["status"] = "correct"
        wrong = "added" if side is g else "deleted"
        side.loc[err.index, "status"] = np.where(err_rank < err_subs, "substituted", wrong)

    # partner values for substitutions: k-th leftover FP <-> k-th leftover FN of the cell
    sub_g = g[g["status"] == "substituted"]
    sub_p = p[p["status"] == "substituted"]
    joined = sub_p[[*_CELL, "err_rank"]].reset_index().merge(
        sub_g[[*_CELL, "err_rank", "value"]].reset_index(), on=[*_CELL, "err_rank"], suffixes=("_p", "_g")
    )
    p["other_value"] = None
    g["other_value"] = None
    p.loc[joined["index_p"].to_numpy(), "other_value"] = joined["value"].to_numpy()
    g.loc[joined["index_g"].to_numpy(), "other_value"] = p.loc[joined["index_p"].to_numpy(), "value"].to_numpy()
    g.loc[joined["index_g"].to_numpy(), "other_confidence"] = p.loc[joined["index_p"].to_numpy(), "confidence"].to_numpy()


def _flat(g: pd.DataFrame, p: pd.DataFrame, vocab: _Vocab) -> pd.DataFrame:
    """Flat entity counts (SPEC 3.7): multiset intersection per document, groups ignored."""
    vg = g.groupby(["doc", "etype", "tv"], sort=False).size().rename("n_gt")
    vp = p.groupby(["doc", "etype", "tv"], sort=False).size().rename("n_pred")
    v = pd.concat([vg, vp], axis=1).fillna(0).astype(np.int64)
    v["tp"] = np.minimum(v["n_gt"], v["n_pred"])
    flat = v.groupby(level=["doc", "etype"], sort=False).sum().reset_index()
    flat["doc_id"] = vocab.doc_ids.to_numpy(object)[flat["doc"].to_numpy()]
    flat["entity_type"] = vocab.etype(flat["etype"].to_numpy())
    return flat[["doc_id", "entity_type", "tp", "n_gt", "n_pred"]]


# --- decoding -------------------------------------------------------------------------


def _mark_exact(pairs: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Group TP (SPEC 3.5): a matched pair with FP^e = FN^e = 0 for every entity type."""
    errors = (cells["fp"] + cells["fn"]).groupby(
        [cells["doc"], cells["gtype"], cells["cg"], cells["cp"]], sort=False
    ).sum()
    key = pd.MultiIndex.from_arrays([pairs["doc"], pairs["gtype"], pairs["grp_g"], pairs["grp_p"]])
    matched = (pairs["grp_p"].to_numpy() >= 0) & (pairs["grp_g"].to_numpy() >= 0)
    return pairs.assign(exact=matched & (errors.reindex(key).fillna(0).to_numpy() == 0))


def _decode_cells(cells: pd.DataFrame, vocab: _Vocab) -> pd.DataFrame:
    out = pd.DataFrame({
        **vocab.names(cells),
        "gt_group": cells["cg"].to_numpy(),
        "pred_group": cells["cp"].to_numpy(),
        "entity_type": vocab.etype(cells["etype"].to_numpy()),
    })
    for column in ("n_gt", "n_pred", "tp", "fp", "fn", "substitution", "addition", "deletion"):
        out[column] = cells[column].to_numpy(np.int64)
    return out


def _decode_pairs(pairs: pd.DataFrame, vocab: _Vocab) -> pd.DataFrame:
    return pd.DataFrame({
        **vocab.names(pairs),
        "pred_group": pairs["grp_p"].to_numpy(),
        "gt_group": pairs["grp_g"].to_numpy(),
        "shared": pairs["s"].to_numpy(),
        "exact": pairs["exact"].to_numpy(bool),
    })


def _decode_entities(frame: pd.DataFrame, vocab: _Vocab, *, side: str) -> pd.DataFrame:
    """Entities of one side with their pair, status and substitution partner."""
    other = "cp" if side == "gt" else "cg"
    return pd.DataFrame({
        **vocab.names(frame),
        "group": frame["grp"].to_numpy(),
        "paired_group": np.where(frame["grp"].to_numpy() >= 0, frame[other].to_numpy(), -1),
        "entity_type": vocab.etype(frame["etype"].to_numpy()),
        "value": frame["value"].to_numpy(object),
        "confidence": frame["confidence"].to_numpy(np.float64),
        "status": frame["status"].to_numpy(object),
        "other_value": frame["other_value"].to_numpy(object),
        "position": frame["pos"].to_numpy(),
    })
