"""Donut's tree-edit-distance accuracy (nTED) and field-level F1 (Kim et al., ECCV 2022).

Both follow ``JSONParseEvaluator`` of ``donut-python`` 1.0.9 (``cal_acc`` and ``cal_f1``):
the same normalisation, the same trees and the same edit costs. The Zhang-Shasha tree
edit distance is implemented here with NumPy (one vectorised pass per forest row)
instead of the pure-Python ``zss`` package Donut calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

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
        highest = {int(lm): node for node, lm in enumerate(self.leftmost)}
        return np.asarray(sorted(highest.values()), dtype=np.int64)


class NTEDCorpus(NamedTuple):
    """nTED accuracy of a corpus: one score per document and their mean."""

    per_document: tuple[float, ...]
    mean: float


class DonutFieldF1(Detection):
    """Micro-averaged field counts of Donut's ``cal_f1``: its F1, TP / (TP + (FP + FN) / 2),
    is :class:`~kieval_core.peer.oi.Detection`'s 2 TP / (2 TP + FP + FN)."""


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

    def nested(data: dict | list, label: str) -> tuple[str, list]:
        if isinstance(data, dict):
            return label, [nested(value, key) for key, value in data.items()]
        if all(isinstance(item, dict) for item in data):
            return label, [nested(item, SUBTREE) for item in data]
        return label, [(f"{LEAF}{item}", []) for item in data]

    return LabelTree.from_nested(nested(normalized, ROOT))


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
    remove, _ = _node_costs(source.labels)
    insert, _ = _node_costs(target.labels)
    return _zhang_shasha(source, target, remove, insert, _update_costs(source, target))


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
    gt_tree = donut_tree(donut_normalize(gt))
    pred_tree = donut_tree(donut_normalize(pred))
    insert, _ = _node_costs(gt_tree.labels)
    # TED(empty tree, gt) maps the empty root onto gt's root at no cost and inserts
    # every other node: relabelling the root anywhere else never costs less.
    empty_distance = float(insert[:-1].sum())
    if empty_distance == 0:
        return 1.0 if len(pred_tree.labels) == 1 else 0.0
    return max(0.0, 1 - tree_edit_distance(pred_tree, gt_tree) / empty_distance)


def nted_corpus(pairs: Iterable[tuple[dict, dict]]) -> NTEDCorpus:
    """nTED accuracy of every ``(gt, pred)`` document and their unweighted mean.

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
    scores = tuple(nted(gt, pred) for gt, pred in pairs)
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


def _node_costs(labels: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Insert/remove cost of every node and a leaf mask."""
    is_leaf = np.fromiter((LEAF in label for label in labels), bool, len(labels))
    value_length = np.fromiter(
        (len(label.replace(LEAF, "")) for label in labels), np.int64, len(labels)
    )
    return np.where(is_leaf, value_length, 1).astype(float), is_leaf


def _update_costs(source: LabelTree, target: LabelTree) -> np.ndarray:
    leaf_length_s, leaf_s = _node_costs(source.labels)
    leaf_length_t, leaf_t = _node_costs(target.labels)
    codes: dict[str, int] = {}
    code_s = np.fromiter((codes.setdefault(x, len(codes)) for x in source.labels), np.int64)
    code_t = np.fromiter((codes.setdefault(x, len(codes)) for x in target.labels), np.int64)
    update = (code_s[:, None] != code_t[None, :]).astype(float)  # non-leaf vs non-leaf
    update = np.where(leaf_s[:, None] & ~leaf_t[None, :], 1 + leaf_length_s[:, None], update)
    update = np.where(~leaf_s[:, None] & leaf_t[None, :], 1 + leaf_length_t[None, :], update)
    rows, cols = np.flatnonzero(leaf_s), np.flatnonzero(leaf_t)
    if rows.size and cols.size:
        update[np.ix_(rows, cols)] = cdist(
            [source.labels[i].replace(LEAF, "") for i in rows],
            [target.labels[j].replace(LEAF, "") for j in cols],
            scorer=Levenshtein.distance,
        )
    return update


