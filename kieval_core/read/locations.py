"""Where an entity sits on the page (SPEC 6.7): a page number and an axis-aligned box.

Locations are never scored. A loader that finds them adds the columns
:data:`LOCATION_COLUMNS` to the entity table (``page`` 1-based, ``x0, y0, x1, y1``;
NaN where an entity has none); every figure reads only the columns of
:data:`~kieval_core.read.dataset.ENTITY_COLUMNS`, so the same data with and without boxes gives
the same report. Boxes are in pixels of the page image, or fractions of the page when
every coordinate of a document is <= 1.

A box may be written ``[x0, y0, x1, y1]`` (``bbox``, ``box``), as a quadrilateral
(``quad``: CORD's ``{"x1": .., "y1": .., ..., "x4": .., "y4": ..}`` or four points) or as a
polygon (a list of ``[x, y]`` points, or a flat list ``[x, y, x, y, ...]``); a quad or a
polygon becomes its bounding box. A box that cannot be read (not numbers, ``x1 < x0``,
``y1 < y0``, a page below 1) is dropped with one warning per file naming the first
document; the entity itself is scored as usual.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

#: The location columns of an entity table (absent when the input has no location at all).
LOCATION_COLUMNS = ("page", "x0", "y0", "x1", "y1")
#: Keys of a scored leaf that hold a box, in the order they are looked up.
BOX_KEYS = ("bbox", "box", "quad", "polygon")
#: A scored leaf may carry these keys beside ``value`` and ``confidence``.
LOCATION_KEYS = frozenset({*BOX_KEYS, "page"})
#: An entity's location: (page, x0, y0, x1, y1); NaN for what is unknown.
Location = tuple[float, float, float, float, float]
NO_BOX = (math.nan, math.nan, math.nan, math.nan)


class BadLocation(ValueError):
    """A box or page that cannot be read; the message says what is wrong."""


def _number(raw: Any) -> float:
    if isinstance(raw, bool):
        raise BadLocation(f"{raw!r} is not a number")
    try:
        value = float(str(raw)) if not isinstance(raw, (int, float)) else float(raw)
    except (TypeError, ValueError):
        raise BadLocation(f"{raw!r} is not a number") from None
    if not math.isfinite(value):
        raise BadLocation(f"{raw!r} is not a finite number")
    return value


def _points(raw: Any) -> list[tuple[float, float]]:
    """Points of a quad or polygon: a CORD quad dict, ``[[x, y], ...]`` or ``[x, y, x, y, ...]``."""
    if isinstance(raw, dict):
        pairs = [(raw.get(f"x{i}"), raw.get(f"y{i}")) for i in range(1, 5)]
        if any(x is None or y is None for x, y in pairs):
            raise BadLocation("a quad needs x1, y1 ... x4, y4")
        return [(_number(x), _number(y)) for x, y in pairs]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise BadLocation(f"{_short(raw)} is not a list of points")
    if all(isinstance(p, (list, tuple)) for p in raw):
        if any(len(p) != 2 for p in raw):
            raise BadLocation("every point needs two coordinates")
        return [(_number(x), _number(y)) for x, y in raw]
    if len(raw) % 2:
        raise BadLocation(f"{len(raw)} coordinates: a polygon needs pairs")
    return [(_number(raw[i]), _number(raw[i + 1])) for i in range(0, len(raw), 2)]


def box_of(raw: Any, key: str = "bbox") -> tuple[float, float, float, float]:
    """``(x0, y0, x1, y1)`` of a box, quad or polygon written under ``key``.

    >>> box_of([10, 20, 30, 40])
    (10.0, 20.0, 30.0, 40.0)
    >>> box_of({"x1": 5, "y1": 1, "x2": 9, "y2": 2, "x3": 9, "y3": 7, "x4": 4, "y4": 6}, "quad")
    (4.0, 1.0, 9.0, 7.0)
    >>> box_of([[0, 0], [4, 1], [3, 5]], "polygon")
    (0.0, 0.0, 4.0, 5.0)
    >>> box_of([30, 20, 10, 40])
    Traceback (most recent call last):
    kieval_core.read.locations.BadLocation: x1 < x0 in [30, 20, 10, 40]
    """
    if key in ("bbox", "box") and not (isinstance(raw, (list, tuple)) and raw
                                       and isinstance(raw[0], (list, tuple))):
        if not isinstance(raw, (list, tuple)) or len(raw) != 4:
            raise BadLocation(f"{_short(raw)} is not [x0, y0, x1, y1]")
        x0, y0, x1, y1 = (_number(v) for v in raw)
        if x1 < x0:
            raise BadLocation(f"x1 < x0 in {_short(raw)}")
        if y1 < y0:
            raise BadLocation(f"y1 < y0 in {_short(raw)}")
        return x0, y0, x1, y1
    points = _points(raw)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def page_of(raw: Any, first: int = 1) -> float:
    """A page number, 1-based (``first=0`` reads a 0-based page, as DocILE writes it).

    >>> page_of(2), page_of(0, first=0)
    (2.0, 1.0)
    """
    page = _number(raw)
    if page != int(page) or page < first:
        raise BadLocation(f"page {raw!r} is not a whole number >= {first}")
    return page - first + 1


def location_of(node: dict, first_page: int = 1) -> Location | None:
    """The location a scored leaf (or any record) carries, None when it has none.

    >>> location_of({"value": "5", "bbox": [1, 2, 3, 4], "page": 2})
    (2.0, 1.0, 2.0, 3.0, 4.0)
    >>> location_of({"value": "5"}) is None
    True
    """
    key = next((k for k in BOX_KEYS if node.get(k) is not None), None)
    has_page = node.get("page") is not None
    if key is None and not has_page:
        return None
    box = box_of(node[key], key) if key is not None else NO_BOX
    page = page_of(node["page"], first_page) if has_page else 1.0
    return (page, *box)


def union(boxes: Iterable[tuple[float, float, float, float]]) -> tuple[float, float, float, float] | None:
    """The smallest box holding every box (None for none): a CORD entity's box from its words.

    >>> union([(0, 0, 2, 2), (5, 1, 6, 9)])
    (0, 0, 6, 9)
    """
    boxes = list(boxes)
    if not boxes:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes))


def _short(raw: Any, limit: int = 60) -> str:
    text = repr(raw) if not isinstance(raw, list) else "[" + ", ".join(map(str, raw)) + "]"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LocationProblems:
    """Boxes dropped while reading one file: counted, the first one named."""

    def __init__(self) -> None:
        self.count = 0
        self.first: tuple[str, str, str] | None = None

    def add(self, doc_id: str, entity_type: str, problem: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = (doc_id, entity_type, problem)

    def warning(self, source: str) -> str | None:
        if self.first is None:
            return None
        doc_id, entity_type, problem = self.first
        more = f" ({self.count - 1:,} more in this file)" if self.count > 1 else ""
        return (f"{source}: document {doc_id!r}: the box of {entity_type!r} was dropped: {problem}{more}; "
                "the entity is scored without a location")


def box_list(boxes: np.ndarray) -> list[list[float] | None]:
    """Rows ``x0, y0, x1, y1`` as ``[x0, y0, x1, y1]`` lists (whole numbers as int), None
    where a row has no box: the error export's ``gt_box`` and ``pred_box``.

    >>> box_list(np.array([[1.0, 2.0, 3.5, 4.0], [np.nan] * 4]))
    [[1, 2, 3.5, 4], None]
    """
    out: list[list[float] | None] = []
    for row in boxes.tolist():
        if any(math.isnan(v) for v in row):
            out.append(None)
        else:
            out.append([int(v) if v.is_integer() else v for v in row])
    return out


def has_locations(entities: pd.DataFrame) -> bool:
    """True when the entity table carries location columns."""
    return all(c in entities.columns for c in LOCATION_COLUMNS)
