"""Nested JSON (SPEC 6.1): Donut/CORD ``gt_parse``, LLM outputs, SROIE-style records.

Mapping rules, from the root of one document's structure:

* a key holding a string, number or list of them is a **non-group** entity (several for a
  list); ``null``, ``""`` and ``[]`` mean absent;
* a key holding an object is **one group** of that type, a key holding a list of objects
  is one group per object;
* inside a group, nested objects and lists of objects are flattened into the same group
  with dotted types (``menu.sub.nm``); a key that already has a dot is the full type;
* an object whose keys are exactly ``value`` and ``confidence`` (or only ``value``) is a
  **scored leaf**, wherever it appears;
* confidences may also come in a parallel object of the same shape (``field_confidence``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from pathlib import PurePath
from typing import Any

from ..errors import KievalInputError

#: Keys under which a JSONL record holds its structure, tried in this order.
STRUCTURE_KEYS = ("fields", "gt_parse", "parse", "prediction", "predictions", "output")
#: Keys of a record holding confidences parallel to the structure.
CONFIDENCE_KEYS = ("field_confidence", "field_confidences", "confidences", "confidence")
#: Keys that identify a document in a record, tried in this order.
ID_KEYS = ("doc_id", "id", "file_name")
_SCORED_LEAF_KEYS = frozenset({"value", "confidence"})
#: Deeper structures are refused: no real document needs them, and they cost stack.
MAX_DEPTH = 64


class JsonNumber(str):
    """A JSON number kept as its source text (``30000`` stays ``"30000"``, SPEC 1)."""


def _reject_constant(name: str) -> None:
    msg = f"{name} is not valid JSON"
    raise ValueError(msg)


def parse_json(text: str, source: str, where: str | None = None) -> Any:
    """Parse JSON text, keeping numbers as their text; bad input raises KievalInputError.

    >>> parse_json('{"a": 1.50}', "x.json")
    {'a': '1.50'}
    """
    try:
        return json.loads(
            text,
            parse_int=JsonNumber,
            parse_float=JsonNumber,
            parse_constant=_reject_constant,
        )
    except json.JSONDecodeError as exc:
        place = where or f"line {exc.lineno}, column {exc.colno}"
        if where and exc.lineno == 1:
            place = f"{where}, column {exc.colno}"
        raise KievalInputError(source, place, f"invalid JSON ({exc.msg})") from None
    except ValueError as exc:
        raise KievalInputError(source, where, f"invalid JSON ({exc})") from None
    except RecursionError:
        raise KievalInputError(source, where, "JSON nested too deeply") from None


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```", re.DOTALL)


def recover_json(text: str, source: str, where: str | None) -> tuple[Any, str]:
    r"""The one JSON object inside an LLM answer (code fence or prose), and how it was found.

    Refuses (KievalInputError) when there is no object or more than one candidate.

    >>> recover_json('Sure! ```json\n{"total": "5"}\n``` Hope it helps.', "x", "line 1")
    ({'total': '5'}, 'code fence')
    >>> recover_json('The answer is {"total": "5"}.', "x", "line 1")[1]
    'prose'
    """
    fences = _FENCE.findall(text)
    if len(fences) == 1:
        return parse_json(fences[0], source, f"{where}, code fence"), "code fence"
    if len(fences) > 1:
        raise KievalInputError(source, where, f"{len(fences)} code fences; cannot tell which is the answer")
    decoder = json.JSONDecoder(parse_int=JsonNumber, parse_float=JsonNumber)
    found, i = [], text.find("{")
    while i >= 0:
        try:
            value, end = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        i = text.find("{", end)
    if len(found) != 1:
        problem = "no JSON object" if not found else f"{len(found)} JSON objects"
        raise KievalInputError(source, where, f"text with {problem}; cannot recover the answer")
    return found[0], "prose"


def is_scored_leaf(node: Any) -> bool:
    """True for ``{"value": ...}`` or ``{"value": ..., "confidence": ...}``.

    >>> is_scored_leaf({"value": "A", "confidence": 0.9}), is_scored_leaf({"nm": "A"})
    (True, False)
    """
    return isinstance(node, dict) and "value" in node and set(node) <= _SCORED_LEAF_KEYS


class _Flattener:
    """Walks one document's structure and yields its entities."""

    def __init__(self, source: str, doc_id: str, aliases: Mapping[str, str]) -> None:
        self.source = source
        self.doc_id = doc_id
        self.aliases = aliases
        self.group_counts: dict[str, int] = {}
        self.rows: list[tuple[str, int, str, str, float]] = []

    def fail(self, problem: str) -> KievalInputError:
        return KievalInputError(self.source, f"document {self.doc_id!r}", problem)

    def rename(self, key: str) -> str:
        return self.aliases.get(key, key)

    def confidence(self, raw: Any, entity_type: str) -> float:
        if raw is None or isinstance(raw, (dict, list)):
            return math.nan
        if isinstance(raw, bool) or not isinstance(raw, (JsonNumber, int, float)):
            raise self.fail(f"confidence of {entity_type!r} is {raw!r}, not a number")
        conf = float(raw)
        if not 0.0 <= conf <= 1.0:  # also rejects NaN
            raise self.fail(f"confidence of {entity_type!r} is {raw}, outside [0, 1]")
        return conf

    def leaf_values(self, node: Any, entity_type: str) -> Iterator[str]:
        if node is None:
            return
        if isinstance(node, bool):
            yield "true" if node else "false"
        elif isinstance(node, (str, int, float)):
            text = str(node)
            if text.strip():
                yield text
        else:
            raise self.fail(f"value of {entity_type!r} is a {type(node).__name__}, not text")

    def add_leaf(self, node: Any, conf: Any, group_type: str, group: int, entity_type: str):
        """Add a scalar or scored leaf; returns its plain value for the stored structure."""
        if is_scored_leaf(node):
            conf = node.get("confidence", conf)
            node = node["value"]
            if isinstance(node, list):
                for item in node:
                    self.add_leaf(item, conf, group_type, group, entity_type)
                return node
        confidence = self.confidence(conf, entity_type)
        for value in self.leaf_values(node, entity_type):
            self.rows.append((group_type, group, entity_type, value, confidence))
        return node

    def entity_type(self, prefix: str, key: str) -> str:
        key = self.rename(key)
        full = key if "." in key or not prefix else f"{prefix}.{key}"
        return self.rename(full)

    def group_members(self, node: dict, conf: Any, group_type: str, group: int,
                      prefix: str, depth: int) -> dict:
        if depth > MAX_DEPTH:
            raise self.fail(f"structure nested deeper than {MAX_DEPTH} levels")
        plain = {}
        for key, child in node.items():
            etype = self.entity_type(prefix, key)
            child_conf = _child(conf, key)
            plain[key] = self.group_value(child, child_conf, group_type, group, etype, depth)
        return plain

    def group_value(self, child: Any, conf: Any, group_type: str, group: int, etype: str,
                    depth: int) -> Any:
        if isinstance(child, dict) and not is_scored_leaf(child):
            return self.group_members(child, conf, group_type, group, etype, depth + 1)
        if isinstance(child, list):
            return [
                self.group_value(item, _child(conf, i), group_type, group, etype, depth + 1)
                for i, item in enumerate(child)
            ]
        return self.add_leaf(child, conf, group_type, group, etype)

    def new_group(self, group_type: str) -> int:
        index = self.group_counts.get(group_type, 0)
        self.group_counts[group_type] = index + 1
        return index

    def root(self, structure: Any, conf: Any) -> dict:
        if not isinstance(structure, dict):
            kind = "null" if structure is None else type(structure).__name__
            raise self.fail(f"the structure must be a JSON object, got {kind}")
        plain = {}
        for key, child in structure.items():
            name = self.entity_type("", key)
            child_conf = _child(conf, key)
            if isinstance(child, dict) and not is_scored_leaf(child):
                plain[key] = self.group(child, child_conf, name)
            elif isinstance(child, list):
                items = []
                for i, item in enumerate(child):
                    item_conf = _child(child_conf, i)
                    if isinstance(item, dict) and not is_scored_leaf(item):
                        items.append(self.group(item, item_conf, name))
                    elif isinstance(item, list):
                        raise self.fail(f"{key!r} holds a list inside a list")
                    else:
                        items.append(self.add_leaf(item, item_conf, "", -1, name))
                plain[key] = items
            else:
                plain[key] = self.add_leaf(child, child_conf, "", -1, name)
        return plain

    def group(self, node: dict, conf: Any, group_type: str) -> dict:
        before = len(self.rows)
        index = self.group_counts.get(group_type, 0)
        plain = self.group_members(node, conf, group_type, index, group_type, 1)
        if len(self.rows) > before:  # empty groups are dropped (SPEC 3.2)
            self.new_group(group_type)
        return plain