def _zhang_shasha(
    source: LabelTree,
    target: LabelTree,
    remove: np.ndarray,
    insert: np.ndarray,
    update: np.ndarray,
) -> float:
    """Zhang & Shasha (1989) ordered tree edit distance, vectorised over the target.

    For a source key root, the forest-distance tables of *all* target key roots are laid
    side by side (one segment each) and filled one source row at a time. Within a row,
    fd[x, y] = min(best[y], fd[x, y-1] + insert[y]) is a running minimum once the
    segment's prefix sums of insert costs are subtracted, so a single
    ``minimum.accumulate`` fills every segment (segments are kept apart by shifting each
    one far below the previous). Rows on the source key root's leftmost path read tree
    distances written in the same row by nested target key roots, so those rows are
    filled level by level. Costs are integers, which keeps every float operation exact.
    """
    layout = _SegmentLayout(target, insert)
    lm_s = source.leftmost
    treedist = np.zeros((len(lm_s), len(target.leftmost)))
    shift = layout.segment * (4.0 * (remove.sum() + insert.sum() + update.max() + 1))
    for i in source.keyroots:
        rows = np.arange(lm_s[i], i + 1)
        fd = np.empty((rows.size + 1, layout.width))
        fd[:, layout.zero_columns] = np.concatenate(([0.0], np.cumsum(remove[rows])))[:, None]
        fd[0, layout.cells] = layout.prefix
        for x, node in enumerate(rows, start=1):
            left = lm_s[node] - lm_s[i]
            for cells in layout.levels if left == 0 else (slice(None),):
                cols = layout.cells[cells]
                targets = layout.node[cells]
                via_pair = fd[left, layout.before[cells]] + treedist[node, targets]
                if left == 0:
                    on_path = layout.on_path[cells]
                    diagonal = fd[x - 1, cols[on_path] - 1]
                    via_pair[on_path] = diagonal + update[node, targets[on_path]]
                best = np.minimum(fd[x - 1, cols] + remove[node], via_pair)
                running = np.minimum.accumulate(best - layout.prefix[cells] - shift[cells])
                fd[x, cols] = np.minimum(running + shift[cells], fd[x, 0]) + layout.prefix[cells]
                if left == 0:
                    treedist[node, targets[on_path]] = fd[x, cols[on_path]]
    return float(treedist[-1, -1])


class _SegmentLayout:
    """Side-by-side forest-distance columns of every target key root.

    Segment k holds key root k's forest: a zero column followed by one cell per node of
    its subtree (postorder). Per cell: its fd column, target node, segment, whether the
    node is on the key root's leftmost path, the fd column of the forest left of the
    node's subtree and the segment's running sum of insert costs. ``levels`` groups the
    cells so that each segment comes after every segment nested inside it.
    """

    def __init__(self, target: LabelTree, insert: np.ndarray) -> None:
        lm = target.leftmost
        keyroots = target.keyroots
        sizes = keyroots - lm[keyroots] + 1
        starts = np.concatenate(([0], np.cumsum(sizes + 1)[:-1]))
        self.width = int((sizes + 1).sum())
        self.zero_columns = starts
        self.segment = np.repeat(np.arange(keyroots.size), sizes)
        local = np.arange(self.segment.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        self.node = lm[keyroots][self.segment] + local
        self.cells = starts[self.segment] + 1 + local
        root_leftmost = lm[keyroots][self.segment]
        self.on_path = lm[self.node] == root_leftmost
        self.before = starts[self.segment] + lm[self.node] - root_leftmost
        costs = insert[self.node]
        running = np.cumsum(costs)
        first = np.cumsum(sizes) - sizes
        self.prefix = running - np.repeat(running[first] - costs[first], sizes)
        level = np.zeros(keyroots.size, np.int64)
        for k, root in enumerate(keyroots):
            nested = (keyroots >= lm[root]) & (keyroots < root)
            level[k] = level[nested].max() + 1 if nested.any() else 0
        cell_level = level[self.segment]
        self.levels = [np.flatnonzero(cell_level == v) for v in range(level.max() + 1)]
