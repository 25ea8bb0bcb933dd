"""CORD's original annotations (SPEC 6.3): ``valid_line`` entries with category and group.

Each entry of ``valid_line`` is one entity: its type is ``category`` (``menu.nm``), its
group type the category's first component, its group ``group_id``; its value is the
entry's non-key words joined by one space (``is_key`` words such as "TOTAL" are labels,
not values, exactly as CORD's own ``gt_parse`` leaves them out). Its box is the union of
the quads of those words (SPEC 6.7); a quad that cannot be read leaves the entity
without a box.
"""

from __future__ import annotations

from typing import Any

from ...exceptions import KievalInputError
from ..locations import BadLocation, Location, LocationProblems, box_of, union
from .jsontext import number_text


def valid_lines_of(record: dict) -> list | None:
    """The ``valid_line`` list of a record (top level or under ``ground_truth``), if any."""
    if isinstance(record.get("valid_line"), list):
        return record["valid_line"]
    truth = record.get("ground_truth")
    if isinstance(truth, dict) and isinstance(truth.get("valid_line"), list):
        return truth["valid_line"]
    return None


def cord_entities(lines: list[Any], source: str, where: str, problems: LocationProblems | None = None,
                  doc_id: str = "") -> tuple[list[tuple[str, str, str, str]], dict[int, Location]]:
    """Entities of one document as ``(group_type, group_key, entity_type, value)``, and the
    location of each entity whose words carry quads (by row)."""
    rows, locations = [], {}
    for i, line in enumerate(lines):
        if not isinstance(line, dict) or not isinstance(line.get("category"), str):
            raise KievalInputError(source, f"{where}, valid_line[{i}]", "entry has no category")
        words = line.get("words")
        if not isinstance(words, list):
            raise KievalInputError(source, f"{where}, valid_line[{i}]", "entry has no words list")
        value = " ".join(
            number_text(w.get("text", "")) for w in words if isinstance(w, dict) and not _is_key(w)
        ).strip()
        if not value:
            continue
        category = line["category"]
        try:
            box = union(box_of(w["quad"], "quad") for w in words
                        if isinstance(w, dict) and not _is_key(w) and w.get("quad") is not None)
        except BadLocation as exc:
            if problems is not None:
                problems.add(doc_id, category, str(exc))
            box = None
        if box is not None:
            locations[len(rows)] = (1.0, *box)
        rows.append((category.split(".", 1)[0], str(line.get("group_id", "")), category, value))
    return rows, locations


def _is_key(word: dict) -> bool:
    """CORD writes ``is_key`` as 0/1 (numbers keep their JSON text here)."""
    return number_text(word.get("is_key", "0")).strip().lower() not in ("0", "false", "")
