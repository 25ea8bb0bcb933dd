"""Label-fix files (SPEC 2f): a reviewer's corrections of the ground truth, applied to a
copy; an input file is never changed.

A fix file is a JSON list of ``{doc_id, entity_type, group, gt_value, fixed_value, note}``:
``group`` is null for the non-group, else ``{"type": ..., "index": ...}`` (the GT group's
index within its document and group type, as in the error list); ``gt_value`` null adds
``fixed_value`` where the GT had none (a gap), ``fixed_value`` null removes the GT value.
A row that does not match the ground truth (unknown document, group, entity or old value)
refuses the whole file with one message naming the row. Old values are found after the
normaliser in force (white space and Unicode forms do not matter).

>>> import pandas as pd
>>> from kieval_core import Dataset
>>> e = pd.DataFrame({"doc_id": ["d"], "group_type": [""], "group": [-1], "entity_type": ["zip"],
...                   "value": ["B1750"], "confidence": [float("nan")]})
>>> gt = Dataset("ground truth", "gt.jsonl", e, ("d",))
>>> fixes = parse_fixes([{"doc_id": "d", "entity_type": "zip", "group": None, "gt_value": "B1750",
...                       "fixed_value": "81750", "note": "receipt says 81750"}], "fixes.json")
>>> apply_fixes(gt, fixes).entities["value"].tolist()
['81750']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..count.normalize import Normalizer
from ..exceptions import KievalInputError
from ..read.dataset import Dataset

#: The keys of a fix row, in the order a fix file is written.
FIX_KEYS = ("doc_id", "entity_type", "group", "gt_value", "fixed_value", "note")


def read_fixes(path: str | Path) -> pd.DataFrame:
    """A fix file, checked for shape (:func:`parse_fixes`)."""
    source = str(path)
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise KievalInputError(source, None, f"cannot read the label-fix file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise KievalInputError(source, f"line {exc.lineno}", f"invalid JSON ({exc.msg})") from None
    return parse_fixes(rows, source)


def parse_fixes(rows: object, source: str) -> pd.DataFrame:
    """Fix rows as a frame ``doc_id, entity_type, group_type, group, gt_value, fixed_value,
    note`` (``group`` -1 for the non-group); a row of the wrong shape is refused, named."""
    if not isinstance(rows, list):
        raise KievalInputError(source, None, "a label-fix file is a JSON list of fixes")
    parsed = [_fix_row(row, i, source) for i, row in enumerate(rows, start=1)]
    columns = ["doc_id", "entity_type", "group_type", "group", "gt_value", "fixed_value", "note"]
    frame = pd.DataFrame(parsed, columns=columns, dtype=object)  # None stays None (no NaN)
    return frame.astype({"group": np.int64})


def _is_group(group: object) -> bool:
    index = group.get("index") if isinstance(group, dict) else None
    return (isinstance(group, dict) and isinstance(group.get("type"), str) and bool(group["type"])
            and isinstance(index, int) and not isinstance(index, bool) and index >= 0)


def _fix_row(row: object, number: int, source: str) -> tuple:
    def refuse(problem: str):
        raise KievalInputError(source, f"fix {number}", problem)

    if not isinstance(row, dict):
        refuse("a fix is an object with doc_id, entity_type, group, gt_value, fixed_value, note")
    missing = [k for k in ("doc_id", "entity_type", "gt_value", "fixed_value") if k not in row]
    if missing:
        refuse(f"missing {', '.join(missing)}")
    texts = {k: row.get(k) for k in ("doc_id", "entity_type", "gt_value", "fixed_value", "note")}
    for key, value in texts.items():
        if value is not None and not isinstance(value, str):
            refuse(f"{key} must be a string or null, got {json.dumps(value)}")
    if not texts["doc_id"] or not texts["entity_type"]:
        refuse("doc_id and entity_type must be given")
    if texts["gt_value"] is None and texts["fixed_value"] is None:
        refuse("gt_value and fixed_value are both null: nothing to fix")
    group = row.get("group")
    if group is None:
        group_type, index = "", -1
    elif _is_group(group):
        group_type, index = group["type"], group["index"]
    else:
        refuse(f'group must be null or {{"type": TEXT, "index": N >= 0}}, got {json.dumps(group)}')
    return (texts["doc_id"], texts["entity_type"], group_type, index, texts["gt_value"], texts["fixed_value"],
            texts["note"] or "")


def apply_fixes(gt: Dataset, fixes: pd.DataFrame, normalizer: Normalizer = Normalizer(),
                source: str = "label fixes") -> Dataset:
    """A copy of the ground truth with the fixes applied: values replaced, removed or added
    (a gap). Every row must match: its document, its group (for a group), and for a
    replacement or removal a GT value of that entity type there, equal after the
    normaliser (each copy fixed at most once). The copy keeps no uploaded structures (the
    peer metrics re-nest its entities) and says in its notes how many fixes it holds."""
    entities = gt.entities
    index = _Slots(gt, set(fixes["doc_id"]), normalizer, source)
    changed: dict[int, str | None] = {}
    added = []
    for number, fix in enumerate(fixes.itertuples(index=False), start=1):
        row = index.row_of(fix, f"fix {number} ({fix.doc_id}, {fix.entity_type}{_group_text(fix)})", changed)
        if row is None:
            added.append(fix)
        else:
            changed[row] = fix.fixed_value
    kept = entities.drop(index=[r for r, v in changed.items() if v is None]).copy()
    replaced = [r for r, v in changed.items() if v is not None]
    kept.loc[replaced, "value"] = [changed[r] for r in replaced]
    if added:
        extra = pd.DataFrame(added).rename(columns={"fixed_value": "value"})
        extra = extra[["doc_id", "group_type", "group", "entity_type", "value"]].assign(confidence=np.nan)
        kept = pd.concat([kept, extra], ignore_index=True)
    kept = kept.reset_index(drop=True).astype(entities.dtypes.to_dict())
    note = f"{len(fixes)} label fix(es) applied from {source}"
    return replace(gt, entities=kept, structures=None, notes=(*gt.notes, note))


class _Slots:
    """The GT values of the documents a fix file names, by (document, group type, group,
    entity type, normalised value): where each fix finds its row."""

    def __init__(self, gt: Dataset, doc_ids: set[str], normalizer: Normalizer, source: str) -> None:
        named = gt.entities[gt.entities["doc_id"].isin(doc_ids)]
        columns = [named[c] for c in ("doc_id", "group_type", "group", "entity_type")]
        self.values = named["value"]
        self.rows: dict[tuple, list[int]] = {}
        for row, *slot, value in zip(named.index, *columns, map(normalizer, named["value"]), strict=True):
            self.rows.setdefault((*slot, value), []).append(row)
        self.groups = set(zip(*columns[:3], strict=True))
        self.docs = set(gt.doc_ids)
        self.normalizer = normalizer
        self.source = source

    def row_of(self, fix, where: str, taken: dict[int, object]) -> int | None:
        """The GT row a fix replaces or removes (None for a gap), not one of ``taken``; a
        fix that does not match is refused, named by ``where``."""
        def refuse(problem: str):
            raise KievalInputError(self.source, where, problem)

        if fix.doc_id not in self.docs:
            refuse("unknown document: the ground truth has no such doc_id")
        if fix.group >= 0 and (fix.doc_id, fix.group_type, fix.group) not in self.groups:
            refuse("unknown group: the ground truth has no such group in this document")
        if fix.gt_value is None:
            return None
        slot = (fix.doc_id, fix.group_type, fix.group, fix.entity_type)
        free = [r for r in self.rows.get((*slot, self.normalizer(fix.gt_value)), []) if r not in taken]
        if free:
            return free[0]
        held = [self.values[r] for key, rows in self.rows.items() if key[:4] == slot for r in rows]
        if not held:
            refuse(f"unknown entity: the ground truth has no {fix.entity_type!r} there")
        refuse(f"old value {fix.gt_value!r} is not the GT's (it holds {', '.join(map(repr, held))})")


def _group_text(fix) -> str:
    return "" if fix.group < 0 else f", group {fix.group_type} {fix.group}"


def group_field(group_type: str, group: int) -> dict | None:
    """A GT group as fix files and the report write it: null for the non-group, else
    ``{"type", "index"}``."""
    return None if group < 0 else {"type": group_type, "index": int(group)}


def fixes_json(rows: Sequence[dict]) -> str:
    """A fix file's text."""
    ordered = [{key: row.get(key) for key in FIX_KEYS} for row in rows]
    return json.dumps(ordered, ensure_ascii=False, indent=2) + "\n"


