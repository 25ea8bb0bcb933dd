"""One synthetic dataset written in every input format of SPEC 6, for the loader benchmarks.

:func:`write_formats` takes the long tables of :func:`bench_core.generate` (ground truth
and predictions) and writes them as long CSV, TSV, Parquet and JSONL rows, nested JSONL,
one JSON object, a directory of JSON files, the official KIEval CSV directories, CORD's
``valid_line`` records, parallel lists and IOB2. A format that cannot carry all of the
content (no confidences in the official CSV, CORD and IOB2; no groups in IOB2; only
``row`` groups in parallel lists) gets the content it can carry, and that same content is
also written as long CSV (its *twin*), so every format is compared with long CSV on
identical entities, and the benchmark checks that both give the same figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

import pandas as pd

COLUMNS = ["doc_id", "entity", "value", "group", "group_type", "confidence"]
RELATED = ("menu.nm", "menu.cnt", "menu.price")


@dataclass
class Case:
    """One format: its GT and prediction paths, extra CLI options, and its long-CSV twin."""

    name: str
    gt: Path
    pred: Path
    twin: str = "csv"
    cli: list[str] = field(default_factory=list)


def _rows(table: pd.DataFrame) -> Iterator[tuple[str, list[tuple]]]:
    """``(doc_id, [(entity, value, group, group_type, confidence), ...])`` per document."""
    conf = table["confidence"] if "confidence" in table else pd.Series(math.nan, index=table.index)
    rows = zip(table["doc_id"], table["entity"], table["value"], table["group"], table["group_type"],
               conf, strict=True)
    for doc_id, doc_rows in groupby(rows, key=lambda r: r[0]):
        yield doc_id, [r[1:] for r in doc_rows]


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


# --- nested JSON ---------------------------------------------------------------------------


def _leaf(value: str, conf: float):
    return value if math.isnan(conf) else {"value": value, "confidence": conf}


def nested(rows: list[tuple]) -> dict:
    """A document as nested JSON: non-group keys at the root, one list of objects per group
    type; several values of one key become a list; a type outside its group's prefix keeps
    its dotted name (read as the full type)."""
    doc: dict = {}
    groups: dict[tuple[str, str], dict] = {}
    for etype, value, group, gtype, conf in rows:
        if gtype:
            if (gtype, group) not in groups:
                groups[gtype, group] = {}
                doc.setdefault(gtype, []).append(groups[gtype, group])
            target = groups[gtype, group]
            name = etype.removeprefix(gtype + ".") if etype.startswith(gtype + ".") else etype
        else:
            target, name = doc, etype
        leaf = _leaf(value, conf)
        if name not in target:
            target[name] = leaf
        elif isinstance(target[name], list):
            target[name].append(leaf)
        else:
            target[name] = [target[name], leaf]
    return doc


def write_nested_jsonl(table: pd.DataFrame, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for doc_id, rows in _rows(table):
            out.write(_dump({"doc_id": doc_id, "prediction": nested(rows)}) + "\n")


def write_json(table: pd.DataFrame, path: Path) -> None:
    path.write_text(_dump({doc_id: nested(rows) for doc_id, rows in _rows(table)}), "utf-8")


def write_json_dir(table: pd.DataFrame, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for doc_id, rows in _rows(table):
        (path / f"{doc_id}.json").write_text(_dump(nested(rows)), "utf-8")


# --- long tables ---------------------------------------------------------------------------


def write_table_jsonl(table: pd.DataFrame, path: Path) -> None:
    columns = [c for c in COLUMNS if c in table]
    with path.open("w", encoding="utf-8") as out:
        for row in zip(*(table[c] for c in columns), strict=True):
            record = dict(zip(columns, row, strict=True))
            if "confidence" in record and math.isnan(record["confidence"]):
                del record["confidence"]
            out.write(_dump(record) + "\n")


# --- the official KIEval CSV -------------------------------------------------------------


def kieval_csv_projection(table: pd.DataFrame) -> pd.DataFrame:
    """What the official CSV carries: no confidences, and a group block holds one group
    type, so grouped entities outside their group's prefix are left out."""
    prefix = table["entity"].str.split(".", n=1).str[0]
    keep = (table["group_type"] == "") | (prefix == table["group_type"])
    return table.loc[keep, COLUMNS[:5]]


def kieval_csv_text(rows: list[tuple]) -> str:
    blocks = []
    by_type: dict[str, dict[str, dict[str, list[str]]]] = {}
    plain = []
    for etype, value, group, gtype, _ in rows:
        if gtype:
            by_type.setdefault(gtype, {}).setdefault(group, {}).setdefault(etype, []).append(value)
        else:
            plain.append(f"{etype}\t{value}")
    for index, groups in enumerate(by_type.values()):
        header = sorted({t for cells in groups.values() for t in cells})
        lines = [str(index), "\t".join(header)]
        lines += ["\t".join("||".join(cells.get(t, [])) or "<empty>" for t in header)
                  for cells in groups.values()]
        blocks.append("\n".join(lines))
    if plain:
        blocks.append("\n".join(plain))
    return "\n\n".join(blocks) + "\n"


