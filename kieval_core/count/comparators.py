"""Comparators declared per field (SPEC 2b): canonicalisers applied after the normaliser.

A comparator maps a normalised value to a canonical form (``"01/02/2019"`` to
``"2019-02-01"`` under ``date``); two values of a field are identical when their
canonical forms are equal, so identity stays an equivalence and KIEval's counting is
unchanged. A value that does not parse is compared as it is (and counted).

Every canonical form parses again to itself, so an unparsed value never meets the
canonical form of a parsed one by accident (``number:comma`` aside: it does not read the
plain decimals it writes, ``"1200.5"``, and keeps such a value as it is, equal to the
canonical form of ``"1.200,50"``, which is the same number).

Comparators live in one registry, :data:`REGISTRY` (a name to a :class:`Comparator`:
how it reads a value, which parameter it takes after a colon), so adding one is one entry
and its test. Names: ``exact`` (default), ``casefold``, ``alnum`` (casefold, letters and
digits only), ``number`` and ``number:comma`` (decimal comma), ``date`` (= ``date:dmy``),
``date:mdy``, ``date:ymd``, ``phone`` and ``phone:CC`` (E.164 by ``phonenumbers``; ``CC`` a
region such as ``MY`` reads numbers written without their country code).

The registry imports nothing heavy (the command line's help lists :data:`COMPARATORS`
without loading them): numpy, pandas, ``dateutil`` and ``phonenumbers`` are imported by the
functions that use them, once per column of values (per parsed value for the last two,
whose parse costs far more than the lookup of an imported module).

Numbers and dates are read only in values of at most :data:`PARSED_CHARS` characters
(a longer value is no number or date and is compared as it is), so a long value costs a
length check, not a parse.

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
>>> canonicalise("phone:MY", ["07-355 1234", "+60 7 355 1234", "12"])[0].tolist()
['+6073551234', '+6073551234', '12']
"""

from __future__ import annotations

import datetime
import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from ..exceptions import KievalOptionError

if TYPE_CHECKING:
    import numpy as np


def _no_parameter(parameter: str | None) -> None:
    if parameter is not None:
        msg = "takes no parameter"
        raise ValueError(msg)


@dataclass(frozen=True)
class Comparator:
    """One entry of :data:`REGISTRY`.

    ``read(value, parameter)`` is the canonical form of a normalised value, or None when
    the value does not parse (it is then compared as it is, and counted). ``parameter``
    checks the text after the colon (None when there is none) and gives its canonical
    spelling, or None for no parameter; it raises :class:`ValueError` naming what it takes.
    """

    read: Callable[[str, str | None], str | None]
    parameter: Callable[[str | None], str | None] = _no_parameter
    #: The names listed to users (``COMPARATORS``).
    names: tuple[str, ...] = ()


def _one_of(*choices: str, default: str | None = None):
    def check(parameter: str | None) -> str | None:
        if parameter is None:
            return default
        if parameter.lower() not in choices:
            msg = f"takes {' or '.join(choices)}"
            raise ValueError(msg)
        return parameter.lower()
    return check


def _region(parameter: str | None) -> str | None:
    if parameter is None:
        return None
    import phonenumbers  # noqa: PLC0415 - its metadata is large; read only when a phone field is declared

    region = parameter.upper()
    if region not in phonenumbers.SUPPORTED_REGIONS:
        msg = "takes a region code such as MY, US, GB"
        raise ValueError(msg)
    return region


#: Every comparator: a name to its :class:`Comparator` (filled below the canonicalisers).
REGISTRY: dict[str, Comparator] = {}
#: The comparators of :data:`DATE_ORDERS`, in the order a suggestion prefers them.
DATE_ORDERS = ("date:dmy", "date:mdy", "date:ymd")
#: The comparators a ``format`` substitution is tested with (SPEC 2c), in the order a
#: suggestion prefers them when several make the same pairs equal.
FORMAT_COMPARATORS = (*DATE_ORDERS, "number", "number:comma", "casefold", "alnum")
#: The longest value read as a number or a date (``Wednesday, 25 September 2019 12:34:56 PM``
#: has 42 characters).
PARSED_CHARS = 100


