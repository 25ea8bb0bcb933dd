"""The long table (SPEC 6.2): one row per entity, as CSV, TSV, JSONL or Parquet.

Columns ``doc_id, entity`` (or ``entity_type``), ``value`` and optional ``group`` (empty =
non-group), ``group_type``, ``confidence`` and a location ``page, x0, y0, x1, y1`` (SPEC
6.7, never scored); declared metadata keys (``--meta``) may be columns too (one value per
document). When a grouped row has no ``group_type``, the type is the entity type's first
dotted component (``menu.nm`` -> ``menu``). A **wide table** (CSV, TSV or Parquet without
entity and value columns) has one row per document and one column per field
(:func:`wide_to_long`).

CSV, TSV and Parquet are read and validated with Arrow compute kernels: no per-row
Python. TSV is read without quote processing (a cell ``"5" x`` stays ``"5" x``). JSONL
rows are JSON: ``null`` is absent (no entity, no group, no confidence), ``true`` is
``"true"``, a number keeps its JSON text, and a list of values is one entity per item,
exactly as in nested JSON. A confidence written as a JSON string is read as the same cell
of a CSV table: blank (``""``, ``"null"``, ``"None"``) is no confidence, ``"0.9"`` is 0.9,
so a table gives the same figures whichever way it is written.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from ...exceptions import KievalInputError
from ...limits import Limits, load_cost
from ..locations import LOCATION_COLUMNS, LocationProblems
from ..readers import DELIMITERS
from .builder import ALTERNATIVE_SET, DatasetBuilder
from .jsontext import (
    JsonNumber,
    check_text,
    read_records,
    scalar_text,
)
from .kieval_csv import PY_BLANK

REQUIRED = ("doc_id", "entity", "value")
OPTIONAL = ("group", "group_type", "confidence", "alternative", *LOCATION_COLUMNS)
#: A ``key=value`` token of a header-less line (Kleister's format), for a message naming it.
KEY_VALUE = re.compile(r"[^=\s]+=\S*")


def read_table(data: bytes, source: str, suffix: str, builder: DatasetBuilder,
               meta_keys: tuple[str, ...] = (), limits: Limits | None = None) -> None:
    """Read a long table (by its suffix: CSV/TSV, Parquet, else JSONL) into ``builder``;
    a Parquet file is checked against ``limits`` on its footer before it is read."""
    if suffix == ".parquet":
        table = read_parquet(data, source, limits or Limits.defaults("cli"))
        lines = np.arange(table.num_rows) + 1
        where = "row"
    elif suffix in DELIMITERS:
        check_text(data, source)
        table = read_delimited(data, source, DELIMITERS[suffix])
        lines = np.arange(table.num_rows) + 2
        where = "line"
    else:
        table, lines = _jsonl_table(data, source)
        where = "line"
    if is_wide(table):
        table, lines, id_column = wide_to_long(table, source, lines, where, meta_keys)
        builder.note(f"wide table: one row per document, the document id from the column {id_column!r}, "
                     "every other column a field")
    frame, doc_ids, first, meta = table_to_entities(table, source, lines=lines, where=where,
                                                    meta_keys=meta_keys, problems=builder.location_problems)
    builder.add_table(frame, doc_ids, first)
    builder.meta.update(meta)


#: Columns taken for the document id of a wide table when none is named ``doc_id``, in this order.
ID_COLUMNS = ("doc_id", "id", "document_id", "document", "doc", "file_name", "filename", "file", "image_id",
              "image")


def is_wide(table: pa.Table) -> bool:
    """A wide table: one row per document, one column per field (two named columns or
    more, no ``entity`` nor ``entity_type`` column, and no ``value`` column)."""
    names = [str(c).strip().lower() for c in table.column_names]
    return len(names) >= 2 and all(names) and not set(names) & {"entity", "entity_type", "value"}


def wide_to_long(table: pa.Table, source: str, lines: np.ndarray, where: str, meta_keys: tuple[str, ...]
                 ) -> tuple[pa.Table, np.ndarray, str]:
    """A wide table as a long one (``doc_id, entity, value`` and the metadata columns), each
    document's fields together in column order, with the line of every row; and the column
    the document ids came from: ``doc_id`` or another of :data:`ID_COLUMNS`, else the first
    column when its values are distinct and never blank. Empty cells are absent values."""
    names = [str(c).strip() for c in table.column_names]
    lowered = [c.lower() for c in names]
    id_at = next((lowered.index(c) for c in ID_COLUMNS if c in lowered), None)
    if id_at is None and names and _distinct_ids(table.column(0)):
        id_at = 0
    if id_at is None:
        msg = (f"a wide table (one row per document, no entity and value columns) needs a document id "
               f"column: name it doc_id (found: {', '.join(names) or 'none'})")
        raise KievalInputError(source, "header", msg)
    doc_id = _text(table, table.column_names[id_at])
    blank = _blank(doc_id)
    if blank.any():
        raise KievalInputError(source, f"{where} {int(lines[int(np.argmax(blank))])}", "empty document id")
    codes = pc.dictionary_encode(doc_id).combine_chunks().indices.to_numpy(zero_copy_only=False)
    seen = np.zeros(len(codes), bool)
    seen[np.unique(codes, return_index=True)[1]] = True
    if not seen.all():
        again = int(np.argmin(seen))
        msg = f"document {doc_id[again].as_py()!r} is on two rows of a wide table (one row per document)"
        raise KievalInputError(source, f"{where} {int(lines[again])}", msg)
    kept_meta = [c for c in table.column_names if c.strip().lower() in meta_keys]
    fields = [c for i, c in enumerate(table.column_names) if i != id_at and c not in kept_meta]
    n = table.num_rows
    parts = [pa.table({"doc_id": doc_id, "entity": pa.array([c.strip()] * n, pa.string()),
                       "value": _text(table, c), **{k.strip().lower(): _text(table, k) for k in kept_meta}})
             for c in fields]
    order = np.argsort(np.tile(np.arange(n), len(fields)), kind="stable")
    long = pa.concat_tables(parts).take(pa.array(order)) if parts else pa.table({"doc_id": doc_id})
    return long, np.tile(lines, len(fields))[order], names[id_at]


def _distinct_ids(column: pa.ChunkedArray) -> bool:
    text = pc.fill_null(pc.cast(column, pa.string()), "")
    return not _blank(text).any() and pc.count_distinct(text).as_py() == len(text)


def parquet_footer(data: bytes, source: str) -> tuple[pq.ParquetFile, int, int]:
    """A Parquet file opened on its footer only: the file, its rows and its uncompressed bytes."""
    try:
        file = pq.ParquetFile(io.BytesIO(data))
        footer = file.metadata
        uncompressed = sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups))
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise KievalInputError(source, None, f"not a readable Parquet file ({exc})") from None
    return file, footer.num_rows, uncompressed


def check_footer(rows: int, uncompressed: int, source: str, limits: Limits) -> int:
    """Refuse a Parquet file whose footer exceeds ``limits``; its estimated cost otherwise."""
    limits.check("rows", rows, source, "in the footer")
    limits.check("uncompressed_mb", uncompressed, source, "uncompressed (from the footer)")
    cost = load_cost(uncompressed, rows)
    limits.check_memory(cost, source)
    return cost


def read_parquet(data: bytes, source: str, limits: Limits) -> pa.Table:
    """A Parquet long table, after its footer was checked: rows and uncompressed bytes
    within ``limits``, every column of a flat type (text, numbers, booleans; binary
    columns are read as UTF-8 text). Nothing is read before the checks pass."""
    file, rows, uncompressed = parquet_footer(data, source)
    check_footer(rows, uncompressed, source, limits)
    schema = file.schema_arrow
    for field in schema:
        kind = field.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if pa.types.is_nested(kind) or not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
                                            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
                                            or pa.types.is_integer(kind) or pa.types.is_floating(kind)
                                            or pa.types.is_boolean(kind) or pa.types.is_null(kind)
                                            or pa.types.is_decimal(kind)):
            msg = (f"column {field.name!r} is of type {field.type}; a long table's columns hold text or "
                   "numbers (one entity per row)")
            raise KievalInputError(source, "header", msg)
    try:
        table = file.read()
    except Exception as exc:
        raise KievalInputError(source, None, f"not a readable Parquet file ({exc})") from None
    return _binary_as_text(table, source)


def _binary_as_text(table: pa.Table, source: str) -> pa.Table:
    """Binary columns (some writers store text without its UTF-8 annotation) as text;
    a column that is not UTF-8 is refused by name."""
    for i, field in enumerate(table.schema):
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            try:
                column = pc.cast(table.column(i), pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                msg = f"column {field.name!r} holds binary data that is not UTF-8 text"
                raise KievalInputError(source, None, msg) from None
            table = table.set_column(i, field.name, column)
    return table


#: Arrow's CSV block size to start with; a file whose one value is larger is read again in
#: one block (Arrow refuses a value that straddles two blocks).
CSV_BLOCK = 1 << 20


def read_delimited(data: bytes, source: str, sep: str) -> pa.Table:
    """Read CSV/TSV bytes; every column is text. Ragged rows are refused with their row."""
    quoted = sep != "\t"
    parse = pacsv.ParseOptions(delimiter=sep, quote_char='"' if quoted else False,
                               newlines_in_values=quoted)
    try:
        try:
            return _csv_table(data, parse, CSV_BLOCK)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc) or len(data) < CSV_BLOCK:
                raise
            return _csv_table(data, parse, len(data) + 1)  # a long value: the file as one block
    except pa.ArrowInvalid as exc:
        message = str(exc)
        if "Empty CSV file" in message:
            raise KievalInputError(source, None, "the file is empty") from None
        if "UTF8" in message or "utf8" in message.lower():
            raise KievalInputError(source, None, "not UTF-8 text") from None
        ragged = _ragged_row(data, sep)
        if ragged is not None:
            line, expected, got = ragged
            problem = f"{got} cell{'' if got == 1 else 's'} where the header has {expected}"
            if not quoted:
                problem += ("; TSV is read without quotes, so a value cannot hold a tab or a line break "
                            "(write such values in CSV or JSONL)")
            raise KievalInputError(source, f"line {line}", problem) from None
        raise KievalInputError(source, None, f"malformed table ({message.strip()})") from None


def _ragged_row(data: bytes, sep: str) -> tuple[int, int, int] | None:
    """The first row whose number of cells differs from the header's: (its first line,
    the header's cells, its cells); only called when Arrow has refused the table, to say
    where (Arrow's message gives the row's text but not its line)."""
    import csv

    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    quoting = csv.QUOTE_MINIMAL if sep != "\t" else csv.QUOTE_NONE
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quoting=quoting)
    expected, start = None, 1
    try:
        for row in reader:
            if row:
                if expected is None:
                    expected = len(row)
                elif len(row) != expected:
                    return start, expected, len(row)
            start = reader.line_num + 1
    except csv.Error:
        return None
    return None


def _csv_table(data: bytes, parse: pacsv.ParseOptions, block_size: int) -> pa.Table:
    read = pacsv.ReadOptions(block_size=block_size)
    names = pacsv.open_csv(io.BytesIO(data), read_options=read, parse_options=parse).schema.names
    return pacsv.read_csv(
        io.BytesIO(data),
        read_options=read,
        parse_options=parse,
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            strings_can_be_null=False, quoted_strings_can_be_null=False,
        ),
    )


class _JsonlColumns:
    """Columns of JSONL table rows, filled one record at a time (see :func:`read_records`)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.columns: dict[str, list] = {}
        self.lines: list[int] = []
        self.n = 0
        self.has_value = False

    def add(self, record: dict, where: str) -> None:
        """One record: one row per value. Everything that can fail is done before a column
        grows, so a failed record leaves nothing behind."""
        values = record.get("value")
        items = values if isinstance(values, list) else [values]
        for item in items:
            if isinstance(item, (dict, list)):
                msg = f"value is a {type(item).__name__}; a table row holds text, a number or a list"
                raise KievalInputError(self.source, where, msg)
        texts = [scalar_text(item) for item in items] or [None]
        cells = {key: _json_cell(key, raw, self.source, where)
                 for key, raw in record.items() if key != "value"}
        columns, n, k = self.columns, self.n, len(texts)
        for key in (*record, "value"):
            if key not in columns:  # a new column: absent from the rows before
                columns[key] = [None] * n
        for key, cell in cells.items():
            columns[key].extend([cell] * k)
        columns["value"].extend(texts)
        self.has_value = self.has_value or "value" in record
        self.n = n + k
        self.lines.extend([int(where.removeprefix("line "))] * k)
        for column in columns.values():
            if len(column) < self.n:
                column.extend([None] * (self.n - len(column)))


