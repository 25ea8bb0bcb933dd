"""Reading every input format of SPEC 6 into a :class:`~kieval_core.read.dataset.Dataset`.

:func:`load` reads a path (file or directory); :func:`load_bytes` reads an upload (one
file, or a ``.zip`` standing for a directory). The format is detected from the name and
the content, or named explicitly. Every format is one
:class:`~kieval_core.read.readers.Reader` of :data:`~kieval_core.read.readers.READERS`, which
names the functions of this package that read it; detection asks its sniffers about a
:class:`Sample`.
"""

from __future__ import annotations

import codecs
import functools
import io
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np
import orjson
import pandas as pd

from ...exceptions import KievalInputError, KievalOptionError
from ...gcpause import cycle_collector_paused
from ...limits import BYTES_PER_TEXT_BYTE, MIB, RATIO_FLOOR, LimitExceeded, Limits, load_cost
from ..dataset import Dataset
from ..readers import DELIMITERS, FORMATS, IOB2_SUFFIXES, READERS, TABLE_SUFFIXES
from .builder import DatasetBuilder
from .cord import cord_entities, valid_lines_of
from .forms import read_form_file, sniff_form
from .iob2 import parse_iob2_document, parse_iob2_documents
from .jsontext import (
    NeedsSourceText,
    decode_text,
    fast_json,
    first_record,
    parse_json,
    read_records,
    recover_json,
)
from .kieval_csv import read_kieval_csv
from .lists import list_rows
from .nested import NestedReader, doc_id_of, reference_numbers
from .table import check_footer, parquet_footer, read_table

#: The columns that make JSON lines a long table.
TABLE_KEYS = frozenset({"doc_id", "entity", "value"})
#: Most files a directory or zip may hold.
MAX_FILES = 200_000
#: Bytes inflated at a time when a zip member is read (the cap is checked between chunks).
_ZIP_CHUNK = MIB
#: Files in a directory or zip that are never documents.
IGNORED_FILES = (".DS_Store", "README", "README.md", "LICENSE")
_NAN = float("nan")


@dataclass(frozen=True)
class LoadOptions:
    """How to read a file; the same object is shown in the report.

    Parameters
    ----------
    format : str
        One of :data:`FORMATS`.
    key : str or None
        Structure key of records (``fields``, ``gt_parse``, ...), or the wrapper key of
        per-document files; auto when None.
    aliases : tuple of (str, str)
        Key renames applied while reading nested JSON (``subtotal`` -> ``sub_total``).
    meta : tuple of str
        Record-level metadata keys (``split``, ``vendor``): kept per document, never
        scored (JSON keys, or columns of a long table).
    limits : Limits
        What an input may cost (:mod:`kieval_core.limits`): larger inputs are refused with
        a message before they are read. Default: the command line's defaults.
    related_fields, list_separator
        Format ``lists`` (SPEC 6.4): fields holding ``list_separator``-separated lists
        whose i-th values form row i (group i of type ``row``).
    """

    format: str = "auto"
    key: str | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    meta: tuple[str, ...] = ()
    limits: Limits = Limits.defaults("cli")
    related_fields: tuple[str, ...] = ()
    list_separator: str = "|"

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            msg = f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}"
            raise KievalOptionError(msg)
        if self.format == "lists" and not self.related_fields:
            msg = "format lists needs the related fields (--related-fields a,b,c)"
            raise KievalOptionError(msg)

    def check_size(self, size: int, source: str) -> None:
        """Refuse a file (or directory) above the file size limit before reading it."""
        self.limits.check("file_mb", size, source, "on disk")


# --- the readers ---------------------------------------------------------------------------

FileReader = Callable[[bytes, str, LoadOptions, DatasetBuilder], None]
FilesReader = Callable[[Mapping[str, bytes], str, LoadOptions, DatasetBuilder], None]


