"""Reading every input format of SPEC 6 into a :class:`~kieval_core.model.Dataset`.

:func:`load` reads a path (file or directory); :func:`load_bytes` reads an upload (one
file, or a ``.zip`` standing for a directory). The format is detected from the name and
the content, or named explicitly (:data:`FORMATS`).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..errors import KievalInputError
from ..model import ENTITY_COLUMNS, Dataset
from ..peer.iob2 import parse_iob2_document, parse_iob2_documents
from ..peer.lists import parse_parallel_lists, split_parallel_lists
from .cord import cord_entities, valid_lines_of
from .kieval_csv import kieval_csv_entities
from .nested import doc_id_of, flatten_document, parse_json, recover_json, structure_of
from .table import group_indices, read_delimited, table_to_entities

#: Format names accepted by ``--format`` and the app's override.
FORMATS = ("auto", "json", "jsonl", "json-dir", "table", "cord", "kieval-csv", "iob2", "lists")
_TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
_IOB2_SUFFIXES = (".bio", ".bioes", ".iob", ".iob2")
#: Default size limit of one input (a file, a directory, or a zip once uncompressed).
MAX_BYTES = 1 << 30
#: Most files a directory or zip may hold.
MAX_FILES = 200_000
#: Files in a directory or zip that are never documents.
_IGNORED_FILES = (".DS_Store", "README", "README.md", "LICENSE")


@dataclass(frozen=True)
class LoadOptions:
    """How to read a file; the same object is shown in the report.

    Parameters
    ----------
    format : str
        One of :data:`FORMATS`.
    key : str or None
        Structure key of JSONL records (``fields``, ``gt_parse``, ...); auto when None.
    aliases : tuple of (str, str)
        Key renames applied while reading nested JSON (``subtotal`` -> ``sub_total``).
    ignore_keys : tuple of str
        Top-level record keys that are metadata, not entities (e.g. ``split``).
    max_bytes : int
        Largest file (or directory, or uncompressed zip) read; larger inputs are refused
        with a message before anything is read.
    related_fields, list_separator
        Format ``lists`` (SPEC 6.4): fields holding ``list_separator``-separated lists
        whose i-th values form row i (group i of type ``row``).
    """

    format: str = "auto"
    key: str | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    ignore_keys: tuple[str, ...] = ()
    max_bytes: int = MAX_BYTES
    related_fields: tuple[str, ...] = ()
    list_separator: str = "|"

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            msg = f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}"
            raise ValueError(msg)
        if self.format == "lists" and not self.related_fields:
            msg = "format lists needs the related fields (--related-fields a,b,c)"
            raise ValueError(msg)

    def check_size(self, size: int, source: str) -> None:
        """Refuse inputs above :attr:`max_bytes` before reading them."""
        if size > self.max_bytes:
            msg = (f"{size / 2**20:,.0f} MiB is above the limit of {self.max_bytes / 2**20:,.0f} MiB "
                   "(raise it with --max-file-size)")
            raise KievalInputError(source, None, msg)


def load(path: str | Path, options: LoadOptions = LoadOptions(), name: str | None = None) -> Dataset:
    """Read a file or directory.

    >>> ds = load("sample_data/cord_v2_gt.jsonl")  # doctest: +SKIP
    """
    path = Path(path)
    source = str(path)
    name = name or (path.name if path.is_dir() else path.stem)
    if path.is_dir():
        members = [p for p in sorted(path.iterdir())
                   if p.is_file() and not p.name.startswith(".") and p.name not in _IGNORED_FILES]
        if len(members) > MAX_FILES:
            raise KievalInputError(source, None, f"{len(members)} files; at most {MAX_FILES} are read")
        options.check_size(sum(p.stat().st_size for p in members), source)
        return _load_files({p.name: p.read_bytes() for p in members}, source, name, options)
    if not path.exists():
        raise KievalInputError(source, None, "no such file or directory")
    options.check_size(path.stat().st_size, source)
    return load_bytes(path.read_bytes(), source, options, name=name)


def load_bytes(data: bytes, source: str, options: LoadOptions = LoadOptions(),
               name: str | None = None) -> Dataset:
    """Read one uploaded file; a ``.zip`` is read as a directory of per-document files."""
    name = name or PurePath(source).stem
    options.check_size(len(data), source)
    if source.lower().endswith(".zip"):
        return _load_files(_zip_members(data, source, options), source, name, options)
    suffix = PurePath(source).suffix.lower()
    fmt = options.format
    if fmt == "auto":
        fmt = _detect_file_format(data, suffix, source)
    if fmt in ("json-dir", "kieval-csv"):
        raise KievalInputError(source, None, f"format {fmt} needs a directory or a .zip of files")
    if fmt == "table":
        return _load_table(data, source, suffix, name)
    text = decode_text(data, source)
    if fmt == "iob2":
        return _load_iob2({f"{i + 1}": doc for i, doc in enumerate(_iob2_documents(text, source))},
                          source, name)
    if fmt == "json":
        return _load_json_file(text, source, name, options)
    return _load_jsonl(text, source, name, options, cord=fmt == "cord", lists=fmt == "lists")


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 text (a BOM is dropped); binary or other encodings are refused."""
    if b"\x00" in data[:8192]:
        raise KievalInputError(source, None, "binary data, not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KievalInputError(source, f"line {line}", "not UTF-8 text") from None


def _detect_file_format(data: bytes, suffix: str, source: str) -> str:
    if suffix in _TABLE_SUFFIXES or suffix == ".parquet":
        return "table"
    if suffix in _IOB2_SUFFIXES:
        return "iob2"
    head = data.lstrip()[:1]
    if suffix == ".json" or (head == b"[" and suffix != ".jsonl"):
        return "json"
    if suffix in (".jsonl", ".ndjson") or head == b"{":
        first = _first_record(decode_text(data, source), source)
        if first is None:
            raise KievalInputError(source, None, "the file has no records")
        if {"doc_id", "entity", "value"} <= set(first):
            return "table"
        return "cord" if valid_lines_of(first) is not None else "jsonl"
    if not data.strip():
        raise KievalInputError(source, None, "the file is empty")
    msg = "unknown format: expected .json, .jsonl, .csv, .tsv, .parquet or a .zip of files"
    raise KievalInputError(source, None, msg)


def _first_record(text: str, source: str) -> dict | None:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            record = parse_json(line, source, f"line {number}")
            if not isinstance(record, dict):
                raise KievalInputError(source, f"line {number}", "expected a JSON object")
            return record
    return None


def _jsonl_records(text: str, source: str) -> Iterable[tuple[str, dict]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = parse_json(line, source, f"line {number}")
        if not isinstance(record, dict):
            raise KievalInputError(source, f"line {number}", "expected a JSON object")
        yield f"line {number}", record


class _Builder:
    """Collects documents and their entities; refuses duplicate document ids."""

    def __init__(self, source: str, name: str) -> None:
        self.source = source
        self.name = name
        self.where: dict[str, str] = {}
        self.columns: tuple[list, ...] = ([], [], [], [], [], [])
        self.structures: dict[str, Any] = {}
        self.warnings: list[str] = []

    def add(self, doc_id: str, where: str, rows: Iterable[tuple], structure: Any = None) -> None:
        if doc_id in self.where:
            msg = f"document {doc_id!r} appears twice ({self.where[doc_id]} and {where})"
            raise KievalInputError(self.source, where, msg)
        self.where[doc_id] = where
        if structure is not None:
            self.structures[doc_id] = structure
        doc, gtype, gkey, etype, value, conf = self.columns
        for row in rows:
            doc.append(doc_id)
            gtype.append(row[0])
            gkey.append(row[1])
            etype.append(row[2])
            value.append(row[3])
            conf.append(row[4] if len(row) > 4 else np.nan)

    def build(self) -> Dataset:
        doc, gtype, gkey, etype, value, conf = self.columns
        table = pd.DataFrame({
            "doc_id": pd.Series(doc, dtype=object),
            "group_type": pd.Series(gtype, dtype=object),
            "group_key": pd.Series([str(k) for k in gkey], dtype=object),
            "entity_type": pd.Series(etype, dtype=object),
            "value": pd.Series(value, dtype=object),
            "confidence": pd.Series(conf, dtype=np.float64),
        })
        table["group"] = group_indices(table, "group_key")
        return Dataset(
            name=self.name,
            source=self.source,
            entities=table[list(ENTITY_COLUMNS)],
            doc_ids=tuple(self.where),
            structures=self.structures or None,
            warnings=tuple(self.warnings),
        )


def _add_nested(builder: _Builder, doc_id: str, where: str, structure: Any, confidences: Any,
                options: LoadOptions) -> None:
    if isinstance(structure, str):  # an LLM's raw answer stored as text
        structure, how = recover_json(structure, builder.source, where)
        builder.warnings.append(f"document {doc_id!r} ({where}): JSON recovered from {how}")
    rows, plain = flatten_document(
        structure, source=builder.source, doc_id=doc_id, confidences=confidences,
        aliases=dict(options.aliases),
    )
    builder.add(doc_id, where, rows, plain)


def _list_rows(structure: Any, options: LoadOptions, source: str, where: str) -> list[tuple]:
    """Parallel lists (SPEC 6.4): row i of the related fields is group i of type ``row``;
    every other field is non-group, one entity per list item."""
    if not isinstance(structure, dict):
        raise KievalInputError(source, where, "expected an object of fields")
    sep = options.list_separator
    try:
        rows = [("row", str(i), field, value)
                for i, row in enumerate(parse_parallel_lists(structure, options.related_fields, sep))
                for field, value in row.items()]
        others = [k for k in structure if k not in options.related_fields]
        for field, items in split_parallel_lists(structure, others, sep).items():
            rows += [("", "", field, item) for item in items if item is not None]
    except ValueError as exc:
        raise KievalInputError(source, where, str(exc)) from None
    return rows


def _load_jsonl(text: str, source: str, name: str, options: LoadOptions, *, cord: bool,
                lists: bool = False) -> Dataset:
    builder = _Builder(source, name)
    for where, record in _jsonl_records(text, source):
        doc_id = doc_id_of(record, source, where)
        if lists:
            structure, _ = structure_of(record, source=source, where=where, key=options.key,
                                        ignore_keys=options.ignore_keys)
            builder.add(doc_id, where, _list_rows(structure, options, source, where))
        elif cord:
            lines = valid_lines_of(record)
            if lines is None:
                raise KievalInputError(source, where, "the record has no valid_line list")
            rows = [(g, k, t, v, np.nan) for g, k, t, v in cord_entities(lines, source, where)]
            truth = record.get("ground_truth")
            structure = truth.get("gt_parse") if isinstance(truth, dict) else record.get("gt_parse")
            builder.add(doc_id, where, rows, structure)
        else:
            structure, confidences = structure_of(
                record, source=source, where=where, key=options.key, ignore_keys=options.ignore_keys
            )
            _add_nested(builder, doc_id, where, structure, confidences, options)
    if not builder.where:
        raise KievalInputError(source, None, "the file has no records")
    return builder.build()


def _load_json_file(text: str, source: str, name: str, options: LoadOptions) -> Dataset:
    if not text.strip():
        raise KievalInputError(source, None, "the file is empty")
    content = parse_json(text, source)
    builder = _Builder(source, name)
    if isinstance(content, list):
        for i, record in enumerate(content):
            where = f"record {i + 1}"
            if not isinstance(record, dict):
                raise KievalInputError(source, where, "expected a JSON object")
            structure, confidences = structure_of(
                record, source=source, where=where, key=options.key, ignore_keys=options.ignore_keys
            )
            _add_nested(builder, doc_id_of(record, source, where), where, structure, confidences, options)
    elif isinstance(content, dict):
        for doc_id, structure in content.items():
            where = f"document {doc_id!r}"
            if not isinstance(structure, dict):
                msg = (f"expected an object mapping doc_id to a document structure, but {doc_id!r} "
                       f"holds a {type(structure).__name__}")
                raise KievalInputError(source, None, msg)
            structure, confidences = structure_of(structure, source=source, where=where, key=options.key,
                                                   ignore_keys=options.ignore_keys)
            _add_nested(builder, str(doc_id), where, structure, confidences, options)
    else:
        raise KievalInputError(source, None, "expected a JSON object or a list of records")
    if not builder.where:
        raise KievalInputError(source, None, "the file has no documents")
    return builder.build()


def _zip_members(data: bytes, source: str, options: LoadOptions) -> dict[str, bytes]:
    """Members of a zip, read in memory; never extracted to disk, sizes checked first."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_FILES:
            raise KievalInputError(source, None, f"{len(members)} files; at most {MAX_FILES} are read")
        options.check_size(sum(m.file_size for m in members), f"{source} (uncompressed)")
        return {
            PurePath(m.filename).name: archive.read(m)
            for m in sorted(members, key=lambda m: m.filename)
            if not PurePath(m.filename).name.startswith(".")
            and "__MACOSX" not in m.filename
            and PurePath(m.filename).name not in _IGNORED_FILES
        }
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        raise KievalInputError(source, None, f"not a readable zip archive ({exc})") from None


def _load_files(files: Mapping[str, bytes], source: str, name: str, options: LoadOptions) -> Dataset:
    """A directory (or zip) of one file per document; doc_id = file stem."""
    if not files:
        raise KievalInputError(source, None, "the directory has no files")
    suffixes = {PurePath(f).suffix.lower() for f in files}
    fmt = options.format
    if fmt == "auto":
        if suffixes <= {".csv", ".tsv", ".txt"}:
            fmt = "kieval-csv"
        elif suffixes <= {".json", ".txt", ".md"} and ".json" in suffixes:
            fmt = "json-dir"
        elif suffixes <= set(_IOB2_SUFFIXES):
            fmt = "iob2"
        else:
            msg = f"cannot tell the format of a directory holding {', '.join(sorted(suffixes))} files"
            raise KievalInputError(source, None, msg)
    if fmt == "iob2":
        documents = {}
        for file_name, data in files.items():
            file_source = f"{source}/{file_name}"
            documents[PurePath(file_name).stem] = _iob2_documents(decode_text(data, file_source), file_source,
                                                               one_document=True)
        return _load_iob2(documents, source, name)
    if fmt not in ("kieval-csv", "json-dir"):
        raise KievalInputError(source, None, f"format {fmt} is read from one file, not a directory")
    builder = _Builder(source, name)
    for file_name, data in files.items():
        doc_id = PurePath(file_name).stem
        file_source = f"{source}/{file_name}"
        text = decode_text(data, file_source)
        if fmt == "kieval-csv":
            rows = [(g, k, t, v, np.nan) for g, k, t, v in kieval_csv_entities(text, file_source)]
            builder.add(doc_id, file_name, rows)
        else:
            try:
                content = parse_json(text, file_source) if text.strip() else None
            except KievalInputError:
                content, how = recover_json(text, file_source, None)
                builder.warnings.append(f"document {doc_id!r} ({file_name}): JSON recovered from {how}")
            if not isinstance(content, dict):
                raise KievalInputError(file_source, None, "expected a JSON object")
            structure, confidences = structure_of(content, source=file_source, where=file_name,
                                                   key=options.key, ignore_keys=options.ignore_keys)
            _add_nested(builder, doc_id, file_name, structure, confidences, options)
    return builder.build()


def _iob2_documents(text: str, source: str, *, one_document: bool = False) -> list:
    """Parse IOB2 text; the parser's ``ValueError`` becomes the domain error."""
    try:
        if one_document:
            return parse_iob2_document(text, source)
        return parse_iob2_documents(text, source)
    except ValueError as exc:
        where, _, problem = str(exc).removeprefix(f"{source}, ").partition(": ")
        raise KievalInputError(source, where, problem) from None


def _load_iob2(documents: Mapping[str, list[tuple[str, str]]], source: str, name: str) -> Dataset:
    """IOB2 documents (SPEC 6.5): entities in reading order, all non-group.

    In one file, documents are numbered 1, 2, ... in order (so GT and prediction files
    pair up); in a directory, each file is a document named by its stem.
    """
    builder = _Builder(source, name)
    for doc_id, entities in documents.items():
        builder.add(doc_id, f"document {doc_id}", [("", "", c, t) for c, t in entities])
    return builder.build()


def _load_table(data: bytes, source: str, suffix: str, name: str) -> Dataset:
    if suffix == ".parquet":
        try:
            table = pq.read_table(io.BytesIO(data))
        except Exception as exc:  # pyarrow raises many types for corrupt files
            raise KievalInputError(source, None, f"not a readable Parquet file ({exc})") from None
        first_line = 1
    elif suffix in _TABLE_SUFFIXES:
        decode_text(data, source)
        table = read_delimited(data, source, _TABLE_SUFFIXES[suffix])
        first_line = 2
    else:
        records = [record for _, record in _jsonl_records(decode_text(data, source), source)]
        frame = pd.DataFrame.from_records(records)
        for column in frame.columns:  # numbers keep their JSON text; all validated as text
            frame[column] = pd.Series([None if v is None else str(v) for v in frame[column]], dtype=object)
        table = frame
        first_line = 1
    entities, doc_ids = table_to_entities(table, source, first_line=first_line)
    return Dataset(name=name, source=source, entities=entities, doc_ids=doc_ids)

