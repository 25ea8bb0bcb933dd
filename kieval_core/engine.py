"""KIEval counting engine (SPEC 3): one pass that yields every count, matching and error.

Everything runs on integer codes packed into int64 keys and counted with
``pandas.factorize`` / ``numpy.bincount``; the only Python loop is one Hungarian solve
per (document, group type) block that has more than one group on a side.

Vocabulary:

* a **block** is the set of groups of one group type in one document;
* a **pair** is a matched (predicted group, GT group), an unmatched group of either side,
  or a document's non-group pseudo-groups (always paired);
* a **cell** is (pair, entity type): where the SPEC's TP^e, FP^e, FN^e live.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .matching import match_stack
from .model import Dataset
from .normalize import Normalizer

STATUSES = ("correct", "substituted", "added", "deleted")


@dataclass(frozen=True)
class Counted:
    """Everything the derived figures need; built once per (GT, model) pair.

    Attributes
    ----------
    cells : DataFrame
        One row per cell: ``doc_id, group_type, gt_group, pred_group, entity_type, n_gt,
        n_pred, tp, fp, fn, substitution, addition, deletion``. ``gt_group`` and
        ``pred_group`` are group indices, -1 on an unmatched side and for non-group cells.
    pairs : DataFrame
        One row per GT or predicted group (non-group excluded): ``doc_id, group_type,
        pred_group, gt_group, shared, exact`` (-1 marks the unmatched side; ``shared`` is
        S, ``exact`` marks a group TP).
    gt_entities, pred_entities : DataFrame
        Input entities with ``paired_group`` (the other side's group of their pair, -1 if
        none), ``status`` (correct / substituted / added / deleted), ``other_value`` (the
        value on the other side of a substitution), ``position`` (input order) and
        ``cell`` (row of ``cells``).
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


@dataclass
class _Side:
    """Integer-coded entities of one side."""

    doc: np.ndarray
    gtype: np.ndarray
    grp: np.ndarray
    etype: np.ndarray
    tv: np.ndarray
    confidence: np.ndarray
    source: pd.DataFrame
    # filled in by the matching and counting steps, in this order
    gid: np.ndarray | None = None  # group id (side-local), -1 for non-group
    group_keys: np.ndarray | None = None  # packed (block, group index) of each group id
    pair: np.ndarray | None = None  # row of the pairs table; n_pairs + doc for non-group
    cell: np.ndarray | None = None  # row of the cells table
    status: np.ndarray | None = None  # index into STATUSES
    err_rank: np.ndarray | None = None  # rank among the cell's errors, -1 for a TP
    other_value: np.ndarray | None = None  # the substitution partner's value


def take(values: np.ndarray, index: np.ndarray, fill: int = -1) -> np.ndarray:
    """``values[index]`` where ``index >= 0``, ``fill`` elsewhere; safe on empty ``values``."""
    padded = np.append(np.asarray(values, np.int64), fill)
    return padded[np.where(index >= 0, index, len(values))]


