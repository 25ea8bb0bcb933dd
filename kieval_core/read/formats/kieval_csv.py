"""The official KIEval tool's CSV files (SPEC 6.6): one file per document.

Blocks are separated by blank lines. A **group block** starts with an index line, then a
tab-separated header of entity types, then one row per group (the block is one group
type). A **non-group block** is ``type<TAB>value`` lines. ``<empty>`` means absent and
``||`` joins several values of one cell.

Unlike the official parser, the first line of a non-group block is kept and group
indices of 10 and more are read whole.

A directory is read in one pass over all its files (:func:`read_kieval_csv`): their lines
go into one Arrow array, blocks are found with numpy, and cells and ``||`` values are
split by Arrow string kernels; only the few lines per block that open it (index line,
header) are looked at in Python. :func:`kieval_csv_entities` reads one file line by line:
it is the reference the fast path is tested against, and it reads the directory again
when the fast path finds a problem, so every message names the first bad file and line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...exceptions import KievalInputError
from .builder import DatasetBuilder, file_stem
from .jsontext import decode_text

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


# --- the whole directory at once -----------------------------------------------------------

#: Characters ``str.strip`` removes (``str.isspace``), for Arrow's regular expressions.
PY_SPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
            "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
PY_BLANK = f"^[{PY_SPACE}]*$"


class _Fallback(Exception):
    """The fast path met something it leaves to the line-by-line reader (a bad file)."""


def read_kieval_csv(files: Mapping[str, bytes], source: str, builder: DatasetBuilder) -> None:
    """Read a directory of official CSV files (doc_id = file stem) into ``builder``."""
    stems = [file_stem(f) for f in files]
    try:
        frame = _directory_entities(files, source, stems)
    except _Fallback:
        for file_name, data in files.items():
            file_source = f"{source}/{file_name}"
            rows = kieval_csv_entities(decode_text(data, file_source), file_source)
            builder.add(file_stem(file_name), file_name, [(*row, np.nan) for row in rows])
        return
    builder.add_table(frame, stems, dict(zip(stems, files, strict=True)))


def _lines(files: Mapping[str, bytes], source: str) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """Every line of every file (one Arrow array), its file, its position in the file, and
    the position of its file's last line."""
    texts = []
    for file_name, data in files.items():
        try:
            texts.append(decode_text(data, f"{source}/{file_name}").replace("\r\n", "\n").strip("\n"))
        except KievalInputError:
            raise _Fallback from None
    counts = np.array([t.count("\n") + 1 if t else 0 for t in texts], np.int64)
    joined = pa.array(["\n".join(t for t in texts if t)], pa.large_string())
    lines = pc.list_flatten(pc.split_pattern(joined, "\n"))
    if not counts.sum():  # one empty line from the empty join
        lines = lines.slice(0, 0)
    file = np.repeat(np.arange(len(texts)), counts)
    position = np.arange(len(file)) - np.repeat(np.cumsum(counts) - counts, counts)
    return lines, file, position, counts[file] - 1


