"""Text from files stays text outside the app too (SPEC 8b): in a terminal, control
characters are shown as escapes, not obeyed; in a spreadsheet, a cell is a value, not a
formula.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .choices import CSV_FORMULAS as CSV_FORMULAS  # how a CSV export treats cells a spreadsheet would run

# C0 and C1 controls (ESC starts terminal sequences; CR and LF would fake a new line) and
# the bidirectional overrides that reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: object) -> str:
    """One line of text safe to print: control characters as visible escapes.

    >>> for_terminal("doc\\x1b[2J\\nall gates passed")
    'doc\\\\x1b[2J\\\\x0aall gates passed'
    """
    return _CONTROL.sub(_escape, str(text))


_FORMULA_START = re.compile(r"^[=+\-@\t\r]")


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells that begin with ``=``, ``+``, ``-``, ``@``, tab or carriage return get a
    leading ``'``, so a spreadsheet shows them as text instead of running them (OWASP's
    advice on CSV injection). Numbers are left alone.

    >>> neutralise_formulas(pd.DataFrame({"v": ["=HYPERLINK(1)", "-3", "a-b", None], "n": [-1, 2, 3, 4]}))
                    v  n
    0  '=HYPERLINK(1) -1
    1             '-3  2
    2             a-b  3
    3             NaN  4
    """
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(object)
        elif not (pd.api.types.is_object_dtype(values.dtype) or pd.api.types.is_string_dtype(values.dtype)):
            continue
        risky = values.str.match(_FORMULA_START.pattern, na=False).astype(bool)  # non-text cells: False
        if risky.any():
            out[column] = values.where(~risky, "'" + values.astype(str))
    return out


def csv_text(frame: pd.DataFrame, path: str | Path | None = None, formulas: str = "escape") -> str | None:
    """A table as CSV (RFC 4180 line ends, so a value holding a carriage return or a line
    feed is quoted and cannot start a row of its own), formulas neutralised unless
    ``formulas="keep"``; written to ``path``, or returned as text."""
    if formulas not in CSV_FORMULAS:
        msg = f"formulas must be one of {', '.join(CSV_FORMULAS)}, got {formulas!r}"
        raise ValueError(msg)
    shown = neutralise_formulas(frame) if formulas == "escape" else frame
    return shown.to_csv(path, index=False, lineterminator="\r\n")
