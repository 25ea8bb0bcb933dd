"""Why two sets of document ids do not meet: ids that would match after removing leading
zeros, a file extension or a difference of case.

A prediction file that shares no id with the ground truth is refused
(:class:`~kieval_core.NoCommonDocuments`); when its ids are the ground truth's written
another way (the official KIEval sample's ``pred_json`` names its receipts ``000``,
``001`` ... where its CSVs say ``0``, ``1`` ...), the message says how, so the user can fix
the file.

>>> hint = id_mismatch(["000", "001", "10"], ["0", "1", "2"])
>>> str(hint).split(";")[0]
"the ids differ only by leading zeros: '000' (ground truth) vs '0' (predictions)"
>>> hint.matching, hint.predicted
(2, 3)
>>> id_mismatch(["DOC_7.json"], ["doc_007"]).differences
('leading zeros', 'a file extension', 'case')
>>> id_mismatch(["a"], ["b"]) is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

#: What a user may have changed in the ids, and how each is undone (on both sides alike).
#: Leading zeros: of any number in the id ("doc_007" is "doc_7"); a file extension: a dot,
#: a letter and at most four letters or digits at the end, after a non-empty name ("1.5"
#: has none).
ID_DIFFERENCES: dict[str, Callable[[pd.Series], pd.Series]] = {
    "leading zeros": lambda ids: ids.str.replace(r"(?<!\d)0+(?=\d)", "", regex=True),
    "a file extension": lambda ids: ids.str.replace(r"(?s)(?<=.)\.[A-Za-z][A-Za-z0-9]{0,4}\Z", "",
                                                    regex=True),
    "case": lambda ids: ids.str.casefold(),
}


@dataclass(frozen=True)
class IdMismatch:
    """Ground-truth and predicted ids that match once ``differences`` are undone: one such
    pair, and how many of the predicted ids match a ground-truth id that way."""

    differences: tuple[str, ...]
    gt_id: str
    pred_id: str
    matching: int
    predicted: int

    def __str__(self) -> str:
        return (f"the ids differ only by {' and '.join(self.differences)}: {self.gt_id!r} (ground truth) vs "
                f"{self.pred_id!r} (predictions); {self.matching:,} of the {self.predicted:,} predicted ids "
                "match a ground-truth id that way")


def undo(differences: Iterable[str], ids: pd.Series) -> pd.Series:
    """``ids`` with each of ``differences`` (keys of :data:`ID_DIFFERENCES`) undone."""
    for difference in differences:
        ids = ID_DIFFERENCES[difference](ids)
    return ids


def id_mismatch(gt_ids: Iterable[str], pred_ids: Iterable[str]) -> IdMismatch | None:
    """The fewest of :data:`ID_DIFFERENCES` whose undoing makes a predicted id equal to a
    ground-truth id (one difference before two, two before three; in the order of the
    table among equals), with the first such pair in sorted order; None when no
    combination does."""
    gt = pd.Series(sorted(set(gt_ids)), dtype=object)
    pred = pd.Series(sorted(set(pred_ids)), dtype=object)
    undone = {(): (gt, pred)}  # each combination from the one without its last difference
    for size in range(1, len(ID_DIFFERENCES) + 1):
        for differences in combinations(ID_DIFFERENCES, size):
            gt_keys, pred_keys = (undo(differences[-1:], ids) for ids in undone[differences[:-1]])
            undone[differences] = gt_keys, pred_keys
            matched = pred_keys.isin(gt_keys).to_numpy()
            if matched.any():
                first = int(matched.argmax())
                gt_id = gt[(gt_keys == pred_keys.iloc[first]).to_numpy()].iloc[0]
                return IdMismatch(differences, gt_id, pred.iloc[first], int(matched.sum()), len(pred))
    return None