def _separators(lines: pa.Array, position: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Lines that separate blocks, as ``re.split(r"\\n[ \\t]*\\n")`` finds them: a blank line
    with a line before and after it in its file, except the second, fourth, ... of a run
    (the line break before them was taken by the separator above)."""
    blank = _mask(pc.match_substring_regex(lines, r"^[ \t]*$"))
    eligible = blank & (position > 0) & (position < last)
    starts = eligible & ~np.concatenate([[False], eligible[:-1]])
    run_start = np.maximum.accumulate(np.where(starts, np.arange(len(eligible)), 0))
    return eligible & ((np.arange(len(eligible)) - run_start) % 2 == 0)


def _mask(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False).astype(bool)


def _directory_entities(files: Mapping[str, bytes], source: str, stems: list[str]) -> pd.DataFrame:
    lines, file, position, last = _lines(files, source)
    sep = _separators(lines, position, last)
    block = (np.cumsum(sep | (position == 0)) - 1)[~sep]
    lines, file = lines.filter(pa.array(~sep)), file[~sep]
    first = np.flatnonzero(np.concatenate([[True], block[1:] != block[:-1]])) if len(block) else block
    in_block = np.arange(len(block)) - np.repeat(first, np.diff(np.append(first, len(block))))
    blocks = _blocks(lines, first, block)
    cells, types, line = _cells(lines, block, in_block, blocks)
    values, cell = _values_of(cells)
    line = line[cell]
    grouped = blocks["grouped"].to_numpy(bool)[block[line]]
    index_code, _ = pd.factorize(blocks["index"].to_numpy(object))
    key = index_code[block[line]].astype(np.int64) * (int(in_block.max(initial=0)) + 1) + in_block[line]
    return pd.DataFrame({
        "doc_id": np.array(stems, dtype=object)[file[line]],
        "group_type": blocks["group_type"].to_numpy(object)[block[line]],
        "group_key": np.where(grouped, key, -1),
        "entity_type": types.take(pa.array(cell)).to_pandas(),
        "value": values.to_pandas(),
        "confidence": np.full(len(line), np.nan),
    })


def _blocks(lines: pa.Array, first: np.ndarray, block: np.ndarray) -> pd.DataFrame:
    """Per block (in Python: a few per file): group block or not, its index, group type, header."""
    size = np.bincount(block, minlength=len(first))
    openers = lines.take(pa.array(first)).to_pylist()
    long_enough = np.flatnonzero(size >= 2)
    headers = dict(zip(long_enough.tolist(), lines.take(pa.array(first[long_enough] + 1)).to_pylist(),
                       strict=True))
    rows = []
    for b, opener in enumerate(openers):
        index = opener.strip()
        if not index.isdigit():
            rows.append((False, "", "", []))
        elif size[b] < 2:
            raise _Fallback
        else:
            rows.append((True, index, *_header(headers[b], index)))
    return pd.DataFrame(rows, columns=["grouped", "index", "group_type", "header"])


@functools.lru_cache(maxsize=4096)
def _header(line: str, index: str) -> tuple[str, list[str]]:
    """Group type and entity types of a header line (headers repeat from file to file)."""
    header = line.split("\t")
    prefixes = {h.split(".", 1)[0] for h in header}
    return (prefixes.pop() if len(prefixes) == 1 else f"block{index}"), header


def _cells(lines: pa.Array, block: np.ndarray, in_block: np.ndarray,
           blocks: pd.DataFrame) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Every cell of the group rows and non-group lines in file order: text, entity type, line."""
    grouped = blocks["grouped"].to_numpy(bool)[block]
    blank = _mask(pc.match_substring_regex(lines, PY_BLANK))
    row = np.flatnonzero(grouped & (in_block >= 2) & ~blank)
    plain = np.flatnonzero(~grouped & ~blank)
    row_cells = pc.split_pattern(lines.take(pa.array(row)), "\t")
    headers = pa.array(blocks["header"].tolist(), pa.list_(pa.string())).take(pa.array(block[row]))
    n_cells = pc.list_value_length(row_cells).to_numpy(zero_copy_only=False).astype(np.int64)
    plain_lines = lines.take(pa.array(plain))
    if (n_cells != pc.list_value_length(headers).to_numpy(zero_copy_only=False)).any() or \
            not _mask(pc.match_substring(plain_lines, "\t")).all():
        raise _Fallback
    parts = pc.split_pattern(plain_lines, "\t", max_splits=1)
    cell_line = np.concatenate([np.repeat(row, n_cells), plain])
    order = pa.array(np.argsort(cell_line, kind="stable"))
    cells = pa.concat_arrays([_large(pc.list_flatten(row_cells)), _large(pc.list_element(parts, 1))])
    types = pa.concat_arrays([_large(pc.list_flatten(headers)), _large(pc.list_element(parts, 0))])
    return cells.take(order), types.take(order), np.sort(cell_line, kind="stable")


def _values_of(cells: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The values of the cells (split on ``||``, ``<empty>`` and blanks left out) and the
    cell each came from."""
    split = pc.split_pattern(cells, VALUE_DELIMITER)
    values = pc.list_flatten(split)
    blank = pc.match_substring_regex(values, PY_BLANK)
    present = pc.and_(pc.not_equal(values, EMPTY_TOKEN), pc.invert(blank))
    cell = pc.list_parent_indices(split).to_numpy(zero_copy_only=False)
    return values.filter(present), cell[_mask(present)]


def _large(array: pa.Array) -> pa.Array:
    return array.cast(pa.large_string())
