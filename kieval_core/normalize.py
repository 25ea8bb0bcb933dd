"""Value normalisers: how two values are compared before exact matching (SPEC 2).

A normaliser is an explicit, immutable value passed to the metrics; metric code never
lowercases or strips on its own.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import KievalOptionError

_SPACES = re.compile(r"\s+")
# Separators inside a number: "45,500" -> "45500", "1 000.00" -> "1000.00" is not wanted,
# so only ',', '.', ' ' and apostrophes that sit between two digits are dropped, and only
# when the value is number-like (digits, separators, currency signs and signs around them).
_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[,.' \u00a0](?=\d)")
_NUMBER_LIKE = re.compile(r"^[^\w]*[\d][\d,.' \u00a0]*[^\w]*$")


@dataclass(frozen=True)
class Normalizer:
    """Maps a raw value to the form used for exact comparison.

    The default is Unicode NFC, strip, and one space for every run of white space.

    Parameters
    ----------
    casefold : bool
        Compare case-insensitively (``str.casefold``).
    number_punctuation : bool
        In number-like values, drop ``,`` ``.`` ``'`` and spaces between digits, so that
        ``"45,500"``, ``"45.500"`` and ``"45500"`` compare equal.

    Examples
    --------
    >>> Normalizer()("  Ice\\u00a0 Tea ")
    'Ice Tea'
    >>> Normalizer(casefold=True)("ICE Tea")
    'ice tea'
    >>> Normalizer(number_punctuation=True)("Rp 45,500")
    'Rp 45,500'
    >>> Normalizer(number_punctuation=True)("45,500")
    '45500'
    """

    casefold: bool = False
    number_punctuation: bool = False

    @classmethod
    def from_names(cls, names: str | list[str] | tuple[str, ...] | None) -> Normalizer:
        """Build from option names: ``default``, ``casefold``, ``numbers`` (comma-separated).

        >>> Normalizer.from_names("casefold,numbers")
        Normalizer(casefold=True, number_punctuation=True)
        """
        if names is None:
            return cls()
        if isinstance(names, str):
            names = [n for n in names.split(",") if n.strip()]
        chosen = {n.strip().lower() for n in names} - {"default", "nfc"}
        unknown = chosen - {"casefold", "numbers"}
        if unknown:
            msg = f"unknown normaliser option(s) {sorted(unknown)}; use casefold, numbers"
            raise KievalOptionError(msg)
        return cls(casefold="casefold" in chosen, number_punctuation="numbers" in chosen)

    @property
    def description(self) -> str:
        """Human-readable name of the active choice, shown in reports and the UI."""
        parts = ["NFC + strip + collapse spaces"]
        if self.casefold:
            parts.append("case-fold")
        if self.number_punctuation:
            parts.append("no separators inside numbers")
        return ", ".join(parts)

    def __call__(self, value: str) -> str:
        value = _SPACES.sub(" ", unicodedata.normalize("NFC", value)).strip()
        if self.casefold:
            value = value.casefold()
        if self.number_punctuation and _NUMBER_LIKE.match(value):
            value = _NUMBER_SEPARATOR.sub("", value)
        return value

    def sorted_codes(self, values) -> tuple[np.ndarray, np.ndarray]:
        """Integer codes such that two values share a code iff they compare equal, and the
        normalised value of each code; code order is the sorted order of the normalised
        values. Each distinct raw value is normalised once.

        >>> codes, normalised = Normalizer().sorted_codes(["b", " a", "a", "b  "])
        >>> codes.tolist(), normalised.tolist()
        ([1, 0, 0, 1], ['a', 'b'])
        """
        raw_codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=False)
        if not len(raw_codes):
            return np.zeros(0, np.int64), np.zeros(0, object)
        normalised = np.array([self(v) for v in uniques], dtype=object)
        norm_codes, names = pd.factorize(normalised, sort=True)
        return norm_codes[raw_codes].astype(np.int64), np.asarray(names, dtype=object)
