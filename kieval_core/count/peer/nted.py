"""Donut's tree-edit-distance accuracy (nTED) and field-level F1 (Kim et al., ECCV 2022).

Both follow ``JSONParseEvaluator`` of ``donut-python`` 1.0.9 (``cal_acc`` and ``cal_f1``):
the same normalisation, the same trees and the same edit costs. The Zhang-Shasha tree
edit distance is implemented here with NumPy instead of the pure-Python ``zss`` package
Donut calls: :func:`nted_corpus` first cuts off what the two trees of a document
provably share (:func:`_strip_common`), computes equal remainders once and fills the
forest-distance rows of hundreds of documents per NumPy call (:class:`_ZhangShasha`).
The results are Donut's, exactly: every cost is an integer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from ...gcpause import cycle_collector_paused
from .oi import Detection

__all__ = [
    "LEAF",
    "ROOT",
    "SUBTREE",
    "DonutFieldF1",
    "LabelTree",
    "NTEDCorpus",
    "donut_field_f1",
    "donut_fields",
    "donut_normalize",
    "donut_tree",
    "nted",
    "nted_corpus",
    "tree_edit_distance",
]

ROOT = "<root>"
SUBTREE = "<subtree>"
LEAF = "<leaf>"

_SCALARS = {str, int, float}


@dataclass(frozen=True, eq=False)
class LabelTree:
    """An ordered labelled tree in postorder.

    Attributes
    ----------
    labels : tuple of str
        Node labels in postorder (the root is last). A label containing ``"<leaf>"``
        marks a leaf value, as in Donut.
    leftmost : numpy.ndarray
        For every node, the postorder index of its leftmost leaf descendant.
    """

    labels: tuple[str, ...]
    leftmost: np.ndarray

    @classmethod
    def from_nested(cls, node: tuple[str, Sequence]) -> LabelTree:
        """Build a tree from nested ``(label, [children])`` tuples.

        Examples
        --------
        >>> tree = LabelTree.from_nested(("<root>", [("a", [("<leaf>x", [])]), ("b", [])]))
        >>> tree.labels, tree.leftmost.tolist()
        (('<leaf>x', 'a', 'b', '<root>'), [0, 0, 2, 0])
        """
        labels: list[str] = []
        leftmost: list[int] = []

        def visit(label: str, children: Sequence) -> int:
            first = [visit(*child) for child in children]
            labels.append(label)
            leftmost.append(leftmost[first[0]] if first else len(labels) - 1)
            return len(labels) - 1

        visit(*node)
        return cls(tuple(labels), np.asarray(leftmost, dtype=np.int64))

    @property
    def keyroots(self) -> np.ndarray:
        """Zhang-Shasha key roots: the highest node of every leftmost path, ascending."""
        return _keyroots(self.leftmost)


class NTEDCorpus(NamedTuple):
    """nTED accuracy of a corpus: one score per document and their mean."""

    per_document: tuple[float, ...]
    mean: float


class DonutFieldF1(Detection):
    """Micro-averaged field counts of Donut's ``cal_f1``: its F1, TP / (TP + (FP + FN) / 2),
    is :class:`~kieval_core.count.peer.oi.Detection`'s 2 TP / (2 TP + FP + FN)."""


def donut_normalize(data: Any) -> Any:
    """Donut's ``normalize_dict``: sort keys, wrap values in lists, drop empties.

    Falsy values (``None``, ``""``, ``0``, empty containers) disappear; keys are sorted
    by ``(len(key), key)``; scalars become one-element lists of stripped strings; a list
    mixing dicts with scalars keeps only its ``str``/``int``/``float`` items.

    Examples
    --------
    >>> donut_normalize({"total": 0, "nm": " tea ", "menu": [{"cnt": 2}, {}]})
    {'nm': ['tea'], 'menu': [{'cnt': ['2']}]}
    """
    if not data:
        return {}
    if isinstance(data, dict):
        normalized = {}
        for key in sorted(data, key=lambda k: (len(k), k)):
            value = donut_normalize(data[key])
            if value:
                normalized[key] = value if isinstance(value, list) else [value]
        return normalized
    if isinstance(data, list):
        if all(isinstance(item, dict) for item in data):
            return [item for item in map(donut_normalize, data) if item]
        return [str(item).strip() for item in data if type(item) in _SCALARS and str(item).strip()]
    return [str(data).strip()]