def run_ranks(sorted_keys: np.ndarray) -> np.ndarray:
    """Rank of each element within its run of equal keys (keys already sorted)."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, np.int64)
    start = np.ones(n, bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n) - first


def _count_pair(keys_a: np.ndarray, keys_b: np.ndarray):
    """Distinct keys over both arrays with their counts on each side."""
    codes, uniques = pd.factorize(np.concatenate([keys_a, keys_b]))
    n = len(uniques)
    count_a = np.bincount(codes[: len(keys_a)], minlength=n)
    count_b = np.bincount(codes[len(keys_a):], minlength=n)
    return codes[: len(keys_a)], codes[len(keys_a):], np.asarray(uniques, np.int64), count_a, count_b


def count(gt: Dataset, pred: Dataset, normalizer: Normalizer = Normalizer()) -> Counted:
    """Match and count one prediction set against the ground truth.

    Predicted documents absent from the ground truth must already be removed (the
    caller reports them); GT documents absent from the predictions simply have no
    predicted entities.
    """
    g, p, vocab = _encode(gt.entities, pred.entities, gt.doc_ids, normalizer)
    groups = _Groups(g, p, n_gtypes=len(vocab.gtypes))
    pairs = groups.pairs()
    cells, cell_pair = _cells(g, p, pairs, groups, vocab)
    _partners(g, p)
    return Counted(
        cells=cells,
        pairs=_pair_frame(pairs, cells, cell_pair, vocab),
        gt_entities=_entity_frame(g, pairs, vocab, side="gt"),
        pred_entities=_entity_frame(p, pairs, vocab, side="pred"),
        flat=_flat(g, p, vocab),
        doc_ids=tuple(gt.doc_ids),
    )


# --- encoding -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Vocab:
    """Names behind the integer codes."""

    doc_ids: pd.Index
    gtypes: pd.Index
    etypes: pd.Index
    n_tv: int

    def categorical(self, codes: np.ndarray, names: pd.Index) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=names.astype(object))


def _encode(gt: pd.DataFrame, pred: pd.DataFrame, doc_ids, normalizer: Normalizer):
    n_gt = len(gt)
    doc_index = pd.Index(list(doc_ids), dtype=object)

    def both(column):
        return pd.concat([gt[column], pred[column]], ignore_index=True)

    doc = doc_index.get_indexer(both("doc_id"))
    if (doc < 0).any():
        msg = "predicted entities of documents absent from the ground truth must be removed first"
        raise ValueError(msg)
    # "" (non-group) always gets code 0, even when neither side has non-group entities
    gtype_codes, gtype_names = pd.factorize(pd.concat([pd.Series([""]), both("group_type")]), sort=True)
    gtype_codes = gtype_codes[1:]
    etype_codes, etype_names = pd.factorize(both("entity_type"), sort=True)
    value_codes = normalizer.codes(both("value"))
    tv, tv_uniques = pd.factorize(etype_codes.astype(np.int64) * (int(value_codes.max(initial=0)) + 1)
                                  + value_codes)
    grp = both("group").to_numpy(np.int64)
    conf = both("confidence").to_numpy(np.float64)
    vocab = _Vocab(doc_index, pd.Index(gtype_names, dtype=object), pd.Index(etype_names, dtype=object),
                   len(tv_uniques))

    def side(sl: slice, source: pd.DataFrame) -> _Side:
        return _Side(doc[sl].astype(np.int64), gtype_codes[sl].astype(np.int64), grp[sl],
                     etype_codes[sl].astype(np.int64), tv[sl].astype(np.int64), conf[sl], source)

    return side(slice(0, n_gt), gt), side(slice(n_gt, None), pred), vocab


# --- group matching -------------------------------------------------------------------


class _Groups:
    """Group ids of both sides, their blocks, and the optimal matching per block."""

    def __init__(self, g: _Side, p: _Side, n_gtypes: int) -> None:
        self.g, self.p = g, p
        self.n_gtypes = n_gtypes
        self.n_groups = max(int(g.grp.max(initial=-1)), int(p.grp.max(initial=-1))) + 2
        for s in (g, p):
            grouped = s.grp >= 0
            key = (s.doc * n_gtypes + s.gtype) * self.n_groups + s.grp
            s.gid = np.full(len(s.doc), -1, np.int64)
            codes, uniques = pd.factorize(key[grouped], sort=True)
            s.gid[grouped] = codes
            s.group_keys = np.asarray(uniques, np.int64)  # sorted: block-major, index-minor
        self.block_g = g.group_keys // self.n_groups
        self.block_p = p.group_keys // self.n_groups

    def pairs(self) -> pd.DataFrame:
        """All pairs: ``doc, gtype, pgid, ggid, pgrp, ggrp`` (-1 = none / non-group)."""
        blocks, inv = np.unique(np.concatenate([self.block_p, self.block_g]), return_inverse=True)
        n_p = np.bincount(inv[: len(self.block_p)], minlength=len(blocks))
        n_g = np.bincount(inv[len(self.block_p):], minlength=len(blocks))
        first_p = np.concatenate([[0], np.cumsum(n_p)])[:-1]
        first_g = np.concatenate([[0], np.cumsum(n_g)])[:-1]
        matched_p, matched_g = [], []
        single = (n_p == 1) & (n_g == 1)
        matched_p.append(first_p[single])
        matched_g.append(first_g[single])
        multi = (n_p >= 1) & (n_g >= 1) & ~single
        if multi.any():
            mp, mg = self._match_multi(blocks[multi], n_p[multi], n_g[multi], first_p[multi], first_g[multi])
            matched_p.append(mp)
            matched_g.append(mg)
        pgid = np.concatenate(matched_p).astype(np.int64)
        ggid = np.concatenate(matched_g).astype(np.int64)
        free_p = np.setdiff1d(np.arange(len(self.block_p)), pgid)
        free_g = np.setdiff1d(np.arange(len(self.block_g)), ggid)
        pgid = np.concatenate([pgid, free_p, np.full(len(free_g), -1)])
        ggid = np.concatenate([ggid, np.full(len(free_p), -1), free_g])
        block = np.where(pgid >= 0, take(self.block_p, pgid), take(self.block_g, ggid))
        frame = pd.DataFrame({
            "doc": block // self.n_gtypes,
            "gtype": block % self.n_gtypes,
            "pgid": pgid,
            "ggid": ggid,
            "pgrp": np.where(pgid >= 0, take(self.p.group_keys, pgid) % self.n_groups, -1),
            "ggrp": np.where(ggid >= 0, take(self.g.group_keys, ggid) % self.n_groups, -1),
        })
        order = np.lexsort((frame["pgrp"].to_numpy(), frame["ggrp"].to_numpy(),
                            frame["gtype"].to_numpy(), frame["doc"].to_numpy()))
        return frame.iloc[order].reset_index(drop=True)

    def _per_group(self, s: _Side, key: np.ndarray, mask: np.ndarray):
        """(group, key, count) for the entities selected by ``mask``."""
        width = int(key.max(initial=0)) + 1
        uniques, counts = np.unique(s.gid[mask] * width + key[mask], return_counts=True)
        return uniques // width, uniques % width, counts

    def _match_multi(self, blocks, n_p, n_g, first_p, first_g):
        """Hungarian solves for blocks with several groups on a side, batched by shape.

        S, W and X of every candidate pair live in one dense vector laid out block by
        block (row-major N x M), so a block's matrix is a reshape of a slice.
        """
        g, p = self.g, self.p
        size = n_p * n_g
        offset = np.concatenate([[0], np.cumsum(size)])
        block_of_p = _lookup(blocks, self.block_p)
        block_of_g = _lookup(blocks, self.block_g)
        in_g = take(block_of_g, g.gid) >= 0
        in_p = take(block_of_p, p.gid) >= 0

        def dense(key_g: np.ndarray, key_p: np.ndarray) -> np.ndarray:
            """Sum over shared keys of min(count in pred group, count in GT group)."""
            width = int(max(key_g.max(initial=0), key_p.max(initial=0))) + 1
            gg, kg, cg = self._per_group(g, key_g, in_g)
            pg, kp, cp = self._per_group(p, key_p, in_p)
            total = np.zeros(offset[-1], np.float64)
            for li, rj in equi_join(self.block_p[pg] * width + kp, self.block_g[gg] * width + kg):
                pi, gj = pg[li], gg[rj]
                b = block_of_p[pi]
                local = offset[b] + (pi - first_p[b]) * n_g[b] + (gj - first_g[b])
                total += np.bincount(local, weights=np.minimum(cp[li], cg[rj]), minlength=offset[-1])
            return total.astype(np.int64)

        shared = dense(g.tv, p.tv)
        subst = dense(g.etype, p.etype) - shared  # W = sum_e min(Np_e, Ng_e) - S
        blk = np.repeat(np.arange(len(blocks)), size)
        within = np.arange(offset[-1]) - offset[blk]
        p_of = first_p[blk] + within // n_g[blk]
        g_of = first_g[blk] + within % n_g[blk]
        size_p = np.bincount(p.gid[p.gid >= 0], minlength=len(self.block_p))
        size_g = np.bincount(g.gid[g.gid >= 0], minlength=len(self.block_g))
        exact = ((shared == size_p[p_of]) & (shared == size_g[g_of])).astype(np.int64)

        out_p, out_g = [], []
        shapes = pd.DataFrame({"n": n_p, "m": n_g}).groupby(["n", "m"], sort=True).indices
        for (n, m), members in shapes.items():
            index = offset[members][:, None] + np.arange(n * m)
            rows, cols = match_stack(*(x[index].reshape(len(members), n, m) for x in (shared, subst, exact)))
            out_p.append((rows + first_p[members][:, None]).ravel())
            out_g.append((cols + first_g[members][:, None]).ravel())
        return np.concatenate(out_p), np.concatenate(out_g)


def _lookup(sorted_keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Position of each value in ``sorted_keys``, -1 when absent."""
    at = np.searchsorted(sorted_keys, values)
    found = at < len(sorted_keys)
    found[found] = sorted_keys[at[found]] == values[found]
    return np.where(found, at, -1)