def _child(conf: Any, key: Any) -> Any:
    """The confidence node parallel to ``key``; a number applies to everything below."""
    if isinstance(conf, dict) and not is_scored_leaf(conf):
        return conf.get(key)
    if isinstance(conf, list):
        return conf[key] if isinstance(key, int) and key < len(conf) else None
    return conf


def flatten_document(
    structure: Any,
    *,
    source: str,
    doc_id: str,
    confidences: Any = None,
    aliases: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, int, str, str, float]], dict]:
    """Entities of one document as ``(group_type, group, entity_type, value, confidence)``.

    Also returns the plain structure (scored leaves replaced by their values) for the
    peer metrics that score the nested structure itself.

    >>> rows, plain = flatten_document(
    ...     {"menu": [{"nm": "Tea", "price": {"value": "5", "confidence": 0.8}}], "total": "5"},
    ...     source="x", doc_id="d1")
    >>> rows  # doctest: +NORMALIZE_WHITESPACE
    [('menu', 0, 'menu.nm', 'Tea', nan), ('menu', 0, 'menu.price', '5', 0.8),
     ('', -1, 'total', '5', nan)]
    >>> plain
    {'menu': [{'nm': 'Tea', 'price': '5'}], 'total': '5'}
    """
    flattener = _Flattener(source, doc_id, aliases or {})
    try:
        plain = flattener.root(structure, confidences)
    except RecursionError:
        raise flattener.fail("structure nested too deeply") from None
    return flattener.rows, plain


