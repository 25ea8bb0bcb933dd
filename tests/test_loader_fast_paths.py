"""The loaders' fast paths against their slow paths (the oracle): the orjson parse against
the stdlib parse that keeps numbers as text, the vectorised official-CSV reader against
the line-by-line one. Same entities, same documents, same structures, same messages."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import PurePath
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from builders import json_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kieval_core.read.formats as loaders
from kieval_core import KievalInputError, LoadOptions, load_bytes
from kieval_core.limits import Limits
from kieval_core.read.formats import jsontext, kieval_csv
from kieval_core.read.formats.builder import DatasetBuilder, file_stem
from kieval_core.read.formats.jsontext import JsonNumber, NeedsSourceText, fast_json, parse_json
from kieval_core.read.formats.kieval_csv import PY_SPACE, _lines, kieval_csv_entities, read_kieval_csv
from kieval_core.read.formats.nested import text_numbers
from kieval_core.read.load import FIRST_READ, NEXT_READ, read_directory


@contextmanager
def stdlib_only():
    """Every JSON parse by the stdlib parser: the loaders as they were before orjson."""
    def refuse(data):
        raise NeedsSourceText("oracle")

    with mock.patch.object(jsontext, "fast_json", refuse), mock.patch.object(loaders, "fast_json", refuse):
        yield


def outcome(read):
    """What a read gives: the dataset's content, or the input error's message."""
    try:
        ds = read()
    except KievalInputError as exc:
        return ("error", str(exc))
    entities = ds.entities.assign(value=ds.entities["value"].astype(object))
    return (entities.to_dict("list"), ds.doc_ids, ds.warnings, ds.notes, ds.structures,
            None if ds.meta is None else ds.meta.to_dict())


def both(data: bytes, name: str, **options):
    """The fast and the stdlib outcome of reading ``data`` (structures kept)."""
    opts = loaders.LoadOptions(**options)
    fast = outcome(lambda: load_bytes(data, name, opts, keep_structures=True))
    with stdlib_only():
        slow = outcome(lambda: load_bytes(data, name, opts, keep_structures=True))
    return fast, slow


def same(a, b) -> bool:
    """Equal, NaN equal to NaN (confidences)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b)


# --- numbers: the fast parse with text numbers equals the stdlib parse --------------------

NUMBER_TEXTS = ["0", "-0", "-0.0", "1.50", "30000", "1e3", "1E+3", "-2.5e-3", "12345678901234567890",
                "-12345678901234567890", "1e400", "0.1", "5e-324", "123456789012345678", "9007199254740993"]


@pytest.mark.parametrize("number", NUMBER_TEXTS)
def test_a_number_reads_as_its_json_text(number):
    text = f'{{"a": {number}, "b": [{number}], "c": "x{number}"}}'
    try:
        parsed = text_numbers(fast_json(text.encode()))
    except (NeedsSourceText, ValueError):
        return  # the stdlib parse is used
    assert parsed == parse_json(text, "x")


@pytest.mark.parametrize("number", NUMBER_TEXTS)
def test_numbers_in_every_position(number):
    record = (f'{{"doc_id": "d", "prediction": {{"total": {number}, "menu": [{{"nm": {number}, '
              f'"price": {{"value": {number}, "confidence": 0.5}}}}]}}, "split": {number}}}\n')
    fast, slow = both(record.encode(), "p.jsonl", meta=("split",))
    assert same(fast, slow)
    assert fast[0]["value"][0] == number  # the JSON text, whichever parser read it


@pytest.mark.parametrize("text", [
    '{"doc_id": "d", "a": "1", "a": "2", "b": "3"}',  # duplicate keys: last wins, first place
    '{"doc_id": "d", "a": "caf\\u00e9 \\ud83d\\ude00 \\n"}',  # escapes
    '{"doc_id": "d", "a": "lone \\ud800"}',  # a lone surrogate: only the stdlib parser takes it
    '{"doc_id": 7, "a": "x"}', '{"doc_id": 7.5, "a": "x"}', '{"doc_id": -0, "a": "x"}',
    '{"doc_id": "d", "a": {"value": "x", "confidence": 1.5}}',  # error message
    '{"doc_id": "d", "a": {"value": "x", "confidence": 1.50e0}}',
    '{"doc_id": "d", "a": NaN}', '{"doc_id": "d", "a": [1, 2,]}', '[1]', '{"doc_id": "d"} x',
    '{"doc_id": "d", "a": "x"}\n\n   \n\u00a0\n{"doc_id": "e", "a": "y"}',
    '{"doc_id": "d", "a": "x"}\r\n{"doc_id": "e", "a": "y"}\r\n',
    '{"doc_id": "d", "a": "x\u2028"}',  # str.splitlines breaks this line: an error, as before
    '\ufeff{"doc_id": "d", "a": "x"}',
    '{"doc_id": "d", "prediction": "Sure: ```json\\n{\\"a\\": 1.50}\\n```"}',
    '{"doc_id": "d", "split": {"n": 1, "f": 2.50}, "a": "x"}',
])
def test_edge_cases_read_as_the_stdlib_reads_them(text):
    fast, slow = both(text.encode("utf-8", "surrogatepass"), "p.jsonl", meta=("split",))
    assert same(fast, slow)


JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from(NUMBER_TEXTS).map(JsonNumber),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b.c", "value", "confidence", "nm"]),
                                            inner, max_size=3)),
    max_leaves=12,
)



@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.sampled_from(["menu", "total", "a.b", "split", "fields", "confidence"]),
                                JSON_VALUES, max_size=4), min_size=1, max_size=4))
def test_any_json_reads_as_the_stdlib_reads_it(structures):
    jsonl = "".join(json_text({"doc_id": f"d{i}", **s}) + "\n" for i, s in enumerate(structures))
    assert same(*both(jsonl.encode(), "p.jsonl", meta=("split",)))
    one_object = json_text({f"d{i}": s for i, s in enumerate(structures)})
    assert same(*both(one_object.encode(), "p.json"))


def test_the_fast_parser_is_used_for_plain_data():
    record = b'{"doc_id": "d", "prediction": {"total": {"value": "5", "confidence": 0.93}, "n": 3}}\n'
    with mock.patch.object(jsontext, "parse_json", side_effect=AssertionError("stdlib parse")):
        ds = load_bytes(record, "p.jsonl")
    assert ds.entities["value"].tolist() == ["5", "3"]


def test_structures_are_kept_unless_declined():
    record = b'{"doc_id": "d", "prediction": {"total": {"value": 5, "confidence": 0.9}, "tax": 1.50}}\n'
    assert load_bytes(record, "p.jsonl", keep_structures=False).structures is None
    # numbers as json.load reads them (SPEC 5), the entities keep the JSON text (SPEC 1)
    ds = load_bytes(record, "p.jsonl")
    assert ds.structures == {"d": {"total": 5, "tax": 1.5}} and type(ds.structures["d"]["total"]) is int
    assert sorted(ds.entities["value"]) == ["1.50", "5"]


def test_chunks_give_the_same_table_as_one_chunk():
    lines = "".join(json.dumps({"doc_id": f"d{i}", "prediction": {"menu": [{"nm": f"x{j}"} for j in range(3)],
                                                                  "total": str(i)}}) + "\n"
                    for i in range(300))
    whole = load_bytes(lines.encode(), "p.jsonl").entities
    with mock.patch("kieval_core.read.formats.builder.CHUNK_ROWS", 7):
        chunked = load_bytes(lines.encode(), "p.jsonl").entities
    pd.testing.assert_frame_equal(whole, chunked)


# --- the official CSV: vectorised against line by line ------------------------------------

LINES = st.one_of(
    st.sampled_from(["0", "1", "10", " 2 ", "", " ", "\t", " \t ", "\u00a0", "\x0b", "x", "a.b"]),
    st.lists(st.sampled_from(["menu.nm", "menu.price", "total.x", "store", "<empty>", "A||B", "||", " ",
                              "5", "<empty>||C", "\u3000"]), min_size=1, max_size=4).map("\t".join),
)


def slow_read(files: dict[str, bytes]):
    builder = DatasetBuilder("dir", "dir", "kieval-csv")
    for name, data in files.items():
        rows = kieval_csv_entities(data.decode("utf-8-sig"), f"dir/{name}")
        builder.add(name.rsplit(".", 1)[0], name, [(*r, np.nan) for r in rows])
    return builder.build()


def fast_read(files: dict[str, bytes]):
    builder = DatasetBuilder("dir", "dir", "kieval-csv")
    read_kieval_csv(files, "dir", builder)
    return builder.build()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.lists(LINES, max_size=12), st.sampled_from(["\n", "\r\n"]),
                          st.sampled_from(["", "\ufeff"]), st.sampled_from(["", "\r", "\n", "\r\n\n"])),
                min_size=1, max_size=4))
