"""Comparators declared per field (SPEC 2b): canonicalisers applied after the normaliser.

A comparator maps a normalised value to a canonical form (``"01/02/2019"`` to
``"2019-02-01"`` under ``date``); two values of a field are identical when their
canonical forms are equal, so identity stays an equivalence and KIEval's counting is
unchanged. A value that does not parse is compared as it is (and counted).

Every canonical form parses again to itself, so an unparsed value never meets the
canonical form of a parsed one by accident (``number:comma`` aside: it does not read the
plain decimals it writes, ``"1200.5"``, and keeps such a value as it is, equal to the
canonical form of ``"1.200,50"``, which is the same number).

Names: ``exact`` (default), ``casefold``, ``alnum`` (casefold, letters and digits only),
``number`` and ``number:comma`` (decimal comma), ``date`` (= ``date:dmy``), ``date:mdy``,
``date:ymd``.

Dates: numeric dates (``01/02/2019``, ``2019-02-01``, ``1.2.19``, an optional time after
them) are read by this module; a four-digit first part is always year-month-day, the order
settles the rest, and a reading with a month above 12 swaps day and month when that gives
a valid date. Dates with English month names (``1 Feb 2019``, ``Feb 1, 2019``,
``01-FEB-19``) are read by ``python-dateutil``, required to find a day, a month and a year
(it fills missing parts from a default date otherwise). Two-digit years are 2000-2069 and
1970-1999 in both paths (``dateutil`` alone would pivot on today's date, and a report
must not change with the day it is made). ``dateutil`` is not used for numeric dates: with
``dayfirst`` it reads ``2019-02-01`` as 2 January, and it reads ``10.00`` as today at ten.

>>> canonicalise("date", ["01/02/2019", "2019-02-01", "1 Feb 2019", "soon"])[0].tolist()
['2019-02-01', '2019-02-01', '2019-02-01', 'soon']
>>> canonicalise("number", ["$1,200.50", "-3", "RM 7.00", "1,2"])[0].tolist()
['1200.5', '-3', '7', '1,2']
>>> canonicalise("number:comma", ["1.200,50", "7.000"])[0].tolist()
['1200.5', '7000']
"""

from __future__ import annotations

import datetime
import fnmatch
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation

import numpy as np
import pandas as pd
from dateutil import parser as dateutil_parser

from ..exceptions import KievalOptionError

#: Every comparator name (``date`` is ``date:dmy``).
COMPARATORS = ("exact", "casefold", "alnum", "number", "number:comma", "date", "date:dmy", "date:mdy",
               "date:ymd")
_ALIASES = {"date": "date:dmy"}
#: The comparators a ``format`` substitution is tested with (SPEC 2c), in the order a
#: suggestion prefers them when several make the same pairs equal.
FORMAT_COMPARATORS = ("date:dmy", "date:mdy", "date:ymd", "number", "number:comma", "casefold", "alnum")


def comparator_name(name: str) -> str:
    """The canonical name of a comparator (``date`` -> ``date:dmy``); an unknown name is a
    :class:`~kieval_core.exceptions.KievalOptionError` listing the valid ones.

    >>> comparator_name(" Date ")
    'date:dmy'
    """
    key = name.strip().lower()
    if key not in COMPARATORS:
        msg = f"unknown comparator {name.strip()!r}; valid names: {', '.join(COMPARATORS)}"
        raise KievalOptionError(msg)
    return _ALIASES.get(key, key)


def parse_rule(text: str) -> tuple[str, str]:
    """``TYPE=NAME`` (TYPE may be a glob such as ``*.price``) as ``(glob, canonical name)``.

    >>> parse_rule("*.price=number")
    ('*.price', 'number')
    """
    pattern, sep, name = text.partition("=")
    if not sep or not pattern.strip() or not name.strip():
        msg = (f"a comparator is declared as TYPE=NAME (e.g. date=date, '*.price=number'), got {text!r}; "
               f"valid names: {', '.join(COMPARATORS)}")
        raise KievalOptionError(msg)
    return pattern.strip(), comparator_name(name)


def resolve(rules: Sequence[tuple[str, str]], entity_types: Iterable[str]) -> dict[str, str]:
    """The comparator of every entity type a rule matches (the last matching rule wins),
    ``exact`` left out; keys sorted.

    >>> resolve([("*.price", "number"), ("menu.price", "exact"), ("date", "date:dmy")],
    ...         ["menu.price", "sub.price", "date", "company"])
    {'date': 'date:dmy', 'sub.price': 'number'}
    """
    chosen: dict[str, str] = {}
    for entity_type in sorted(set(entity_types)):
        for pattern, name in rules:
            if fnmatch.fnmatchcase(entity_type, pattern):
                chosen[entity_type] = name
    return {t: n for t, n in chosen.items() if n != "exact"}


def unmatched_rules(rules: Sequence[tuple[str, str]], entity_types: Iterable[str]) -> list[str]:
    """The patterns of rules that match no entity type (a typo, or a field absent here)."""
    types = sorted(set(entity_types))
    return [p for p, _ in rules if not any(fnmatch.fnmatchcase(t, p) for t in types)]


# --- canonicalisers (one call per distinct value) -------------------------------------------