def doc_id_of(record: dict, source: str, where: str) -> str:
    """The document id of a JSONL record (``doc_id``, ``id`` or the stem of ``file_name``)."""
    for key in ID_KEYS:
        value = record.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return PurePath(str(value)).stem if key == "file_name" else str(value)
    msg = f"no document id: the record needs one of the keys {', '.join(ID_KEYS)}"
    raise KievalInputError(source, where, msg)


def structure_of(
    record: dict,
    *,
    source: str,
    where: str,
    key: str | None,
    ignore_keys: tuple[str, ...] = (),
) -> tuple[Any, Any]:
    """Split a record into (structure, parallel confidences).

    With ``key`` the structure is ``record[key]``; otherwise the first of
    :data:`STRUCTURE_KEYS` present, then Donut's ``ground_truth`` (a JSON string or object
    holding ``gt_parse``), and finally the record itself minus its id, confidence and
    ignored keys.
    """
    confidences = next((record[k] for k in CONFIDENCE_KEYS if isinstance(record.get(k), dict)), None)
    if key is not None:
        if key not in record:
            raise KievalInputError(source, where, f"the record has no key {key!r}")
        if key == "ground_truth":
            return _unwrap_ground_truth(record[key], source, where), confidences
        return record[key], confidences
    for candidate in STRUCTURE_KEYS:
        if candidate in record:
            return record[candidate], confidences
    if "ground_truth" in record:
        return _unwrap_ground_truth(record["ground_truth"], source, where), confidences
    skip = set(ID_KEYS) | set(ignore_keys)
    if confidences is not None:
        skip |= set(CONFIDENCE_KEYS)
    return {k: v for k, v in record.items() if k not in skip}, confidences


def _unwrap_ground_truth(value: Any, source: str, where: str) -> Any:
    if isinstance(value, str):
        value = parse_json(value, source, f"{where}, ground_truth")
    if isinstance(value, dict) and "gt_parse" in value:
        return value["gt_parse"]
    return value
