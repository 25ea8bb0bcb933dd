"""The long table (SPEC 6.2): one row per entity, as CSV, TSV, JSONL or Parquet.

Columns ``doc_id, entity, value`` and optional ``group`` (empty = non-group),
``group_type`` and ``confidence``. When a grouped row has no ``group_type``, the type is
the entity type's first dotted component (``menu.nm`` -> ``menu``).

Tables are read and validated with Arrow compute kernels: no per-row Python.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..errors import KievalInputError
from ..model import ENTITY_COLUMNS, NON_GROUP

REQUIRED = ("doc_id", "entity", "value")
OPTIONAL = ("group", "group_type", "confidence")


def read_delimited(data: bytes, source: str, sep: str) -> pa.Table:
    """Read CSV/TSV bytes; every column is text. Ragged rows are refused with their row."""
    try:
        names = pacsv.open_csv(io.BytesIO(data), parse_options=pacsv.ParseOptions(delimiter=sep)).schema.names
        return pacsv.read_csv(
            io.BytesIO(data),
            parse_options=pacsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        message = str(exc)
        if "Empty CSV file" in message:
            raise KievalInputError(source, None, "the file is empty") from None
        if "UTF8" in message or "utf8" in message.lower():
            raise KievalInputError(source, None, "not UTF-8 text") from None
        raise KievalInputError(source, None, f"malformed table ({message.strip()})") from None


def _text(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        return pa.chunked_array([pa.array([""] * table.num_rows, pa.string())])
    column = table.column(name)
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.string())
    return pc.fill_null(column, "")


def _blank(column: pa.ChunkedArray) -> np.ndarray:
    return pc.equal(pc.utf8_trim_whitespace(column), "").to_numpy(zero_copy_only=False)


def table_to_entities(table: pa.Table | pd.DataFrame, source: str, *,
                      first_line: int = 2) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Validate a long table and turn it into the canonical entity table.

    ``first_line`` is the file line of the first data row (2 for CSV with a header, 1 for
    JSONL), used in messages.
    """
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    table = table.rename_columns([str(c).strip().lower() for c in table.column_names])
    seen: set[str] = set()
    for column in table.column_names:
        if column in seen and column in (*REQUIRED, *OPTIONAL):
            raise KievalInputError(source, "header", f"column {column!r} appears twice")
        seen.add(column)
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        found = ", ".join(table.column_names) or "none"
        msg = f"missing column(s) {', '.join(missing)} (found: {found})"
        raise KievalInputError(source, "header", msg)

    doc_id, entity, value = (_text(table, c) for c in REQUIRED)
    group, group_type = _text(table, "group"), _text(table, "group_type")
    bad_id = _blank(doc_id)
    if bad_id.any():
        raise KievalInputError(source, f"line {first_line + int(np.argmax(bad_id))}", "empty doc_id")
    present = ~_blank(value)
    bad_type = _blank(entity) & present
    if bad_type.any():
        raise KievalInputError(source, f"line {first_line + int(np.argmax(bad_type))}", "empty entity type")
    confidence = _confidence(table, source, first_line)
    grouped = ~_blank(group)
    derived = pc.list_element(pc.split_pattern(entity, ".", max_splits=1), 0)
    group_type = pc.if_else(pc.equal(group_type, ""), derived, group_type)
    group_type = pc.if_else(pa.array(grouped), group_type, "")

    doc_ids = tuple(pd.unique(doc_id.to_pandas()))
    keep = pa.array(present)
    frame = pd.DataFrame({
        "doc_id": pc.filter(doc_id, keep).to_pandas(),
        "group_type": pc.filter(group_type, keep).to_pandas(),
        "group_key": pc.filter(group, keep).to_pandas(),
        "entity_type": pc.filter(entity, keep).to_pandas(),
        "value": pc.filter(value, keep).to_pandas(),
        "confidence": confidence[present],
    })
    frame["group"] = group_indices(frame, "group_key")
    return frame[list(ENTITY_COLUMNS)], doc_ids


def group_indices(table: pd.DataFrame, key_column: str) -> np.ndarray:
    """0-based group index per (doc_id, group_type) in order of first appearance.

    Rows with an empty group type are non-group (-1).

    >>> group_indices(pd.DataFrame({"doc_id": ["a", "a", "a", "b"], "group_type": ["m", "m", "m", "m"],
    ...                             "k": ["7", "3", "7", "3"]}), "k").tolist()
    [0, 1, 0, 0]
    """
    doc, _ = pd.factorize(table["doc_id"])
    gtype, gtypes = pd.factorize(table["group_type"])
    block = doc.astype(np.int64) * max(len(gtypes), 1) + gtype
    key, _ = pd.factorize(table[key_column])
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
    return np.where(table["group_type"].to_numpy(object) == "", NON_GROUP, index)


def _confidence(table: pa.Table, source: str, first_line: int) -> np.ndarray:
    if "confidence" not in table.column_names:
        return np.full(table.num_rows, np.nan)
    raw = table.column("confidence")
    if pa.types.is_floating(raw.type) or pa.types.is_integer(raw.type):
        numbers = pc.cast(raw, pa.float64()).to_numpy(zero_copy_only=False)
        blank = np.isnan(numbers) & pc.is_null(raw).to_numpy(zero_copy_only=False)
        text = None
    else:
        text = pc.utf8_trim_whitespace(pc.fill_null(pc.cast(raw, pa.string()), ""))
        blank = pc.is_in(text, pa.array(["", "null", "None"])).to_numpy(zero_copy_only=False)
        numbers = pd.to_numeric(pd.Series(text.to_pandas()).where(~blank), errors="coerce")
        numbers = numbers.to_numpy(np.float64)
    bad = ~blank & ~((numbers >= 0.0) & (numbers <= 1.0))
    if bad.any():
        row = int(np.argmax(bad))
        shown = text[row].as_py() if text is not None else numbers[row]
        msg = f"confidence {shown!r} is not a number in [0, 1]"
        raise KievalInputError(source, f"line {first_line + row}", msg)
    return np.where(blank, np.nan, numbers)