def equi_join(left: np.ndarray, right: np.ndarray, max_rows: int = 1 << 22):
    """Every index pair (i, j) with ``left[i] == right[j]``: a sort-based inner join.

    Yields the pairs in chunks of about ``max_rows`` so that a key shared by thousands
    of groups on both sides (``cnt = 1`` on every line of a long receipt) stays within
    memory.

    >>> [[a.tolist() for a in chunk] for chunk in equi_join(np.array([5, 7, 5]), np.array([5, 5, 9]))]
    [[[0, 0, 2, 2], [0, 1, 0, 1]]]
    """
    order = np.argsort(right, kind="stable")
    ordered = right[order]
    lo = np.searchsorted(ordered, left, side="left")
    counts = np.searchsorted(ordered, left, side="right") - lo
    ends = np.cumsum(counts)
    start = 0
    while start < len(left):
        stop = max(int(np.searchsorted(ends, ends[start] - counts[start] + max_rows, side="right")),
                   start + 1)
        part = counts[start:stop]
        li = np.repeat(np.arange(start, stop), part)
        offsets = np.arange(int(part.sum())) - np.repeat(np.cumsum(part) - part, part)
        yield li, order[np.repeat(lo[start:stop], part) + offsets]
        start = stop


# --- cells ----------------------------------------------------------------------------


