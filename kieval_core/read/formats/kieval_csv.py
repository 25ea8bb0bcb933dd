"""The official KIEval tool's CSV files (SPEC 6.6): one file per document.

Blocks are separated by blank lines. A **group block** starts with an index line, then a
tab-separated header of entity types, then one row per group (the block is one group
type). A **non-group block** is ``type<TAB>value`` lines. ``<empty>`` means absent and
``||`` joins several values of one cell.

Unlike the official parser, the first line of a non-group block is kept and group
indices of 10 and more are read whole.

A directory is read in one pass over all its files (:func:`read_kieval_csv`): their bytes
are joined and decoded at once, their lines go into one Arrow array, blocks are found with
numpy, and cells and ``||`` values are split by Arrow string kernels; Python looks only at
each distinct line that opens a block (index line, header), not at each file or block.
:func:`kieval_csv_entities` reads one file line by line:
it is the reference the fast path is tested against, and it reads the directory again
when the fast path finds a problem, so every message names the first bad file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
        frame = _directory_entities(files, stems)
    except _Fallback:
        for file_name, data in files.items():
            file_source = f"{source}/{file_name}"
            rows = kieval_csv_entities(decode_text(data, file_source), file_source)
            builder.add(file_stem(file_name), file_name, [(*row, np.nan) for row in rows])
        return
    builder.add_table(frame, stems, dict(zip(stems, files, strict=True)))


def _lines(files: Mapping[str, bytes]) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """Every line of every file (one Arrow array), its file, its position in the file, and
    the position of its file's last line: each file's text with a byte order mark opening
    it dropped, ``\\r\\n`` read as ``\\n``, ``\\n`` stripped from both ends, split on ``\\n``.

    The files are joined with NUL (which no text file holds); numpy finds the line breaks
    in the joined bytes, and the lines are the bytes between them, taken out by one
    ``bytes.translate``: no Python call per file or line, no string copied per line."""
    data = b"\x00".join(files.values())
    byte, breaks = _breaks(data)
    nul = breaks[byte[breaks] == 0]
    if len(nul) != len(files) - 1:  # a binary file: the line-by-line reader names it
        raise _Fallback
    opening = np.minimum(np.append(0, nul + 1)[:, None] + np.arange(len(BOM)), max(len(data) - 1, 0))
    if len(data) and (byte[opening] == np.frombuffer(BOM, np.uint8)).all(axis=1).any():  # utf-8-sig
        data = data.replace(b"\x00" + BOM, b"\x00").removeprefix(BOM)
        byte, breaks = _breaks(data)
    cr = breaks[byte[breaks] == 13]
    crlf = len(cr) > 0  # every "\r" opens a "\r\n" line break: taken out with the "\n"
    if crlf and (byte[np.minimum(cr + 1, len(data) - 1)] != 10).any():  # a lone "\r" stays in its line
        data, crlf = data.replace(b"\r\n", b"\n"), False
        byte, breaks = _breaks(data)
    ends = breaks[byte[breaks] != 13]
    starts = np.append(0, ends + 1)
    length = np.append(ends, len(data)) - starts
    if crlf:
        length[:-1] -= byte[ends - 1] == 13
    file = np.append(0, np.cumsum(byte[ends] == 0))
    # the lines of a file run from its first to its last non-empty one ("\n" stripped at both ends)
    filled = np.flatnonzero(length > 0)
    lo, hi = (np.searchsorted(file[filled], np.arange(len(files)), side) for side in ("left", "right"))
    first = filled[np.minimum(lo, len(filled) - 1)] if len(filled) else np.zeros(len(files), np.int64)
    counts = np.where(hi > lo, filled[np.maximum(hi - 1, 0)] - first + 1, 0) if len(filled) else first
    piece = np.flatnonzero(np.repeat(counts > 0, np.bincount(file, minlength=len(files))))
    kept = piece[(piece >= first[file[piece]]) & (piece < (first + counts)[file[piece]])]
    text = data.translate(None, b"\n\x00\r" if crlf else b"\n\x00")
    offsets = np.append(0, np.cumsum(length[kept])).astype(np.int64)
    lines = pa.LargeStringArray.from_buffers(len(kept), pa.py_buffer(offsets), pa.py_buffer(text))
    try:  # each line is UTF-8 (so is each file: the bytes taken out are whole characters)
        lines.validate(full=True)
    except pa.ArrowInvalid:
        raise _Fallback from None
    file = file[kept]
    return lines, file, kept - first[file], counts[file] - 1


BOM = "\ufeff".encode()
#: Bytes of the joined files scanned at once for line breaks (numpy's temporaries stay in cache).
_SCAN = 1 << 20


def _breaks(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``data`` as bytes, and the positions of its ``\\n``, ``\\r`` and NUL bytes."""
    byte = np.frombuffer(data, np.uint8)
    parts = [np.flatnonzero((part == 10) | (part == 13) | (part == 0)) + start
             for start in range(0, len(byte), _SCAN) for part in [byte[start:start + _SCAN]]]
    return byte, np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _ints(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False).astype(np.int64)