def test_official_csv_fast_equals_line_by_line(docs):
    """Files joined into one text must read as each alone: a byte order mark, a last line
    ending in a lone ``\\r``, blank lines at either end."""
    files = {f"{i}.csv": (bom + newline.join(lines) + end).encode()
             for i, (lines, newline, bom, end) in enumerate(docs)}
    assert same(outcome(lambda: fast_read(files)), outcome(lambda: slow_read(files)))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["\n", "\r", "\r\n", "\ufeff", "a", "\t", " ", "é", "\u2028"]),
                         max_size=12).map("".join), min_size=1, max_size=5))
def test_official_csv_lines_are_each_files_lines(texts):
    """The lines found in the joined bytes are each file's own: a byte order mark opening it
    dropped (one), ``\r\n`` a line break (a lone ``\r`` kept), ``\n`` stripped at both ends."""
    lines, file, position, last = _lines({f"{i}.csv": t.encode() for i, t in enumerate(texts)})
    expected = []
    for i, text in enumerate(texts):
        text = text.removeprefix("\ufeff").replace("\r\n", "\n").strip("\n")
        split = text.split("\n") if text else []
        expected += [(line, i, j, len(split) - 1) for j, line in enumerate(split)]
    found = zip(lines.to_pylist(), file.tolist(), position.tolist(), last.tolist(), strict=True)
    assert list(found) == expected


def test_official_csv_is_read_without_the_line_by_line_reader():
    """The fast path reads CR line ends, byte order marks and empty files itself."""
    files = {"a.csv": "\ufeff0\r\nmenu.nm\r\nTé\r\n\r\nstore\tA\r\n".encode(), "b.csv": b"", "c.csv": b"\n\n"}
    with mock.patch.object(kieval_csv, "kieval_csv_entities", side_effect=AssertionError("fell back")):
        entities = fast_read(files).entities
    assert entities[["doc_id", "entity_type", "value"]].values.tolist() == [["a", "menu.nm", "Té"],
                                                                             ["a", "store", "A"]]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from([" ", "\t", "\u00a0", "\u3000", "\x1c", "a", "<", "é", "1"]),
                        max_size=4), max_size=12), st.integers(0, 3), st.booleans())
def test_blank_strings_are_found_trying_the_pattern_on_few(strings, start, large):
    """Trying the whitespace pattern only on strings that can open with whitespace finds
    what trying it on every string finds (an array sliced from the middle too)."""
    array = pa.array(strings, pa.large_string() if large else pa.string()).slice(min(start, len(strings)))
    expected = [not s.strip() for s in strings[min(start, len(strings)):]]
    assert kieval_csv._matches(array, kieval_csv.PY_BLANK).tolist() == expected


def test_official_csv_bad_bytes_are_named_by_file_and_line():
    good = b"0\nmenu.nm\nTea\n"
    for bad, message in ((b"0\nmenu.nm\n\xff\n", "dir/b.csv, line 3: not UTF-8 text"),
                         (b"\x00\x01", "dir/b.csv: binary data, not a text file")):
        assert outcome(lambda bad=bad: fast_read({"a.csv": good, "b.csv": bad}))[:2] == ("error", message)


def test_official_csv_group_blocks():
    text = ("0\nmenu.nm\tmenu.price\nTea\t5||6\n<empty>\t<empty>\n \nPie\t7\n\n12\nmenu.nm\nX\n\n"
            "store\tACME\ntel\t<empty>\n\n0\nmenu.nm\tmenu.price\nTea\t5\n")
    files = {"a.csv": text.encode(), "b.csv": b"", "c.csv": text.replace("\n", "\r\n").encode()}
    fast, slow = outcome(lambda: fast_read(files)), outcome(lambda: slow_read(files))
    assert same(fast, slow)
    assert fast[0]["entity_type"].count("menu.nm") == 6  # " " separates: "Pie\t7" is non-group
    twice = {"a.csv": text.replace("\n\n12", "\n\n\n12").encode()}  # a blank line opens a block
    assert outcome(lambda: fast_read(twice)) == outcome(lambda: slow_read(twice))[:2] == (
        "error", "dir/a.csv, line 9: expected 'type<TAB>value'")


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(st.sampled_from("ab./ \\"), max_size=8), st.text(max_size=8)))
def test_file_stem_is_the_path_stem(name):
    assert file_stem(name) == PurePath(name).stem


