"""KIEval counting engine (SPEC 3): one pass that yields every count, matching and error.

Everything runs on integer codes packed into int64 keys and counted with
``pandas.factorize`` / ``numpy.bincount``; the only Python loops are one Hungarian solve
per (document, group type) block that has more than one group on a side, and one per
cell with several substitutions to pair.

Vocabulary:

* a **block** is the set of groups of one group type in one document;
* a **pair** is a matched (predicted group, GT group), an unmatched group of either side,
  or a document's non-group pseudo-groups (always paired);
* a **cell** is (pair, entity type): where the SPEC's TP^e, FP^e, FN^e live.

The stages are functions that return frozen values: :func:`encode` (integer codes),
:func:`group_ids` (groups in canonical order), :func:`match` (the pairs), :func:`label`
(cell counts and every entity's status) and :func:`link` (which entity of the other side
each one stands for). :func:`count` runs them and returns :class:`Counted`.

Every figure depends only on the data, never on the order of documents, groups or
entities in the files (SPEC 3.2): groups enter the matching in **canonical order**
(sorted by content), codes of types and values are sorted, and the remaining choices
(which copy of a repeated value is the TP, which wrong value substitutes which missing
one) are settled by content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

from ..read.dataset import Dataset
from ..read.locations import LOCATION_COLUMNS, has_locations
from .causes import (
    CAUSES,
    CAUSES_OF_KIND,
    DATE_ORDERS,
    HALLUCINATED,
    MISPLACED,
    MISSED,
    coded_date_orders,
    has_digit,
    held_elsewhere,
    substitution_cause_codes,
)
from .comparators import DateCounts, date_counts
from .matching import assignment, match_stack
from .normalize import Normalizer, text_codes


class Status(IntEnum):
    """What happened to an entity (the ``status`` column of the entity tables)."""

    CORRECT = 0
    SUBSTITUTED = 1
    ADDED = 2
    DELETED = 3

    @property
    def label(self) -> str:
        return self.name.lower()


STATUSES = tuple(s.label for s in Status)
#: Correction kind of each error status (the error table's ``kind``).
KIND_OF_STATUS = {"substituted": "substitution", "added": "addition", "deleted": "deletion"}


@dataclass(frozen=True)
class Counted:
    """Everything the derived figures need; built once per (GT, model) pair.

    Attributes
    ----------
    cells : DataFrame
        One row per cell: ``doc_id, group_type, gt_group, pred_group, entity_type, n_gt,
        n_pred, tp, fp, fn, substitution, addition, deletion``, then the corrections by
        cause (:data:`~kieval_core.count.causes.CAUSE_COLUMNS`) and the values a comparator left
        unparsed (``unparsed_gt, unparsed_pred``). ``gt_group`` and ``pred_group`` are group
        indices, -1 on an unmatched side and for non-group cells.
    pairs : DataFrame
        One row per GT or predicted group (non-group excluded): ``doc_id, group_type,
        pred_group, gt_group, shared, exact`` (-1 marks the unmatched side; ``shared`` is
        S, ``exact`` marks a group TP).
    gt_entities, pred_entities : DataFrame
        Input entities with ``paired_group`` (the other side's group of their pair, -1 if
        none), ``status`` (correct / substituted / added / deleted), ``partner`` (row of
        the other side's table: the copy a correct entity matches, or the value a
        substitution replaces; -1 if none), ``other_value`` (the partner's value),
        ``position`` (input order), ``cell`` (row of ``cells``), ``copies`` (identical
        values of one cell share it: which of them are TPs follows their confidence) and
        ``cause`` (SPEC 2c: of a substitution on both sides, of a deletion or an addition;
        missing when correct); the location columns ``page, x0, y0, x1, y1`` when that
        side's input carries locations (never read by a count).
    flat : DataFrame
        Flat entity counts per (doc_id, entity_type): ``tp, n_gt, n_pred``.
    doc_ids : tuple of str
        The scored documents (those of the ground truth), sorted.
    """

    cells: pd.DataFrame
    pairs: pd.DataFrame
    gt_entities: pd.DataFrame
    pred_entities: pd.DataFrame
    flat: pd.DataFrame
    doc_ids: tuple[str, ...]


def count(gt: Dataset, pred: Dataset, normalizer: Normalizer = Normalizer(), causes: bool = True,
          gt_orders: Mapping[str, int] | None = None) -> Counted:
    """Match and count one prediction set against the ground truth.

    Predicted documents absent from the ground truth must already be removed (the
    caller reports them); GT documents absent from the predictions simply have no
    predicted entities. ``causes=False`` leaves out the causes of the corrections (the
    ``cause`` and cause count columns): the counts alone, the baseline of the bench.
    ``gt_orders``: the date order per entity type of a larger ground truth than ``gt``
    (a distributed run's whole GT, :func:`gt_date_counts`); default: ``gt``'s own.
    """
    g, p, vocab = encode(gt.entities, pred.entities, gt.doc_ids, normalizer)
    gg, pg = group_ids(g, vocab), group_ids(p, vocab)
    pairs = match(g, p, gg, pg, vocab)
    cells, cell_pair, lg, lp = label(g, p, gg, pg, pairs, vocab)
    partner_g, partner_p = link(p, lg, lp)
    cause_g = cause_p = None
    if causes:
        cause_g, cause_p = label_causes(g, p, lg, lp, pairs, vocab, normalizer, gt_orders)
        cells = _with_cause_counts(cells, g, p, lg, lp, cause_g, cause_p)
    return Counted(
        cells=cells,
        pairs=_pair_frame(pairs, cells, cell_pair, vocab),
        gt_entities=_located(_entity_frame(g, lg, partner_g, p.values, pairs, vocab, cause_g, side="gt"),
                             gt.entities),
        pred_entities=_located(_entity_frame(p, lp, partner_p, g.values, pairs, vocab, cause_p, side="pred"),
                               pred.entities),
        flat=_flat(g, p, vocab),
        doc_ids=tuple(vocab.doc_ids),
    )


# --- small vector helpers ---------------------------------------------------------------


def take(values: np.ndarray, index: np.ndarray, fill: int = -1) -> np.ndarray:
    """``values[index]`` where ``index >= 0``, ``fill`` elsewhere; safe on empty ``values``."""
    padded = np.append(np.asarray(values, np.int64), fill)
    return padded[np.where(index >= 0, index, len(values))]


def run_ranks(sorted_keys: np.ndarray) -> np.ndarray:
    """Rank of each element within its run of equal keys (keys already sorted).

    >>> run_ranks(np.array([3, 3, 5, 7, 7, 7])).tolist()
    [0, 1, 0, 0, 1, 2]
    """
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, np.int64)
    start = np.ones(n, bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n) - first


def _count_pair(keys_a: np.ndarray, keys_b: np.ndarray, sort: bool = False):
    """Distinct keys over both arrays with their counts on each side: codes in order of
    first appearance, or in the keys' sorted order (``sort``)."""
    keys = np.concatenate([keys_a, keys_b])
    if sort and np.count_nonzero(keys[1:] < keys[:-1]) * 16 < len(keys):
        # keys that mostly come in order (entities in document order): a stable sort runs
        # near linear, a hash table misses the cache at every key
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        start = np.ones(len(keys), bool)
        start[1:] = ordered[1:] != ordered[:-1]
        codes = np.empty(len(keys), np.int64)
        codes[order] = np.cumsum(start) - 1
        uniques = ordered[start]
    else:
        codes, uniques = pd.factorize(keys, sort=sort)
    n = len(uniques)
    count_a = np.bincount(codes[: len(keys_a)], minlength=n)
    count_b = np.bincount(codes[len(keys_a):], minlength=n)
    return codes[: len(keys_a)], codes[len(keys_a):], np.asarray(uniques, np.int64), count_a, count_b


# --- encoding -------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """Names behind the integer codes; every code order is the sorted order of its names."""

    doc_ids: pd.Index
    gtypes: pd.Index
    etypes: pd.Index
    comparable: np.ndarray  # comparable value (normalised, then its type's comparator) of each code, sorted
    tv_value: np.ndarray  # comparable value code of each (type, value) code
    normalised: np.ndarray  # normalised value of each normalised code (Side.norm), sorted
    n_groups: int  # a group index bound, for packed (block, group) keys

    @property
    def n_tv(self) -> int:
        return len(self.tv_value)

    def categorical(self, codes: np.ndarray, names: pd.Index) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=names.astype(object))


@dataclass(frozen=True)
class Side:
    """Integer-coded entities of one side, in input order."""

    doc: np.ndarray
    gtype: np.ndarray
    grp: np.ndarray  # input group index, -1 for non-group
    etype: np.ndarray
    tv: np.ndarray  # (entity type, comparable value) code
    confidence: np.ndarray
    content: np.ndarray  # rank of (tv, confidence, missing confidence first): canonical order
    values: np.ndarray  # raw values (object)
    norm: np.ndarray  # normalised value code (before any comparator)
    unparsed: np.ndarray  # whether the type's comparator could not parse the value

    def __len__(self) -> int:
        return len(self.doc)


def encode(gt: pd.DataFrame, pred: pd.DataFrame, doc_ids, normalizer: Normalizer
           ) -> tuple[Side, Side, Vocabulary]:
    """Integer codes of both sides in one vocabulary (codes follow sorted names); values
    compare after the normaliser and their type's comparator (SPEC 2b)."""
    n_gt = len(gt)
    doc_index = pd.Index(sorted(doc_ids), dtype=object)

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
    raw_codes, raw_values = text_codes(both("value"))  # Arrow text: no Python string per value
    values = raw_values[raw_codes]
    coded = pd.Categorical.from_codes(raw_codes, pd.Index(raw_values, dtype=object))
    norm, normalised, value_codes, comparable, unparsed = normalizer.comparable_codes(
        coded, list(etype_names), etype_codes)
    tv_keys = etype_codes.astype(np.int64) * max(len(comparable), 1) + value_codes
    tv_uniques, tv = np.unique(tv_keys, return_inverse=True)
    grp = both("group").to_numpy(np.int64)
    conf = both("confidence").to_numpy(np.float64)
    confidence_key = np.nan_to_num(conf, nan=-1.0)
    # without confidences (or with one for all) the content rank is the dense tv code itself
    constant = not len(conf) or bool((confidence_key == confidence_key[0]).all())
    content = tv.astype(np.int64) if constant else _content_rank(tv, confidence_key)
    vocab = Vocabulary(doc_index, pd.Index(gtype_names, dtype=object), pd.Index(etype_names, dtype=object),
                       comparable, tv_uniques % max(len(comparable), 1), normalised,
                       max(int(grp.max(initial=-1)) + 2, 1))

    def side(sl: slice) -> Side:
        return Side(doc[sl].astype(np.int64), gtype_codes[sl].astype(np.int64), grp[sl],
                    etype_codes[sl].astype(np.int64), tv[sl].astype(np.int64), conf[sl], content[sl],
                    values[sl], norm[sl], unparsed[sl])

    return side(slice(0, n_gt)), side(slice(n_gt, None)), vocab


def _content_rank(tv: np.ndarray, confidence_key: np.ndarray) -> np.ndarray:
    """Dense rank of (tv, confidence) pairs, tv primary: the dense code of the confidence
    packed below ``tv`` (itself a dense code; both below the row count, so the key fits in
    int64), one ``np.unique`` each (``np.lexsort`` of both sorted the index twice).

    >>> _content_rank(np.array([2, 2, 1]), np.array([0.5, 0.1, 0.5])).tolist()
    [2, 1, 0]
    """
    distinct, confidence_code = np.unique(confidence_key, return_inverse=True)
    key = tv.astype(np.int64) * len(distinct) + confidence_code.ravel()
    return np.unique(key, return_inverse=True)[1].ravel().astype(np.int64)


# --- groups in canonical order ----------------------------------------------------------


@dataclass(frozen=True)
class GroupIds:
    """The groups of one side. Group ids run block by block and, within a block, in
    canonical order (sorted by content, input index last)."""

    gid: np.ndarray  # per entity, -1 for non-group
    block: np.ndarray  # per group: packed (doc, group type)
    index: np.ndarray  # per group: its input index within the block

    def __len__(self) -> int:
        return len(self.block)


def group_ids(s: Side, vocab: Vocabulary) -> GroupIds:
    """Group ids of one side, in canonical order within each block (SPEC 3.2)."""
    n_gtypes = len(vocab.gtypes)
    grouped = s.grp >= 0
    key = (s.doc * n_gtypes + s.gtype) * vocab.n_groups + s.grp
    provisional, uniques = pd.factorize(key[grouped], sort=True)
    uniques = np.asarray(uniques, np.int64)
    block, index = uniques // vocab.n_groups, uniques % vocab.n_groups
    rank = canonical_ranks(provisional, s.content[grouped], block, index)
    order = np.lexsort((rank, block))
    new_id = np.empty(len(order), np.int64)
    new_id[order] = np.arange(len(order))
    gid = np.full(len(s), -1, np.int64)
    gid[grouped] = new_id[provisional]
    return GroupIds(gid, block[order], index[order])


def canonical_ranks(gid: np.ndarray, content: np.ndarray, block: np.ndarray,
                    index: np.ndarray) -> np.ndarray:
    """Rank of every group within its block when the block's groups are sorted by content:
    the sorted sequence of their entities' content codes, compared lexicographically
    (a prefix first), input index last.

    ``gid`` (per entity) numbers the groups block by block; ``block`` and ``index`` are per
    group.

    >>> canonical_ranks(np.array([0, 0, 1, 2, 2]), np.array([5, 1, 1, 1, 3]),
    ...                 np.array([0, 0, 0]), np.array([0, 1, 2])).tolist()
    [2, 0, 1]
    """
    n = len(block)
    rank = np.zeros(n, np.int64)
    if n == 0:
        return rank
    block_size = np.bincount(np.unique(block, return_inverse=True)[1])
    starts = np.concatenate([[0], np.cumsum(block_size)[:-1]])
    several = np.repeat(block_size >= 2, block_size)
    if not several.any():
        return rank
    sizes = np.bincount(gid, minlength=n)
    # by group, then content: one stable sort of the packed key (np.lexsort sorts twice)
    order = np.argsort(gid.astype(np.int64) * (int(content.max()) + 1) + content, kind="stable")
    ordered_gid, ordered_content = gid[order], content[order]
    position = run_ranks(ordered_gid)
    # bucket blocks by their largest group (a power of two) to keep padded rows short
    block_of = np.repeat(np.arange(len(block_size)), block_size)
    widest = np.zeros(len(block_size), np.int64)
    np.maximum.at(widest, block_of, sizes)
    width_of_group = 1 << np.ceil(np.log2(np.maximum(widest[block_of], 1))).astype(np.int64)
    for width in np.unique(width_of_group[several]):
        members = np.flatnonzero(several & (width_of_group == width))
        row = np.full(n, -1, np.int64)
        row[members] = np.arange(len(members))
        padded = np.full((len(members), int(width)), -1, np.int64)
        chosen = row[ordered_gid] >= 0
        padded[row[ordered_gid[chosen]], position[chosen]] = ordered_content[chosen]
        keys = (index[members], *(padded[:, j] for j in range(int(width) - 1, -1, -1)), block[members])
        ranked = members[np.lexsort(keys)]
        rank[ranked] = np.arange(len(ranked)) - starts[block_of[ranked]]
    return rank


# --- group matching -------------------------------------------------------------------


def match(g: Side, p: Side, gg: GroupIds, pg: GroupIds, vocab: Vocabulary) -> pd.DataFrame:
    """All pairs: ``doc, gtype, pgid, ggid, pgrp, ggrp`` (-1 = none), sorted by document,
    group type, GT index, predicted index."""
    blocks, inv = np.unique(np.concatenate([pg.block, gg.block]), return_inverse=True)
    n_p = np.bincount(inv[: len(pg)], minlength=len(blocks))
    n_g = np.bincount(inv[len(pg):], minlength=len(blocks))
    first_p = np.concatenate([[0], np.cumsum(n_p)])[:-1]
    first_g = np.concatenate([[0], np.cumsum(n_g)])[:-1]
    single = (n_p == 1) & (n_g == 1)
    matched_p, matched_g = [first_p[single]], [first_g[single]]
    multi = (n_p >= 1) & (n_g >= 1) & ~single
    if multi.any():
        mp, mg = _match_multi(g, p, gg, pg, blocks[multi], n_p[multi], n_g[multi], first_p[multi],
                              first_g[multi])
        matched_p.append(mp)
        matched_g.append(mg)
    pgid = np.concatenate(matched_p).astype(np.int64)
    ggid = np.concatenate(matched_g).astype(np.int64)
    free_p = np.setdiff1d(np.arange(len(pg)), pgid)
    free_g = np.setdiff1d(np.arange(len(gg)), ggid)
    pgid = np.concatenate([pgid, free_p, np.full(len(free_g), -1)])
    ggid = np.concatenate([ggid, np.full(len(free_p), -1), free_g])
    block = np.where(pgid >= 0, take(pg.block, pgid), take(gg.block, ggid))
    n_gtypes = len(vocab.gtypes)
    frame = pd.DataFrame({
        "doc": block // n_gtypes,
        "gtype": block % n_gtypes,
        "pgid": pgid,
        "ggid": ggid,
        "pgrp": take(pg.index, pgid),
        "ggrp": take(gg.index, ggid),
    })
    order = np.lexsort((frame["pgrp"].to_numpy(), frame["ggrp"].to_numpy(),
                        frame["gtype"].to_numpy(), frame["doc"].to_numpy()))
    return frame.iloc[order].reset_index(drop=True)


def _per_group(s: Side, ids: GroupIds, key: np.ndarray, mask: np.ndarray):
    """(group, key, count) for the entities selected by ``mask``."""
    width = int(key.max(initial=0)) + 1
    uniques, counts = np.unique(ids.gid[mask] * width + key[mask], return_counts=True)
    return uniques // width, uniques % width, counts


def _match_multi(g, p, gg: GroupIds, pg: GroupIds, blocks, n_p, n_g, first_p, first_g):
    """Hungarian solves for blocks with several groups on a side, batched by shape.

    S, W and X of every candidate pair live in one dense vector laid out block by block
    (row-major N x M, groups in canonical order), so a block's matrix is a reshape of a
    slice.
    """
    size = n_p * n_g
    offset = np.concatenate([[0], np.cumsum(size)])
    block_of_p = _lookup(blocks, pg.block)
    block_of_g = _lookup(blocks, gg.block)
    in_g = take(block_of_g, gg.gid) >= 0
    in_p = take(block_of_p, pg.gid) >= 0

    def dense(key_g: np.ndarray, key_p: np.ndarray) -> np.ndarray:
        """Sum over shared keys of min(count in pred group, count in GT group)."""
        width = int(max(key_g.max(initial=0), key_p.max(initial=0))) + 1
        ga, kg, cg = _per_group(g, gg, key_g, in_g)
        pa, kp, cp = _per_group(p, pg, key_p, in_p)
        total = np.zeros(offset[-1], np.float64)
        for li, rj in equi_join(pg.block[pa] * width + kp, gg.block[ga] * width + kg):
            pi, gj = pa[li], ga[rj]
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
    size_p = np.bincount(pg.gid[pg.gid >= 0], minlength=len(pg))
    size_g = np.bincount(gg.gid[gg.gid >= 0], minlength=len(gg))
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


# --- cells and statuses -------------------------------------------------------------------


@dataclass(frozen=True)
class Labels:
    """Per entity of one side: its pair, its cell, its status, and whether it is a TP."""

    pair: np.ndarray  # row of the pairs table; n_pairs + doc for the non-group pair
    cell: np.ndarray  # row of the cells table
    status: np.ndarray  # Status codes
    tv_cell: np.ndarray  # (cell, value) code shared by both sides
    substitutes: np.ndarray  # the other side's entity a substitution replaces, -1 if none


def label(g: Side, p: Side, gg: GroupIds, pg: GroupIds, pairs: pd.DataFrame, vocab: Vocabulary
          ) -> tuple[pd.DataFrame, np.ndarray, Labels, Labels]:
    """Per cell: n_gt, n_pred, tp and the correction counts (SPEC 3.3-3.4); every entity's
    status. Which copies of a repeated value are TPs: the highest-confidence predictions
    (SPEC 4). Which wrong values are substitutions: those paired by :func:`pair_substitutions`.
    Returns the cells, the pair of every cell, and both sides' labels.
    """
    n_pairs = len(pairs)
    n_et = len(vocab.etypes)
    c = _cell_counts(g, p, gg, pg, pairs, vocab)
    pair_g, pair_p, cell_g, cell_p, cell_keys = c.pair_g, c.pair_p, c.cell_g, c.cell_p, c.cell_keys
    n_gt, n_pred, cv_g, cv_p, tp_cv, tp = c.n_gt, c.n_pred, c.cv_g, c.cv_p, c.tp_cv, c.tp
    fp, fn = n_pred - tp, n_gt - tp
    subs = np.minimum(fp, fn)

    tp_g = _tp_copies(cv_g, tp_cv, np.zeros(len(g)))
    tp_p = _tp_copies(cv_p, tp_cv, -np.nan_to_num(p.confidence, nan=1.0))
    sub_g, sub_p = pair_substitutions(g, p, cell_g, cell_p, ~tp_g, ~tp_p, vocab)
    status_g = np.where(tp_g, Status.CORRECT, np.where(sub_g >= 0, Status.SUBSTITUTED, Status.ADDED))
    status_p = np.where(tp_p, Status.CORRECT, np.where(sub_p >= 0, Status.SUBSTITUTED, Status.DELETED))

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
    # cells sorted by document, group type, GT index, predicted index, entity type
    order = np.lexsort((cell_keys % n_et, cells["pred_group"].to_numpy(), cells["gt_group"].to_numpy(),
                        cells["group_type"].cat.codes.to_numpy(), cells["doc_id"].cat.codes.to_numpy()))
    renumber = np.empty(len(order), np.int64)
    renumber[order] = np.arange(len(order))
    cells = cells.iloc[order].reset_index(drop=True)
    return (cells, pair[order],
            Labels(pair_g, renumber[cell_g], status_g.astype(np.int64), cv_g, sub_g),
            Labels(pair_p, renumber[cell_p], status_p.astype(np.int64), cv_p, sub_p))


@dataclass(frozen=True)
class _CellCounts:
    """Cells in (pair, entity type) order with their entity counts and TPs."""

    pair_g: np.ndarray  # per GT entity: its pair (n_pairs + doc for the non-group pair)
    pair_p: np.ndarray
    cell_g: np.ndarray  # per GT entity: its cell
    cell_p: np.ndarray
    cell_keys: np.ndarray  # per cell: pair * n_entity_types + entity type
    n_gt: np.ndarray  # per cell
    n_pred: np.ndarray
    cv_g: np.ndarray  # per GT entity: its (cell, value) code
    cv_p: np.ndarray
    tp_cv: np.ndarray  # per (cell, value): TPs
    tp: np.ndarray  # per cell


def _cell_counts(g: Side, p: Side, gg: GroupIds, pg: GroupIds, pairs: pd.DataFrame,
                 vocab: Vocabulary) -> _CellCounts:
    n_pairs = len(pairs)
    pair_of_p = np.full(len(pg), -1, np.int64)
    pair_of_g = np.full(len(gg), -1, np.int64)
    pgid, ggid = pairs["pgid"].to_numpy(), pairs["ggid"].to_numpy()
    pair_of_p[pgid[pgid >= 0]] = np.flatnonzero(pgid >= 0)
    pair_of_g[ggid[ggid >= 0]] = np.flatnonzero(ggid >= 0)
    n_et = len(vocab.etypes)
    pair_g = np.where(gg.gid >= 0, take(pair_of_g, gg.gid), n_pairs + g.doc)
    pair_p = np.where(pg.gid >= 0, take(pair_of_p, pg.gid), n_pairs + p.doc)
    # cells in (pair, entity type) order
    cell_g, cell_p, cell_keys, n_gt, n_pred = _count_pair(pair_g * n_et + g.etype, pair_p * n_et + p.etype,
                                                          sort=True)

    n_tv = vocab.n_tv
    cv_g, cv_p, cv_keys, cvn_g, cvn_p = _count_pair(cell_g * n_tv + g.tv, cell_p * n_tv + p.tv)
    tp_cv = np.minimum(cvn_g, cvn_p)
    tp = np.bincount(cv_keys // n_tv, weights=tp_cv, minlength=len(cell_keys)).astype(np.int64)
    return _CellCounts(pair_g, pair_p, cell_g, cell_p, cell_keys, n_gt, n_pred, cv_g, cv_p, tp_cv, tp)


def corpus_counts(gt: Dataset, pred: Dataset, normalizer: Normalizer = Normalizer()) -> dict[str, int]:
    """Corpus ``n_gt, n_pred, tp, fp, fn, substitution, addition, deletion`` of :func:`count`
    with the same arguments, without labelling entities or building tables: what a re-count
    under other field rules needs (SPEC 2d's strict and suggested figures)."""
    g, p, vocab = encode(gt.entities, pred.entities, gt.doc_ids, normalizer)
    gg, pg = group_ids(g, vocab), group_ids(p, vocab)
    cells = _cell_counts(g, p, gg, pg, match(g, p, gg, pg, vocab), vocab)
    fp, fn = cells.n_pred - cells.tp, cells.n_gt - cells.tp
    subs = np.minimum(fp, fn)
    return {"n_gt": int(cells.n_gt.sum()), "n_pred": int(cells.n_pred.sum()), "tp": int(cells.tp.sum()),
            "fp": int(fp.sum()), "fn": int(fn.sum()), "substitution": int(subs.sum()),
            "addition": int((fn - subs).sum()), "deletion": int((fp - subs).sum())}


def _tp_copies(cv: np.ndarray, tp_cv: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Which entities are TPs: within each (cell, value), the first ``tp`` copies by
    ``priority`` (then input order)."""
    order = np.lexsort((np.arange(len(cv)), priority, cv))
    is_tp = np.empty(len(cv), bool)
    is_tp[order] = run_ranks(cv[order]) < tp_cv[cv[order]]
    return is_tp


def pair_substitutions(g: Side, p: Side, cell_g: np.ndarray, cell_p: np.ndarray, wrong_g: np.ndarray,
                       wrong_p: np.ndarray, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """Pair the wrong values of each cell: min(FP, FN) substitutions.

    A cell with one wrong value on each side pairs them. A cell with more pairs them so
    that the total edit distance between the normalised values is smallest (Hungarian
    algorithm), both sides taken in canonical order (value, confidence, input order), so
    a typo is paired with the value it misspells and the choice depends only on the data.

    Returns, per GT and per predicted entity, the entity of the other side it is
    substituted with (-1 if none).
    """
    fp_idx = np.flatnonzero(wrong_p)
    fn_idx = np.flatnonzero(wrong_g)
    fp_idx = fp_idx[np.lexsort((fp_idx, np.nan_to_num(p.confidence[fp_idx], nan=-1.0), p.tv[fp_idx],
                                cell_p[fp_idx]))]
    fn_idx = fn_idx[np.lexsort((fn_idx, g.tv[fn_idx], cell_g[fn_idx]))]
    n_cells = int(max(cell_g.max(initial=-1), cell_p.max(initial=-1))) + 1
    n_fp = np.bincount(cell_p[fp_idx], minlength=n_cells)
    n_fn = np.bincount(cell_g[fn_idx], minlength=n_cells)
    start_fp = np.concatenate([[0], np.cumsum(n_fp)])
    start_fn = np.concatenate([[0], np.cumsum(n_fn)])
    partner_p = np.full(len(p), -1, np.int64)
    # one wrong value on each side: paired directly
    simple = np.flatnonzero((n_fp == 1) & (n_fn == 1))
    partner_p[fp_idx[start_fp[simple]]] = fn_idx[start_fn[simple]]
    complex_cells = np.flatnonzero((n_fp >= 1) & (n_fn >= 1) & ((n_fp > 1) | (n_fn > 1)))
    if len(complex_cells):
        shapes = pd.DataFrame({"n": n_fp[complex_cells], "m": n_fn[complex_cells]})
        normalised = vocab.comparable[vocab.tv_value]
        for (n, m), members in shapes.groupby(["n", "m"], sort=True).indices.items():
            cells = complex_cells[members]
            rows = fp_idx[start_fp[cells][:, None] + np.arange(n)]  # (k, n)
            cols = fn_idx[start_fn[cells][:, None] + np.arange(m)]  # (k, m)
            queries = normalised[p.tv[np.repeat(rows, m, axis=1).ravel()]]
            choices = normalised[g.tv[np.tile(cols, (1, n)).ravel()]]
            cost = cpdist(list(queries), list(choices), scorer=Levenshtein.distance, workers=1)
            r, c = assignment(np.asarray(cost).reshape(len(cells), n, m))
            partner_p[np.take_along_axis(rows, r, axis=1)] = np.take_along_axis(cols, c, axis=1)
    partner_g = np.full(len(g), -1, np.int64)
    partner_g[partner_p[partner_p >= 0]] = np.flatnonzero(partner_p >= 0)
    return partner_g, partner_p


def link(p: Side, lg: Labels, lp: Labels) -> tuple[np.ndarray, np.ndarray]:
    """The partner of every entity on the other side (-1 if none): a TP with the copy of
    the same value it matches (GT copies in input order, predictions by confidence, as
    :func:`label` chose them), a substitution with the value it replaces."""
    partner_g, partner_p = lg.substitutes.copy(), lp.substitutes.copy()
    tp_g = np.flatnonzero(lg.status == Status.CORRECT)
    tp_p = np.flatnonzero(lp.status == Status.CORRECT)
    tp_g = tp_g[np.lexsort((tp_g, lg.tv_cell[tp_g]))]
    tp_p = tp_p[np.lexsort((tp_p, -np.nan_to_num(p.confidence[tp_p], nan=1.0), lp.tv_cell[tp_p]))]
    # both lists hold, per (cell, value), the same number of copies in the same order
    partner_g[tp_g] = tp_p
    partner_p[tp_p] = tp_g
    return partner_g, partner_p


# --- causes (SPEC 2c) ---------------------------------------------------------------------


def _paired_group(s: Side, labels: Labels, pairs: pd.DataFrame, other_side: str) -> np.ndarray:
    """Per entity: the other side's group of its pair (-1 for non-group entities and
    unmatched groups)."""
    other = pairs[other_side].to_numpy()
    return take(other, np.where(s.grp >= 0, labels.pair, -1))


def date_orders(g: Side, etypes: np.ndarray, vocab: Vocabulary, normalizer: Normalizer,
                gt_orders: Mapping[str, int] | None = None) -> np.ndarray:
    """Per entity type code: its date order (an index into
    :data:`~kieval_core.count.causes.DATE_ORDERS`, -1 for none), the declared ``date:*``
    comparator's, else the one its GT values use across the dataset (``gt_orders`` when
    given, else ``g``'s values); read for the types ``etypes`` only."""
    wanted = np.unique(etypes)
    names = list(vocab.etypes[wanted])
    if gt_orders is None:
        rows = np.isin(g.etype, wanted)
        found = coded_date_orders(g.etype[rows], g.norm[rows], np.asarray(vocab.etypes, dtype=object),
                                  np.asarray(vocab.normalised, dtype=object), names)
    else:
        found = {name: gt_orders.get(name, -1) for name in names}
    declared = normalizer.comparator_of(names)
    found.update({etype: DATE_ORDERS.index(comparator.removeprefix("date:"))
                  for etype, comparator in declared.items() if comparator.startswith("date:")})
    orders = np.full(len(vocab.etypes), -1, np.int64)
    orders[wanted] = [found[name] for name in names]
    return orders


def gt_date_counts(gt: Dataset, normalizer: Normalizer) -> dict[str, DateCounts]:
    """Per entity type, the :class:`~kieval_core.count.comparators.DateCounts` of ``gt``'s
    values as :func:`count` normalises them: added up over disjoint parts of a ground
    truth, the date orders (:meth:`~kieval_core.count.comparators.DateCounts.order`) its
    causes use on the whole."""
    codes, normalised = normalizer.sorted_codes(gt.entities["value"].to_numpy(object))
    values = pd.Series(normalised[codes], dtype=object)
    return {str(etype): date_counts(rows.to_numpy(object))
            for etype, rows in values.groupby(gt.entities["entity_type"].to_numpy(object), sort=True)}


def label_causes(g: Side, p: Side, lg: Labels, lp: Labels, pairs: pd.DataFrame, vocab: Vocabulary,
                 normalizer: Normalizer, gt_orders: Mapping[str, int] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The cause code of every entity (index into :data:`~kieval_core.count.causes.CAUSES`, -1
    when correct): a substitution's on both sides, a deletion's, an addition's.

    Substitutions are classified once per distinct pair of normalised values and date order
    of their field; deletions and additions by counting, per document and normalised value,
    the other side's copies that sit elsewhere (another entity type or another group than
    the paired one).
    """
    cause_g = np.full(len(g), -1, np.int8)
    cause_p = np.full(len(p), -1, np.int8)
    sub = np.flatnonzero(lp.status == Status.SUBSTITUTED)
    if len(sub):
        partner = lp.substitutes[sub]
        used, pair_codes = np.unique(np.concatenate([g.norm[partner], p.norm[sub]]), return_inverse=True)
        digits = has_digit(vocab.normalised[used])[pair_codes]  # a date order matters to pairs of dates only
        dated = digits[: len(sub)] & digits[len(sub):]
        order = date_orders(g, p.etype[sub][dated], vocab, normalizer, gt_orders)[p.etype[sub]] + 1
        n_norm = max(len(vocab.normalised), 1)
        key = (order * n_norm + g.norm[partner]) * n_norm + p.norm[sub]
        distinct, inverse = np.unique(key, return_inverse=True)
        codes = substitution_cause_codes(vocab.normalised[distinct // n_norm % n_norm],
                                         vocab.normalised[distinct % n_norm], normalizer.near_miss,
                                         distinct // (n_norm * n_norm) - 1)
        cause_p[sub] = codes[inverse]
        cause_g[partner] = codes[inverse]

    def located(s: Side, grp: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        return s.doc[rows], s.norm[rows], s.etype[rows], s.gtype[rows], grp[rows]

    deleted = np.flatnonzero(lp.status == Status.DELETED)
    if len(deleted):
        everywhere = np.arange(len(g))
        elsewhere = held_elsewhere(located(p, _paired_group(p, lp, pairs, "ggrp"), deleted),
                                   located(g, g.grp, everywhere))
        cause_p[deleted] = np.where(elsewhere, MISPLACED, HALLUCINATED)
    added = np.flatnonzero(lg.status == Status.ADDED)
    if len(added):
        everywhere = np.arange(len(p))
        elsewhere = held_elsewhere(located(g, _paired_group(g, lg, pairs, "pgrp"), added),
                                   located(p, p.grp, everywhere))
        cause_g[added] = np.where(elsewhere, MISPLACED, MISSED)
    return cause_g, cause_p


def _with_cause_counts(cells: pd.DataFrame, g: Side, p: Side, lg: Labels, lp: Labels, cause_g: np.ndarray,
                       cause_p: np.ndarray) -> pd.DataFrame:
    """The cells with their corrections by cause and their unparsed values."""
    n = len(cells)
    columns = {}
    sources = {"substitution": (lp, cause_p, Status.SUBSTITUTED), "deletion": (lp, cause_p, Status.DELETED),
               "addition": (lg, cause_g, Status.ADDED)}
    for kind, kind_causes in CAUSES_OF_KIND.items():
        labels, cause, status = sources[kind]
        of_kind = labels.status == status
        for name in kind_causes:
            chosen = of_kind & (cause == CAUSES.index(name))
            columns[f"{kind}_{name}"] = np.bincount(labels.cell[chosen], minlength=n).astype(np.int64)
    columns["unparsed_gt"] = np.bincount(lg.cell[g.unparsed], minlength=n).astype(np.int64)
    columns["unparsed_pred"] = np.bincount(lp.cell[p.unparsed], minlength=n).astype(np.int64)
    return cells.assign(**columns)


# --- output frames ----------------------------------------------------------------------


def _pair_frame(pairs: pd.DataFrame, cells: pd.DataFrame, cell_pair: np.ndarray,
                vocab: Vocabulary) -> pd.DataFrame:
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


def _entity_frame(s: Side, labels: Labels, partner: np.ndarray, other_values: np.ndarray,
                  pairs: pd.DataFrame, vocab: Vocabulary, cause: np.ndarray | None, *, side: str
                  ) -> pd.DataFrame:
    """Input entities with their pair, status, partner and cause (when labelled)."""
    other_value = np.full(len(s), None, object)
    has = partner >= 0
    other_value[has] = other_values[partner[has]]
    frame = pd.DataFrame({
        "doc_id": vocab.categorical(s.doc, vocab.doc_ids),
        "group_type": vocab.categorical(s.gtype, vocab.gtypes),
        "group": s.grp,
        "paired_group": _paired_group(s, labels, pairs, "pgrp" if side == "gt" else "ggrp"),
        "entity_type": vocab.categorical(s.etype, vocab.etypes),
        "value": pd.Series(s.values, dtype=object),
        "confidence": s.confidence,
        "status": pd.Categorical.from_codes(labels.status, categories=list(STATUSES)),
        "partner": partner,
        "other_value": pd.Series(other_value, dtype=object),
        "position": np.arange(len(s)),
        "cell": labels.cell,
        "copies": labels.tv_cell,
    })
    if cause is not None:
        frame["cause"] = pd.Categorical.from_codes(cause, categories=list(CAUSES))
    return frame


def _located(frame: pd.DataFrame, entities: pd.DataFrame) -> pd.DataFrame:
    """The entity frame with the input's location columns (same rows, same order), if any."""
    if has_locations(entities):
        for column in LOCATION_COLUMNS:
            frame[column] = entities[column].to_numpy(np.float64)
    return frame


def _flat(g: Side, p: Side, vocab: Vocabulary) -> pd.DataFrame:
    """Flat entity counts (SPEC 3.7): multiset intersection per document, groups ignored."""
    n_tv = vocab.n_tv
    _, _, keys, n_gt, n_pred = _count_pair(g.doc * n_tv + g.tv, p.doc * n_tv + p.tv, sort=True)
    tp = np.minimum(n_gt, n_pred)
    tv_etype = np.zeros(n_tv, np.int64)
    tv_etype[np.concatenate([g.tv, p.tv])] = np.concatenate([g.etype, p.etype])
    n_et = len(vocab.etypes)
    de = (keys // n_tv) * n_et + tv_etype[keys % n_tv]
    uniques, codes = np.unique(de, return_inverse=True)
    return pd.DataFrame({
        "doc_id": vocab.categorical(uniques // n_et, vocab.doc_ids),
        "entity_type": vocab.categorical(uniques % n_et, vocab.etypes),
        "tp": np.bincount(codes, weights=tp).astype(np.int64),
        "n_gt": np.bincount(codes, weights=n_gt).astype(np.int64),
        "n_pred": np.bincount(codes, weights=n_pred).astype(np.int64),
    })
