"""The keys of the inputs (SPEC 6.1): which top-level keys each input has, the keys present
on one side only (often metadata: ``split``, ``source``), and the ground truth with its
metadata keys set aside, never scored. The step between reading the inputs and applying
the field rules, in :func:`~kieval_core.evaluate` and the app alike.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from .read.dataset import Dataset
from .read.formats.builder import meta_frame
from .result.results import OneSidedKey
from .rules import FieldRules


@dataclass(frozen=True)
class KeyCounts:
    """The keys of one input: its top-level (non-group) entity types with their counts, every
    entity type it has, and its record-level keys (:attr:`Dataset.record_keys`)."""

    top_level: Mapping[str, int]
    types: frozenset[str]
    record_level: frozenset[str] = frozenset()

    @classmethod
    def of(cls, dataset: Dataset) -> KeyCounts:
        e = dataset.entities
        counts = e.loc[e["group_type"] == "", "entity_type"].value_counts()
        top = {str(k): int(v) for k, v in counts.items()}
        return cls(top, frozenset(e["entity_type"]), dataset.record_keys)

    @classmethod
    def merge(cls, parts: Sequence[KeyCounts]) -> KeyCounts:
        """The keys of the union of disjoint sets of documents."""
        top: dict[str, int] = {}
        for part in parts:
            for key, n in part.top_level.items():
                top[key] = top.get(key, 0) + n
        return cls(top, frozenset().union(*(part.types for part in parts)),
                   frozenset().union(*(part.record_level for part in parts)))


def one_sided_keys(gt: KeyCounts, predictions: Mapping[str, KeyCounts],
                   score_keys: Collection[str] | None = (), rules: FieldRules | None = None
                   ) -> list[OneSidedKey]:
    """Top-level (non-group) keys present on one side only: such a key is often metadata
    (``split``, ``source``) and is never scored silently. A record-level ground-truth key
    (:attr:`KeyCounts.record_level`) that no prediction file has is set aside (not scored)
    unless it is in ``score_keys``; None scores every key (an engine that cannot set keys
    aside). A key ``rules`` ignore is left out (it is not scored, whichever side has it),
    unless it is set aside: metadata is set aside before any rule."""
    if not predictions:
        return []
    predicted = frozenset().union(*(p.types for p in predictions.values()))
    out = [OneSidedKey(key, "ground truth", n, key in gt.record_level,
                       score_keys is not None and key not in score_keys and key in gt.record_level)
           for key, n in sorted(gt.top_level.items()) if key not in predicted]
    pred_keys: dict[str, int] = {}
    for p in predictions.values():
        for key, n in p.top_level.items():
            pred_keys[key] = pred_keys.get(key, 0) + n
    record_level = frozenset().union(*(p.record_level for p in predictions.values()))
    out += [OneSidedKey(key, "predictions", n, key in record_level) for key, n in sorted(pred_keys.items())
            if key not in gt.types]
    return [k for k in out if k.set_aside or rules is None or not rules.ignores(k.key)]


def set_aside(gt: Dataset, keys: Sequence[str]) -> Dataset:
    """The ground truth with its top-level entities of ``keys`` kept as metadata, never
    scored, as :class:`~kieval_core.read.formats.LoadOptions` ``meta`` reads them (the
    documents' structures, which the peer metrics score, lose those keys too)."""
    if not keys:
        return gt
    e = gt.entities
    chosen = ((e["group_type"] == "") & e["entity_type"].isin(list(keys))).to_numpy()
    rows: dict[str, dict[str, str]] = {d: {} for d in gt.doc_ids}
    if gt.meta is not None:
        for doc_id, row in zip(gt.meta.index, gt.meta.to_dict("records"), strict=True):
            rows[doc_id].update((k, v) for k, v in row.items() if isinstance(v, str))
    for doc_id, key, value in e.loc[chosen, ["doc_id", "entity_type", "value"]].itertuples(index=False):
        rows[doc_id].setdefault(key, value)
    meta = meta_frame({d: row for d, row in rows.items() if row})
    structures = gt.structures
    if structures is not None:
        structures = {d: {k: v for k, v in s.items() if k not in keys} if isinstance(s, dict) else s
                      for d, s in structures.items()}
    return replace(gt, entities=e[~chosen].reset_index(drop=True), meta=meta, structures=structures)