class Sample:
    """One file as the sniffers of :data:`READERS` see it: its suffix, the start of its
    content, and (computed once, when a sniffer asks) its first JSON record."""

    def __init__(self, data: bytes, suffix: str, source: str) -> None:
        self.data, self.suffix, self.source = data, suffix, source
        self.head = data.lstrip()[:1]

    @property
    def by_suffix(self) -> bool:
        """Whether a reader claims the file by its suffix alone (tables, IOB2)."""
        return self.suffix in TABLE_SUFFIXES or self.suffix in IOB2_SUFFIXES

    @property
    def json_value(self) -> bool:
        """One JSON value: a ``.json`` file, or a ``[`` list of records in a file that is not JSONL."""
        listed = self.head == b"[" and self.suffix != ".jsonl"
        return not self.by_suffix and (self.suffix == ".json" or listed)

    @functools.cached_property
    def form(self) -> str | None:
        return sniff_form(self.data) if self.suffix == ".json" and not self.by_suffix else None

    @functools.cached_property
    def first(self) -> dict | None:
        """The first record of JSON lines (``.jsonl``, ``.ndjson`` or a file starting with
        ``{``), None for any other file; a JSON-lines file without records is refused."""
        lines = self.suffix in (".jsonl", ".ndjson") or self.head == b"{"
        if self.by_suffix or self.json_value or not lines:
            return None
        record = first_record(self.data, self.source)
        if record is None:
            raise KievalInputError(self.source, None, "the file has no records")
        return record

    @property
    def long_table_record(self) -> bool:
        """``doc_id, entity, value`` (``entity_type`` for ``entity``, as the tool's exports write it)."""
        keys = None if self.first is None else {"entity" if k == "entity_type" else k for k in self.first}
        return keys is not None and keys >= TABLE_KEYS

    @property
    def cord_record(self) -> bool:
        """The first record holds CORD's ``valid_line`` list."""
        return self.first is not None and valid_lines_of(self.first) is not None


def _nested(options: LoadOptions, builder: DatasetBuilder) -> NestedReader:
    return NestedReader(builder, options.key, dict(options.aliases), options.meta)


def read_jsonl(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder) -> None:
    reader = _nested(options, builder)
    read_records(data, source, reader.add_record)
    reader.finish()