def write_kieval_csv(table: pd.DataFrame, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for doc_id, rows in _rows(table):
        (path / f"{doc_id}.csv").write_text(kieval_csv_text(rows), "utf-8")


# --- CORD, parallel lists, IOB2 ------------------------------------------------------------


def cord_projection(table: pd.DataFrame) -> pd.DataFrame:
    """CORD entries have no confidence; the group type is the category's first component
    and every entry sits in a group (non-group fields in group ``ng``)."""
    out = table[COLUMNS[:5]].copy()
    out["group_type"] = out["entity"].str.split(".", n=1).str[0]
    out["group"] = out["group"].where(out["group"] != "", "ng")
    return out


def write_cord(table: pd.DataFrame, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for doc_id, rows in _rows(table):
            lines = [{"category": etype, "group_id": group,
                      "words": [{"text": word, "is_key": 0} for word in value.split(" ")]}
                     for etype, value, group, _, _ in rows]
            out.write(_dump({"doc_id": doc_id, "valid_line": lines}) + "\n")


def lists_projection(table: pd.DataFrame) -> pd.DataFrame:
    """Parallel lists carry one group type, ``row``: menu lines are rows of the related
    fields; every other entity is non-group; no confidences."""
    out = table[COLUMNS[:5]].copy()
    related = out["entity"].isin(RELATED) & (out["group_type"] == "menu")
    out["group_type"] = out["group_type"].where(related, "").where(~related, "row")
    out["group"] = out["group"].where(related, "")
    return out


def write_lists(table: pd.DataFrame, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for doc_id, rows in _rows(table):
            fields: dict[str, list[str]] = {}
            cells: dict[tuple[str, int], str] = {}
            for etype, value, group, gtype, _ in rows:
                if gtype == "row":
                    cells[etype, int(group)] = value
                else:
                    fields.setdefault(etype, []).append(value)
            n_rows = 1 + max((g for _, g in cells), default=-1)
            record = {f: "|".join(cells.get((f, i), "") for i in range(n_rows)) for f in RELATED}
            record.update({f: "|".join(values) for f, values in fields.items()})
            out.write(_dump({"doc_id": doc_id, "fields": record}) + "\n")


def iob2_projection(table: pd.DataFrame) -> pd.DataFrame:
    """IOB2 carries non-group entities only, and numbers documents 1, 2, ... by position
    (ground truth order: documents missing from the predictions are written empty)."""
    out = table[COLUMNS[:5]].assign(group="", group_type="")
    return out


def write_iob2(table: pd.DataFrame, path: Path, doc_order: list[str]) -> None:
    by_doc = dict(_rows(table))
    with path.open("w", encoding="utf-8") as out:
        for doc_id in doc_order:
            lines = ["- O"]
            for etype, value, *_ in by_doc.get(doc_id, []):
                words = value.split(" ")
                lines += [f"{words[0]} B-{etype}", *(f"{w} I-{etype}" for w in words[1:])]
            out.write("\n".join(lines) + "\n\n")


# --- all of them -------------------------------------------------------------------------


def _csv(table: pd.DataFrame, path: Path, sep: str = ",") -> None:
    table.to_csv(path, index=False, sep=sep)


def _positional(table: pd.DataFrame, doc_order: list[str]) -> pd.DataFrame:
    number = {d: str(i + 1) for i, d in enumerate(doc_order)}
    return table.assign(doc_id=table["doc_id"].map(number))


def write_formats(gt: pd.DataFrame, pred: pd.DataFrame, out: Path) -> dict[str, Case]:
    """Write both sides in every format under ``out``; returns the cases by name."""
    out.mkdir(parents=True, exist_ok=True)
    doc_order = list(dict.fromkeys(gt["doc_id"]))
    projections: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
        "csv": lambda t: t, "csv-kieval": kieval_csv_projection, "csv-cord": cord_projection,
        "csv-lists": lists_projection, "csv-iob2": lambda t: _positional(iob2_projection(t), doc_order),
    }
    writers: dict[str, tuple[str, Callable[[pd.DataFrame, Path], None], str]] = {
        "csv": ("csv", _csv, "csv"),
        "tsv": ("tsv", lambda t, p: _csv(t, p, "\t"), "csv"),
        "parquet": ("parquet", lambda t, p: t.to_parquet(p, index=False), "csv"),
        "table-jsonl": ("jsonl", write_table_jsonl, "csv"),
        "nested-jsonl": ("jsonl", write_nested_jsonl, "csv"),
        "json": ("json", write_json, "csv"),
        "json-dir": ("", write_json_dir, "csv"),
        "kieval-csv": ("", lambda t, p: write_kieval_csv(kieval_csv_projection(t), p), "csv-kieval"),
        "cord": ("jsonl", lambda t, p: write_cord(cord_projection(t), p), "csv-cord"),
        "lists": ("jsonl", lambda t, p: write_lists(lists_projection(t), p), "csv-lists"),
        "iob2": ("bio", lambda t, p: write_iob2(iob2_projection(t), p, doc_order), "csv-iob2"),
    }
    cases: dict[str, Case] = {}
    for name, projection in projections.items():
        paths = [out / name / f"{side}.csv" for side in ("gt", "pred")]
        paths[0].parent.mkdir(exist_ok=True)
        for table, path in zip((gt, pred), paths, strict=True):
            _csv(projection(table), path)
        cases[name] = Case(name, *paths, twin=name)
    for name, (suffix, write, twin) in writers.items():
        if name == "csv":
            continue
        folder = out / name
        folder.mkdir(exist_ok=True)
        paths = [folder / (f"{side}.{suffix}" if suffix else side) for side in ("gt", "pred")]
        for table, path in zip((gt, pred), paths, strict=True):
            write(table, path)
        cli = {"lists": ["--format", "lists", "--related-fields", ",".join(RELATED)],
               "kieval-csv": ["--format", "kieval-csv"]}.get(name, [])
        cases[name] = Case(name, *paths, twin=twin, cli=cli)
    return cases
