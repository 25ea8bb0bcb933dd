"""The registry of input formats (SPEC 6): one :class:`Reader` per format in :data:`READERS`,
the one place that names a format, the file names it reads, how auto-detection recognises
it and the functions that read it. It imports nothing heavy: the command line's
``--format`` choices, the app's upload types and the README's format table come from it
without pandas. The read functions are named by their dotted path and imported when a
file is first read (:mod:`kieval_core.read.formats`).

Adding a reader is a module with its read function, one entry here, and its fixture in
``tests/test_readers.py``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .formats import FileReader, FilesReader, Sample

#: Suffixes of IOB2 files; of delimited long tables, with their delimiters; of long tables.
IOB2_SUFFIXES = (".bio", ".bioes", ".iob", ".iob2")
DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
TABLE_SUFFIXES = (*DELIMITERS, ".parquet")
#: The suffixes of per-document files of a directory: KIEval CSV, and JSON documents.
CSV_DIRECTORY_SUFFIXES = frozenset({".csv", ".tsv", ".txt"})
JSON_DIRECTORY_SUFFIXES = frozenset({".json", ".txt", ".md"})
_FORMATS = "kieval_core.read.formats"


def _function(path: str | None) -> Callable | None:
    if path is None:
        return None
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Reader:
    """One input format: the functions that read it from one file and from a directory of
    files (dotted paths, imported when first used: :attr:`read_file`, :attr:`read_files`),
    the file names it reads (``suffixes``), and how auto-detection recognises it: ``sniff``
    looks at one file (a :class:`~kieval_core.read.formats.Sample`), ``sniff_files`` at the
    names and contents of a directory's files. A format without a sniffer is read only when
    named (``--format``). The sniffers of different readers never accept the same input, so
    detection does not depend on their order."""

    name: str
    description: str
    file_function: str | None = None
    files_function: str | None = None
    suffixes: tuple[str, ...] = ()
    sniff: Callable[[Sample], bool] | None = None
    sniff_files: Callable[[Mapping[str, bytes]], bool] | None = None

    @functools.cached_property
    def read_file(self) -> FileReader | None:
        """Reads one file, ``(data, source, options, builder)``; None for a directory format."""
        return _function(self.file_function)

    @functools.cached_property
    def read_files(self) -> FilesReader | None:
        """Reads a directory's files, ``(files, source, options, builder)``; None for a one-file format."""
        return _function(self.files_function)


def _json_directory(files: Mapping[str, bytes]) -> str | None:
    """``funsd``, ``docile`` or ``json-dir`` for a directory of JSON documents (by its first
    JSON file), None for any other directory."""
    from .formats.forms import sniff_form

    suffixes = {PurePath(f).suffix.lower() for f in files}
    if not (suffixes <= JSON_DIRECTORY_SUFFIXES and ".json" in suffixes):
        return None
    first = next(data for f, data in files.items() if f.lower().endswith(".json"))
    return sniff_form(first) or "json-dir"


def _suffixes_within(allowed: Iterable[str]) -> Callable[[Mapping[str, bytes]], bool]:
    allowed = frozenset(allowed)
    return lambda files: {PurePath(f).suffix.lower() for f in files} <= allowed


def _form(fmt: str, description: str) -> Reader:
    return Reader(fmt, description, f"{_FORMATS}.read_{fmt}", f"{_FORMATS}.read_{fmt}_dir", (".json",),
                  sniff=lambda sample: sample.form == fmt,
                  sniff_files=lambda files: _json_directory(files) == fmt)


READERS: dict[str, Reader] = {r.name: r for r in (
    Reader("json", "nested JSON: {doc_id: document} or a list of records", f"{_FORMATS}.read_json",
           suffixes=(".json",), sniff=lambda sample: sample.json_value and sample.form is None),
    Reader("jsonl", "nested JSON records, one per line (Donut metadata.jsonl too)", f"{_FORMATS}.read_jsonl",
           suffixes=(".jsonl", ".ndjson"),
           sniff=lambda sample: sample.first is not None and not sample.long_table_record
           and not sample.cord_record),
    Reader("json-dir", "a directory (or .zip) of one JSON document per file",
           files_function=f"{_FORMATS}.read_json_dir", suffixes=(".json",),
           sniff_files=lambda files: _json_directory(files) == "json-dir"),
    Reader("table", "long table: CSV, TSV, JSONL or Parquet rows doc_id, entity, value, ...",
           f"{_FORMATS}.read_long_table", suffixes=(*TABLE_SUFFIXES, ".jsonl"),
           sniff=lambda sample: sample.suffix in TABLE_SUFFIXES or sample.long_table_record),
    Reader("cord", "CORD's original annotations (valid_line)", f"{_FORMATS}.read_cord", suffixes=(".jsonl",),
           sniff=lambda sample: sample.first is not None and not sample.long_table_record
           and sample.cord_record),
    Reader("kieval-csv", "the official KIEval tool's CSV directories",
           files_function=f"{_FORMATS}.read_kieval_csv_dir", suffixes=(".csv",),
           sniff_files=_suffixes_within(CSV_DIRECTORY_SUFFIXES)),
    Reader("iob2", "IOB2 token/tag lines (.bio)", f"{_FORMATS}.read_iob2", f"{_FORMATS}.read_iob2_dir",
           suffixes=IOB2_SUFFIXES, sniff=lambda sample: sample.suffix in IOB2_SUFFIXES,
           sniff_files=_suffixes_within(IOB2_SUFFIXES)),
    Reader("lists", "parallel |-separated lists (--related-fields)", f"{_FORMATS}.read_lists",
           suffixes=(".jsonl",)),
    _form("funsd", "FUNSD form annotations, one JSON per document (boxes)"),
    _form("docile", "DocILE invoice annotations, one JSON per document (boxes)"),
)}
#: Format names accepted by ``--format`` and the app's override.
FORMATS = ("auto", *READERS)


def upload_suffixes() -> tuple[str, ...]:
    """Every file suffix some reader reads, and ``.zip`` (a directory), sorted: what an
    upload may be named.

    >>> {".iob2", ".jsonl", ".parquet", ".zip"} <= set(upload_suffixes())
    True
    """
    return tuple(sorted({s for r in READERS.values() for s in r.suffixes} | {".zip"}))
