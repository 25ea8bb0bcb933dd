"""Assembling a :class:`~kieval_core.read.dataset.Dataset` from what a reader found.

Readers append entities to the builder's column lists (:attr:`DatasetBuilder.columns`)
and then close the document with :meth:`DatasetBuilder.commit`; readers that make rows
hand them over with :meth:`DatasetBuilder.add`, and a long table comes whole
(:meth:`DatasetBuilder.add_table`). Every few hundred thousand entities the lists are
packed into compact arrays (codes of group and entity types, Arrow text for values), so a
large upload never holds millions of small Python objects at once.

The builder refuses duplicate document ids, keeps the declared metadata apart from the
entities, and puts identifiers into Unicode NFC, so the same id or entity type written in
composed or decomposed form is the same identifier. The nested structures of the
documents (for ANLS* and nTED) are kept only when asked (``keep_structures``).
"""

from __future__ import annotations

import copy
import dataclasses
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ...exceptions import KievalInputError
from ...limits import LimitExceeded
from ..dataset import ENTITY_COLUMNS, NON_GROUP, Dataset
from ..locations import LOCATION_COLUMNS, Location, LocationProblems

#: The entity column naming the GT leaf of alternative values (SPEC 2e): rows with the same
#: id >= 0 are alternatives of one leaf, scored as one entity; -1 is a plain value. Present
#: only in inputs that have alternatives.
ALTERNATIVE_SET = "alternative_set"
#: One entity as a reader yields it: (group_type, group_key, entity_type, value, confidence).
Row = tuple[str, Any, str, str, float]
#: Entities gathered in Python lists before they are packed into arrays.
CHUNK_ROWS = 1 << 18


def nfc(text: str) -> str:
    """Unicode NFC (composed) form of an identifier.

    >>> nfc("cafe\\u0301") == "caf\\u00e9"
    True
    """
    return unicodedata.normalize("NFC", text)


def file_stem(name: str) -> str:
    """``PurePath(name).stem`` (the document id of a per-document file), without building a
    path object for a plain file name: 20,000 of them cost 0.1 s.

    >>> file_stem("receipt.01.csv"), file_stem(".csv"), file_stem("dir/a.csv")
    ('receipt.01', '.csv', 'a')
    """
    if "/" in name or name in ("", "."):
        return PurePath(name).stem
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def nfc_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the NFC forms of a text column's values, and those forms: each distinct
    value is normalised once, and values of one NFC form share its code (a categorical
    column is read through its codes)."""
    codes, uniques = pd.factorize(values, sort=False)
    normalised, names = pd.factorize(np.array([nfc(str(u)) for u in uniques], dtype=object), sort=False)
    return normalised[codes], np.asarray(names, dtype=object)


def nfc_column(values: pd.Series) -> pd.Series:
    """NFC of every value of a text column, normalising each distinct value once."""
    codes, names = nfc_codes(values)
    if not len(names):
        return pd.Series(values, dtype=object)
    return pd.Series(names[codes], index=values.index, dtype=object)


class Columns:
    """The entities of the open chunk, one list per column (readers append to them)."""

    def __init__(self) -> None:
        self.group_type: list[str] = []
        self.group_key: list[Any] = []
        self.entity_type: list[str] = []
        self.value: list[str] = []
        self.confidence: list[float] = []
        #: Locations by row of the chunk; most inputs have none, so they cost nothing.
        self.locations: dict[int, Location] = {}
        #: Rows that are alternatives of one GT leaf (SPEC 2e): row -> the leaf's first row.
        self.alternatives: dict[int, int] = {}

    def lists(self) -> tuple[list, ...]:
        return self.group_type, self.group_key, self.entity_type, self.value, self.confidence

    def __len__(self) -> int:
        return len(self.value)

    def truncate(self, length: int) -> None:
        """Drop the entities appended after ``length`` (a reader undoing a document)."""
        for column in self.lists():
            del column[length:]
        for row in [r for r in self.locations if r >= length]:
            del self.locations[row]
        for row in [r for r in self.alternatives if r >= length]:
            del self.alternatives[row]

    def alternative_array(self, offset: int) -> np.ndarray | None:
        """The chunk's :data:`ALTERNATIVE_SET` column (leaf ids made unique by ``offset``, the
        rows before the chunk; -1 for a plain value), or None without alternatives."""
        if not self.alternatives:
            return None
        out = np.full(len(self), -1, np.int64)
        rows = np.fromiter(self.alternatives, np.int64, len(self.alternatives))
        out[rows] = np.fromiter(self.alternatives.values(), np.int64, len(self.alternatives)) + offset
        return out

    def location_array(self) -> np.ndarray | None:
        """The chunk's locations as an ``(n, 5)`` float array (NaN where none), or None."""
        if not self.locations:
            return None
        out = np.full((len(self), len(LOCATION_COLUMNS)), np.nan)
        rows = np.fromiter(self.locations, np.int64, len(self.locations))
        out[rows] = np.asarray(list(self.locations.values()), np.float64)
        return out