def _jsonl_table(data: bytes, source: str) -> tuple[pa.Table, np.ndarray]:
    """JSONL rows as an Arrow table of text columns (confidence as float64), with the
    file line of every row. JSON values follow the nested-JSON rules (module docstring)."""
    fast = _plain_jsonl_table(data, source)
    if fast is not None:
        return fast
    rows = _JsonlColumns(source)
    read_records(data, source, rows.add)
    if not rows.n:
        raise KievalInputError(source, None, "the file has no records")
    columns = rows.columns
    if not rows.has_value:
        del columns["value"]
    arrays = {k: _json_column(k, v) for k, v in columns.items()}
    return pa.table(arrays), np.asarray(rows.lines, np.int64)


def _json_column(key: str, cells: list) -> pa.Array:
    """A column of JSONL cells (:func:`_json_cell`); a confidence column holding any text
    is all text, read as a CSV table's (numbers keep their exact value through ``repr``)."""
    if not _is_confidence(key):
        return pa.array(cells, pa.string())
    if any(type(c) is str for c in cells):
        return pa.array([c if c is None or type(c) is str else repr(c) for c in cells], pa.string())
    return pa.array(cells, pa.float64())


def _is_confidence(key: str) -> bool:
    return key.strip().lower() == "confidence"


def _plain_jsonl_table(data: bytes, source: str) -> tuple[pa.Table, np.ndarray] | None:
    """The common case read by Arrow's JSON reader: one object per line, every cell text or
    null, numbers only in the confidence column and within [0, 1]. None when anything is
    outside that case (Arrow is more lenient than JSON in places, e.g. ``NaN`` or two
    objects on a line): the row-by-row reader decides, and words the errors."""
    check_text(data, source)
    if not data.startswith(b"{"):
        return None
    try:
        table = pajson.read_json(io.BytesIO(data))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != data.count(b"\n{") + 1:  # a row per line, no blank lines
        return None
    arrays = {}
    for key, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if _is_confidence(key) and (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                                    or pa.types.is_null(kind)):
            column = column.cast(pa.float64())
            inside = pc.and_(pc.greater_equal(column, 0.0), pc.less_equal(column, 1.0))
            if pc.all(inside).as_py() is False:
                return None
        elif _is_confidence(key) and pa.types.is_string(kind):
            pass  # text, read by _confidence as a CSV table's confidence column
        elif key.strip().lower() in LOCATION_COLUMNS and (pa.types.is_integer(kind)
                                                          or pa.types.is_floating(kind)):
            column = column.cast(pa.float64())
        elif not _is_confidence(key) and (pa.types.is_string(kind) or pa.types.is_null(kind)):
            column = column.cast(pa.string())
            column = pc.if_else(pc.match_substring_regex(column, PY_BLANK), None, column)
        else:
            return None
        arrays[key] = column
    return pa.table(arrays), np.arange(1, table.num_rows + 1)


