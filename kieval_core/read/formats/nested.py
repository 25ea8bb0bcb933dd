"""Nested JSON (SPEC 6.1): Donut/CORD ``gt_parse``, LLM outputs, SROIE-style records.

Mapping rules, from the root of one document's structure:

* a key holding a string, number or list of them is a **non-group** entity (several for a
  list); ``null``, ``""`` and ``[]`` mean absent;
* a key holding an object is **one group** of that type, a key holding a list of objects
  is one group per object;
* inside a group, nested objects and lists of objects are flattened into the same group
  with dotted types (``menu.sub.nm``); a key that already has a dot is the full type;
* an object whose keys are ``value`` and any of ``confidence``, ``bbox``, ``box``,
  ``quad``, ``polygon``, ``page`` is a **scored leaf**, wherever it appears; its location
  (SPEC 6.7, :mod:`kieval_core.read.locations`) is kept beside the entity, never scored;
* confidences may also come in a parallel object of the same shape (``field_confidence``);
* ``{"any_of": [...]}`` lists acceptable ground-truth values of one leaf (SPEC 2e): one
  entity per value, marked as one leaf (:data:`.builder.ALTERNATIVE_SET`).

Containers (where a document's structure sits) follow two rules:

* **records** (JSONL lines, Donut ``metadata.jsonl``, a JSON list of records) have
  container keys at their top level: the id (``doc_id``, ``id``, ``file_name``), the
  structure key (``fields``, ``gt_parse``, ...) and a parallel confidence object. They are
  never content; the load report names the record keys that were not scored;
* **documents** (the values of a one-object container ``{doc_id: document}``, and
  per-document files) are content through and through: ``id`` or ``output`` there is a
  field like any other. A wrapper key is read only when named (``--key``) or when every
  document has exactly that one structure key, and the load report says so.

Declared metadata keys (``--meta``) are taken out of the record level and the
structure's top level, kept per document and never scored.

One walk per document appends its entities straight to the builder's column lists (no
per-entity tuples); a document that fails half way is taken back out
(:meth:`Columns.truncate`), so a reader can retry it with the stdlib parse (see
:mod:`.jsontext`). The plain structure kept for ANLS* and nTED (scored leaves replaced
by their values) is made by a second walk, only when the builder keeps structures.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePath
from typing import Any

from ...exceptions import KievalInputError
from ..locations import LOCATION_KEYS, BadLocation, LocationProblems, location_of
from .builder import Columns, DatasetBuilder
from .jsontext import JsonNumber, NeedsSourceText, number_text, parse_json, recover_json, scalar_text

#: Keys under which a record holds its structure, tried in this order.
STRUCTURE_KEYS = ("fields", "gt_parse", "parse", "prediction", "predictions", "output")
#: Keys of a record holding confidences parallel to the structure.
CONFIDENCE_KEYS = ("field_confidence", "field_confidences", "confidences", "confidence")
#: Keys that identify a document in a record, tried in this order.
ID_KEYS = ("doc_id", "id", "file_name")
#: Donut's ``metadata.jsonl``: a JSON string (or object) holding ``gt_parse``.
DONUT_KEY = "ground_truth"
_SCORED_LEAF_KEYS = frozenset({"value", "confidence", *LOCATION_KEYS})
#: Deeper structures are refused: no real document needs them, and they cost stack.
MAX_DEPTH = 64
#: At most this many distinct record keys are named in the load report.
_NOTE_KEYS = 12


def is_scored_leaf(node: Any) -> bool:
    """True for ``{"value": ...}`` with, optionally, ``confidence`` and a location.

    >>> is_scored_leaf({"value": "A", "confidence": 0.9}), is_scored_leaf({"nm": "A"})
    (True, False)
    >>> is_scored_leaf({"value": "A", "bbox": [1, 2, 3, 4], "page": 1})
    True
    """
    return (isinstance(node, dict) and "value" in node
            and (len(node) == 1 or (len(node) == 2 and "confidence" in node)
                 or _SCORED_LEAF_KEYS.issuperset(node)))


def is_alternatives(node: Any) -> bool:
    """True for ``{"any_of": [...]}``: several acceptable ground-truth values of one leaf
    (SPEC 2e), a scored leaf, never a group.

    >>> is_alternatives({"any_of": ["01/02/2019", "1 Feb 2019"]}), is_alternatives({"any_of": "x"})
    (True, False)
    """
    return isinstance(node, dict) and len(node) == 1 and isinstance(node.get("any_of"), list)


def is_leaf_object(node: Any) -> bool:
    """An object that is one leaf, not a group: a scored leaf or alternatives."""
    return is_scored_leaf(node) or is_alternatives(node)


_NAN = math.nan


class _Flattener:
    """Walks one document's structure and appends its entities to ``columns``."""

    def __init__(self, columns: Columns, source: str, doc_id: str, aliases: Mapping[str, str],
                 types: dict[tuple[str, str], str], problems: LocationProblems) -> None:
        self.source = source
        self.problems = problems
        self.doc_id = doc_id
        self.aliases = aliases
        self.types = types
        self.group_counts: dict[str, int] = {}
        self.columns = columns
        self.n_values = columns.value.__len__

    def fail(self, problem: str) -> KievalInputError:
        return KievalInputError(self.source, f"document {self.doc_id!r}", problem)

    def emit(self, group_type: str, group: int, entity_type: str, value: str, confidence: float) -> None:
        columns = self.columns
        columns.group_type.append(group_type)
        columns.group_key.append(group)
        columns.entity_type.append(entity_type)
        columns.value.append(value)
        columns.confidence.append(confidence)

    def confidence(self, raw: Any, entity_type: str) -> float:
        if type(raw) is float and 0.0 <= raw <= 1.0:
            return raw
        if raw is None or isinstance(raw, (dict, list)):
            return _NAN
        if isinstance(raw, bool) or not isinstance(raw, (JsonNumber, int, float)):
            raise self.fail(f"confidence of {entity_type!r} is {raw!r}, not a number")
        conf = float(raw)
        if not 0.0 <= conf <= 1.0:  # also rejects NaN
            raise self.fail(f"confidence of {entity_type!r} is {raw}, outside [0, 1]")
        return conf

    def alternatives(self, node: dict, conf: Any, group_type: str, group: int, entity_type: str) -> None:
        """``{"any_of": [...]}``: one entity per acceptable value, marked as one leaf."""
        first = self.n_values()
        for item in node["any_of"]:
            if isinstance(item, (dict, list)):
                raise self.fail(f"an alternative of {entity_type!r} is a {type(item).__name__}, not text")
            self.leaf(item, conf, group_type, group, entity_type)
        if self.n_values() - first > 1:
            for row in range(first, self.n_values()):
                self.columns.alternatives[row] = first

    def leaf(self, node: Any, conf: Any, group_type: str, group: int, entity_type: str) -> None:
        """A scalar or scored leaf (a scored leaf may hold a list of values)."""
        if is_alternatives(node):
            self.alternatives(node, conf, group_type, group, entity_type)
            return
        if is_scored_leaf(node):
            if len(node) > 1 + ("confidence" in node):
                self.located_leaf(node, conf, group_type, group, entity_type)
                return
            conf = node.get("confidence", conf)
            node = node["value"]
            if type(node) is str and type(conf) is float and 0.0 <= conf <= 1.0:  # the usual scored leaf
                if node.strip():
                    self.emit(group_type, group, entity_type, node, conf)
                return
            if isinstance(node, list):
                for item in node:
                    self.leaf(item, conf, group_type, group, entity_type)
                return
        confidence = self.confidence(conf, entity_type)
        if isinstance(node, (dict, list)):
            raise self.fail(f"value of {entity_type!r} is a {type(node).__name__}, not text")
        text = node if type(node) is str and node.strip() else scalar_text(node)
        if text is not None:
            self.emit(group_type, group, entity_type, text, confidence)

    def located_leaf(self, node: dict, conf: Any, group_type: str, group: int, entity_type: str) -> None:
        """A scored leaf with a location: every value it holds gets the location."""
        try:
            location = location_of(node)
        except BadLocation as exc:
            self.problems.add(self.doc_id, entity_type, str(exc))
            location = None
        before = self.n_values()
        self.leaf({k: v for k, v in node.items() if k not in LOCATION_KEYS}, conf, group_type, group,
                  entity_type)
        if location is not None:
            for row in range(before, self.n_values()):
                self.columns.locations[row] = location

    def entity_type(self, prefix: str, key: str) -> str:
        """The dotted type of ``key`` under ``prefix``, aliases applied (cached)."""
        known = self.types.get((prefix, key))
        if known is None:
            renamed = self.aliases.get(key, key)
            full = renamed if "." in renamed or not prefix else f"{prefix}.{renamed}"
            known = self.types[prefix, key] = self.aliases.get(full, full)
        return known

    def members(self, node: dict, conf: Any, group_type: str, group: int, prefix: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(f"structure nested deeper than {MAX_DEPTH} levels, the limit of nested JSON "
                            "(flatten it, or write a long table)")
        for key, child in node.items():
            etype = self.entity_type(prefix, key)
            if conf is None and type(child) is str:  # the usual leaf: text without confidence
                if child.strip():
                    self.emit(group_type, group, etype, child, _NAN)
            elif not self.scored(child, group_type, group, etype):
                self.member(child, _child(conf, key), group_type, group, etype, depth)

    def scored(self, child: Any, group_type: str, group: int, etype: str) -> bool:
        """The usual scored leaf, ``{"value": text, "confidence": number in [0, 1]}``, added
        as :meth:`leaf` adds it (its own confidence wins); False for anything else."""
        if type(child) is not dict or len(child) != 2:
            return False
        value, conf = child.get("value"), child.get("confidence")
        if type(value) is not str or type(conf) is not float or not 0.0 <= conf <= 1.0:
            return False
        if value.strip():
            self.emit(group_type, group, etype, value, conf)
        return True

    def member(self, child: Any, conf: Any, group_type: str, group: int, etype: str, depth: int) -> None:
        if isinstance(child, dict) and not is_leaf_object(child):
            self.members(child, conf, group_type, group, etype, depth + 1)
        elif isinstance(child, list):
            for i, item in enumerate(child):
                self.member(item, _child(conf, i), group_type, group, etype, depth + 1)
        else:
            self.leaf(child, conf, group_type, group, etype)

    def root(self, structure: Any, conf: Any) -> None:
        if not isinstance(structure, dict):
            kind = "null" if structure is None else type(structure).__name__
            raise self.fail(f"the structure must be a JSON object, got {kind}")
        for key, child in structure.items():
            name = self.entity_type("", key)
            if self.scored(child, "", -1, name):
                continue
            child_conf = _child(conf, key)
            if isinstance(child, dict) and not is_leaf_object(child):
                self.group(child, child_conf, name)
            elif isinstance(child, list):
                for i, item in enumerate(child):
                    item_conf = _child(child_conf, i)
                    if isinstance(item, dict) and not is_leaf_object(item):
                        self.group(item, item_conf, name)
                    elif isinstance(item, list):
                        raise self.fail(f"{key!r} holds a list inside a list")
                    else:
                        self.leaf(item, item_conf, "", -1, name)
            else:
                self.leaf(child, child_conf, "", -1, name)

    def group(self, node: dict, conf: Any, group_type: str) -> None:
        before = self.n_values()
        index = self.group_counts.get(group_type, 0)
        self.members(node, conf, group_type, index, group_type, 1)
        if self.n_values() > before:  # empty groups are dropped (SPEC 3.2)
            self.group_counts[group_type] = index + 1


def _child(conf: Any, key: Any) -> Any:
    """The confidence node parallel to ``key``; a number applies to everything below."""
    if isinstance(conf, dict) and not is_scored_leaf(conf):
        return conf.get(key)
    if isinstance(conf, list):
        return conf[key] if isinstance(key, int) and key < len(conf) else None
    return conf


def flatten_into(
    columns: Columns,
    structure: Any,
    *,
    source: str,
    doc_id: str,
    confidences: Any = None,
    aliases: Mapping[str, str] | None = None,
    types: dict[tuple[str, str], str] | None = None,
    problems: LocationProblems | None = None,
) -> None:
    """Append one document's entities to ``columns``; on an error nothing is left behind.

    ``types`` caches entity types across documents (it must belong to one alias map);
    ``problems`` gathers the boxes that could not be read.
    """
    start = len(columns)
    flattener = _Flattener(columns, source, doc_id, aliases or {}, {} if types is None else types,
                           LocationProblems() if problems is None else problems)
    try:
        flattener.root(structure, confidences)
    except RecursionError:
        columns.truncate(start)
        raise flattener.fail("structure nested too deeply") from None
    except BaseException:
        columns.truncate(start)
        raise


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
    columns = Columns()
    flatten_into(columns, structure, source=source, doc_id=doc_id, confidences=confidences, aliases=aliases)
    return list(zip(*columns.lists(), strict=True)), plain_structure(structure)


def plain_structure(node: Any) -> Any:
    """The structure as uploaded with scored leaves replaced by their values, numbers as
    ``json.load`` gives them (:func:`reference_numbers`).

    >>> plain_structure({"a": [{"value": 5, "confidence": 0.8}], "b": {"c": "x"}})
    {'a': [5], 'b': {'c': 'x'}}
    """
    if is_scored_leaf(node):
        return reference_numbers(node["value"])
    if is_alternatives(node):  # ANLS*'s own form of alternatives
        return tuple(plain_structure(item) for item in node["any_of"])
    if isinstance(node, dict):
        return {key: plain_structure(child) for key, child in node.items()}
    if isinstance(node, list):
        return [plain_structure(item) for item in node]
    return reference_numbers(node)


def reference_numbers(node: Any) -> Any:
    """Numbers as ``json.load`` reads them, all the way down: :class:`JsonNumber` text
    becomes ``int`` or ``float`` (``1.50`` -> ``1.5``), the fast parser's numbers stay. The
    structures kept for ANLS* and nTED hold these, so the scores equal the reference
    packages on the same files (SPEC 5); entity values keep the JSON text (SPEC 1).

    >>> reference_numbers({"tax": JsonNumber("1.50"), "n": [JsonNumber("30000"), "7"]})
    {'tax': 1.5, 'n': [30000, '7']}
    """
    if isinstance(node, dict):
        return {key: reference_numbers(child) for key, child in node.items()}
    if isinstance(node, list):
        return [reference_numbers(item) for item in node]
    if type(node) is JsonNumber:
        if not _JSON_INT.fullmatch(node):
            return float(node)
        try:
            return int(node)
        except ValueError:  # past Python's digit limit json.load fails too: keep the text
            return node
    return node


#: A JSON number without fraction or exponent: ``json.load`` makes it an ``int``.
_JSON_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")


def text_numbers(node: Any) -> Any:
    """Numbers of the fast parser as :class:`JsonNumber` text, all the way down (a float
    raises :class:`NeedsSourceText`); the stdlib parse's structures come back equal."""
    if isinstance(node, dict):
        return {key: text_numbers(child) for key, child in node.items()}
    if isinstance(node, list):
        return [text_numbers(item) for item in node]
    if type(node) in (int, float):
        return JsonNumber(number_text(node))
    return node


def doc_id_of(record: dict, source: str, where: str) -> tuple[str, str]:
    """The document id of a record and the key it came from (``doc_id``, ``id`` or the
    stem of ``file_name``)."""
    for key in ID_KEYS:
        value = record.get(key)
        if type(value) is float:
            raise NeedsSourceText(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return (PurePath(str(value)).stem if key == "file_name" else str(value)), key
    msg = f"no document id: the record needs one of the keys {', '.join(ID_KEYS)}"
    raise KievalInputError(source, where, msg)


def meta_text(value: Any) -> str | None:
    """A metadata value as text: scalars as written, objects and lists as compact JSON.

    >>> meta_text(JsonNumber("3")), meta_text({"a": "1"}), meta_text(None)
    ('3', '{"a":"1"}', None)
    """
    if isinstance(value, (dict, list)):
        return json.dumps(text_numbers(value), ensure_ascii=False, separators=(",", ":"))
    return scalar_text(value)


class NestedReader:
    """Reads records and documents of nested JSON into a builder.

    Parameters
    ----------
    builder : DatasetBuilder
        Where the documents go.
    key : str or None
        The structure key named by the user (``--key``); auto-detected when None.
    aliases : mapping
        Key renames.
    meta_keys : tuple of str
        Declared metadata keys.
    """

    def __init__(self, builder: DatasetBuilder, key: str | None, aliases: Mapping[str, str],
                 meta_keys: tuple[str, ...]) -> None:
        self.builder = builder
        self.key = key
        self.aliases = dict(aliases)
        self.meta_keys = meta_keys
        self.structure_keys: set[str] = set()
        self.left_out: dict[str, None] = {}
        self.types: dict[tuple[str, str], str] = {}  # entity types by (prefix, key)

    @property
    def source(self) -> str:
        return self.builder.source

    # --- records: container keys at the top level ---------------------------------------

    def add_record(self, record: dict, where: str, source: str | None = None) -> None:
        """One JSONL line, Donut record or element of a JSON list of records."""
        source = source or self.source
        doc_id, id_key = doc_id_of(record, source, where)
        meta = self.take_meta(record)
        structure, confidences, used = self.structure_of(record, source, where)
        if used is None:
            skipped = [k for k in record if (k in ID_KEYS and k != id_key)
                       or (confidences is not None and k in CONFIDENCE_KEYS)]
        else:
            skipped = [k for k in record if k not in ID_KEYS and k != used and k not in self.meta_keys
                       and not (confidences is not None and k in CONFIDENCE_KEYS)]
        self._add(doc_id, where, structure, confidences, meta, source)
        if used is not None:
            self.structure_keys.add(used)
        else:
            self.builder.record_keys.update(k for k, v in structure.items()
                                            if v is not None and not isinstance(v, (dict, list)))
        for k in skipped:
            if len(self.left_out) < _NOTE_KEYS:
                self.left_out[k] = None

    def structure_of(self, record: dict, source: str, where: str) -> tuple[Any, Any, str | None]:
        """(structure, parallel confidences, structure key or None when the record itself)."""
        confidences = next((record[k] for k in CONFIDENCE_KEYS if isinstance(record.get(k), dict)), None)
        if self.key is not None:
            if self.key not in record:
                raise KievalInputError(source, where, f"the record has no key {self.key!r}")
            return self._unwrap(record[self.key], self.key, source, where), confidences, self.key
        for candidate in (*STRUCTURE_KEYS, DONUT_KEY):
            if candidate in record:
                return self._unwrap(record[candidate], candidate, source, where), confidences, candidate
        skip = set(ID_KEYS) | set(self.meta_keys)
        if confidences is not None:
            skip |= set(CONFIDENCE_KEYS)
        return {k: v for k, v in record.items() if k not in skip}, confidences, None

    @staticmethod
    def _unwrap(value: Any, key: str, source: str, where: str) -> Any:
        if key != DONUT_KEY:
            return value
        if isinstance(value, str):
            value = parse_json(value, source, f"{where}, {DONUT_KEY}")
        if isinstance(value, dict) and "gt_parse" in value:
            return value["gt_parse"]
        return value

    # --- documents: every key is content ----------------------------------------------

    def add_documents(self, documents: Iterable[tuple[str, str, Any, str, Callable[[], Any] | None]],
                      unwrap: bool = True) -> None:
        """Documents of a one-object container or per-document files:
        ``(doc_id, where, document, source, slow)``, where ``slow()`` gives the document
        again from the stdlib parser (None when it came from it). A wrapper key is
        unwrapped only when named or (``unwrap``) common to every document (then the load
        report says so)."""
        documents = list(documents)
        wrapper = self.key or (common_wrapper([d for _, _, d, _, _ in documents]) if unwrap else None)
        if wrapper is not None and self.key is None:
            self.builder.note(f"every document holds only the key {wrapper!r}: its content was read "
                              "as the document (name another key with --key)")
        for doc_id, where, document, source, slow in documents:
            try:
                self._add_document(doc_id, where, document, source, wrapper)
            except (NeedsSourceText, KievalInputError):
                if slow is None:
                    raise
                self._add_document(doc_id, where, slow(), source, wrapper)

    def _add_document(self, doc_id: str, where: str, document: Any, source: str, wrapper: str | None) -> None:
        if not isinstance(document, dict):
            kind = "null" if document is None else type(document).__name__
            msg = f"expected a JSON object for document {doc_id!r}, got {kind}"
            raise KievalInputError(source, where if where != doc_id else None, msg)
        meta = self.take_meta(document)
        if wrapper is None:
            content = {k: v for k, v in document.items() if k not in self.meta_keys}
            self._add(doc_id, where, content, None, meta, source)
            return
        if wrapper not in document:
            raise KievalInputError(source, where, f"the document has no key {wrapper!r}")
        confidences = next((document[k] for k in CONFIDENCE_KEYS if isinstance(document.get(k), dict)), None)
        structure = self._unwrap(document[wrapper], wrapper, source, where)
        self._add(doc_id, where, structure, confidences, meta, source)

    # --- shared -------------------------------------------------------------------------

    def take_meta(self, node: dict) -> dict[str, str]:
        return {k: text for k in self.meta_keys if k in node and (text := meta_text(node[k])) is not None}

    def _add(self, doc_id: str, where: str, structure: Any, confidences: Any, meta: dict[str, str],
             source: str) -> None:
        """Flatten one document into the builder; when it raises, nothing was added."""
        warning = None
        if isinstance(structure, str):  # an LLM's raw answer stored as text
            structure, how = recover_json(structure, source, where)
            warning = f"document {doc_id!r} ({where}): JSON recovered from {how}"
        if isinstance(structure, dict) and self.meta_keys:
            inner = self.take_meta(structure)
            meta = {**inner, **meta}
            structure = {k: v for k, v in structure.items() if k not in self.meta_keys}
        columns = self.builder.columns
        start = len(columns)
        flatten_into(columns, structure, source=source, doc_id=doc_id, confidences=confidences,
                     aliases=self.aliases, types=self.types, problems=self.builder.location_problems)
        try:
            plain = plain_structure(structure) if self.builder.keep_structures else None
            self.builder.commit(doc_id, where, start, plain, meta)
        except BaseException:
            columns.truncate(start)
            raise
        if warning:
            self.builder.warnings.append(warning)

    def finish(self) -> None:
        """Load-report notes: which structure keys were read, which record keys were not."""
        if self.structure_keys:
            how = "named with --key" if self.key else "auto-detected"
            keys = ", ".join(repr(k) for k in sorted(self.structure_keys))
            self.builder.note(f"structure read from the record key {keys} ({how})")
        if self.left_out:
            keys = ", ".join(self.left_out)
            self.builder.note(f"record keys not scored: {keys} (keep them with --meta KEY)")


def common_wrapper(documents: list[Any]) -> str | None:
    """The structure key every document consists of alone, if there is one.

    >>> common_wrapper([{"gt_parse": {"a": "1"}}, {"gt_parse": {}}])
    'gt_parse'
    >>> common_wrapper([{"gt_parse": {"a": "1"}}, {"total": "5"}]) is None
    True
    """
    keys = {tuple(d) if isinstance(d, dict) else None for d in documents}
    if len(keys) != 1:
        return None
    (only,) = keys
    if only is None or len(only) != 1 or only[0] not in (*STRUCTURE_KEYS, DONUT_KEY):
        return None
    return only[0]
