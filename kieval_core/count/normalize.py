"""Value normalisers: how two values are compared before exact matching (SPEC 2).

A normaliser is an explicit, immutable value passed to the metrics; metric code never
lowercases or strips on its own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..exceptions import KievalOptionError
from .comparators import canonicalise, comparator_name, parse_rule, resolve

_SPACES = re.compile(r"\s+")
# Separators inside a number: "45,500" -> "45500", "1 000.00" -> "1000.00" is not wanted,
# so only ',', '.', ' ' and apostrophes that sit between two digits are dropped, and only
# when the value is number-like (digits, separators, currency signs and signs around them).
_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[,.' \u00a0](?=\d)")
_NUMBER_LIKE = re.compile(r"^[^\w]*[\d][\d,.' \u00a0]*[^\w]*$")


@dataclass(frozen=True)
class Normalizer:
    """Maps a raw value to the form used for exact comparison, and says how its field
    compares it (SPEC 2, 2b) and how close a wrong value must be to be a near miss (2c).

    The default is Unicode NFC, strip, and one space for every run of white space.

    Parameters
    ----------
    casefold : bool
        Compare case-insensitively (``str.casefold``).
    number_punctuation : bool
        In number-like values, drop ``,`` ``.`` ``'`` and spaces between digits, so that
        ``"45,500"``, ``"45.500"`` and ``"45500"`` compare equal.
    comparators : tuple of (glob, name)
        Comparators declared per entity type (:mod:`kieval_core.count.comparators`), applied
        after the normaliser; a glob such as ``*.price`` is allowed and the last rule that
        matches a type wins.
    near_miss : float
        A substitution whose normalised values have a normalised Levenshtein similarity
        of at least this is a ``near_miss`` (SPEC 2c).

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
    comparators: tuple[tuple[str, str], ...] = ()
    near_miss: float = 0.8

    def __post_init__(self) -> None:
        # rules may come as lists (a saved run's manifest); names are checked once, here
        rules = tuple((str(p), comparator_name(str(n))) for p, n in self.comparators)
        object.__setattr__(self, "comparators", rules)
        object.__setattr__(self, "near_miss", float(self.near_miss))
        if not 0.0 <= self.near_miss <= 1.0:
            msg = f"the near-miss similarity must be in [0, 1], got {self.near_miss}"
            raise KievalOptionError(msg)

    @classmethod
    def from_names(cls, names: str | list[str] | tuple[str, ...] | None, compare: Iterable[str] = (),
                   near_miss: float = 0.8) -> Normalizer:
        """Build from option names: ``default``, ``casefold``, ``numbers`` (comma-separated),
        comparators as ``TYPE=NAME`` texts and the near-miss similarity.

        >>> Normalizer.from_names("casefold,numbers")
        Normalizer(casefold=True, number_punctuation=True, comparators=(), near_miss=0.8)
        >>> Normalizer.from_names(None, ["date=date"]).comparators
        (('date', 'date:dmy'),)
        """
        rules = tuple(parse_rule(text) for text in compare)
        if names is None:
            return cls(comparators=rules, near_miss=near_miss)
        if isinstance(names, str):
            names = [n for n in names.split(",") if n.strip()]
        chosen = {n.strip().lower() for n in names} - {"default", "nfc"}
        unknown = chosen - {"casefold", "numbers"}
        if unknown:
            msg = f"unknown normaliser option(s) {sorted(unknown)}; use casefold, numbers"
            raise KievalOptionError(msg)
        return cls(casefold="casefold" in chosen, number_punctuation="numbers" in chosen, comparators=rules,
                   near_miss=near_miss)

    @property
    def description(self) -> str:
        """Human-readable name of the active choice, shown in reports and the UI."""
        parts = ["NFC + strip + collapse spaces"]
        if self.casefold:
            parts.append("case-fold")
        if self.number_punctuation:
            parts.append("no separators inside numbers")
        return ", ".join(parts)

    def comparator_of(self, entity_types: Iterable[str]) -> dict[str, str]:
        """The declared comparator of every entity type that has one (not ``exact``)."""
        return resolve(self.comparators, entity_types)

    def comparable_codes(self, values, entity_types: Sequence[str], type_codes: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Codes for exact comparison within an entity type, after the normaliser and each
        type's comparator.

        ``entity_types`` names the codes ``type_codes`` (one per value). Returns the
        normalised codes and values (as :meth:`sorted_codes`), the comparable codes and
        values (sorted; a value of a type without comparator compares as normalised), and
        per value whether its comparator left it unparsed. Each distinct (comparator,
        normalised value) is canonicalised once.

        >>> out = Normalizer(comparators=(("d", "date"),)).comparable_codes(
        ...     ["01/02/2019", "2019-02-01", "01/02/2019", "x"], ["d", "e"], np.array([0, 0, 1, 0]))
        >>> out[2].tolist(), out[3].tolist(), out[4].tolist()
        ([1, 1, 0, 2], ['01/02/2019', '2019-02-01', 'x'], [False, False, False, True])
        """
        norm_codes, normalised = self.sorted_codes(values)
        chosen = self.comparator_of(entity_types)
        unparsed = np.zeros(len(norm_codes), bool)
        if not chosen:
            return norm_codes, normalised, norm_codes, normalised, unparsed
        names = sorted(set(chosen.values()))
        comparator_of_type = np.array([names.index(chosen[t]) if t in chosen else -1 for t in entity_types],
                                      np.int64)
        per_value = np.append(comparator_of_type, -1)[np.where(type_codes >= 0, type_codes, -1)]
        # distinct forms only: the normalised values, then each comparator's canonical forms
        segments, members_of, inverses = [normalised], [], []
        for k, name in enumerate(names):
            members = np.flatnonzero(per_value == k)
            distinct, inverse = np.unique(norm_codes[members], return_inverse=True)
            canonical, parsed = canonicalise(name, normalised[distinct])
            unparsed[members] = ~parsed[inverse]
            segments.append(canonical)
            members_of.append(members)
            inverses.append(inverse)
        form_codes, comparable = pd.factorize(np.concatenate(segments), sort=True)
        starts = np.cumsum([0, *map(len, segments)])
        codes = form_codes[norm_codes]
        for k, (members, inverse) in enumerate(zip(members_of, inverses, strict=True)):
            codes[members] = form_codes[starts[k + 1] + inverse]
        return norm_codes, normalised, codes.astype(np.int64), np.asarray(comparable, dtype=object), unparsed

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
        raw_codes, uniques = text_codes(values)
        if not len(raw_codes):
            return np.zeros(0, np.int64), np.zeros(0, object)
        normalised = np.array([self(v) for v in uniques], dtype=object)
        norm_codes, names = pd.factorize(normalised, sort=True)
        return norm_codes[raw_codes].astype(np.int64), np.asarray(names, dtype=object)


def text_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of text values: codes in order of first appearance, and the
    distinct values as objects. Arrow-backed text is encoded by Arrow and a categorical
    read through its codes, with no Python string made or hashed per value.

    >>> codes, uniques = text_codes(pd.Series(["b", "a", "b"], dtype="string[pyarrow]"))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, 0], ['b', 'a'])
    """
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow" and not values.hasnans:
        text = pa.chunked_array(values.array.__arrow_array__()).combine_chunks()
        encoded = pc.dictionary_encode(text)
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return codes, np.asarray(encoded.dictionary.to_pylist(), dtype=object)
    if isinstance(values, pd.Categorical):
        codes, uniques = pd.factorize(values, sort=False)
    else:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)