def _json_cell(key: str, raw, source: str, where: str):
    """One JSON cell of a table row: text, or for the confidence column a float, None, or
    text (read as a CSV cell is: :func:`_json_column`)."""
    if _is_confidence(key):
        if raw is None or type(raw) is str:  # a JSON string (a JsonNumber is a number)
            return raw
        if isinstance(raw, bool) or not isinstance(raw, (JsonNumber, int, float)):
            raise KievalInputError(source, where, f"confidence {raw!r} is not a number in [0, 1]")
        return float(raw)
    if isinstance(raw, (dict, list)):
        raise KievalInputError(source, where, f"column {key!r} holds a {type(raw).__name__}, not text")
    return scalar_text(raw)


def _text(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        return pa.chunked_array([pa.array([""] * table.num_rows, pa.string())])
    column = table.column(name)
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.string())
    return pc.fill_null(column, "")


def _blank(column: pa.ChunkedArray) -> np.ndarray:
    return pc.equal(pc.utf8_trim_whitespace(column), "").to_numpy(zero_copy_only=False)


def table_to_entities(table: pa.Table | pd.DataFrame, source: str, *, lines: np.ndarray | None = None,
                      where: str = "line", meta_keys: tuple[str, ...] = (),
                      problems: LocationProblems | None = None):
    """Validate a long table and turn it into the builder's entity columns.

    ``lines`` gives the file line (or row) of every table row, for messages. Returns the
    entity frame, the document ids in input order, the first line of each document, and
    the metadata per document. Location columns, when the table has any, come along
    (boxes that cannot be read are dropped into ``problems``).
    """
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if lines is None:
        lines = np.arange(table.num_rows) + 2
    table = _checked_header(table, source, meta_keys)

    def at(mask: np.ndarray) -> str:
        return f"{where} {int(lines[int(np.argmax(mask))])}"

    doc_id, entity, value = (_text(table, c) for c in REQUIRED)
    group, group_type = _text(table, "group"), _text(table, "group_type")
    bad_id = _blank(doc_id)
    if bad_id.any():
        raise KievalInputError(source, at(bad_id), "empty doc_id")
    present = ~_blank(value)
    bad_type = _blank(entity) & present
    if bad_type.any():
        raise KievalInputError(source, at(bad_type), "empty entity type")
    confidence = _confidence(table, source, lines, where)
    grouped = ~_blank(group)
    derived = pc.list_element(pc.split_pattern(entity, ".", max_splits=1), 0)
    group_type = pc.if_else(pc.equal(group_type, ""), derived, group_type)
    group_type = pc.if_else(pa.array(grouped), group_type, "")

    codes = pc.dictionary_encode(doc_id).combine_chunks()  # codes in order of first appearance
    first_row = np.unique(codes.indices.to_numpy(zero_copy_only=False), return_index=True)[1]
    doc_ids = tuple(codes.dictionary.to_pylist())
    first = {d: f"{where} {int(n)}" for d, n in zip(doc_ids, lines[first_row], strict=True)}
    meta = _meta(table, doc_id, meta_keys, source, lines, where) if meta_keys else {}
    keep = pa.array(present)

    def kept(column: pa.ChunkedArray) -> pd.Series:
        return (column if present.all() else pc.filter(column, keep)).to_pandas()

    frame = pd.DataFrame({
        "doc_id": kept(doc_id), "group_type": kept(group_type), "group_key": kept(group),
        "entity_type": kept(entity), "value": kept(value), "confidence": confidence[present],
    })
    if any(c in table.column_names for c in LOCATION_COLUMNS):
        located = _locations(table, doc_id, entity, lines, where,
                             LocationProblems() if problems is None else problems)
        for name, column in zip(LOCATION_COLUMNS, located[present].T, strict=True):
            frame[name] = column
    if "alternative" in table.column_names:
        flags = _flags(table, "alternative", source, lines, where)
        frame[ALTERNATIVE_SET] = alternative_sets(frame, flags[present], source, lines[present], where)
    return frame, doc_ids, first, meta


