"""Inputs already in memory (SPEC 1, Python API): a ``{doc_id: document}`` dict, a list of
records, or a pandas DataFrame, read exactly as the same content in a file would be (a
one-object JSON container, JSONL records, a long or wide table).

>>> ds = load_object({"r1": {"total": 5, "menu": [{"nm": "Tea"}]}}, name="m")
>>> ds.entities[["doc_id", "entity_type", "value"]].values.tolist()
[['r1', 'total', '5'], ['r1', 'menu.nm', 'Tea']]
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .dataset import Dataset
from .formats import LoadOptions, load_bytes

#: What :func:`~kieval_core.evaluate` takes for the ground truth and each prediction set.
TAKES = ("a path (file or directory), a Dataset, a {doc_id: document} dict, a list of records "
         "(dicts with a doc_id: nested JSON records or long-table rows) or a pandas DataFrame "
         "(a long or wide table)")


def is_records(item: Any) -> bool:
    """A list of records of one input: every item a mapping with a ``doc_id``."""
    return (isinstance(item, (list, tuple)) and bool(item)
            and all(isinstance(r, Mapping) and "doc_id" in r for r in item))


def load_object(item: Any, options: LoadOptions = LoadOptions(), name: str | None = None, *,
                keep_structures: bool = True) -> Dataset:
    """Read an in-memory input as the file holding the same content would be read (JSON
    numbers keep their JSON text; values JSON cannot write are written as ``str`` gives
    them). Anything else is a :class:`TypeError` saying what is taken."""
    if isinstance(item, pd.DataFrame):
        buffer = io.BytesIO()
        frame = item.reset_index(drop=True)
        frame.columns = [str(c) for c in frame.columns]
        text = frame.select_dtypes(include=["object", "string"]).columns
        frame[text] = frame[text].map(lambda v: v if v is None or isinstance(v, str) or v != v else str(v))
        frame.to_parquet(buffer, index=False)
        data, source = buffer.getvalue(), "in-memory DataFrame.parquet"
    elif isinstance(item, Mapping):
        data, source = _json(item), "in-memory dict.json"
    elif is_records(item):
        data, source = b"\n".join(_json(record) for record in item) + b"\n", "in-memory records.jsonl"
    else:
        msg = f"cannot read a {type(item).__name__} as a dataset; evaluate() takes {TAKES}"
        raise TypeError(msg)
    return load_bytes(data, source, options, name, keep_structures=keep_structures)


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