SIZES = [0, 1, 2000, FIRST_READ - 1, FIRST_READ, FIRST_READ + 1, 2 * FIRST_READ, NEXT_READ + FIRST_READ + 3]


def test_a_directory_reads_every_file_whole_whatever_its_size(tmp_path):
    """No file is measured before it is read: an empty file, one of exactly one first read,
    one a byte longer and one of several further reads all come whole."""
    expected = {f"{size:08d}.csv": bytes(range(256)) * (size // 256) + b"\r" * (size % 256) for size in SIZES}
    for name, data in expected.items():
        (tmp_path / name).write_bytes(data)
    assert read_directory(tmp_path, sorted(expected), LoadOptions(), "dir") == expected


@pytest.mark.parametrize("sizes", [[600, 600], [3000], [FIRST_READ + 10, 5]])
def test_a_directory_above_the_size_limit_is_refused_with_its_size_on_disk(tmp_path, sizes):
    """Refused as when the sizes were summed before reading: the figure is the size on disk,
    whichever file passed the limit."""
    for i, size in enumerate(sizes):
        (tmp_path / f"{i}.csv").write_bytes(b"x" * size)
    small = LoadOptions(limits=replace(Limits.defaults("cli"), file_mb=1000 / 2**20))
    shown = f"{sum(sizes) / 2**20:,.2f}"
    with pytest.raises(KievalInputError, match=rf"dir: {shown} MiB on disk is above the limit"):
        read_directory(tmp_path, sorted(p.name for p in tmp_path.iterdir()), small, "dir")


def test_a_file_gone_since_the_listing_is_named_by_its_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "gone.csv"))):
        read_directory(tmp_path, ["gone.csv"], LoadOptions(), "dir")


def test_a_directory_reads_by_full_path_where_the_system_has_no_dir_fd(tmp_path):
    (tmp_path / "a.csv").write_bytes(b"0\nmenu.nm\nTea\n")
    with mock.patch.object(os, "supports_dir_fd", set()):
        assert read_directory(tmp_path, ["a.csv"], LoadOptions(), "dir") == {"a.csv": b"0\nmenu.nm\nTea\n"}


def test_python_whitespace_is_what_str_strip_removes():
    spaces = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
    assert sorted(PY_SPACE) == sorted(spaces)


@pytest.mark.parametrize("text", [
    '{"doc_id": "d", "entity": "a", "value": 1.50, "confidence": 0.5}\n'
    '{"doc_id": "d", "entity": "b", "value": 3}',
    '{"doc_id": "d", "entity": "a", "value": ["1", 2, null], "group": 0, "confidence": 1.5}',
    '{"doc_id": "d", "entity": "a", "value": "x", "confidence": "0.5"}',
    '{"doc_id": "d", "entity": "a", "value": {"x": 1}}',
    '{"doc_id": "d", "entity": "a"}\n{"doc_id": "e", "entity": "b", "value": -0, "extra": 2.5}',
    '{"doc_id": 1, "entity": "a", "value": "x", "group": 1.0, "group_type": "m", "confidence": 1}',
    # cases Arrow's JSON reader takes and JSON does not, or reads otherwise
    '{"doc_id": "d", "entity": "a", "value": "x", "confidence": NaN}',
    '{"doc_id": "d", "entity": "a", "value": "x"} {"doc_id": "e", "entity": "a", "value": "y"}',
    '{"doc_id": "d", "entity": "a", "value": "x", "value": "y"}',
    '{"doc_id": "d", "entity": "a", "value": "x"}\n\n{"doc_id": "e", "entity": "a", "value": "y"}\n',
    '{"doc_id": "d", "entity": "a", "value": " ", "group": "\u00a0", "group_type": " "}\n'
    '{"doc_id": "d", "entity": "b.c", "value": "y", "group": "1", "group_type": " ", "confidence": 0}',
    '{"doc_id": "d", "entity": "a", "value": true}',
    '{"doc_id": "d", "entity": "a", "value": "x", "confidence": 2}',
    '{"doc_id": "d", "entity": "a", "value": "caf\\u00e9 \\ud83d\\ude00", "confidence": 0.25}\r\n',
])
def test_table_jsonl_reads_as_the_stdlib_reads_it(text):
    assert same(*both(text.encode(), "t.jsonl"))