def _checked_header(table: pa.Table, source: str, meta_keys: tuple[str, ...]) -> pa.Table:
    """The table with its column names stripped and lower-cased (``entity_type`` read as
    ``entity``); a column named twice or a
    required column missing is refused (a Kleister-style ``key=value`` line is named)."""
    written = [str(c).strip() for c in table.column_names]
    lowered = [c.lower() for c in written]
    if "entity_type" in lowered:  # the tool's own name for it, in every export
        if "entity" in lowered:
            msg = "both an entity and an entity_type column: keep one (the entity type of each row)"
            raise KievalInputError(source, "header", msg)
        lowered = ["entity" if c == "entity_type" else c for c in lowered]
    table = table.rename_columns(lowered)
    seen: set[str] = set()
    for column in table.column_names:
        if column in seen and column in (*REQUIRED, *OPTIONAL, *meta_keys):
            raise KievalInputError(source, "header", f"column {column!r} appears twice")
        seen.add(column)
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        found = ", ".join(written) or "none"
        msg = f"missing column(s) {', '.join(missing)} (found: {found})"
        tokens = [token for c in written for token in c.split()]
        if tokens and all(KEY_VALUE.fullmatch(token) for token in tokens):
            msg = (f"key=value tokens ({tokens[0]}, ...) instead of a header: Kleister's "
                   "one-document-a-line format, which kieval does not read; write it as a long table "
                   "with the columns doc_id, entity, value (or as JSONL)")
            raise KievalInputError(source, "line 1", msg)
        raise KievalInputError(source, "header", msg)
    return table


