"""Text and JSON at the boundary: UTF-8 decoding, JSON that keeps numbers as written, and
the recovery of one JSON object from an LLM's answer.

Two JSON parsers, one meaning. :func:`parse_json` (the stdlib decoder) keeps every number
as its JSON text (:class:`JsonNumber`, SPEC 1). The fast parser (:func:`fast_json`,
orjson) gives numbers as ``int`` and ``float``: an ``int`` written back with ``str`` is its
JSON text (``-0`` excepted: such lines are refused before parsing), a ``float`` is not
(``1.50`` would read ``1.5``). So a reader takes orjson's result only while every float
sits where a number is wanted (a confidence); wherever text is wanted,
:func:`scalar_text` and :func:`number_text` raise :class:`NeedsSourceText`, and the
reader parses that record again with :func:`parse_json` (:func:`read_records`). Any
input error on the fast path is retried the same way, so messages are the stdlib path's.

Every failure is a :class:`~kieval_core.exceptions.KievalInputError` naming the file and place.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ...exceptions import KievalInputError


class JsonNumber(str):
    """A JSON number kept as its source text (``30000`` stays ``"30000"``, SPEC 1)."""


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 text (a BOM is dropped); binary or other encodings are refused."""
    if b"\x00" in data[:8192]:
        raise KievalInputError(source, None, "binary data, not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KievalInputError(source, f"line {line}", "not UTF-8 text") from None


def check_text(data: bytes, source: str) -> None:
    """Refuse what :func:`decode_text` refuses, without holding the decoded text: UTF-8
    is checked a few MiB at a time (cut at line ends)."""
    if b"\x00" in data[:8192]:
        decode_text(data, source)
    view, start, step = memoryview(data), 0, 1 << 22
    try:
        while start < len(data):
            end = data.find(b"\n", start + step)
            end = len(data) if end < 0 else end + 1
            codecs.utf_8_decode(view[start:end], "strict", True)
            start = end
    except UnicodeDecodeError:
        decode_text(data, source)  # raises, naming the line


def _reject_constant(name: str) -> None:
    msg = f"{name} is not valid JSON"
    raise ValueError(msg)


_DECODER = json.JSONDecoder(parse_int=JsonNumber, parse_float=JsonNumber, parse_constant=_reject_constant)


def parse_json(text: str, source: str, where: str | None = None) -> Any:
    """Parse JSON text, keeping numbers as their text; bad input raises KievalInputError.

    >>> parse_json('{"a": 1.50}', "x.json")
    {'a': '1.50'}
    """
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        place = where or f"line {exc.lineno}, column {exc.colno}"
        if where and exc.lineno == 1:
            place = f"{where}, column {exc.colno}"
        raise KievalInputError(source, place, f"invalid JSON ({exc.msg})") from None
    except ValueError as exc:
        raise KievalInputError(source, where, f"invalid JSON ({exc})") from None
    except RecursionError:
        raise KievalInputError(source, where, "JSON nested too deeply") from None


class NeedsSourceText(Exception):
    """A number read by the fast parser is needed as text, which only the stdlib parser
    keeps (a float, whose JSON text ``1.50`` or ``1e3`` is lost)."""


#: ``-0`` as a whole JSON number: the fast parser reads it as ``0``.
_MINUS_ZERO = re.compile(rb"-0(?![.eE0-9])")
#: Line breaks of ``str.splitlines`` beyond ``\n`` and ``\r`` (the bytes of their UTF-8 form).
_OTHER_BREAKS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
_BOM = codecs.BOM_UTF8


def fast_json(data: bytes | memoryview | str) -> Any:
    """orjson's parse: numbers as int and float. Raises ``orjson.JSONDecodeError`` on
    anything orjson refuses (big integers, lone surrogates, bad JSON) and
    :class:`NeedsSourceText` on a ``-0`` (or a ``-0`` inside a string: a harmless retry).

    >>> fast_json(b'{"a": [1, 1.5, "x"]}')
    {'a': [1, 1.5, 'x']}
    """
    raw = data.encode() if isinstance(data, str) else data
    if _MINUS_ZERO.search(raw):
        raise NeedsSourceText("-0")
    return orjson.loads(data)


def json_lines(data: bytes, source: str) -> Iterator[tuple[int, bytes | memoryview | str]]:
    """``(line number, line)`` of JSONL bytes, numbered as ``str.splitlines`` numbers the
    decoded text; lines are views of ``data`` (no copy of the file), blank ones included."""
    check_text(data, source)
    if any(other in data for other in _OTHER_BREAKS):
        yield from enumerate(decode_text(data, source).splitlines(), 1)
        return
    view = memoryview(data)
    start = len(_BOM) if data.startswith(_BOM) else 0
    if b"\r" in data:
        for number, line in enumerate(bytes(view[start:]).splitlines(), 1):
            yield number, line
        return
    number = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        yield number, view[start:end]
        start = end + 1


def _record(value: Any, source: str, where: str) -> dict:
    if not isinstance(value, dict):
        raise KievalInputError(source, where, "expected a JSON object")
    return value


def slow_record(line: bytes | memoryview | str, source: str, where: str) -> dict | None:
    """A JSONL line read by the stdlib parser (numbers as text); None for a blank line."""
    text = line if isinstance(line, str) else bytes(line).decode("utf-8")
    if not text.strip():
        return None
    return _record(parse_json(text, source, where), source, where)


def read_records(data: bytes, source: str, add: Callable[[dict, str], None]) -> None:
    """Call ``add(record, where)`` for every record of JSONL bytes, in order.

    The record is parsed by orjson first; when that parse fails, or ``add`` raises
    :class:`NeedsSourceText` or an input error, it is parsed again by the stdlib parser
    and added again (``add`` must leave nothing behind when it raises). Errors are
    therefore exactly those of the stdlib path.
    """
    for number, line in json_lines(data, source):
        where = f"line {number}"
        try:
            add(_record(fast_json(line), source, where), where)
        except (orjson.JSONDecodeError, NeedsSourceText, KievalInputError):
            record = slow_record(line, source, where)
            if record is not None:
                add(record, where)


def first_record(data: bytes, source: str) -> dict | None:
    """The first record of JSONL bytes (None when there is none), for its keys only; the
    first 64 KiB (cut at a line end) are read first, the whole file when they hold none."""
    end = data.find(b"\n", 1 << 16)
    if 0 <= end < len(data) - 1:
        record = first_record(data[: end + 1], source)
        if record is not None:
            return record
    for number, line in json_lines(data, source):
        try:
            return _record(fast_json(line), source, f"line {number}")
        except (orjson.JSONDecodeError, NeedsSourceText, KievalInputError):
            record = slow_record(line, source, f"line {number}")
        if record is not None:
            return record
    return None


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
    found, i = [], text.find("{")
    while i >= 0:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError, ValueError):
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        i = text.find("{", end)
    if len(found) != 1:
        problem = "no JSON object" if not found else f"{len(found)} JSON objects"
        raise KievalInputError(source, where, f"text with {problem}; cannot recover the answer")
    return found[0], "prose"


def number_text(value: Any) -> str:
    """``str`` of a parsed JSON value, refusing a float of the fast parser (its JSON text
    is lost: :class:`NeedsSourceText`).

    >>> number_text(JsonNumber("1.50")), number_text(3)
    ('1.50', '3')
    """
    if type(value) is float:
        raise NeedsSourceText(repr(value))
    return str(value)


def scalar_text(value: Any) -> str | None:
    """A JSON scalar as entity text: numbers keep their JSON text, booleans are written
    ``true``/``false``, blank text and null are absent (None).

    >>> scalar_text(JsonNumber("1.50")), scalar_text(True), scalar_text("  "), scalar_text(None)
    ('1.50', 'true', None, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = number_text(value)
    return text if text.strip() else None