def comparator_name(name: str) -> str:
    """The canonical name of a comparator (``date`` -> ``date:dmy``, ``phone:my`` ->
    ``phone:MY``); an unknown name is a :class:`~kieval_core.exceptions.KievalOptionError`
    listing the valid ones.

    >>> comparator_name(" Date ")
    'date:dmy'
    """
    family, sep, parameter = name.strip().partition(":")
    entry = REGISTRY.get(family.lower())
    if entry is None:
        msg = f"unknown comparator {name.strip()!r}; valid names: {', '.join(COMPARATORS)}"
        raise KievalOptionError(msg)
    try:
        canonical = entry.parameter(parameter.strip() if sep else None)
    except ValueError as e:
        msg = f"comparator {name.strip()!r}: {family.lower()} {e}; valid names: {', '.join(COMPARATORS)}"
        raise KievalOptionError(msg) from None
    return family.lower() if canonical is None else f"{family.lower()}:{canonical}"


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


#: The thousands separators and the decimal point of each number comparator.
_SEPARATORS = {"number": (",'’ \u00a0\u202f", "."), "number:comma": (".'’ \u00a0\u202f", ",")}


@functools.cache
def _number_pattern(comparator: str) -> tuple[re.Pattern, str]:
    """The pattern of a number under a comparator, and its decimal point (compiled when first
    used, not when the registry is imported for its names)."""
    thousands, decimal = _SEPARATORS[comparator]
    point = re.escape(decimal)
    digits = (rf"(?:\d{{1,3}}(?P<sep>[{thousands}])\d{{3}}(?:(?P=sep)\d{{3}})*(?:{point}\d+)?"
              rf"|\d+(?:{point}\d+)?|{point}\d+)")
    return re.compile(
        rf"^(?P<open>\()?\s*(?:{_CURRENCY}\s*)?(?P<sign>[-+−])?\s*(?:{_CURRENCY}\s*)?(?P<num>{digits})"
        rf"(?P<trail>-)?\s*(?:{_CURRENCY})?\s*(?P<close>\))?$"), decimal


def _number(value: str, comparator: str) -> str | None:
    if len(value) > PARSED_CHARS:
        return None
    pattern, decimal = _number_pattern(comparator)
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
                           r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[AaPp]\.?[Mm]\.?)?)?$")
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


def _numeric_date(m: re.Match, comparator: str, swap: bool = True) -> str | None:
    a, b, c = m[1], m[3], m[4]
    if len(a) == 4:
        year, first, second, order = int(a), int(b), int(c), ("m", "d")
    elif len(a) > 2 or len(c) == 3 or len(c) == 1:
        return None
    elif comparator == "date:ymd" and not swap and len(c) == 4:
        return None  # strictly, a year written last is not year first
    elif comparator == "date:ymd" and len(c) <= 2:
        year, first, second, order = _two_digit_year(int(a)), int(b), int(c), ("m", "d")
    else:
        year = int(c) if len(c) == 4 else _two_digit_year(int(c))
        first, second, order = int(a), int(b), _ORDERS[comparator]
    day, month = (first, second) if order == ("d", "m") else (second, first)
    if swap and month > 12 >= day:  # unambiguous the other way round
        day, month = month, day
    return _iso(year, month, day)


def _named_date(value: str, comparator: str) -> str | None:
    from dateutil import parser as dateutil_parser

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
    if len(value) > PARSED_CHARS:
        return None
    m = _NUMERIC_DATE.match(value)
    if m is not None:
        return _numeric_date(m, comparator)
    if _MONTH_NAME.search(value) and any(ch.isdigit() for ch in value):
        return _named_date(value, comparator)
    return None


_ORDER_WORDS = {"date:dmy": "day first", "date:mdy": "month first", "date:ymd": "year first"}