def _cells(g: _Side, p: _Side, pairs: pd.DataFrame, groups: _Groups,
           vocab: _Vocab) -> tuple[pd.DataFrame, np.ndarray]:
    """Per cell: n_gt, n_pred, tp and the correction counts (SPEC 3.3-3.4); labels entities."""
    n_pairs = len(pairs)
    pair_of_p = np.full(len(groups.block_p), -1, np.int64)
    pair_of_g = np.full(len(groups.block_g), -1, np.int64)
    pgid, ggid = pairs["pgid"].to_numpy(), pairs["ggid"].to_numpy()
    pair_of_p[pgid[pgid >= 0]] = np.flatnonzero(pgid >= 0)
    pair_of_g[ggid[ggid >= 0]] = np.flatnonzero(ggid >= 0)
    n_et = len(vocab.etypes)
    for s, pair_of in ((g, pair_of_g), (p, pair_of_p)):
        # non-group pseudo-pair of document d gets id n_pairs + d
        s.pair = np.where(s.gid >= 0, take(pair_of, s.gid), n_pairs + s.doc)
    cell_g, cell_p, cell_keys, n_gt, n_pred = _count_pair(g.pair * n_et + g.etype, p.pair * n_et + p.etype)
    g.cell, p.cell = cell_g, cell_p

    # tp per (cell, value): multiset intersection
    n_tv = vocab.n_tv
    cv_g, cv_p, cv_keys, cvn_g, cvn_p = _count_pair(cell_g * n_tv + g.tv, cell_p * n_tv + p.tv)
    tp_cv = np.minimum(cvn_g, cvn_p)
    tp = np.bincount(cv_keys // n_tv, weights=tp_cv, minlength=len(cell_keys)).astype(np.int64)
    fp, fn = n_pred - tp, n_gt - tp
    subs = np.minimum(fp, fn)

    _label(g, cv_g, tp_cv, subs, is_pred=False)
    _label(p, cv_p, tp_cv, subs, is_pred=True)

    pair = cell_keys // n_et
    grouped = pair < n_pairs

    def of_pair(column: str, non_group: np.ndarray | int) -> np.ndarray:
        return np.where(grouped, take(pairs[column].to_numpy(), np.where(grouped, pair, -1)), non_group)

    cells = pd.DataFrame({
        "doc_id": vocab.categorical(of_pair("doc", pair - n_pairs), vocab.doc_ids),
        "group_type": vocab.categorical(of_pair("gtype", 0), vocab.gtypes),
        "gt_group": of_pair("ggrp", -1),
        "pred_group": of_pair("pgrp", -1),
        "entity_type": vocab.categorical(cell_keys % n_et, vocab.etypes),
        "n_gt": n_gt, "n_pred": n_pred, "tp": tp, "fp": fp, "fn": fn,
        "substitution": subs, "addition": fn - subs, "deletion": fp - subs,
    })
    return cells, pair


def _label(s: _Side, cv: np.ndarray, tp_cv: np.ndarray, subs: np.ndarray, *, is_pred: bool) -> None:
    """Status of every entity and the rank of its error within its cell.

    Among identical copies in a cell the highest-confidence predictions are the TPs
    (SPEC 4); GT copies are matched in reading order. The leftover FPs and FNs of a cell
    are paired in reading order: the first ``substitution`` of each are substitutions.
    """
    position = np.arange(len(cv))
    if is_pred:
        order = np.lexsort((position, -np.nan_to_num(s.confidence, nan=1.0), cv))
    else:
        order = np.lexsort((position, cv))
    is_tp = np.empty(len(cv), bool)
    is_tp[order] = run_ranks(cv[order]) < tp_cv[cv[order]]
    wrong = np.flatnonzero(~is_tp)
    err_order = wrong[np.lexsort((wrong, s.cell[wrong]))]
    err_rank = np.full(len(cv), -1, np.int64)
    err_rank[err_order] = run_ranks(s.cell[err_order])
    status = np.where(is_tp, 0, np.where(err_rank < subs[s.cell], 1, 3 if is_pred else 2))
    s.status = status
    s.err_rank = err_rank


# --- output frames ----------------------------------------------------------------------


def _pair_frame(pairs: pd.DataFrame, cells: pd.DataFrame, cell_pair: np.ndarray,
                vocab: _Vocab) -> pd.DataFrame:
    """Pairs with S (shared) and group TP (SPEC 3.5: every entity type with FP = FN = 0)."""
    n_pairs = len(pairs)
    grouped = cell_pair < n_pairs
    shared = np.bincount(cell_pair[grouped], weights=cells["tp"].to_numpy()[grouped], minlength=n_pairs)
    wrong = (cells["fp"] + cells["fn"]).to_numpy()[grouped]
    errors = np.bincount(cell_pair[grouped], weights=wrong, minlength=n_pairs)
    both = (pairs["pgid"].to_numpy() >= 0) & (pairs["ggid"].to_numpy() >= 0)
    return pd.DataFrame({
        "doc_id": vocab.categorical(pairs["doc"].to_numpy(), vocab.doc_ids),
        "group_type": vocab.categorical(pairs["gtype"].to_numpy(), vocab.gtypes),
        "pred_group": pairs["pgrp"].to_numpy(),
        "gt_group": pairs["ggrp"].to_numpy(),
        "shared": shared.astype(np.int64),
        "exact": both & (errors == 0),
    })


def _partners(g: _Side, p: _Side) -> None:
    """The value on the other side of each substitution (k-th leftover FP <-> k-th FN)."""
    width = int(max(g.err_rank.max(initial=0), p.err_rank.max(initial=0))) + 1
    sub_g = np.flatnonzero(g.status == 1)
    sub_p = np.flatnonzero(p.status == 1)
    at = pd.Index(g.cell[sub_g] * width + g.err_rank[sub_g]).get_indexer(
        p.cell[sub_p] * width + p.err_rank[sub_p])
    partner_g = sub_g[at]
    g_values = g.source["value"].to_numpy(object)
    p_values = p.source["value"].to_numpy(object)
    p.other_value = np.full(len(p.doc), None, object)
    g.other_value = np.full(len(g.doc), None, object)
    p.other_value[sub_p] = g_values[partner_g]
    g.other_value[partner_g] = p_values[sub_p]


def _entity_frame(s: _Side, pairs: pd.DataFrame, vocab: _Vocab, *, side: str) -> pd.DataFrame:
    """Input entities with their pair, status and substitution partner."""
    other = pairs["pgrp" if side == "gt" else "ggrp"].to_numpy()
    grouped = s.gid >= 0
    return pd.DataFrame({
        "doc_id": vocab.categorical(s.doc, vocab.doc_ids),
        "group_type": vocab.categorical(s.gtype, vocab.gtypes),
        "group": s.grp,
        "paired_group": take(other, np.where(grouped, s.pair, -1)),
        "entity_type": vocab.categorical(s.etype, vocab.etypes),
        "value": pd.Series(s.source["value"].to_numpy(object), dtype=object),
        "confidence": s.confidence,
        "status": pd.Categorical.from_codes(s.status, categories=list(STATUSES)),
        "other_value": pd.Series(s.other_value, dtype=object),
        "position": np.arange(len(s.doc)),
        "cell": s.cell,
    })


def _flat(g: _Side, p: _Side, vocab: _Vocab) -> pd.DataFrame:
    """Flat entity counts (SPEC 3.7): multiset intersection per document, groups ignored."""
    n_tv = vocab.n_tv
    _, _, keys, n_gt, n_pred = _count_pair(g.doc * n_tv + g.tv, p.doc * n_tv + p.tv)
    tp = np.minimum(n_gt, n_pred)
    tv_etype = np.zeros(n_tv, np.int64)
    tv_etype[np.concatenate([g.tv, p.tv])] = np.concatenate([g.etype, p.etype])
    n_et = len(vocab.etypes)
    de = (keys // n_tv) * n_et + tv_etype[keys % n_tv]
    codes, uniques = pd.factorize(de)
    uniques = np.asarray(uniques, np.int64)
    return pd.DataFrame({
        "doc_id": vocab.categorical(uniques // n_et, vocab.doc_ids),
        "entity_type": vocab.categorical(uniques % n_et, vocab.etypes),
        "tp": np.bincount(codes, weights=tp).astype(np.int64),
        "n_gt": np.bincount(codes, weights=n_gt).astype(np.int64),
        "n_pred": np.bincount(codes, weights=n_pred).astype(np.int64),
    })