def _separators(lines: pa.Array, position: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Lines that separate blocks, as ``re.split(r"\\n[ \\t]*\\n")`` finds them: a blank line
    with a line before and after it in its file, except the second, fourth, ... of a run
    (the line break before them was taken by the separator above)."""
    blank = _matches(lines, r"^[ \t]*$")
    eligible = blank & (position > 0) & (position < last)
    starts = eligible & ~np.concatenate([[False], eligible[:-1]])
    run_start = np.maximum.accumulate(np.where(starts, np.arange(len(eligible)), 0))
    return eligible & ((np.arange(len(eligible)) - run_start) % 2 == 0)


def _mask(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False).astype(bool)


def _matches(strings: pa.Array, blank: str) -> np.ndarray:
    """Whether each string matches ``blank`` (a pattern of whitespace only). The pattern is
    tried only on the strings that are empty or open with a byte that can open a
    whitespace character (ASCII up to the space, or any non-ASCII byte): a string that
    opens with a letter, a digit or ``<`` cannot match."""
    _, offsets, data = strings.buffers()
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    start = np.frombuffer(offsets, width)[strings.offset:strings.offset + len(strings) + 1]
    opening = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
    first = opening[np.minimum(start[:-1], len(opening) - 1)]
    tried = np.flatnonzero((start[1:] == start[:-1]) | (first <= 0x20) | (first >= 0x80))
    out = np.zeros(len(strings), bool)
    out[tried] = _mask(pc.match_substring_regex(strings.take(pa.array(tried)), blank))
    return out


def _directory_entities(files: Mapping[str, bytes], stems: list[str]) -> pd.DataFrame:
    lines, file, position, last = _lines(files)
    sep = _separators(lines, position, last)
    block = (np.cumsum(sep | (position == 0)) - 1)[~sep]
    lines, file = lines.filter(pa.array(~sep)), file[~sep]
    first = np.flatnonzero(np.concatenate([[True], block[1:] != block[:-1]])) if len(block) else block
    in_block = np.arange(len(block)) - np.repeat(first, np.diff(np.append(first, len(block))))
    blocks = _Blocks.of(lines, first, block)
    cells, type_code, line, types = _cells(lines, block, in_block, blocks)
    values, cell = _values_of(cells)
    line, type_code = line[cell], type_code[cell]
    grouped = blocks.grouped[block[line]]
    key = blocks.index[block[line]].astype(np.int64) * (int(in_block.max(initial=0)) + 1) + in_block[line]
    # identifiers as categoricals: the builder reads their codes (no string hashed per entity)
    return pd.DataFrame({
        "doc_id": _categorical(file[line], stems),
        "group_type": _categorical(block[line], blocks.group_type),
        "group_key": np.where(grouped, key, -1),
        "entity_type": _categorical(type_code, types),
        "value": values.to_pandas(),
        "confidence": np.full(len(line), np.nan),
    })


def _categorical(codes: np.ndarray, names: Sequence[str]) -> pd.Categorical:
    """``names[codes]`` as a categorical (``names`` may repeat a name)."""
    distinct, categories = pd.factorize(np.asarray(names, dtype=object))
    return pd.Categorical.from_codes(distinct[codes], categories=pd.Index(categories, dtype=object))


@dataclass(frozen=True)
class _Blocks:
    """Per block: group block or not, the code of its index, its group type and the code of
    its header (-1: none). Python looks at each *distinct* opening line and header only (a
    few for a directory of receipts written by one program)."""

    grouped: np.ndarray
    index: np.ndarray
    group_type: np.ndarray
    header: np.ndarray
    #: Entity types of header ``h``: ``types[header_start[h]:][:header_size[h]]``.
    header_start: np.ndarray
    header_size: np.ndarray
    types: np.ndarray

    @classmethod
    def of(cls, lines: pa.Array, first: np.ndarray, block: np.ndarray) -> _Blocks:
        size = np.bincount(block, minlength=len(first))
        opener, openers = _distinct(lines.take(pa.array(first)))
        indices = np.array([o.strip() for o in openers], dtype=object)
        is_group = np.array([i.isdigit() for i in indices], bool)
        grouped = is_group[opener]
        if (grouped & (size < 2)).any():
            raise _Fallback
        index, _ = pd.factorize(np.where(is_group, indices, "")[opener])
        with_header = np.flatnonzero(grouped)
        code, headers = _distinct(lines.take(pa.array(first[with_header] + 1)))
        header = np.full(len(first), -1, np.int64)
        header[with_header] = code
        split = [h.split("\t") for h in headers]
        prefixes = [{t.split(".", 1)[0] for t in h} for h in split]
        # one prefix names the group type; several leave it to the index: block<index>
        single = np.array([len(p) == 1 for p in prefixes] + [False], bool)
        prefix = np.array([min(p) for p in prefixes] + [""], dtype=object)
        named = np.array(["block" + i for i in indices], dtype=object)[opener]
        group_type = np.where(grouped, np.where(single[header], prefix[header], named), "")
        sizes = np.array([len(h) for h in split], np.int64)
        return cls(grouped, index, group_type, header, np.cumsum(sizes) - sizes, sizes,
                   np.array([t for h in split for t in h], dtype=object))


def _distinct(array: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Codes of the values of ``array`` and its distinct values (in order of appearance)."""
    encoded = pc.dictionary_encode(array)
    return _ints(encoded.indices), encoded.dictionary.to_pylist()


def _cells(lines: pa.Array, block: np.ndarray, in_block: np.ndarray,
           blocks: _Blocks) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """Every cell of the group rows and non-group lines in file order: its text, the code of
    its entity type, its line; and the entity types (the headers', then the non-group lines')."""
    grouped = blocks.grouped[block]
    blank = _matches(lines, PY_BLANK)
    row = np.flatnonzero(grouped & (in_block >= 2) & ~blank)
    plain = np.flatnonzero(~grouped & ~blank)
    row_cells = pc.split_pattern(lines.take(pa.array(row)), "\t")
    n_cells = _ints(pc.list_value_length(row_cells))
    header = blocks.header[block[row]]
    plain_lines = lines.take(pa.array(plain))
    tabbed = _mask(pc.match_substring(plain_lines, "\t"))
    if (n_cells != blocks.header_size[header]).any() or not tabbed.all():
        raise _Fallback
    starts = np.cumsum(n_cells) - n_cells
    row_types = np.repeat(blocks.header_start[header] - starts, n_cells) + np.arange(int(n_cells.sum()))
    cells = _large(pc.list_flatten(row_cells))
    if not len(plain):  # group rows only (receipts): already in file order
        return cells, row_types, np.repeat(row, n_cells), blocks.types
    parts = pc.split_pattern(plain_lines, "\t", max_splits=1)
    plain_types, names = _distinct(pc.list_element(parts, 0))
    cell_line = np.concatenate([np.repeat(row, n_cells), plain])
    order = np.argsort(cell_line, kind="stable")
    cells = pa.concat_arrays([cells, _large(pc.list_element(parts, 1))]).take(pa.array(order))
    types = np.concatenate([row_types, plain_types + len(blocks.types)])[order]
    return cells, types, cell_line[order], np.concatenate([blocks.types, np.array(names, dtype=object)])


def _values_of(cells: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The values of the cells (split on ``||``, ``<empty>`` and blanks left out) and the
    cell each came from."""
    # a cell that is <empty> or blank has no value (most cells of a receipt's rows): not split
    filled = np.flatnonzero(_mask(pc.not_equal(cells, EMPTY_TOKEN)) & ~_matches(cells, PY_BLANK))
    split = pc.split_pattern(cells.take(pa.array(filled)), VALUE_DELIMITER)
    values = pc.list_flatten(split)
    present = _mask(pc.not_equal(values, EMPTY_TOKEN)) & ~_matches(values, PY_BLANK)
    cell = filled[pc.list_parent_indices(split).to_numpy(zero_copy_only=False)]
    return values.filter(pa.array(present)), cell[present]


def _large(array: pa.Array) -> pa.Array:
    return array.cast(pa.large_string())
