"""Form and invoice annotations with boxes (SPEC 6.7): FUNSD and DocILE, one JSON per document.

**FUNSD** (``{"form": [{"id", "label", "text", "box", "linking"}, ...]}``): every item with
text is an entity whose type is its label (``question``, ``answer``, ``header``,
``other``) and whose box is ``box``. A question and the answers it links to form one
group of type ``qa`` (linked items joined transitively; their types ``qa.question`` and
``qa.answer``, as nested JSON names a group's fields); headers and unlinked items are
non-group.

**DocILE** (``{"field_extractions": [...], "line_item_extractions": [...]}``): a field
extraction is a non-group entity of type ``fieldtype``; line-item extractions with the
same ``line_item_id`` form one group of type ``line_item``. ``bbox`` is in fractions of
the page and ``page`` is 0-based (read as page 1, 2, ...). ``line_item_headers`` are
column titles, not values, and are not scored (the load report says so).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...exceptions import KievalInputError
from ..locations import BadLocation, Location, box_of, page_of
from .builder import DatasetBuilder
from .jsontext import decode_text, parse_json, scalar_text

_NAN = float("nan")
#: The key that tells each format apart, in a document's top-level object.
FUNSD_KEY = "form"
DOCILE_KEYS = ("field_extractions", "line_item_extractions")


def form_format(content: Any) -> str | None:
    """``funsd`` or ``docile`` when a parsed document looks like one, else None.

    >>> form_format({"form": []}), form_format({"field_extractions": []}), form_format({"a": 1})
    ('funsd', 'docile', None)
    """
    if not isinstance(content, dict):
        return None
    if isinstance(content.get(FUNSD_KEY), list):
        return "funsd"
    if any(isinstance(content.get(k), list) for k in DOCILE_KEYS):
        return "docile"
    return None


def _items(content: Any, key: str, source: str) -> list[dict]:
    items = content.get(key, []) if isinstance(content, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise KievalInputError(source, None, f"{key!r} must be a list of objects")
    return items


def _location(item: dict, key: str, builder: DatasetBuilder, doc_id: str, entity_type: str,
              first_page: int) -> Location | None:
    if item.get(key) is None:
        return None
    try:
        page = page_of(item["page"], first_page) if item.get("page") is not None else 1.0
        return (page, *box_of(item[key], key))
    except BadLocation as exc:
        builder.location_problems.add(doc_id, entity_type, str(exc))
        return None


def add_funsd(content: Any, doc_id: str, where: str, source: str, builder: DatasetBuilder) -> None:
    """One FUNSD document."""
    items = _items(content, FUNSD_KEY, source)
    group_of = _question_answer_groups(items)
    sizes = Counter(group_of.values())  # only question-answer links join items
    rows, locations = [], {}
    for item in items:
        text = scalar_text(item.get("text"))
        label = scalar_text(item.get("label")) or "other"
        if text is None:
            continue
        known = item.get("id") in group_of
        key = group_of[item["id"]] if known else None
        group = ("qa", str(key)) if known and sizes[key] > 1 else ("", "")
        entity_type = f"qa.{label}" if group[0] else label
        location = _location(item, "box", builder, doc_id, entity_type, 1)
        if location is not None:
            locations[len(rows)] = location
        rows.append((*group, entity_type, text, _NAN))
    builder.add(doc_id, where, rows, None, None, locations)


def _question_answer_groups(items: list) -> dict:
    """Each FUNSD item id -> the id of its group's root, items joined by their
    question-answer links (union-find)."""
    by_id = {item.get("id"): item for item in items}
    parent = {i: i for i in by_id}

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for item in items:
        for link in item.get("linking") or []:
            ends = [by_id.get(e) for e in link] if isinstance(link, list) and len(link) == 2 else []
            if len(ends) == 2 and all(e is not None for e in ends) and \
                    {ends[0].get("label"), ends[1].get("label")} == {"question", "answer"}:
                parent[root(link[0])] = root(link[1])
    return {i: root(i) for i in by_id}


def add_docile(content: Any, doc_id: str, where: str, source: str, builder: DatasetBuilder) -> None:
    """One DocILE document."""
    rows, locations = [], {}
    for key, group_type in (("field_extractions", ""), ("line_item_extractions", "line_item")):
        for item in _items(content, key, source):
            text = scalar_text(item.get("text"))
            entity_type = scalar_text(item.get("fieldtype"))
            if text is None:
                continue
            if entity_type is None:
                raise KievalInputError(source, where, f"an item of {key!r} has no fieldtype")
            group = str(item.get("line_item_id", "")) if group_type else ""
            location = _location(item, "bbox", builder, doc_id, entity_type, 0)
            if location is not None:
                locations[len(rows)] = location
            rows.append((group_type, group, entity_type, text, _NAN))
    if isinstance(content, dict) and content.get("line_item_headers"):
        builder.note("DocILE line_item_headers are column titles: not scored")
    builder.add(doc_id, where, rows, None, None, locations)


ADD_DOCUMENT = {"funsd": add_funsd, "docile": add_docile}


def read_form_file(data: bytes, source: str, builder: DatasetBuilder, fmt: str, doc_id: str) -> None:
    """One annotation file of ``fmt`` (``funsd`` or ``docile``); doc_id = the file stem."""
    content = parse_json(decode_text(data, source), source)
    if form_format(content) != fmt:
        raise KievalInputError(source, None, f"not a {fmt} annotation file")
    ADD_DOCUMENT[fmt](content, doc_id, doc_id, source, builder)


def sniff_form(data: bytes) -> str | None:
    """``funsd`` or ``docile`` for a JSON file that starts like one (a cheap look at its head)."""
    head = bytes(data[:4096]).lstrip()
    if not head.startswith(b"{"):
        return None
    if b'"form"' in head:
        return "funsd"
    if any(f'"{k}"'.encode() in head for k in DOCILE_KEYS):
        return "docile"
    return None
