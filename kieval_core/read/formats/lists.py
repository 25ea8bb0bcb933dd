"""Parallel lists (SPEC 6.4): per document, fields holding ``|``-separated lists.

The declared *related* fields are parallel: row i of them forms group i of type
``row`` (one bank-statement transaction: date, description, amount). Every other field
is non-group, one entity per list item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import zip_longest
from typing import Any

from ...exceptions import KievalInputError
from .builder import Row
from .jsontext import number_text

Cell = str | None
#: Group type of the rows.
ROW = "row"


def split_parallel_lists(
    record: Mapping[str, Any], fields: Sequence[str], sep: str = "|"
) -> dict[str, list[Cell]]:
    """Read the given fields of a record as lists, keeping empty slots as ``None``.

    A field may hold a ``sep``-separated string or a JSON list (of strings, numbers or
    ``None``); items are stripped and empty items become ``None``. A missing field (or
    ``None``) is an empty list.

    Parameters
    ----------
    record : mapping
        One document's raw fields.
    fields : sequence of str
        The fields to read.
    sep : str, default "|"
        Item separator inside string fields.

    Returns
    -------
    dict of str to list of (str or None)

    Raises
    ------
    ValueError
        When a field holds anything else; the message names the field.

    Examples
    --------
    >>> split_parallel_lists({"date": "01/02| 03/02 |", "amount": [50, None]},
    ...                      ["date", "amount", "note"])
    {'date': ['01/02', '03/02', None], 'amount': ['50', None], 'note': []}
    """
    lists: dict[str, list[Cell]] = {}
    for field in fields:
        value = record.get(field)
        if value is None:
            items: list[Any] = []
        elif isinstance(value, str):
            items = value.split(sep)
        elif isinstance(value, list):
            items = value
        else:
            msg = f"field {field!r} must hold a {sep!r}-separated string or a list, got {value!r}"
            raise ValueError(msg)
        lists[field] = [_cell(item, field) for item in items]
    return lists


def parse_parallel_lists(
    record: Mapping[str, Any], related_fields: Sequence[str], sep: str = "|"
) -> list[dict[str, str]]:
    """Rows of a parallel-list record: row i holds the i-th value of each related field.

    Absent cells are left out of a row and rows without any value are dropped, so the
    result maps directly onto groups (SPEC 6.4).

    Parameters
    ----------
    record : mapping
        One document's raw fields.
    related_fields : sequence of str
        The parallel fields whose i-th values form row i.
    sep : str, default "|"
        Item separator inside string fields.

    Returns
    -------
    list of dict
        One ``{field: value}`` per non-empty row, in order.

    Raises
    ------
    ValueError
        As :func:`split_parallel_lists`.

    Examples
    --------
    >>> parse_parallel_lists({"desc": "EFTPOS|ATM", "amount": "$50|$100|"},
    ...                      ["desc", "amount"])
    [{'desc': 'EFTPOS', 'amount': '$50'}, {'desc': 'ATM', 'amount': '$100'}]
    """
    lists = split_parallel_lists(record, related_fields, sep)
    rows = [
        {field: cell for field, cell in zip(related_fields, row, strict=True) if cell is not None}
        for row in zip_longest(*lists.values())
    ]
    return [row for row in rows if row]


def _cell(item: Any, field: str) -> Cell:
    if item is None:
        return None
    if isinstance(item, bool) or not isinstance(item, str | int | float):
        msg = f"field {field!r} holds {item!r}; list items must be strings, numbers or null"
        raise ValueError(msg)
    text = number_text(item).strip()
    return text or None


def list_rows(structure: Any, related_fields: Sequence[str], sep: str, source: str,
              where: str) -> list[Row]:
    """The entities of one parallel-list document."""
    if not isinstance(structure, dict):
        raise KievalInputError(source, where, "expected an object of fields")
    try:
        rows: list[Row] = [(ROW, str(i), field, value, float("nan"))
                           for i, row in enumerate(parse_parallel_lists(structure, related_fields, sep))
                           for field, value in row.items()]
        others = [k for k in structure if k not in related_fields]
        for field, items in split_parallel_lists(structure, others, sep).items():
            rows += [("", "", field, item, float("nan")) for item in items if item is not None]
    except ValueError as exc:
        raise KievalInputError(source, where, str(exc)) from None
    return rows
