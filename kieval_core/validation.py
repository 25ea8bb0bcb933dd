"""Parameter checks of the public API, run once at the boundary.

Each check returns the value it accepts or raises :class:`~kieval_core.exceptions.KievalOptionError`
(a ``ValueError``) whose message names the parameter, the value given and what is allowed,
so a wrong call fails at once with a clear message instead of a ``KeyError`` deep inside,
an ``IndexError``, or a silently meaningless figure (a target of 95 is never reached).

>>> check_share("target", 0.95)
0.95
>>> check_share("share", 95)
Traceback (most recent call last):
...
kieval_core.exceptions.KievalOptionError: share must be a number in [0, 1] (a share, not a percentage), got 95
>>> check_choice("level", "bogus", ("entity", "document"))
Traceback (most recent call last):
...
kieval_core.exceptions.KievalOptionError: level must be one of 'entity', 'document', got 'bogus'
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from .exceptions import KievalOptionError


def _fail(name: str, allowed: str, value: Any) -> KievalOptionError:
    return KievalOptionError(f"{name} must be {allowed}, got {value!r}")


def _is_real(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and not math.isnan(value)


def check_number(name: str, value: Any, *, minimum: float | None = None, finite: bool = False) -> float:
    """A real number (not NaN, not a bool), at least ``minimum``, finite if asked."""
    allowed = "a finite number" if finite else "a number"
    if minimum is not None:
        allowed += f" >= {minimum:g}"
    if not _is_real(value) or (finite and math.isinf(value)) or (minimum is not None and value < minimum):
        raise _fail(name, allowed, value)
    return float(value)


def check_share(name: str, value: Any, *, open_interval: bool = False) -> float:
    """A number in [0, 1] (in (0, 1) with ``open_interval``): a share, not a percentage."""
    if open_interval:
        ok, interval = _is_real(value) and 0 < value < 1, "(0, 1)"
    else:
        ok, interval = _is_real(value) and 0 <= value <= 1, "[0, 1]"
    if not ok:
        raise _fail(name, f"a number in {interval} (a share, not a percentage)", value)
    return float(value)


def check_int(name: str, value: Any, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer (not a bool) of at least ``minimum`` (and at most ``maximum``)."""
    allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum:,}]"
    if (not isinstance(value, Integral) or isinstance(value, bool) or value < minimum
            or (maximum is not None and value > maximum)):
        raise _fail(name, allowed, value)
    return int(value)


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """One of the names ``choices``."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise _fail(name, f"one of {', '.join(map(repr, choices))}", value)
    return value


def check_threshold(name: str, value: Any, entity_types: Collection[str] | None = None) -> Any:
    """A confidence threshold: a number (not NaN; infinity reviews everything), or, when
    ``entity_types`` is given, a mapping of some of those types to numbers."""
    if entity_types is not None and isinstance(value, Mapping):
        unknown = [t for t in value if t not in entity_types]
        if unknown:
            known = ", ".join(map(repr, entity_types)) or "none"
            msg = (f"{name}: unknown entity type(s) {', '.join(map(repr, unknown))}; the model's types "
                   f"are {known}")
            raise KievalOptionError(msg)
        for entity_type, limit in value.items():
            check_number(f"{name}[{entity_type!r}]", limit)
        return value
    allowed = "a number or a mapping {entity type: number}" if entity_types is not None else "a number"
    if not _is_real(value):
        raise _fail(name, allowed, value)
    return value


def check_length(name: str, values: Any, n: int, what: str) -> np.ndarray:
    """A one-dimensional array of ``n`` values (one per ``what``)."""
    array = np.asarray(values)
    if array.ndim != 1 or len(array) != n:
        shape = "x".join(map(str, array.shape)) or "a scalar"
        msg = f"{name} must hold one value per {what} ({n}), got {shape}"
        raise KievalOptionError(msg)
    return array


def check_columns(name: str, frame: Any, columns: Iterable[str], made_by: str) -> pd.DataFrame:
    """A table holding ``columns`` (as ``made_by`` makes it)."""
    columns = list(columns)
    if not isinstance(frame, pd.DataFrame):
        raise _fail(name, f"a DataFrame made by {made_by}", type(frame).__name__)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        msg = f"{name} lacks the column(s) {', '.join(missing)}; pass a table made by {made_by}"
        raise KievalOptionError(msg)
    if frame.empty:
        msg = f"{name} is empty; pass a table made by {made_by}"
        raise KievalOptionError(msg)
    return frame


def check_instance(name: str, value: Any, kind: type) -> Any:
    """An instance of ``kind``."""
    if not isinstance(value, kind):
        raise _fail(name, f"a {kind.__name__}", value)
    return value