def _without_bom(data: bytes) -> memoryview:
    return memoryview(data)[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else memoryview(data)


def read_json(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder, *,
              unwrap: bool = True) -> None:
    """One JSON value: ``{doc_id: document}`` or a list of records. orjson reads it; the
    stdlib parse is made only for a document the fast parse cannot serve (:mod:`.jsontext`).
    ``unwrap=False``: a structure key common to every document is read as content (the
    documents are part of a larger set that does not share it)."""
    text = decode_text(data, source)
    if not text.strip():
        raise KievalInputError(source, None, "the file is empty")
    slow = functools.cache(lambda: list(_top_values(parse_json(text, source))))
    try:
        content = fast_json(_without_bom(data))
    except (orjson.JSONDecodeError, NeedsSourceText):
        content, slow = parse_json(text, source), None
    reader = _nested(options, builder)
    if isinstance(content, list):  # a list of records, as JSONL in one array
        for i, record in enumerate(content):
            _add_listed_record(reader, record, i, source, slow)
    elif isinstance(content, dict):  # {doc_id: document}
        reader.add_documents(((str(d), f"document {d!r}", doc, source, slow and _nth(slow, i))
                              for i, (d, doc) in enumerate(content.items())), unwrap=unwrap)
    else:
        raise KievalInputError(source, None, "expected a JSON object or a list of records")
    reader.finish()


def _top_values(content: Any) -> Iterable:
    return content.values() if isinstance(content, dict) else content


def _nth(values: Callable[[], list], i: int) -> Callable[[], Any]:
    return lambda: values()[i]


def _add_listed_record(reader: NestedReader, record: Any, i: int, source: str,
                       slow: Callable[[], list] | None) -> None:
    where = f"record {i + 1}"
    try:
        if not isinstance(record, dict):
            raise KievalInputError(source, where, "expected a JSON object")
        reader.add_record(record, where)
    except (NeedsSourceText, KievalInputError):
        if slow is None:
            raise
        _add_listed_record(reader, slow()[i], i, source, None)


def read_json_dir(files: Mapping[str, bytes], source: str, options: LoadOptions,
                   builder: DatasetBuilder) -> None:
    documents = []
    for file_name, data in files.items():
        doc_id = PurePath(file_name).stem
        file_source = f"{source}/{file_name}"
        text = decode_text(data, file_source)
        slow = functools.partial(_parse_document, text, file_source)
        try:
            content = fast_json(_without_bom(data))
        except (orjson.JSONDecodeError, NeedsSourceText):
            slow = None
            try:
                content = _parse_document(text, file_source)
            except KievalInputError:
                content, how = recover_json(text, file_source, None)
                builder.warnings.append(f"document {doc_id!r} ({file_name}): JSON recovered from {how}")
        documents.append((doc_id, file_name, content, file_source, slow))
    reader = _nested(options, builder)
    reader.add_documents(documents)
    reader.finish()


def _parse_document(text: str, source: str) -> Any:
    return parse_json(text, source) if text.strip() else None


def read_long_table(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder) -> None:
    read_table(data, source, PurePath(source).suffix.lower(), builder, options.meta, options.limits)


def read_cord(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder) -> None:
    reader = _nested(options, builder)

    def add(record: dict, where: str) -> None:
        lines = valid_lines_of(record)
        if lines is None:
            raise KievalInputError(source, where, "the record has no valid_line list")
        doc_id, _ = doc_id_of(record, source, where)
        entities, locations = cord_entities(lines, source, where, builder.location_problems, doc_id)
        rows = [(g, k, t, v, _NAN) for g, k, t, v in entities]
        truth = record.get("ground_truth")
        structure = truth.get("gt_parse") if isinstance(truth, dict) else record.get("gt_parse")
        kept = reference_numbers(structure) if builder.keep_structures and structure is not None else None
        builder.add(doc_id, where, rows, kept, reader.take_meta(record), locations)

    read_records(data, source, add)


def read_lists(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder) -> None:
    reader = _nested(options, builder)

    def add(record: dict, where: str) -> None:
        doc_id, _ = doc_id_of(record, source, where)
        structure, _, _ = reader.structure_of(record, source, where)
        rows = list_rows(structure, options.related_fields, options.list_separator, source, where)
        builder.add(doc_id, where, rows, None, reader.take_meta(record))

    read_records(data, source, add)


def read_kieval_csv_dir(files: Mapping[str, bytes], source: str, options: LoadOptions,
                     builder: DatasetBuilder) -> None:
    read_kieval_csv(files, source, builder)


def _iob2_rows(entities: list[tuple[str, str]]) -> list:
    return [("", "", category, text, _NAN) for category, text in entities]


def read_iob2(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder) -> None:
    """Documents of one file are numbered 1, 2, ... so GT and prediction files pair up."""
    for i, entities in enumerate(parse_iob2_documents(decode_text(data, source), source)):
        builder.add(f"{i + 1}", f"document {i + 1}", _iob2_rows(entities))


def read_iob2_dir(files: Mapping[str, bytes], source: str, options: LoadOptions,
                   builder: DatasetBuilder) -> None:
    for file_name, data in files.items():
        file_source = f"{source}/{file_name}"
        entities = parse_iob2_document(decode_text(data, file_source), file_source)
        builder.add(PurePath(file_name).stem, file_name, _iob2_rows(entities))


def _form_reader(fmt: str) -> tuple[FileReader, FilesReader]:
    def read_file(data: bytes, source: str, options: LoadOptions, builder: DatasetBuilder) -> None:
        read_form_file(data, source, builder, fmt, PurePath(source).stem)

    def read_files(files: Mapping[str, bytes], source: str, options: LoadOptions,
                   builder: DatasetBuilder) -> None:
        for file_name, data in files.items():
            read_form_file(data, f"{source}/{file_name}", builder, fmt, PurePath(file_name).stem)

    return read_file, read_files


read_funsd, read_funsd_dir = _form_reader("funsd")
read_docile, read_docile_dir = _form_reader("docile")


# --- entry points --------------------------------------------------------------------------


def load_bytes(data: bytes, source: str, options: LoadOptions = LoadOptions(),
               name: str | None = None, *, keep_structures: bool = True) -> Dataset:
    """Read one uploaded file; a ``.zip`` is read as a directory of per-document files."""
    name = name or PurePath(source).stem
    load_estimate(data, source, options.limits)  # every limit checked before anything is read
    if source.lower().endswith(".zip"):
        members, skipped = _zip_members(data, source, options)
        return load_files(members, source, options, name, keep_structures=keep_structures, skipped=skipped)
    suffix = PurePath(source).suffix.lower()
    fmt = options.format if options.format != "auto" else detect_file_format(data, suffix, source)
    reader = READERS[fmt]
    if reader.read_file is None:
        raise KievalInputError(source, None, f"format {fmt} needs a directory or a .zip of files")
    builder = DatasetBuilder(source, name, fmt, keep_structures, max_rows=options.limits.rows)
    with cycle_collector_paused():
        reader.read_file(data, source, options, builder)
    if not builder.where:
        raise KievalInputError(source, None, "the file has no documents")
    return check_scoring_cost(builder.build(), options.limits)


def load_estimate(data: bytes, source: str, limits: Limits | None = None) -> int:
    """Estimated peak memory of :func:`load_bytes` on ``data`` (:func:`~kieval_core.limits.load_cost`),
    from what the file says about itself and without reading it: a zip's declared member
    sizes (never more than its caps let through), a Parquet footer's rows and bytes, the
    lines of a delimited table (one entity each: a dense CSV costs by its lines, not its bytes).

    With ``limits``, the file is checked against them on the way (:class:`LimitExceeded`,
    or :class:`KievalInputError` for a zip or Parquet file that cannot be opened): the
    checks :func:`load_bytes` makes before it reads anything.

    >>> load_estimate(b"x" * 1000, "a.jsonl")
    5000
    """
    suffix = PurePath(source).suffix.lower()
    if limits is not None:
        limits.check("file_mb", len(data), source, "on disk")
    try:
        if suffix == ".zip":
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as archive:
                    declared = sum(m.file_size for m in archive.infolist())
            except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
                raise KievalInputError(source, None, f"not a readable zip archive ({exc})") from None
            if limits is not None:
                limits.check("uncompressed_mb", declared, source, "uncompressed")
            cost = load_cost(declared)
        elif suffix == ".parquet":
            _, rows, uncompressed = parquet_footer(data, source)
            if limits is not None:
                check_footer(rows, uncompressed, source, limits)
            cost = load_cost(uncompressed, rows)
        else:
            if limits is not None:
                limits.check("uncompressed_mb", len(data), source, "of text")
            # a delimited table holds one entity per line: short lines cost more than their bytes
            cost = load_cost(len(data), data.count(b"\n") if suffix in DELIMITERS else 0)
    except KievalInputError:
        if limits is not None:
            raise
        cost = load_cost(len(data))  # without limits: an estimate, whatever the file is
    if limits is not None:
        limits.check_memory(cost, source)
    return cost


def load_files(files: Mapping[str, bytes], source: str, options: LoadOptions, name: str, *,
               keep_structures: bool = True, skipped: list[str] | None = None) -> Dataset:
    """A directory (or zip) of one file per document; doc_id = file stem. ``skipped``
    names the members that were not read (said in the load report's warnings)."""
    if not files:
        shown = f" (skipped: {_listed(skipped)})" if skipped else ""
        raise KievalInputError(source, None, f"the directory has no files{shown}")
    fmt = options.format if options.format != "auto" else detect_directory_format(files, source)
    reader = READERS[fmt]
    if reader.read_files is None:
        raise KievalInputError(source, None, f"format {fmt} is read from one file, not a directory")
    builder = DatasetBuilder(source, name, fmt, keep_structures, max_rows=options.limits.rows)
    if skipped:
        builder.warnings.append(f"{len(skipped)} member(s) not read: {_listed(skipped)}")
    with cycle_collector_paused():
        reader.read_files(files, source, options, builder)
    return check_scoring_cost(builder.build(), options.limits)


def check_scoring_cost(dataset: Dataset, limits: Limits) -> Dataset:
    """``dataset`` when scoring it stays within ``limits``; else a :class:`LimitExceeded`
    naming the document and the figure, before any work grows with it: the longest value
    (comparing two values costs the product of their lengths), the most groups of one
    type in one document (group matching costs the square of their number) and the most
    values of one type in one group (pairing the wrong ones costs the product of their
    numbers). One pass over the value lengths, one count of the values of each group and
    type (integer codes); the document is looked up only for a figure above its limit.
    """
    entities = dataset.entities
    if not len(entities):
        return dataset
    lengths = entities["value"].str.len().fillna(0).to_numpy(np.int64)
    longest = int(lengths.argmax())
    if lengths[longest] > limits.value_chars:
        row = entities.iloc[longest]
        limits.check("value_chars", int(lengths[longest]), dataset.source,
                     f"in a value of {row['entity_type']!r}", where=f"document {row['doc_id']!r}")
    # the most groups of a type in a document: the largest group index + 1
    if limits.above("groups_per_doc", int(entities["group"].max()) + 1):
        groups = group_counts(dataset)
        (doc_id, group_type), most = groups.idxmax(), int(groups.max())
        limits.check("groups_per_doc", most, dataset.source,
                     f"of type {group_type!r} (matching them costs their number squared)",
                     where=f"document {doc_id!r}")
    # a cell lies in one document: when no document holds more values than the limit, no cell does
    for keys in (("doc_id",), CELL_KEYS):
        most = _most_rows(entities, keys)
        if most is not None and not limits.above("values_per_group", most):
            return dataset
    cells = entities.groupby(list(CELL_KEYS), sort=False, observed=True)
    values = cells.size()
    (doc_id, group_type, group, entity_type), most = values.idxmax(), int(values.max())
    inside = f"in one {group_type!r} group" if group >= 0 else "outside any group"
    limits.check("values_per_group", most, dataset.source,
                 f"of {entity_type!r} {inside} (pairing them costs their number squared)",
                 where=f"document {doc_id!r}")
    return dataset


#: What one cell of values is: one entity type in one group (or outside any) of one document.
CELL_KEYS = ("doc_id", "group_type", "group", "entity_type")


def _most_rows(entities: pd.DataFrame, keys: Sequence[str]) -> int | None:
    """The most rows with one value of the columns ``keys``, as a groupby counts them (rows
    with a missing key left out), from the columns' integer codes packed into one key; None
    when there is no such row or the key would not fit."""
    key, size = np.zeros(len(entities), np.int64), 1
    kept = np.ones(len(entities), bool)
    for name in keys:
        column = entities[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            codes = column.cat.codes.to_numpy().astype(np.int64)
        elif pd.api.types.is_integer_dtype(column.dtype):
            codes = column.to_numpy(np.int64)
            codes = codes - codes.min(initial=0)
        else:
            codes = pd.factorize(column.to_numpy())[0].astype(np.int64)
        kept &= codes >= 0
        span = int(codes.max(initial=0)) + 1
        if size * span >= 1 << 62:
            return None
        key, size = key * span + np.maximum(codes, 0), size * span
    if not kept.any():
        return None
    return int(np.unique(key[kept], return_counts=True)[1].max())


def group_counts(dataset: Dataset) -> pd.Series:
    """The number of groups of each (document, group type) of a dataset (the non-group
    pseudo-groups left out): what matching it costs (:func:`~kieval_core.limits.matching_cost`)."""
    entities = dataset.entities
    grouped = entities.loc[entities["group"].to_numpy() >= 0, ["doc_id", "group_type", "group"]]
    return grouped.groupby(["doc_id", "group_type"], sort=False, observed=True)["group"].max() + 1


def _listed(names: list[str], at_most: int = 10) -> str:
    """Names joined, the first ``at_most`` of them.

    >>> _listed(["a", "b", "c"], at_most=2)
    'a, b and 1 more'
    """
    more = f" and {len(names) - at_most} more" if len(names) > at_most else ""
    return ", ".join(names[:at_most]) + more


def detect_file_format(data: bytes, suffix: str, source: str) -> str:
    """The format of one file, from its suffix and its first record: the reader whose
    sniffer accepts it."""
    sample = Sample(data, suffix, source)
    for reader in READERS.values():
        if reader.sniff is not None and reader.sniff(sample):
            return reader.name
    if not data.strip():
        raise KievalInputError(source, None, "the file is empty")
    msg = "unknown format: expected .json, .jsonl, .csv, .tsv, .parquet or a .zip of files"
    raise KievalInputError(source, None, msg)


def detect_directory_format(files: Mapping[str, bytes], source: str) -> str:
    """The format of a directory of per-document files, from their suffixes (and the
    first JSON file's head): the reader whose directory sniffer accepts it."""
    for reader in READERS.values():
        if reader.sniff_files is not None and reader.sniff_files(files):
            return reader.name
    suffixes = {PurePath(f).suffix.lower() for f in files}
    msg = f"cannot tell the format of a directory holding {', '.join(sorted(suffixes))} files"
    raise KievalInputError(source, None, msg)


def _zip_members(data: bytes, source: str, options: LoadOptions) -> tuple[dict[str, bytes], list[str]]:
    """Members of a zip, read in memory (never extracted to disk), and the members skipped
    (hidden, macOS metadata, README/LICENSE), each with the reason.

    Sizes are checked on the declared sizes first and again on the bytes as they inflate,
    in chunks, with an explicit cap: a member that inflates beyond the uncompressed limit
    (or lies about its size), or at a ratio above the zip ratio limit, is refused as soon
    as it does. Two members with the same file name in different folders would be the same
    document: refused, with both names.
    """
    limits = options.limits
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_FILES:
            raise KievalInputError(source, None, f"{len(members)} files; at most {MAX_FILES} are read")
        cap = _Cap.of(limits, source)  # the declared sizes were checked (load_estimate)
        files: dict[str, bytes] = {}
        paths: dict[str, str] = {}
        skipped: list[str] = []
        total = 0
        for member in sorted(members, key=lambda m: m.filename):
            name = _member_name(member.filename)
            reason = _skip_reason(member.filename, name)
            if reason:
                skipped.append(f"{member.filename} ({reason})")
                continue
            if name in files:
                msg = (f"document {PurePath(name).stem!r} appears twice: {paths[name]}, {member.filename} "
                       "(members are documents by file name; rename one or zip them apart)")
                raise KievalInputError(source, None, msg)
            files[name] = _read_member(archive, member, source, limits, cap, total)
            paths[name] = member.filename
            total += len(files[name])
        return files, skipped
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, zlib.error) as exc:
        raise KievalInputError(source, None, f"not a readable zip archive ({exc})") from None


def _member_name(filename: str) -> str:
    """A member's file name; a backslash counts as a folder separator (zips written on
    Windows), so ``a\\doc1.json`` is ``doc1.json``."""
    return PurePath(filename.replace("\\", "/")).name


def _skip_reason(filename: str, name: str) -> str | None:
    parts = filename.replace("\\", "/").split("/")
    if "__MACOSX" in parts:
        return "macOS metadata"
    if ".." in parts:
        return "its path leaves the archive"
    if name.startswith("."):
        return "hidden"
    if name in IGNORED_FILES:
        return "not a document"
    if not name:
        return "no file name"
    return None


@dataclass(frozen=True)
class _Cap:
    """The most bytes a zip may inflate to: the uncompressed limit, or what the memory
    budget can read, whichever is smaller."""

    bytes: int
    limit: str
    source: str

    @classmethod
    def of(cls, limits: Limits, source: str) -> _Cap:
        readable = limits.memory_bytes // BYTES_PER_TEXT_BYTE
        if limits.uncompressed_bytes <= readable:
            return cls(limits.uncompressed_bytes, "uncompressed_mb", source)
        return cls(readable, "memory_mb", source)

    def exceeded(self, limits: Limits, member: str) -> LimitExceeded:
        what = ("uncompressed" if self.limit == "uncompressed_mb" else "of text, more than the memory "
                "budget can read")
        measured = f"more than {self.bytes / MIB:,.0f} MiB {what} ({member} inflates beyond it)"
        return LimitExceeded(self.source, self.limit, measured, getattr(limits, self.limit))


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, source: str, limits: Limits,
                 cap: _Cap, before: int) -> bytes:
    """One member, inflated chunk by chunk: the zip at most ``cap`` bytes in all (``before``
    were read already), the member at most the zip ratio limit times its compressed size.
    Its declared size is not trusted."""
    where = f"{source}/{member.filename}"
    ratio_cap = max(RATIO_FLOOR, int(limits.zip_ratio * max(member.compress_size, 1)))
    if member.file_size > ratio_cap:  # as declared: refused before anything is inflated
        raise _ratio_exceeded(where, member.file_size, member, limits)
    chunks, size = [], 0
    with archive.open(member) as stream:
        while chunk := stream.read(_ZIP_CHUNK):
            size += len(chunk)
            if before + size > cap.bytes:
                raise cap.exceeded(limits, member.filename)
            if size > ratio_cap:
                raise _ratio_exceeded(where, size, member, limits)
            chunks.append(chunk)
    return b"".join(chunks)


def _ratio_exceeded(where: str, size: int, member: zipfile.ZipInfo, limits: Limits) -> LimitExceeded:
    ratio = size / max(member.compress_size, 1)
    measured = (f"{size / MIB:,.0f} MiB from {member.compress_size:,} bytes, a compression ratio of "
                f"{ratio:,.0f}x,")
    return LimitExceeded(where, "zip_ratio", measured, limits.zip_ratio)


__all__ = ["FORMATS", "READERS", "LoadOptions", "Sample", "decode_text", "load", "load_bytes",
           "load_estimate", "load_files"]
