"""The long table (SPEC 6.2): one row per entity, as CSV, TSV, JSONL or Parquet.

Columns ``doc_id, entity, value`` and optional ``group`` (empty = non-group),
``group_type`` and ``confidence``. When a grouped row has no ``group_type``, the type is
the entity type's first dotted component (``menu.nm`` -> ``menu``).
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd

from ..errors import KievalInputError
from ..model import NON_GROUP, ENTITY_COLUMNS

REQUIRED = ("doc_id", "entity", "value")
OPTIONAL = ("group", "group_type", "confidence")


def read_delimited(data: bytes, source: str, sep: str) -> pd.DataFrame:
    """Read CSV/TSV bytes as text columns; ragged rows are refused with their line."""
    try:
        return pd.read_csv(
            io.BytesIO(data), sep=sep, dtype=str, keep_default_na=False, na_filter=False,
            encoding="utf-8", quoting=csv.QUOTE_MINIMAL, engine="c",
        )
    except UnicodeDecodeError as exc:
        raise KievalInputError(source, f"byte {exc.start}", "not UTF-8 text") from None
    except pd.errors.EmptyDataError:
        raise KievalInputError(source, None, "the file is empty") from None
    except pd.errors.ParserError as exc:
        raise KievalInputError(source, None, f"malformed table ({_short(exc)})") from None


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[-1]
    return text.replace("Error tokenizing data. C error: ", "")


def table_to_entities(frame: pd.DataFrame, source: str, *, first_line: int = 2) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Validate a long table and turn it into the canonical entity table.

    ``first_line`` is the file line of the first data row (2 for CSV with a header, 1 for
    JSONL), used in messages.
    """
    frame = frame.rename(columns=lambda c: str(c).strip().lower())
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns)) or "none"
        msg = f"missing column(s) {', '.join(missing)} (found: {found})"
        raise KievalInputError(source, "header", msg)
    n = len(frame)
    text = {c: _text_column(frame[c]) if c in frame.columns else pd.Series([""] * n, dtype=object)
            for c in (*REQUIRED, "group", "group_type")}
    bad_id = (text["doc_id"].str.strip() == "").to_numpy()
    if bad_id.any():
        raise KievalInputError(source, f"line {first_line + int(np.argmax(bad_id))}", "empty doc_id")
    doc_ids = tuple(pd.unique(text["doc_id"]))
    confidence = _confidence_column(frame, source, first_line)

    present = (text["value"].str.strip() != "").to_numpy()
    grouped = (text["group"].str.strip() != "").to_numpy()
    entity_type = text["entity"]
    bad_type = (entity_type.str.strip() == "").to_numpy() & present
    if bad_type.any():
        raise KievalInputError(source, f"line {first_line + int(np.argmax(bad_type))}", "empty entity type")
    group_type = text["group_type"].where(text["group_type"] != "", entity_type.str.split(".", n=1).str[0])
    group_type = group_type.where(grouped, "")

    keep = present
    table = pd.DataFrame({
        "doc_id": text["doc_id"][keep].to_numpy(object),
        "group_type": group_type[keep].to_numpy(object),
        "group_key": text["group"][keep].to_numpy(object),
        "entity_type": entity_type[keep].to_numpy(object),
        "value": text["value"][keep].to_numpy(object),
        "confidence": confidence[keep],
    })
    table["group"] = group_indices(table, "group_key")
    return table[list(ENTITY_COLUMNS)], doc_ids


def group_indices(table: pd.DataFrame, key_column: str) -> np.ndarray:
    """0-based group index per (doc_id, group_type) in order of first appearance.

    Rows with an empty group type are non-group (-1).
    """
    keys = ["doc_id", "group_type", key_column]
    firsts = table[keys].drop_duplicates()
    firsts = firsts.assign(_index=firsts.groupby(["doc_id", "group_type"], sort=False).cumcount())
    index = table[keys].merge(firsts, on=keys, how="left")["_index"].to_numpy(np.int64)
    return np.where(table["group_type"].to_numpy(object) == "", NON_GROUP, index)


def _text_column(column: pd.Series) -> pd.Series:
    if column.dtype == object:
        return column.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    return column.astype(str).where(column.notna(), "")


def _confidence_column(frame: pd.DataFrame, source: str, first_line: int) -> np.ndarray:
    if "confidence" not in frame.columns:
        return np.full(len(frame), np.nan)
    raw = frame["confidence"]
    blank = raw.isna() | (raw.astype(str).str.strip().isin(["", "null", "None"]))
    numbers = pd.to_numeric(raw.where(~blank), errors="coerce").to_numpy(np.float64)
    bad = ~blank.to_numpy() & ~((numbers >= 0.0) & (numbers <= 1.0))
    if bad.any():
        row = int(np.argmax(bad))
        msg = f"confidence {raw.iloc[row]!r} is not a number in [0, 1]"
        raise KievalInputError(source, f"line {first_line + row}", msg)
    return numbers