@dataclass(frozen=True)
class DateOrder:
    """How a field's ground truth writes its dates (SPEC 2c): ``order`` is the one order of
    :data:`DATE_ORDERS` under which every unambiguous value parses, None when they
    contradict each other or none decides. ``values`` counts the values, ``dates`` those
    that read as a date in some order, ``deciding`` the unambiguous ones that rule out an
    order (``25/12/2018`` rules out month first; ISO dates and month names decide
    nothing), ``fits`` how many of those each order reads."""

    order: str | None
    values: int
    dates: int
    deciding: int
    fits: tuple[int, ...] = (0, 0, 0)

    @property
    def leading(self) -> str | None:
        """The order most deciding values read in (the first of a tie), None when none decides;
        equal to :attr:`order` when that is set."""
        if self.order is not None or not self.deciding:
            return self.order
        return DATE_ORDERS[self.fits.index(max(self.fits))]

    @property
    def why(self) -> str:
        """In words: ``341 of 342 GT values are dates; day first in 120 unambiguous``."""
        text = f"{self.dates} of {self.values} GT values are dates"
        if self.order is not None:
            return f"{text}; {_ORDER_WORDS[self.order]} in {self.deciding} unambiguous"
        if self.leading is None:
            return f"{text}; none tells the order"
        fit = self.fits[DATE_ORDERS.index(self.leading)]
        return f"{text}; {_ORDER_WORDS[self.leading]} in {fit} of {self.deciding} unambiguous"