_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")


def _flags(table: pa.Table, name: str, source: str, lines: np.ndarray, where: str) -> np.ndarray:
    """A yes/no column (``true``/``false``, ``1``/``0``, ``yes``/``no``, blank = no)."""
    text = pc.utf8_lower(pc.utf8_trim_whitespace(_text(table, name)))
    yes = pc.is_in(text, pa.array(_TRUE)).to_numpy(zero_copy_only=False)
    bad = ~yes & ~pc.is_in(text, pa.array(_FALSE)).to_numpy(zero_copy_only=False)
    if bad.any():
        row = int(np.argmax(bad))
        msg = f"{name} is {text[row].as_py()!r}; write true or false"
        raise KievalInputError(source, f"{where} {int(lines[row])}", msg)
    return yes


def alternative_sets(frame: pd.DataFrame, alternative: np.ndarray, source: str, lines: np.ndarray,
                     where: str) -> np.ndarray:
    """The :data:`ALTERNATIVE_SET` of long-table rows (SPEC 2e): a row with ``alternative``
    true is another acceptable value of the closest row above it of the same document,
    group and entity type; -1 for a value without alternatives.

    >>> frame = pd.DataFrame({"doc_id": ["a"] * 4, "group_key": [""] * 4,
    ...                       "entity_type": ["d", "d", "t", "d"]})
    >>> alternative_sets(frame, np.array([False, True, False, False]), "x", np.arange(4), "line").tolist()
    [0, 0, -1, -1]
    """
    key = frame.groupby(["doc_id", "group_key", "entity_type"], sort=False).ngroup().to_numpy(np.int64)
    leaf = pd.Series(~alternative).groupby(key).cumsum().to_numpy(np.int64)
    orphan = alternative & (leaf == 0)
    if orphan.any():
        msg = "an alternative value without a first value of its entity above it"
        raise KievalInputError(source, f"{where} {int(lines[int(np.argmax(orphan))])}", msg)
    codes = pd.factorize(key * (len(frame) + 1) + leaf)[0]
    return np.where(np.bincount(codes)[codes] > 1, codes, -1).astype(np.int64)