def fix_records(fixes: pd.DataFrame) -> list[dict]:
    """Parsed fixes (:func:`parse_fixes`) as the rows of a fix file (the report's
    ``label_fixes``)."""
    return [{"doc_id": f.doc_id, "entity_type": f.entity_type, "group": group_field(f.group_type, f.group),
             "gt_value": f.gt_value, "fixed_value": f.fixed_value, "note": f.note}
            for f in fixes.itertuples(index=False)]


def corrected_gt(data: bytes, name: str, fixes: pd.DataFrame, fixed: Dataset) -> tuple[bytes, str]:
    """The ground truth's file with the fixes applied, in its own format when it is JSON
    Lines of nested records (SROIE, CORD ``gt_parse``, LLM outputs) and every fix finds its
    value there: the lines of the other documents are kept byte for byte. Any other input,
    or a fix whose value sits where this simple walk does not look, gives the fixed ground
    truth (``fixed``, :func:`apply_fixes`) as a long table (CSV: ``doc_id, group_type,
    group, entity, value``; a document without values keeps one blank row), which the tool
    reads as well. Returns the bytes and a file name."""
    stem = Path(name).name.rsplit(".", 1)[0] or "ground_truth"
    if name.lower().endswith(".jsonl"):
        patched = _patched_jsonl(data, fixes)
        if patched is not None:
            return patched, f"{stem}_fixed.jsonl"
    return _long_table(fixed).encode("utf-8"), f"{stem}_fixed.csv"


