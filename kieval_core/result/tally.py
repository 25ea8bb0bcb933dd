"""Mergeable counts of one model, and the figures derived from them.

A :class:`Tally` holds integer counts per document, per entity type and per group type,
plus the :class:`~kieval_core.review.automation.ReviewModel`. Every table of figures (per document,
entity type, group type or metadata slice) is :func:`figures` of such counts, and the
corpus figures are their sums. Tallies of disjoint sets of documents merge exactly
(:meth:`Tally.merge`): a distributed run reduces them into the tally of the whole corpus.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..count.causes import CAUSE_COLUMNS
from ..count.engine import Counted
from ..count.scores import add_scores, aligned_score
from ..review.automation import ReviewModel

#: Entity counts and corrections, summed from the engine's cells.
CELL_COUNTS = ["n_gt", "n_pred", "tp", "fp", "fn", "substitution", "addition", "deletion"]
#: Corrections by cause (SPEC 2c) and values a comparator left unparsed (SPEC 2b), when counted.
CAUSE_COUNTS = [*CAUSE_COLUMNS, "unparsed_gt", "unparsed_pred"]
#: Group counts, from the pairs: group TPs, groups on each side, pairs.
GROUP_COUNTS = ["group_tp", "n_pred_groups", "n_gt_groups", "pairs"]
#: Flat (group-free) counts.
FLAT_COUNTS = ["flat_tp", "flat_n_gt", "flat_n_pred"]
#: Column order of every table of figures (group and flat columns only where they apply).
FIGURE_COLUMNS = [
    "n_gt", "n_pred", "tp", "fp", "fn", "precision", "recall", "f1",
    "substitution", "addition", "deletion", "corrections", "fp_plus_fn", "aligned",
    *CAUSE_COLUMNS, "aligned_if_format_right", "unparsed_gt", "unparsed_pred",
    "group_tp", "group_fp", "group_fn", "group_precision", "group_recall", "group_f1", "group_aligned",
    "flat_tp", "flat_fp", "flat_fn", "flat_precision", "flat_recall", "flat_f1",
]


@dataclass(frozen=True, eq=False)
class Tally:
    """Counts per document (``documents``, indexed by doc_id, sorted), per entity type and
    per group type, and the review model."""

    documents: pd.DataFrame
    entity_types: pd.DataFrame
    group_types: pd.DataFrame
    review: ReviewModel

    @classmethod
    def from_counted(cls, counted: Counted, review: ReviewModel | None = None) -> Tally:
        """The counts of one counted prediction set; ``review`` its review model when
        already built (:meth:`~kieval_core.review.automation.ReviewModel.from_counted`)."""
        cells, pairs, flat = counted.cells, counted.pairs, counted.flat
        group = pd.DataFrame({
            "doc_id": pairs["doc_id"], "group_type": pairs["group_type"],
            "group_tp": pairs["exact"].to_numpy(np.int64),
            "n_pred_groups": (pairs["pred_group"] >= 0).to_numpy(np.int64),
            "n_gt_groups": (pairs["gt_group"] >= 0).to_numpy(np.int64),
            "pairs": np.ones(len(pairs), np.int64),
        })
        flat = flat.rename(columns={"tp": "flat_tp", "n_gt": "flat_n_gt", "n_pred": "flat_n_pred"})
        counts = CELL_COUNTS + [c for c in CAUSE_COUNTS if c in cells.columns]
        documents = summed_by("doc_id", [(cells, counts), (group, GROUP_COUNTS), (flat, FLAT_COUNTS)])
        documents = documents.reindex(pd.Index(counted.doc_ids, name="doc_id", dtype=object), fill_value=0)
        types = summed_by("entity_type", [(cells, counts), (flat, FLAT_COUNTS)])
        gtypes = summed_by("group_type", [(cells, counts), (group, GROUP_COUNTS)])
        return cls(documents, types, gtypes, ReviewModel.from_counted(counted) if review is None else review)

    @classmethod
    def merge(cls, parts: list[Tally]) -> Tally:
        """The tally of the union of disjoint sets of documents."""
        documents = pd.concat([p.documents for p in parts]).sort_index()

        def summed(frames: list[pd.DataFrame]) -> pd.DataFrame:
            return pd.concat(frames).groupby(level=0, sort=True).sum().astype(np.int64)

        return cls(documents, summed([p.entity_types for p in parts]), summed([p.group_types for p in parts]),
                   ReviewModel.merge([p.review for p in parts]))

    @property
    def totals(self) -> pd.Series:
        """Corpus counts: the sum over documents."""
        return self.documents.sum()


def summed_by(key: str, parts: list[tuple[pd.DataFrame, list[str]]]) -> pd.DataFrame:
    """Per value of column ``key`` (sorted), the sums of each part's columns: the keys of
    every part are factorized once together (a key absent from a part sums to 0).

    >>> a = pd.DataFrame({"k": ["y", "x", "y"], "n": [1, 2, 3]})
    >>> summed_by("k", [(a, ["n"]), (pd.DataFrame({"k": ["z"], "m": [4]}), ["m"])]).to_dict("index")
    {'x': {'n': 2, 'm': 0}, 'y': {'n': 4, 'm': 0}, 'z': {'n': 0, 'm': 4}}
    """
    keys = [frame[key] for frame, _ in parts]
    coded = _category_codes(keys)
    if coded is None:
        values = [k.to_numpy(object) for k in keys]
        coded = pd.factorize(np.concatenate(values) if values else np.empty(0, object), sort=True)
    codes, uniques = coded
    bounds = np.cumsum([0, *map(len, keys)])
    sums = {}
    for (frame, columns), start, end in zip(parts, bounds[:-1], bounds[1:], strict=True):
        for column in columns:  # float weights: exact below 2**53
            weights = frame[column].to_numpy(np.int64)
            sums[column] = np.bincount(codes[start:end], weights, len(uniques)).astype(np.int64)
    # a str index when every part has keys, else object (as the groupby and concat it replaces)
    index = pd.Index(uniques, name=key, dtype=None if all(map(len, keys)) else object)
    return pd.DataFrame(sums, index=index)


def _category_codes(keys: list[pd.Series]) -> tuple[np.ndarray, np.ndarray] | None:
    """``pd.factorize(sort=True)`` of the concatenated keys read off their categorical
    codes (the engine's frames share sorted categories): no string is hashed or sorted.
    None unless every key is categorical with the same sorted categories."""
    if not keys or not all(isinstance(k.dtype, pd.CategoricalDtype) for k in keys):
        return None
    categories = keys[0].cat.categories
    same = all(k.cat.categories.equals(categories) for k in keys[1:])
    if not (same and categories.is_monotonic_increasing):
        return None
    raw = np.concatenate([k.cat.codes.to_numpy(np.int64) for k in keys])
    present = np.bincount(raw, minlength=len(categories)) > 0
    return (np.cumsum(present) - 1)[raw], categories.to_numpy(object)[present]


def figures(counts: pd.DataFrame) -> pd.DataFrame:
    """Scores from counts (P/R/F1, corrections, KIEval_Aligned, group and flat figures),
    one row per row of ``counts``; the index becomes a column."""
    out = counts.copy()
    out["corrections"] = out["substitution"] + out["addition"] + out["deletion"]
    out["fp_plus_fn"] = out["fp"] + out["fn"]
    out["aligned"] = aligned_score(out["tp"], out["corrections"])
    if "substitution_format" in out:  # (TP + format) / (TP + Error): what comparators would bring
        out["aligned_if_format_right"] = aligned_score(out["tp"] + out["substitution_format"],
                                                       out["corrections"] - out["substitution_format"])
    out = add_scores(out)
    if "group_tp" in out:
        out["group_fp"] = out["n_pred_groups"] - out["group_tp"]
        out["group_fn"] = out["n_gt_groups"] - out["group_tp"]
        out = add_scores(out, "group_")
        out["group_aligned"] = aligned_score(out["group_tp"], out["pairs"] - out["group_tp"])
    if "flat_tp" in out:
        out["flat_fp"] = out["flat_n_pred"] - out["flat_tp"]
        out["flat_fn"] = out["flat_n_gt"] - out["flat_tp"]
        out = add_scores(out, "flat_")
    return out[[c for c in FIGURE_COLUMNS if c in out.columns]].reset_index()