@dataclass(frozen=True)
class _Chunk:
    """Packed entities: codes into per-chunk uniques for the identifiers."""

    doc: np.ndarray
    group_type: tuple[np.ndarray, np.ndarray]
    group_key: tuple[np.ndarray, np.ndarray]
    entity_type: tuple[np.ndarray, np.ndarray]
    value: pa.Array | np.ndarray
    confidence: np.ndarray
    location: np.ndarray | None
    alternative: np.ndarray | None = None


def _codes(values: list) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=False, use_na_sentinel=False)
    return codes.astype(np.int32), np.asarray(uniques, dtype=object)


def _text_array(values: list[str]) -> pa.Array | np.ndarray:
    """Values as compact Arrow text; as objects when a value cannot be UTF-8 (a lone
    surrogate from a JSON escape)."""
    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:
        return np.asarray(values, dtype=object)


def _merge(parts: list[tuple[np.ndarray, np.ndarray]], as_text: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-chunk (codes, uniques) as global codes and uniques; ``as_text`` compares the
    uniques as ``str`` (group keys ``1`` and ``"1"`` are one key)."""
    uniques = np.concatenate([u for _, u in parts]) if parts else np.empty(0, object)
    keys = np.asarray([str(u) for u in uniques], dtype=object) if as_text else uniques
    merged, merged_uniques = pd.factorize(keys, sort=False)
    offsets = np.cumsum([0, *(len(u) for _, u in parts)])
    codes = [merged[c.astype(np.int64) + o] for (c, _), o in zip(parts, offsets, strict=False)]
    codes_all = np.concatenate(codes) if codes else np.empty(0, np.int64)
    return codes_all.astype(np.int64), np.asarray(merged_uniques, dtype=object)


class DatasetBuilder:
    """Collects the documents of one input and builds the dataset."""

    def __init__(self, source: str, name: str, fmt: str, keep_structures: bool = False,
                 max_rows: int | None = None) -> None:
        self.source = source
        self.max_rows = max_rows  # the rows limit (kieval_core.limits), checked chunk by chunk
        self._packed_rows = 0
        self.name = name
        self.format = fmt
        self.keep_structures = keep_structures
        self.where: dict[str, str] = {}
        self.columns = Columns()
        self.structures: dict[str, Any] = {}
        self.meta: dict[str, dict[str, str]] = {}
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.record_keys: set[str] = set()
        self.table: pd.DataFrame | None = None
        self.location_problems = LocationProblems()
        self._counts: list[int] = []  # entities of each committed document of the open chunk
        self._chunks: list[_Chunk] = []

    def document(self, doc_id: str, where: str) -> str:
        """Register a document id (NFC); a second document with the same id is refused."""
        doc_id = nfc(doc_id)
        if doc_id in self.where:
            msg = f"document {doc_id!r} appears twice ({self.where[doc_id]} and {where})"
            raise KievalInputError(self.source, where, msg)
        self.where[doc_id] = where
        return doc_id

    def commit(self, doc_id: str, where: str, start: int, structure: Any = None,
               meta: Mapping[str, str] | None = None) -> None:
        """Close a document: the entities appended since ``len(columns) == start`` are its own."""
        doc_id = self.document(doc_id, where)
        self._counts.append(len(self.columns) - start)
        if structure is not None and self.keep_structures:
            self.structures[doc_id] = structure
        if meta:
            self.meta[doc_id] = dict(meta)
        if len(self.columns) >= CHUNK_ROWS:
            self._pack()

    def add(self, doc_id: str, where: str, rows: Iterable[Row], structure: Any = None,
            meta: Mapping[str, str] | None = None,
            locations: Mapping[int, Location] | None = None) -> None:
        """A whole document from rows ``(group_type, group_key, entity_type, value, confidence)``;
        ``locations`` by row of ``rows``."""
        start = len(self.columns)
        rows = list(rows)
        if rows:
            for column, values in zip(self.columns.lists(), zip(*rows, strict=True), strict=True):
                column.extend(values)
        for row, location in (locations or {}).items():
            self.columns.locations[start + row] = location
        try:
            self.commit(doc_id, where, start, structure, meta)
        except KievalInputError:
            self.columns.truncate(start)
            raise

    def add_table(self, frame: pd.DataFrame, doc_ids: Iterable[str], where: Mapping[str, str]) -> None:
        """A whole long table: columns ``doc_id, group_type, group_key, entity_type, value,
        confidence``; ``doc_ids`` in input order, ``where`` the first line of each."""
        for doc_id in doc_ids:
            self.document(doc_id, where[doc_id])
        self._check_rows(len(frame))
        self.table = frame

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _check_rows(self, rows: int) -> None:
        if self.max_rows is not None and rows > self.max_rows:
            raise LimitExceeded(self.source, "rows", f"more than {self.max_rows:,} entities", self.max_rows)

    def _pack(self) -> None:
        """Move the open chunk's lists into compact arrays (refusing an input beyond the
        rows limit as soon as a chunk passes it)."""
        first = len(self.where) - len(self._counts)
        columns = self.columns
        offset = self._packed_rows
        self._packed_rows += len(columns)
        self._check_rows(self._packed_rows)
        self._chunks.append(_Chunk(
            doc=np.repeat(np.arange(first, first + len(self._counts), dtype=np.int64), self._counts),
            group_type=_codes(columns.group_type),
            group_key=_codes(columns.group_key),
            entity_type=_codes(columns.entity_type),
            value=_text_array(columns.value),
            confidence=np.asarray(columns.confidence, np.float64),
            location=columns.location_array(),
            alternative=columns.alternative_array(offset),
        ))
        self.columns = Columns()
        self._counts = []

    def pack(self) -> None:
        """Move the entities of the documents read so far into compact arrays (a reader
        does it every :data:`CHUNK_ROWS` rows; a builder kept open between reads does it
        at the end of each)."""
        if self._counts:
            self._pack()

    def extend(self, other: DatasetBuilder) -> None:
        """Add the documents ``other`` read after this builder's: the builder one reader would
        have filled reading both in turn (a stream read block by block, as
        :class:`~kieval_core.Accumulator` reads it). Entities, documents, structures,
        metadata, warnings, notes and dropped boxes; ``other`` keeps its documents."""
        if self.table is not None or other.table is not None:
            raise TypeError("extend() joins entities read document by document, not long tables")
        self.pack()
        first, rows = len(self.where), self._packed_rows
        for doc_id, where in other.where.items():
            self.document(doc_id, where)
        other.pack()
        for chunk in other._chunks:
            shifted = None if chunk.alternative is None else np.where(chunk.alternative >= 0,
                                                                      chunk.alternative + rows, -1)
            self._chunks.append(dataclasses.replace(chunk, doc=chunk.doc + first, alternative=shifted))
            self._packed_rows += len(chunk.doc)
        self._check_rows(self._packed_rows)
        self.structures.update(other.structures)
        self.meta.update(other.meta)
        self.warnings.extend(other.warnings)
        for note in other.notes:
            self.note(note)
        self.record_keys |= other.record_keys
        self.location_problems.count += other.location_problems.count
        self.location_problems.first = self.location_problems.first or other.location_problems.first

    def renamed(self, names: Mapping[str, str]) -> DatasetBuilder:
        """A copy whose documents ``{old: new}`` have new ids, in its tables and in what
        names them (``document 'old'``, the JSON reader's words); the entities are shared."""
        def rename(doc_id: str) -> str:
            return names.get(doc_id, doc_id)

        def reworded(text: str) -> str:
            for old in [d for d in names if f"document {d!r}" in text]:
                text = text.replace(f"document {old!r}", f"document {names[old]!r}")
            return text

        out = copy.copy(self)
        out.where = {rename(d): f"document {rename(d)!r}" if w == f"document {d!r}" else w
                     for d, w in self.where.items()}
        out.structures = {rename(d): s for d, s in self.structures.items()}
        out.meta = {rename(d): m for d, m in self.meta.items()}
        out.warnings = [reworded(w) for w in self.warnings]
        out.location_problems = copy.copy(self.location_problems)
        if self.location_problems.first is not None:
            doc_id, entity_type, problem = self.location_problems.first
            out.location_problems.first = (rename(doc_id), entity_type, problem)
        return out

    def build(self) -> Dataset:
        table = self._entity_table() if self.table is None else self._long_table()
        located = [c for c in (*LOCATION_COLUMNS, ALTERNATIVE_SET) if c in table.columns]
        warning = self.location_problems.warning(self.source)
        return Dataset(
            name=self.name,
            source=self.source,
            entities=table[[*ENTITY_COLUMNS, *located]],
            doc_ids=tuple(self.where),
            structures=self.structures or None,
            warnings=(*self.warnings, *([warning] if warning else [])),
            meta=meta_frame(self.meta),
            format=self.format,
            notes=tuple(self.notes),
            record_keys=frozenset(self.record_keys),
        )

    def _long_table(self) -> pd.DataFrame:
        table = self.table.reset_index(drop=True)
        coded = {column: nfc_codes(table[column]) for column in ("doc_id", "group_type", "entity_type")}
        for column, (codes, names) in coded.items():
            table[column] = pd.Series(names[codes], dtype=object)
        (doc, _), (gtype, gtypes) = coded["doc_id"], coded["group_type"]
        key, _ = pd.factorize(table["group_key"])
        table["group"] = _group_index(doc, gtype, key, (gtypes != "")[gtype])
        return table

    def _entity_table(self) -> pd.DataFrame:
        return self._read_entities(with_keys=False)

    def raw_entities(self) -> pd.DataFrame:
        """The entities read so far with their group keys as text and no group index
        (a sharded input indexes groups once every shard is read); consumes them."""
        if self.table is not None:
            return self.table.reset_index(drop=True)
        return self._read_entities(with_keys=True)

    def _read_entities(self, with_keys: bool) -> pd.DataFrame:
        self._pack()
        chunks, self._chunks = self._chunks, []
        doc = np.concatenate([c.doc for c in chunks])
        gtype, gtypes = _merge([c.group_type for c in chunks], as_text=False)
        key, keys = _merge([c.group_key for c in chunks], as_text=True)
        etype, etypes = _merge([c.entity_type for c in chunks], as_text=False)
        gtypes = np.asarray([nfc(t) for t in gtypes], dtype=object)
        etypes = np.asarray([nfc(t) for t in etypes], dtype=object)
        if with_keys:
            group = {"group_key": pd.Series(keys[key], dtype=object)}
        else:
            grouped = gtypes[gtype] != "" if len(gtypes) else np.zeros(0, bool)
            group = {"group": _group_index(doc, gtype, key, grouped)}
        located = [c.location for c in chunks]
        if any(a is not None for a in located):
            stacked = np.concatenate([np.full((len(c.doc), len(LOCATION_COLUMNS)), np.nan) if a is None else a
                                      for c, a in zip(chunks, located, strict=True)])
            locations = dict(zip(LOCATION_COLUMNS, stacked.T, strict=True))
        else:
            locations = {}
        if any(c.alternative is not None for c in chunks):
            locations[ALTERNATIVE_SET] = np.concatenate([np.full(len(c.doc), -1, np.int64)
                                                         if c.alternative is None else c.alternative
                                                         for c in chunks])
        return pd.DataFrame({
            "doc_id": pd.Series(np.asarray(list(self.where), dtype=object)[doc], dtype=object),
            "group_type": pd.Series(gtypes[gtype], dtype=object),
            **group,
            "entity_type": pd.Series(etypes[etype], dtype=object),
            "value": _value_column([c.value for c in chunks]),
            "confidence": np.concatenate([c.confidence for c in chunks]),
            **locations,
        })


def _value_column(parts: list[pa.Array | np.ndarray]) -> pd.Series:
    if all(isinstance(p, pa.Array) for p in parts):
        return pd.Series(pa.chunked_array(parts, pa.string()))
    return pd.Series(np.concatenate([np.asarray(p.to_pylist() if isinstance(p, pa.Array) else p, dtype=object)
                                     for p in parts]), dtype=object)


def meta_frame(meta: Mapping[str, Mapping[str, str]]) -> pd.DataFrame | None:
    """Declared metadata as a table: one row per document that has any (in the given
    order), one text column per key (in order of first appearance); None without any."""
    if not meta:
        return None
    frame = pd.DataFrame.from_dict(meta, orient="index").astype(object)
    frame.index = pd.Index(list(frame.index), name="doc_id", dtype=object)
    return frame


def _group_index(doc: np.ndarray, gtype: np.ndarray, key: np.ndarray, grouped: np.ndarray) -> np.ndarray:
    """0-based group index per (document, group type) in order of first appearance, from
    codes of documents, group types and group keys; -1 where not ``grouped`` (non-group).

    >>> _group_index(np.array([0, 0, 0, 1]), np.array([0, 0, 0, 0]), np.array([7, 3, 7, 3]),
    ...              np.array([True, True, True, False])).tolist()
    [0, 1, 0, -1]
    """
    block = doc.astype(np.int64) * (int(gtype.max(initial=0)) + 1) + gtype
    n_keys = int(key.max(initial=0)) + 1
    group, firsts = pd.factorize(block.astype(np.int64) * n_keys + key)
    first_block = np.asarray(firsts, np.int64) // n_keys
    order = np.argsort(first_block, kind="stable")
    sorted_blocks = first_block[order]
    start = np.ones(len(order), bool)
    start[1:] = sorted_blocks[1:] != sorted_blocks[:-1]
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order)) - np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    index = rank[group] if len(group) else np.zeros(0, np.int64)
    return np.where(grouped, index, NON_GROUP)