def _long_table(ds: Dataset) -> str:
    from ..safe_text import csv_text

    e = ds.entities
    table = pd.DataFrame({
        "doc_id": e["doc_id"].astype(object), "group_type": e["group_type"].astype(object),
        "group": np.where(e["group"] >= 0, e["group"].astype(str), ""),
        "entity": e["entity_type"].astype(object), "value": e["value"].astype(object),
    })
    empty = [d for d in ds.doc_ids if d not in set(table["doc_id"])]
    blank = pd.DataFrame({"doc_id": empty, "group_type": "", "group": "", "entity": "", "value": ""})
    return csv_text(pd.concat([table, blank], ignore_index=True), formulas="keep")


def _patched_jsonl(data: bytes, fixes: pd.DataFrame) -> bytes | None:
    from ..read.formats.nested import ID_KEYS, STRUCTURE_KEYS

    by_doc: dict[str, list] = {}
    for fix in fixes.itertuples(index=False):
        by_doc.setdefault(fix.doc_id, []).append(fix)
    lines = data.decode("utf-8-sig").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(record, dict):
            return None
        doc_id = next((str(record[k]) for k in ID_KEYS if k in record), None)
        if doc_id not in by_doc:
            continue
        structure = next((record[k] for k in STRUCTURE_KEYS if isinstance(record.get(k), dict)), record)
        if not all(_patch(structure, fix) for fix in by_doc.pop(doc_id)):
            return None
        end = line[len(line.rstrip("\r\n")):]
        lines[i] = json.dumps(record, ensure_ascii=False) + end
    return None if by_doc else "".join(lines).encode("utf-8")


def _patch(structure: dict, fix) -> bool:
    """Apply one fix to a record's structure: a top-level key for the non-group, the
    group's object (``key`` or ``key[index]``) for a group; False when it is not there."""
    node, leaf = structure, fix.entity_type
    if fix.group >= 0:
        holder = structure.get(fix.group_type)
        if isinstance(holder, list):
            holder = holder[fix.group] if fix.group < len(holder) else None
        elif fix.group != 0:
            holder = None
        if not isinstance(holder, dict) or not leaf.startswith(f"{fix.group_type}."):
            return False
        node, leaf = holder, leaf[len(fix.group_type) + 1:]
    if fix.gt_value is None:
        if leaf in node:
            return False
        node[leaf] = fix.fixed_value
        return True
    held = node.get(leaf)
    if held is None or isinstance(held, (dict, list)) or str(held).strip() != fix.gt_value.strip():
        return False
    if fix.fixed_value is None:
        del node[leaf]
    else:
        node[leaf] = fix.fixed_value
    return True