def date_readings(values: Sequence[str]) -> np.ndarray:
    """Each normalised value read as a date under each order of :data:`DATE_ORDERS`, strictly
    (no day and month swapped when the month is above 12): an object matrix of ISO dates,
    None where the value does not read as a date in that order. Month names and four-digit
    years first read the same in every order."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return _readings(uniques)[codes]


def _readings(uniques: Sequence[str]) -> np.ndarray:
    import numpy as np

    out = np.full((len(uniques), len(DATE_ORDERS)), None, dtype=object)
    for i, value in enumerate(uniques):
        m = _NUMERIC_DATE.match(value)
        if m is not None:
            out[i] = [_numeric_date(m, order, swap=False) for order in DATE_ORDERS]
        elif _MONTH_NAME.search(value) and any(ch.isdigit() for ch in value):
            out[i] = _named_date(value, "date:dmy")
    return out


def date_order(values: Sequence[str]) -> DateOrder:
    """The date order of one field's ground-truth values (normalised), SPEC 2c.

    >>> date_order(["25/12/2018", "01/02/2019", "2019-03-04", "n/a"])
    DateOrder(order='date:dmy', values=4, dates=3, deciding=1, fits=(1, 0, 0))
    >>> contradicted = date_order(["12/25/2018", "25/12/2018", "13/01/2019"])
    >>> contradicted.order, contradicted.leading, contradicted.why
    (None, 'date:dmy', '3 of 3 GT values are dates; day first in 2 of 3 unambiguous')
    """
    return date_counts(values).order()


@dataclass(frozen=True)
class DateCounts:
    """What :func:`date_order` reads from a field's values, as counts that add up over
    disjoint parts of the values (a distributed run's partitions): ``values``, ``dates``,
    ``deciding`` and ``fits`` as in :class:`DateOrder`; ``unambiguous`` counts the values
    that read as one date only, ``misfits`` per order the distinct unambiguous values it
    does not read (only whether it is 0 matters: 0 in every part is 0 in the whole)."""

    values: int = 0
    dates: int = 0
    deciding: int = 0
    fits: tuple[int, ...] = (0, 0, 0)
    unambiguous: int = 0
    misfits: tuple[int, ...] = (0, 0, 0)

    def __add__(self, other: DateCounts) -> DateCounts:
        return DateCounts(self.values + other.values, self.dates + other.dates,
                          self.deciding + other.deciding,
                          tuple(a + b for a, b in zip(self.fits, other.fits, strict=True)),
                          self.unambiguous + other.unambiguous,
                          tuple(a + b for a, b in zip(self.misfits, other.misfits, strict=True)))

    def order(self) -> DateOrder:
        """The :class:`DateOrder` of the values counted: the one order every unambiguous
        value reads in (every order when none is unambiguous), when there is one."""
        candidates = [m == 0 for m in self.misfits] if self.unambiguous else [True] * len(DATE_ORDERS)
        order = DATE_ORDERS[candidates.index(True)] if sum(candidates) == 1 else None
        return DateOrder(order, self.values, self.dates, self.deciding, self.fits)


def date_counts(values: Sequence[str], weight: np.ndarray | None = None) -> DateCounts:
    """The :class:`DateCounts` of one field's normalised ground-truth values (each distinct
    value read once); with ``weight``, the values are distinct and each stands for that
    many."""
    import numpy as np
    import pandas as pd

    if weight is None:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object))
        weight, total = np.bincount(codes[codes >= 0], minlength=len(uniques)), len(codes)
    else:
        uniques, total = values, int(weight.sum())
    readings = _readings(uniques)
    found = readings != None  # noqa: E711 - elementwise over an object matrix
    is_date = found.any(axis=1)
    distinct = np.array([len(set(row[row != None])) for row in readings], np.int64)  # noqa: E711
    unambiguous = is_date & (distinct == 1)
    deciding = unambiguous & ~found.all(axis=1)
    fits = tuple(int(n) for n in (found[deciding] * weight[deciding, None]).sum(axis=0))
    misfits = tuple(int(n) for n in (~found[unambiguous]).sum(axis=0))
    return DateCounts(total, int(weight[is_date].sum()), int(weight[deciding].sum()), fits,
                      int(unambiguous.sum()), misfits)


def _alnum(value: str) -> str | None:
    return _NON_ALNUM.sub("", value.casefold()) or None


def _phone(value: str, region: str | None) -> str | None:
    import phonenumbers  # noqa: PLC0415 - see _region

    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(number):
        return None
    form = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    # a form that reads back as another (leading zeros of an impossible national number:
    # "000000" in region CC is +61000000, which reads as +6100000) is no canonical form
    return form if phonenumbers.format_number(phonenumbers.parse(form), phonenumbers.PhoneNumberFormat.E164) \
        == form else None


REGISTRY.update({
    "exact": Comparator(lambda v, _: v, names=("exact",)),
    "casefold": Comparator(lambda v, _: v.casefold(), names=("casefold",)),
    "alnum": Comparator(lambda v, _: _alnum(v), names=("alnum",)),
    "number": Comparator(lambda v, p: _number(v, "number:comma" if p else "number"), _one_of("comma"),
                         names=("number", "number:comma")),
    "date": Comparator(lambda v, p: _date(v, f"date:{p}"), _one_of("dmy", "mdy", "ymd", default="dmy"),
                       names=("date", *DATE_ORDERS)),
    "phone": Comparator(_phone, _region, names=("phone", "phone:CC")),
})
#: Every comparator name shown to users (``date`` is ``date:dmy``; ``phone:CC`` takes a region).
COMPARATORS = tuple(n for entry in REGISTRY.values() for n in entry.names)


def canonicalise(comparator: str, values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Canonical forms of normalised values under one comparator, and which values parsed
    (``exact`` and ``casefold`` parse everything). A value that does not parse keeps its
    form. Each distinct value is canonicalised once.

    >>> forms, parsed = canonicalise("alnum", ["A-1", "a 1", "--"])
    >>> forms.tolist(), parsed.tolist()
    (['a1', 'a1', '--'], [True, True, False])
    """
    import numpy as np
    import pandas as pd

    family, _, parameter = comparator_name(comparator).partition(":")
    read = REGISTRY[family].read
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    forms = [read(v, parameter or None) for v in uniques]
    parsed = np.array([f is not None for f in forms], bool)
    canonical = np.array([v if f is None else f for v, f in zip(uniques, forms, strict=True)], dtype=object)
    return canonical[codes], parsed[codes]
