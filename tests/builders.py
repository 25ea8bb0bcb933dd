"""Small builders shared by the core tests: datasets from rows, files from structures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kieval_core.loaders import _Builder  # the same assembly the loaders use
from kieval_core.model import Dataset


def dataset(docs: dict[str, list[tuple]], name: str = "pred") -> Dataset:
    """``{doc_id: [(group_type, group_key, entity_type, value[, confidence]), ...]}``."""
    builder = _Builder(name, name)
    for doc_id, rows in docs.items():
        builder.add(doc_id, doc_id, [(*r[:4], r[4] if len(r) > 4 else np.nan) for r in rows])
    return builder.build()


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def menu(*lines: tuple[str, ...], keys=("nm", "price")) -> list[dict]:
    """Menu groups for nested JSON: ``menu(("A", "100"), ("B", "200"))``."""
    return [dict(zip(keys, line, strict=False)) for line in lines]
