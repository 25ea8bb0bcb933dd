"""The official KIEval tool's CSV files (SPEC 6.6): one file per document.

Blocks are separated by blank lines. A **group block** starts with an index line, then a
tab-separated header of entity types, then one row per group (the block is one group
type). A **non-group block** is ``type<TAB>value`` lines. ``<empty>`` means absent and
``||`` joins several values of one cell.

Unlike the official parser, the first line of a non-group block is kept and group
indices of 10 and more are read whole.
"""

from __future__ import annotations

import re

from ..errors import KievalInputError

EMPTY_TOKEN = "<empty>"
VALUE_DELIMITER = "||"
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


def kieval_csv_entities(text: str, source: str) -> list[tuple[str, str, str, str]]:
    """Entities of one document as ``(group_type, group_key, entity_type, value)``.

    >>> kieval_csv_entities("0\\nmenu.nm\\tmenu.price\\nTea\\t5||6\\n<empty>\\t<empty>\\n\\n"
    ...                     "store\\tACME", "0.csv")
    ... # doctest: +NORMALIZE_WHITESPACE
    [('menu', '0:0', 'menu.nm', 'Tea'), ('menu', '0:0', 'menu.price', '5'),
     ('menu', '0:0', 'menu.price', '6'), ('', '', 'store', 'ACME')]
    """
    text = text.replace("\r\n", "\n").strip("\n")
    rows: list[tuple[str, str, str, str]] = []
    line_no = 1
    for block in _BLANK_LINES.split(text) if text else []:
        lines = block.split("\n")
        if lines[0].strip().isdigit():
            rows += _group_block(lines, source, line_no)
        else:
            rows += _non_group_block(lines, source, line_no)
        line_no += len(lines) + 1
    return rows


def _values(cell: str) -> list[str]:
    return [v for v in cell.split(VALUE_DELIMITER) if v != EMPTY_TOKEN and v.strip()]


def _group_block(lines: list[str], source: str, first: int) -> list[tuple[str, str, str, str]]:
    index = lines[0].strip()
    if len(lines) < 2:
        raise KievalInputError(source, f"line {first}", f"group block {index} has no header")
    header = lines[1].split("\t")
    prefixes = {h.split(".", 1)[0] for h in header}
    group_type = prefixes.pop() if len(prefixes) == 1 else f"block{index}"
    rows = []
    for offset, line in enumerate(lines[2:]):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            msg = f"{len(cells)} cells where the header has {len(header)}"
            raise KievalInputError(source, f"line {first + 2 + offset}", msg)
        key = f"{index}:{offset}"
        rows += [(group_type, key, t, v)
                 for t, cell in zip(header, cells, strict=True) for v in _values(cell)]
    return rows


def _non_group_block(lines: list[str], source: str, first: int) -> list[tuple[str, str, str, str]]:
    rows = []
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        if "\t" not in line:
            raise KievalInputError(source, f"line {first + offset}", "expected 'type<TAB>value'")
        entity_type, cell = line.split("\t", 1)
        rows += [("", "", entity_type, v) for v in _values(cell)]
    return rows
