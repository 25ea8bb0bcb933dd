"""Small builders shared by the core tests: datasets from rows, files from structures."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from kieval_core.read.dataset import Dataset
from kieval_core.read.formats.builder import DatasetBuilder  # the same assembly the loaders use
from kieval_core.read.formats.jsontext import JsonNumber


def dataset(docs: dict[str, list[tuple]], name: str = "pred") -> Dataset:
    """``{doc_id: [(group_type, group_key, entity_type, value[, confidence]), ...]}``."""
    builder = DatasetBuilder(name, name, "rows")
    for doc_id, rows in docs.items():
        builder.add(doc_id, doc_id, [(*r[:4], r[4] if len(r) > 4 else np.nan) for r in rows])
    return builder.build()


def without_key(node, key: str):
    """A JSON value with every ``key`` of its objects left out, at any depth."""
    if isinstance(node, dict):
        return {k: without_key(v, key) for k, v in node.items() if k != key}
    if isinstance(node, list):
        return [without_key(v, key) for v in node]
    return node


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def menu(*lines: tuple[str, ...], keys=("nm", "price")) -> list[dict]:
    """Menu groups for nested JSON: ``menu(("A", "100"), ("B", "200"))``."""
    return [dict(zip(keys, line, strict=False)) for line in lines]


def long_table(ds: Dataset) -> pd.DataFrame:
    """A dataset as a long table (``doc_id, entity, value, group, group_type, confidence``);
    a document without entities keeps one blank row, so it stays a document."""
    e = ds.entities
    table = pd.DataFrame({
        "doc_id": e["doc_id"].astype(object), "entity": e["entity_type"].astype(object),
        "value": e["value"].astype(object),
        "group": np.where(e["group"] >= 0, e["group"].astype(str), ""),
        "group_type": e["group_type"].astype(object), "confidence": e["confidence"].astype(float),
    })
    empty = [d for d in ds.doc_ids if d not in set(table["doc_id"])]
    blank = pd.DataFrame({"doc_id": empty, "entity": "", "value": "", "group": "", "group_type": "",
                          "confidence": np.nan})
    return pd.concat([table, blank], ignore_index=True)


def write_shards(table: pd.DataFrame, folder: Path, n: int, rng: np.random.Generator,
                 kind: str = "parquet") -> Path:
    """The rows of a long table in random order over ``n`` shard files of one kind
    (``parquet``, ``csv`` or ``jsonl``); a document's rows may land in several shards."""
    folder.mkdir(parents=True, exist_ok=True)
    shuffled = table.iloc[rng.permutation(len(table))].reset_index(drop=True)
    n = max(1, min(n, len(shuffled)))
    shard = rng.integers(0, n, len(shuffled))
    shard[:n] = np.arange(n)  # no shard is empty (an empty JSONL file is not a table)
    for k in range(n):
        part = shuffled[shard == k]
        path = folder / f"shard-{k:03d}.{kind}"
        if kind == "parquet":
            part.to_parquet(path, index=False)
        elif kind == "csv":
            part.to_csv(path, index=False)
        else:
            path.write_text("".join(json.dumps({c: (None if isinstance(v, float) and v != v else v)
                                                for c, v in row.items()}) + "\n"
                                    for row in part.to_dict("records")), "utf-8")
    return folder


def json_text(value) -> str:
    """JSON text of ``value``, a :class:`JsonNumber` in it written as the bare number it
    stands for (``{"tax": 1.50}``: what ``json.dumps`` cannot write)."""
    if isinstance(value, JsonNumber):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(json_text(v) for v in value) + "]"
    return json.dumps(value)


def replicated_jsonl(source: Path, path: Path, megabytes: float, prefix: str = "") -> Path:
    """The records of the JSONL file ``source`` written again and again into ``path`` until
    it holds ``megabytes`` MB (10^6 bytes), copy ``k``'s document ids prefixed
    ``{prefix}{k}_`` (a large upload for the limit, memory and admission checks)."""
    records = [json.loads(line) for line in source.read_text("utf-8").splitlines()]
    with path.open("w", encoding="utf-8") as out:
        copy = 0
        while out.tell() < megabytes * 1_000_000:
            for record in records:
                out.write(json.dumps({**record, "doc_id": f"{prefix}{copy}_{record['doc_id']}"}) + "\n")
            copy += 1
    return path


def menu_document(path: Path, key: str, lines: int) -> Path:
    """One document (``big``) of ``lines`` CORD menu lines under ``key`` (``gt_parse`` or
    ``prediction``): matching its groups costs their number squared (issue 33, N8: 5,000
    lines are 680 KB)."""
    menu = [{"nm": {"value": f"ITEM {i % 97}"}, "cnt": {"value": str(1 + i % 3)},
             "price": {"value": f"{(i * 37) % 100},000"}} for i in range(lines)]
    path.write_text(json.dumps({"doc_id": "big", key: {"menu": menu}}) + "\n")
    return path


def zip_bomb(path: Path) -> Path:
    """A zip of about 1 MB holding one JSON member of 1,000 MiB of blanks."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("d0.json", "w") as member:
        for _ in range(1000):
            member.write(b" " * 2**20)
    return path


def tiff_frames(frames: int) -> bytes:
    """A little-endian TIFF of ``frames`` 1 x 1 grey frames, the IFDs chained (issue 33, N1:
    counting them walked every frame)."""
    import struct

    entries = ((256, 3, 1), (257, 3, 1), (258, 3, 8), (259, 3, 1), (262, 3, 1), (273, 4, None),
               (278, 3, 1), (279, 4, 1))
    ifd_size = 2 + 12 * len(entries) + 4
    parts, offset = [b"II*\x00" + struct.pack("<I", 8)], 8
    for i in range(frames):
        pixel = offset + ifd_size
        following = pixel + 2 if i < frames - 1 else 0
        body = b"".join(struct.pack("<HHI", tag, kind, 1) + (struct.pack("<I", pixel) if value is None else
                        struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value))
                        for tag, kind, value in entries)
        parts.append(struct.pack("<H", len(entries)) + body + struct.pack("<I", following) + b"\x80\x00")
        offset = following
    return b"".join(parts)


def large_pdf(pages: int, points: int = 4_500) -> bytes:
    """A PDF of ``pages`` blank pages of ``points`` points a side (issue 33, N11)."""
    import io

    import pypdfium2 as pdfium

    document = pdfium.PdfDocument.new()
    for _ in range(pages):
        document.new_page(points, points)  # 6,875 x 6,875 pixels at 110 dpi: each under the page cap
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