_NON_ALNUM = re.compile(r"[\W_]+")
_CURRENCY = (r"(?:[$€£¥₩₹₱₫฿₺₽¢]|(?:US|S|HK|A|C|NZ)\$|"
             r"(?i:usd|eur|gbp|idr|myr|sgd|jpy|krw|inr|cny|rmb|aud|cad|chf|hkd|php|thb|vnd|rp|rm|rs)\.?)")


def _number_pattern(thousands: str, decimal: str) -> re.Pattern:
    digits = (rf"(?:\d{{1,3}}(?P<sep>[{thousands}])\d{{3}}(?:(?P=sep)\d{{3}})*(?:{decimal}\d+)?"
              rf"|\d+(?:{decimal}\d+)?|{decimal}\d+)")
    return re.compile(
        rf"^(?P<open>\()?\s*(?:{_CURRENCY}\s*)?(?P<sign>[-+−])?\s*(?:{_CURRENCY}\s*)?(?P<num>{digits})"
        rf"(?P<trail>-)?\s*(?:{_CURRENCY})?\s*(?P<close>\))?$")


_NUMBER = {
    "number": (_number_pattern(",'’ \u00a0\u202f", r"\."), "."),
    "number:comma": (_number_pattern(".'’ \u00a0\u202f", ","), ","),
}


def _number(value: str, comparator: str) -> str | None:
    pattern, decimal = _NUMBER[comparator]
    m = pattern.match(value)
    if m is None or (m["open"] is None) != (m["close"] is None):
        return None
    num = m["num"]
    if m["sep"]:
        num = num.replace(m["sep"], "")
    try:
        number = Decimal(num.replace(decimal, "."))
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        return None
    if (m["sign"] in ("-", "−")) + (m["trail"] is not None) + (m["open"] is not None) == 1:
        number = -number
    if number == 0:
        return "0"
    return format(number.normalize(), "f")


_NUMERIC_DATE = re.compile(r"^(\d{1,4})([./\- ])(\d{1,2})\2(\d{1,4})"  # an optional time after it
                           r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?$")
_MONTH_NAME = re.compile(r"(?<![A-Za-z])(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
                         r"(?![A-Za-z])", re.IGNORECASE)
_LONG_NUMBER = re.compile(r"\d{3,}")
_DEFAULTS = (datetime.datetime(1904, 1, 1), datetime.datetime(1908, 12, 28))
_ORDERS = {"date:dmy": ("d", "m"), "date:mdy": ("m", "d"), "date:ymd": ("m", "d")}


def _two_digit_year(yy: int) -> int:
    return 2000 + yy if yy < 70 else 1900 + yy


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return None


def _numeric_date(m: re.Match, comparator: str) -> str | None:
    a, b, c = m[1], m[3], m[4]
    if len(a) == 4:
        year, first, second, order = int(a), int(b), int(c), ("m", "d")
    elif len(a) > 2 or len(c) == 3 or len(c) == 1:
        return None
    elif comparator == "date:ymd" and len(c) <= 2:
        year, first, second, order = _two_digit_year(int(a)), int(b), int(c), ("m", "d")
    else:
        year = int(c) if len(c) == 4 else _two_digit_year(int(c))
        first, second, order = int(a), int(b), _ORDERS[comparator]
    day, month = (first, second) if order == ("d", "m") else (second, first)
    if month > 12 >= day:  # unambiguous the other way round
        day, month = month, day
    return _iso(year, month, day)


def _named_date(value: str, comparator: str) -> str | None:
    options = {"dayfirst": comparator == "date:dmy", "yearfirst": comparator == "date:ymd"}
    try:
        first, second = (dateutil_parser.parse(value, default=d, **options) for d in _DEFAULTS)
    except (ValueError, OverflowError):
        return None
    if first.date() != second.date():  # a day, a month or a year was missing
        return None
    year = first.year if _LONG_NUMBER.search(value) else _two_digit_year(first.year % 100)
    return _iso(year, first.month, first.day)


def _date(value: str, comparator: str) -> str | None:
    m = _NUMERIC_DATE.match(value)
    if m is not None:
        return _numeric_date(m, comparator)
    if _MONTH_NAME.search(value) and any(ch.isdigit() for ch in value):
        return _named_date(value, comparator)
    return None


def _alnum(value: str) -> str | None:
    return _NON_ALNUM.sub("", value.casefold()) or None


def _one(comparator: str):
    if comparator == "exact":
        return lambda v: v
    if comparator == "casefold":
        return str.casefold
    if comparator == "alnum":
        return _alnum
    if comparator.startswith("number"):
        return lambda v: _number(v, comparator)
    return lambda v: _date(v, comparator)


def canonicalise(comparator: str, values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Canonical forms of normalised values under one comparator, and which values parsed
    (``exact`` and ``casefold`` parse everything). A value that does not parse keeps its
    form. Each distinct value is canonicalised once.

    >>> forms, parsed = canonicalise("alnum", ["A-1", "a 1", "--"])
    >>> forms.tolist(), parsed.tolist()
    (['a1', 'a1', '--'], [True, True, False])
    """
    comparator = comparator_name(comparator)
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    one = _one(comparator)
    forms = [one(v) for v in uniques]
    parsed = np.array([f is not None for f in forms], bool)
    canonical = np.array([v if f is None else f for v, f in zip(uniques, forms, strict=True)], dtype=object)
    return canonical[codes], parsed[codes]
