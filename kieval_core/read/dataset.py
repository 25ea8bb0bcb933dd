"""The data model (SPEC 1): documents of typed entities, grouped or not, with confidences.

A loaded file is a :class:`Dataset`. Its entities live in one long, vectorised table,
not in per-entity objects, so a million entities stay cheap:

==============  ========  ===================================================
column          dtype     meaning
==============  ========  ===================================================
``doc_id``      str       document identifier (Unicode NFC)
``group_type``  str       ``""`` for the document's non-group pseudo-group
``group``       int64     group index within (doc, group_type); -1 = non-group
``entity_type`` str       dotted key path, e.g. ``menu.nm`` (Unicode NFC)
``value``       str       raw value as read (numbers keep their JSON text)
``confidence``  float64   in [0, 1]; NaN when the file gave none
==============  ========  ===================================================

Row order is the reading order of the file; it only matters for display. Metadata
(``--meta``: split, vendor, document type) is a separate table, one row per document,
never scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

ENTITY_COLUMNS = ("doc_id", "group_type", "group", "entity_type", "value", "confidence")
NON_GROUP = -1


@dataclass(frozen=True)
class Dataset:
    """Ground truth or one model's predictions: ``doc_id -> document``.

    Parameters
    ----------
    name : str
        Model name (file stem by default) or ``"ground truth"``.
    source : str
        Where it was read from, used in messages.
    entities : pandas.DataFrame
        The long entity table described in the module docstring.
    doc_ids : tuple of str
        Every document of the input, in input order, including documents without entities.
    structures : mapping or None
        The nested structure per document when the input was nested JSON (peer metrics
        such as ANLS* and nTED score it as uploaded).
    warnings : tuple of str
        What the loader noticed that may change a figure (shown as warnings).
    meta : pandas.DataFrame or None
        Declared metadata (``LoadOptions.meta``): one row per document that has any,
        indexed by ``doc_id``, one text column per key.
    format : str
        The format the file was read as (after auto-detection).
    notes : tuple of str
        How the file was read (structure key found, keys left out of the scores), for the
        load report.
    record_keys : frozenset of str
        Record-level keys holding a scalar in some record that is its own structure (a JSONL
        record without a structure key: ``split`` beside ``doc_id``); a ground-truth key of
        these that no prediction file has is set aside as metadata (SPEC 6.1).
    """

    name: str
    source: str
    entities: pd.DataFrame
    doc_ids: tuple[str, ...]
    structures: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] = field(default=())
    meta: pd.DataFrame | None = None
    format: str = ""
    notes: tuple[str, ...] = field(default=())
    record_keys: frozenset[str] = field(default=frozenset())

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_groups(self) -> int:
        """Groups (non-group pseudo-groups excluded)."""
        grouped = self.entities.loc[self.entities["group"] >= 0, ["doc_id", "group_type", "group"]]
        return int(len(grouped.drop_duplicates()))

    @property
    def has_confidence(self) -> bool:
        return bool(self.entities["confidence"].notna().any())


@dataclass(frozen=True)
class DatasetSummary(Dataset):
    """A dataset whose entities stay where they were scored (the workers of a distributed
    run): every document and its metadata, how it was read, and the counts of its
    entities and groups. ``entities`` is empty."""

    entity_count: int = 0
    group_count: int = 0

    @property
    def n_entities(self) -> int:
        return self.entity_count

    @property
    def n_groups(self) -> int:
        return self.group_count