def donut_tree(normalized: dict | list) -> LabelTree:
    """Donut's ``construct_tree_from_dict`` on already normalised data.

    Examples
    --------
    >>> donut_tree({"menu": [{"nm": ["tea"]}]}).labels
    ('<leaf>tea', 'nm', '<subtree>', 'menu', '<root>')
    """
    return LabelTree.from_nested(_donut_nested(normalized))


def donut_fields(data: Any) -> list[tuple[str, str]]:
    """Donut's ``flatten(normalize_dict(data))`` in one pass: ``(dotted key path, value)``.

    Examples
    --------
    >>> donut_fields({"total": "9", "menu": [{"nm": "tea"}, {"nm": "cake", "cnt": 0}]})
    [('menu.nm', 'tea'), ('menu.nm', 'cake'), ('total', '9')]
    """
    fields: list[tuple[str, str]] = []

    def visit(value: Any, path: str) -> None:
        if not value:
            return
        if isinstance(value, dict):
            for key in sorted(value, key=lambda k: (len(k), k)):
                visit(value[key], f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            if all(isinstance(item, dict) for item in value):
                for item in value:
                    visit(item, path)
            else:
                texts = (str(item).strip() for item in value if type(item) in _SCALARS)
                fields.extend((path, text) for text in texts if text)
        else:
            fields.append((path, str(value).strip()))

    visit(data, "")
    return fields


def tree_edit_distance(source: LabelTree, target: LabelTree) -> float:
    """Zhang-Shasha edit distance with Donut's costs.

    Removing or inserting a leaf costs the length of its value, any other node 1.
    Relabelling a leaf into a leaf costs the Levenshtein distance of the values, a leaf
    into a non-leaf (or back) 1 + the leaf value's length, a non-leaf into a non-leaf
    0 if the labels are equal, else 1.

    Parameters
    ----------
    source, target : LabelTree
        The tree to edit and the tree to reach.

    Returns
    -------
    float
        The minimum total cost (an integer value).

    Examples
    --------
    >>> a = donut_tree({"nm": ["cake"]})
    >>> b = donut_tree({"nm": ["cakes"], "cnt": ["2"]})
    >>> tree_edit_distance(a, b)
    3.0
    """
    return float(_tree_distances([(source, target)])[0])


def nted(gt: dict, pred: dict) -> float:
    """Donut's nTED accuracy of one document: max(0, 1 - TED(pred, gt) / TED(empty, gt)).

    Parameters
    ----------
    gt, pred : dict
        Ground-truth and predicted parses (Donut's ``gt_parse`` shape).

    Returns
    -------
    float
        Accuracy in [0, 1]. When the normalised ground truth is empty (Donut divides by
        zero) it is 1.0 for an empty prediction and 0.0 otherwise.

    Examples
    --------
    >>> nted({"menu": [{"nm": "cake", "cnt": "2"}]}, {"menu": [{"nm": "cake", "cnt": "3"}]})
    0.8888888888888888
    """
    return nted_corpus([(gt, pred)]).per_document[0]


def nted_corpus(pairs: Iterable[tuple[dict, dict]]) -> NTEDCorpus:
    """nTED accuracy of every ``(gt, pred)`` document and their unweighted mean.

    Documents are scored together: the parts the two trees share are cut off first
    (:func:`_strip_common`, exact), identical remainders are computed once and all the
    others go through one batched Zhang-Shasha pass (:func:`_tree_distances`).

    Parameters
    ----------
    pairs : iterable of (gt, pred) dicts

    Returns
    -------
    NTEDCorpus
        ``(per_document, mean)``.

    Raises
    ------
    ValueError
        When ``pairs`` is empty.

    Examples
    --------
    >>> nted_corpus([({"a": "x"}, {"a": "x"}), ({"a": "x"}, {})])
    NTEDCorpus(per_document=(1.0, 0.0), mean=0.5)
    """
    with cycle_collector_paused():
        scores = _scores(pairs)
    if not scores:
        msg = "nted_corpus needs at least one (gt, pred) document pair"
        raise ValueError(msg)
    return NTEDCorpus(scores, sum(scores) / len(scores))


def donut_field_f1(gts: Sequence[dict], preds: Sequence[dict]) -> DonutFieldF1:
    """Donut's field-level F1 (``cal_f1``): micro counts of ``(key path, value)`` fields.

    Per document, the multiset intersection of the fields (:func:`donut_fields`) gives
    TP; the leftovers are FP and FN. Fields are counted for the whole corpus at once.

    Parameters
    ----------
    gts, preds : sequence of dict
        Ground-truth and predicted parses, paired by position.

    Returns
    -------
    DonutFieldF1

    Raises
    ------
    ValueError
        When the two sequences differ in length (Donut silently truncates).

    Examples
    --------
    >>> result = donut_field_f1([{"nm": "tea", "cnt": "2"}], [{"nm": "tea", "cnt": "3"}])
    >>> result.tp, result.fp, result.fn, result.f1
    (1, 1, 1, 0.5)
    """
    if len(gts) != len(preds):
        msg = f"donut_field_f1 needs one prediction per GT: {len(gts)} gts, {len(preds)} preds"
        raise ValueError(msg)
    gt_fields = [(doc, *field) for doc, gt in enumerate(gts) for field in donut_fields(gt)]
    pred_fields = [(doc, *field) for doc, pred in enumerate(preds) for field in donut_fields(pred)]
    keys = np.empty(len(gt_fields) + len(pred_fields), dtype=object)
    keys[:] = gt_fields + pred_fields
    codes, uniques = pd.factorize(keys)
    gt_count = np.bincount(codes[: len(gt_fields)], minlength=len(uniques))
    pred_count = np.bincount(codes[len(gt_fields) :], minlength=len(uniques))
    tp = int(np.minimum(gt_count, pred_count).sum())
    return DonutFieldF1(tp, len(pred_fields) - tp, len(gt_fields) - tp)


# --- nTED: cheap exact parts ----------------------------------------------------------------




Nested = tuple  # (label, (child, child, ...)): a tree as nested tuples, hashable


def _donut_nested(data: dict | list, label: str = ROOT) -> Nested:
    """Donut's ``construct_tree_from_dict`` on normalised data, as nested tuples."""
    if isinstance(data, dict):
        return label, tuple([_donut_nested(value, key) for key, value in data.items()])
    for item in data:
        if not isinstance(item, dict):  # not a list of dicts: a list of leaf values
            return label, tuple([(f"{LEAF}{value}", ()) for value in data])
    return label, tuple([_donut_nested(item, SUBTREE) for item in data])


def _insert_cost(label: str) -> int:
    """Donut's insert (and remove) cost: a leaf's value length, 1 for any other node."""
    return len(label.replace(LEAF, "")) if LEAF in label else 1


def _weight(tree: Nested) -> int:
    """Cost of inserting every node of ``tree``."""
    label, children = tree
    return _insert_cost(label) + sum(map(_weight, children))


def _scores(pairs: Iterable[tuple[dict, dict]]) -> tuple[float, ...]:
    documents = [(_donut_nested(donut_normalize(gt)), _donut_nested(donut_normalize(pred)))
                 for gt, pred in pairs]
    distances = _distances([_strip_common(pred, gt) for gt, pred in documents])
    return tuple(_accuracy(gt, pred, d) for (gt, pred), d in zip(documents, distances, strict=True))


def _accuracy(gt: Nested, pred: Nested, distance: int) -> float:
    # TED(empty tree, gt) maps the empty root onto gt's root at no cost and inserts
    # every other node: relabelling the root anywhere else never costs less.
    empty_distance = _weight(gt) - 1
    if empty_distance == 0:
        return 1.0 if not pred[1] else 0.0
    return max(0.0, 1 - distance / empty_distance)


def _strip_common(source: Nested, target: Nested) -> tuple[Nested, Nested]:
    """Two smaller trees at the same edit distance as ``source`` and ``target``.

    Donut's costs make every relabel cost at least the difference of the two labels'
    insert costs (Levenshtein >= length difference, 1 + n >= n - 1, 0 >= 0) and an
    equal relabel free. Under such costs:

    * two trees whose roots have the same label are exactly as far apart as their
      forests of children: some optimal mapping pairs the roots (re-pairing a root that
      is mapped elsewhere, or unmapped, never costs more);
    * two forests that begin (or end) with the same tree are exactly as far apart as
      the forests without it: mapping pairs that cross from the shared tree into the
      rest can only go one way and cost at least what re-mapping the shared tree onto
      itself saves.

    So while the roots agree, identical leading and trailing children are dropped, and a
    lone differing pair of children is descended into. The result is a pair of trees
    with equal root labels over the children that differ, or the first pair of differing
    lone subtrees.
    """
    while source[0] == target[0]:
        a, b = source[1], target[1]
        shorter = min(len(a), len(b))
        head = 0
        while head < shorter and a[head] == b[head]:
            head += 1
        tail = 0
        while tail < shorter - head and a[-1 - tail] == b[-1 - tail]:
            tail += 1
        a, b = a[head : len(a) - tail], b[head : len(b) - tail]
        if len(a) != 1 or len(b) != 1:
            return (source[0], a), (target[0], b)
        source, target = a[0], b[0]
    return source, target


def _distances(problems: Sequence[tuple[Nested, Nested]]) -> list[int]:
    """Edit distance of every ``(source, target)`` pair; equal pairs are computed once.

    When the roots agree and one side has nothing below its root, the distance is the
    weight of the other side's children (all inserted or removed); every other pair
    goes through :func:`_tree_distances`.
    """
    known: dict[tuple[Nested, Nested], int] = {}
    todo = []
    for source, target in dict.fromkeys(problems):
        if source[0] == target[0] and not (source[1] and target[1]):
            known[source, target] = abs(_weight(source) - _weight(target))
        else:
            todo.append((source, target))
    trees = [(LabelTree.from_nested(source), LabelTree.from_nested(target)) for source, target in todo]
    known.update(zip(todo, _tree_distances(trees).tolist(), strict=True))
    return [known[problem] for problem in problems]


# --- Zhang-Shasha, many tree pairs at once ---------------------------------------------------

_BATCH_CELLS = 1 << 19  # forest-distance cells held at once (4 MiB of int64)


def _keyroots(leftmost: np.ndarray) -> np.ndarray:
    """Zhang-Shasha key roots, ascending: the last (highest) node of every leftmost path."""
    first_from_end = np.unique(leftmost[::-1], return_index=True)[1]
    return np.sort(len(leftmost) - 1 - first_from_end)


def _tree_distances(pairs: Sequence[tuple[LabelTree, LabelTree]]) -> np.ndarray:
    """Zhang-Shasha distance (Donut's costs) of every ``(source, target)`` pair.

    Pairs of similar size are batched so that one batch holds about ``_BATCH_CELLS``
    forest-distance cells; see :class:`_ZhangShasha` for one batch.
    """
    distances = np.empty(len(pairs), np.int64)
    if not pairs:
        return distances
    targets = _Forest([target for _, target in pairs])
    rows = np.fromiter((len(source.labels) + 1 for source, _ in pairs), np.int64, len(pairs))
    cells = rows * targets.widths
    order = np.argsort(cells, kind="stable")
    batch = np.cumsum(cells[order]) // _BATCH_CELLS
    for chunk in np.split(order, np.flatnonzero(np.diff(batch)) + 1):
        distances[chunk] = _ZhangShasha([pairs[k] for k in chunk]).distances()
    return distances


class _Forest:
    """Trees laid end to end: one postorder numbering, leftmost leaves and key roots.

    ``widths`` is, per tree, the number of forest-distance columns of its key roots laid
    side by side (a zero column plus one per node of each key root's subtree).
    """

    def __init__(self, trees: Sequence[LabelTree]) -> None:
        sizes = np.fromiter((len(tree.labels) for tree in trees), np.int64, len(trees))
        self.start = np.concatenate(([0], np.cumsum(sizes)))
        self.sizes = sizes
        self.tree = np.repeat(np.arange(len(trees)), sizes)
        self.leftmost = np.concatenate([tree.leftmost for tree in trees]) + self.start[self.tree]
        self.labels = [label for tree in trees for label in tree.labels]
        self.keyroots = _keyroots(self.leftmost)
        self.keyroot_sizes = self.keyroots - self.leftmost[self.keyroots] + 1
        self.widths = np.bincount(
            self.tree[self.keyroots], self.keyroot_sizes + 1, minlength=len(trees)
        ).astype(np.int64)

    def keyroot_levels(self) -> np.ndarray:
        """Per key root, the longest chain of key roots nested below it (0: none).

        A node lies in the subtrees of ``inside[node]`` key roots; the chain below key
        root k is the largest such count in its subtree minus k's own.
        """
        n = len(self.leftmost)
        first = self.leftmost[self.keyroots]
        inside = np.cumsum(
            np.bincount(first, minlength=n + 1) - np.bincount(self.keyroots + 1, minlength=n + 1)
        )
        deepest = np.maximum.reduceat(inside, np.column_stack((first, self.keyroots + 1)).ravel())[::2]
        return deepest - inside[self.keyroots]


class _ZhangShasha:
    """Zhang & Shasha (1989) ordered tree edit distance for a batch of tree pairs.

    Per pair, the forest-distance tables of all target key roots sit side by side in one
    row (one segment each: a zero column, then the key root's subtree in postorder) and
    the rows of one source key root are filled one at a time, reusing the rows of the
    previous source key root. Within a row, fd[x, y] = min(best[y], fd[x, y-1] +
    insert[y]) is a running minimum once the segment's prefix sums of insert costs are
    subtracted, so one ``minimum.accumulate`` fills every segment: each segment is
    shifted far below the previous one and starts at its zero column, whose value
    (remove every source node so far) comes out of the same formula because its pairing
    cost is a sentinel above any distance.

    Step t fills the t-th row of every pair at once. A row on its source key root's
    leftmost path reads tree distances written in the same row by target key roots
    nested in the segment, so that row takes one step per nesting level of the target
    key roots. All costs are integers: the arithmetic is exact.
    """

    def __init__(self, pairs: Sequence[tuple[LabelTree, LabelTree]]) -> None:
        self.source = _Forest([source for source, _ in pairs])
        self.target = _Forest([target for _, target in pairs])
        self._costs()
        self._cells()
        self._steps()

    def _costs(self) -> None:
        """Insert/remove costs per node; per pair, a block of tree distances (filled as
        the tables are) and a block of update costs, n x (m + 1) entries each: source
        node by target node, then a sentinel column (a zero column's pairing cost)."""
        source, target = self.source, self.target
        codes, uniques = pd.factorize(np.array(source.labels + target.labels, dtype=object))
        source_code, target_code = np.split(codes.astype(np.int64), [len(source.labels)])
        labels = uniques.tolist()
        is_leaf = np.fromiter((LEAF in label for label in labels), bool, len(labels))
        weight = np.fromiter(map(_insert_cost, labels), np.int64, len(labels))
        self.remove, self.insert = weight[source_code], weight[target_code]
        self.big = int(self.remove.sum() + self.insert.sum()) + 1  # above any distance here

        entries = (target.sizes + 1)[source.tree]  # per source node
        entry_start = np.cumsum(entries) - entries
        self.block_start = np.concatenate(([0], np.cumsum(source.sizes * (target.sizes + 1))))
        self.size = int(self.block_start[-1])
        sentinel = entry_start + entries - 1
        first_target = np.repeat(target.start[source.tree] - entry_start, entries)
        s = np.repeat(source_code, entries)
        # (a sentinel entry reads the next tree's first label, or a padding 0: unused)
        t = np.append(target_code, 0)[np.arange(self.size) + first_target]
        leaf_s, leaf_t = np.repeat(is_leaf[source_code], entries), is_leaf[t]
        update = np.where(
            leaf_s | leaf_t, 1 + np.where(leaf_s, np.repeat(self.remove, entries), weight[t]), s != t
        )
        # leaf into leaf: Levenshtein distances, one cdist call per pair (row-major order)
        values = [label.replace(LEAF, "") for label in labels]

        def leaf_values(forest: _Forest, code: np.ndarray) -> list[list[str]]:
            leaf = is_leaf[code]
            per_tree = np.cumsum(np.bincount(forest.tree[leaf], minlength=len(forest.sizes)))[:-1]
            return [[values[c] for c in part.tolist()] for part in np.split(code[leaf], per_tree)]

        blocks = [
            cdist(a, b, scorer=Levenshtein.distance, dtype=np.int64).ravel()
            for a, b in zip(leaf_values(source, source_code), leaf_values(target, target_code), strict=True)
            if a and b
        ]
        both = leaf_s & leaf_t
        both[sentinel] = False
        if blocks:
            update[both] = np.concatenate(blocks)
        self.table = np.zeros(2 * self.size, np.int64)
        self.table[sentinel] = self.big
        self.table[self.size :] = update

    def _cells(self) -> None:
        """The target columns: per pair, key-root segments by (nesting level, postorder)."""
        target = self.target
        level = target.keyroot_levels()
        order = np.lexsort((target.keyroots, level, target.tree[target.keyroots]))
        roots, level = target.keyroots[order], level[order]
        root_pair = target.tree[roots]
        widths = target.keyroot_sizes[order] + 1
        segment = np.repeat(np.arange(len(roots)), widths)
        segment_start = np.cumsum(widths) - widths
        local = np.arange(len(segment)) - segment_start[segment]
        zero = local == 0
        root_leftmost = target.leftmost[roots][segment]
        node = np.where(zero, roots[segment], root_leftmost + local - 1)
        pair = root_pair[segment]
        self.pair_cells = np.concatenate(([0], np.cumsum(target.widths)))
        self.on_path = ~zero & (target.leftmost[node] == root_leftmost)
        before = segment_start[segment] + np.where(zero, 0, target.leftmost[node] - root_leftmost)
        self.before = before - self.pair_cells[pair]  # column of the forest left of the node
        self.cost_column = np.where(zero, target.sizes[pair], node - target.start[pair])
        gain = np.cumsum(np.where(zero, 0, self.insert[node]))
        prefix = gain - gain[segment_start][segment]
        self.shifted_prefix = prefix + segment * self.big
        # forest distances: per pair, n + 1 rows of its columns; row 0 inserts only
        self.table_start = np.concatenate(([0], np.cumsum((self.source.sizes + 1) * target.widths)))
        self.fd = np.empty(self.table_start[-1], np.int64)
        self.fd[self.table_start[pair] + np.arange(len(segment)) - self.pair_cells[pair]] = prefix
        # the cells of pair p at nesting level v have level_key p * level_stride + v
        self.levels = np.zeros(len(target.sizes), np.int64)
        np.maximum.at(self.levels, root_pair, level + 1)
        self.level_stride = int(self.levels.max()) + 1
        self.level_key = pair * self.level_stride + level[segment]

    def _steps(self) -> None:
        """Per (step, pair): which row, columns and costs; sorted by step, then pair."""
        source = self.source
        roots = source.keyroots
        sizes = source.keyroot_sizes
        row_root = np.repeat(np.arange(len(roots)), sizes)
        x = np.arange(len(row_root)) - (np.cumsum(sizes) - sizes)[row_root] + 1
        root_leftmost = source.leftmost[roots][row_root]
        node = root_leftmost + x - 1
        left = source.leftmost[node] - root_leftmost
        pair = source.tree[node]
        path = left == 0
        substeps = np.where(path, self.levels[pair], 1)
        step_row = np.repeat(np.arange(len(node)), substeps)
        level = np.arange(len(step_row)) - (np.cumsum(substeps) - substeps)[step_row]
        node, x, left, pair, path = (v[step_row] for v in (node, x, left, pair, path))
        key = pair * self.level_stride + level
        lo = np.where(path, np.searchsorted(self.level_key, key), self.pair_cells[pair])
        hi = np.where(path, np.searchsorted(self.level_key, key, side="right"), self.pair_cells[pair + 1])
        t = np.arange(len(pair)) - np.searchsorted(pair, np.arange(len(source.sizes)))[pair]
        order = np.argsort(t, kind="stable")
        self.bounds = np.searchsorted(t[order], np.arange(t.max() + 2))
        node, x, left, pair, path, lo, hi = (v[order] for v in (node, x, left, pair, path, lo, hi))
        self.count = hi - lo
        self.step_cells = np.add.reduceat(self.count, self.bounds[:-1]).tolist()
        # A step numbers its cells 0, 1, ... across its pairs: cell i of the step is
        # target cell cell_from + i of its (step, pair), stored at fd[row_from + i]
        # (and fd[prev_from + i] one row up).
        within = np.cumsum(self.count) - self.count
        within -= np.repeat(within[self.bounds[:-1]], np.diff(self.bounds))
        width = self.target.widths[pair]
        row = self.table_start[pair] + x * width + lo - self.pair_cells[pair]
        self.cell_from, self.row_from, self.prev_from = lo - within, row - within, row - width - within
        self.left = self.table_start[pair] + left * width
        self.cost_row = self.block_start[pair] + (node - source.start[pair]) * (self.target.sizes[pair] + 1)
        self.remove_node = self.remove[node]
        self.path = path

    def distances(self) -> np.ndarray:
        """Fill the tables step by step; the distance of each pair's two roots."""
        fd, table, size = self.fd, self.table, self.size
        ramp = np.arange(self.pair_cells[-1])
        steps = zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist(), self.step_cells, strict=True)
        for a, b, cells in steps:
            count = self.count[a:b]
            at = ramp[:cells]
            cell = at + np.repeat(self.cell_from[a:b], count)
            prev = at + np.repeat(self.prev_from[a:b], count)
            diagonal = self.on_path.take(cell) & np.repeat(self.path[a:b], count)
            cost = np.repeat(self.cost_row[a:b], count) + self.cost_column.take(cell)
            via = np.where(diagonal, prev - 1, np.repeat(self.left[a:b], count) + self.before.take(cell))
            best = np.minimum(
                fd.take(prev) + np.repeat(self.remove_node[a:b], count),
                fd.take(via) + table.take(cost + diagonal * size),
            )
            shift = self.shifted_prefix.take(cell)
            row = np.minimum.accumulate(best - shift) + shift
            fd[at + np.repeat(self.row_from[a:b], count)] = row
            table[cost[diagonal]] = row[diagonal]
        n, m = self.source.sizes, self.target.sizes
        return table[self.block_start[:-1] + (n - 1) * (m + 1) + m - 1]