def _locations(table: pa.Table, doc_id: pa.ChunkedArray, entity: pa.ChunkedArray, lines: np.ndarray,
               where: str, problems: LocationProblems) -> np.ndarray:
    """``(rows, 5)`` locations of the columns ``page, x0, y0, x1, y1``: a row without a full
    box keeps only its page; a box with x1 < x0 or y1 < y0, a cell that is not a number or a
    page below 1 is dropped into ``problems`` (the entity is scored as usual)."""
    n = table.num_rows
    columns, unreadable = [], np.zeros(n, bool)
    for name in LOCATION_COLUMNS:
        if name not in table.column_names:
            columns.append(np.full(n, np.nan))
            continue
        raw = table.column(name)
        if pa.types.is_floating(raw.type) or pa.types.is_integer(raw.type):
            numbers = pc.cast(raw, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
        else:
            text = pc.utf8_trim_whitespace(pc.fill_null(pc.cast(raw, pa.string()), ""))
            blank = pc.equal(text, "").to_numpy(zero_copy_only=False)
            numbers = _numbers(pc.if_else(pc.equal(text, ""), None, text))
            unreadable |= ~blank & ~np.isfinite(numbers)
        columns.append(numbers)
    located = np.column_stack(columns)
    page, box = located[:, 0], located[:, 1:]
    full = np.isfinite(box).all(axis=1)
    wrong = {
        "a cell is not a number": unreadable,
        "x1 < x0": full & (box[:, 2] < box[:, 0]),
        "y1 < y0": full & (box[:, 3] < box[:, 1]),
        "the page is not a whole number >= 1": ~np.isnan(page) & ((page < 1) | (page != np.floor(page))),
    }
    dropped = np.zeros(n, bool)
    for problem, mask in wrong.items():
        for row in np.flatnonzero(mask & ~dropped)[:1]:
            at = f"{where} {int(lines[row])}"
            problems.add(str(doc_id[int(row)]), str(entity[int(row)]), f"{problem} ({at})")
        problems.count += max(int((mask & ~dropped).sum()) - 1, 0)
        dropped |= mask
    box[~full | dropped] = np.nan
    page[dropped] = np.nan
    page[np.isnan(page) & full & ~dropped] = 1.0
    return np.column_stack([page, box])


def _meta(table: pa.Table, doc_id: pa.ChunkedArray, meta_keys: tuple[str, ...], source: str,
          lines: np.ndarray, where: str) -> dict[str, dict[str, str]]:
    """Declared metadata columns: one value per document (blank cells are absent)."""
    out: dict[str, dict[str, str]] = {}
    docs = pd.Series(doc_id.to_pandas(), dtype=object)
    for key in meta_keys:
        name = key.strip().lower()
        if name not in table.column_names:
            continue
        values = pd.Series(_text(table, name).to_pandas(), dtype=object)
        given = values.str.strip() != ""
        frame = pd.DataFrame({"doc": docs[given], "value": values[given]})
        distinct = frame.drop_duplicates()
        clash = distinct["doc"].duplicated(keep=False).to_numpy()
        if clash.any():
            doc = distinct["doc"].to_numpy()[int(np.argmax(clash))]
            rows = np.flatnonzero(given.to_numpy() & (docs == doc).to_numpy())
            msg = f"document {doc!r} has more than one value of the metadata column {key!r}"
            raise KievalInputError(source, f"{where} {int(lines[rows[-1]])}", msg)
        for doc, value in zip(distinct["doc"], distinct["value"], strict=True):
            out.setdefault(doc, {})[key] = value
    return out


def _confidence(table: pa.Table, source: str, lines: np.ndarray, where: str) -> np.ndarray:
    if "confidence" not in table.column_names:
        return np.full(table.num_rows, np.nan)
    raw = table.column("confidence")
    if pa.types.is_floating(raw.type) or pa.types.is_integer(raw.type):
        numbers = pc.cast(raw, pa.float64()).to_numpy(zero_copy_only=False)
        blank = np.isnan(numbers) & pc.is_null(raw).to_numpy(zero_copy_only=False)
        text = None
    else:
        text = pc.utf8_trim_whitespace(pc.fill_null(pc.cast(raw, pa.string()), ""))
        blank_cells = pc.is_in(text, pa.array(["", "null", "None"]))
        blank = blank_cells.to_numpy(zero_copy_only=False)
        numbers = _numbers(pc.if_else(blank_cells, None, text))
    bad = ~blank & ~((numbers >= 0.0) & (numbers <= 1.0))
    if bad.any():
        row = int(np.argmax(bad))
        shown = text[row].as_py() if text is not None else numbers[row]
        msg = f"confidence {shown!r} is not a number in [0, 1]"
        raise KievalInputError(source, f"{where} {int(lines[row])}", msg)
    return np.where(blank, np.nan, numbers)


def _numbers(text: pa.ChunkedArray) -> np.ndarray:
    """Text cells as float64 (null as NaN) by Arrow's cast; when a cell is no number Arrow
    reads, by ``pandas.to_numeric`` (NaN for what it cannot read either: reported)."""
    try:
        return pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pd.to_numeric(pd.Series(text.to_pandas(), dtype=object), errors="coerce").to_numpy(np.float64)
