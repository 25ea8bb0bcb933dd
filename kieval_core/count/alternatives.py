"""Several acceptable ground-truth values of one leaf (SPEC 2e), resolved before counting.

Each set of alternatives is reduced, per prediction set, to the one value that stands for
the leaf: the first alternative that a predicted value of the same document and entity
type equals under the field's comparator; else the alternative closest to such a
predicted value (normalised Levenshtein similarity after case folding, as a near miss is
judged); else the first. Counting then sees one GT entity per leaf, so matching stays
exact and vectorised, a prediction equal to any alternative is correct, and a
substitution is shown against the closest alternative. A grouped leaf is resolved against
the predicted values of its entity type in the whole document (the groups are paired
later, by the values this chooses).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

from ..read.dataset import Dataset
from ..read.formats.builder import ALTERNATIVE_SET
from .causes import folded
from .normalize import Normalizer


def resolve_alternatives(gt: Dataset, pred: Dataset, normalizer: Normalizer) -> Dataset:
    """The ground truth with each set of alternatives reduced to the value that stands for
    its leaf against ``pred`` (module docstring); the ground truth itself without any."""
    e = gt.entities
    if ALTERNATIVE_SET not in e:
        return gt
    sets = e[ALTERNATIVE_SET].to_numpy(np.int64)
    rows = np.flatnonzero(sets >= 0)
    if not len(rows):
        return gt
    alt = e.iloc[rows]
    p = pred.entities
    p = p[(p["doc_id"].isin(alt["doc_id"].unique()) & p["entity_type"].isin(alt["entity_type"].unique()))
          .to_numpy()]
    n = len(alt)
    types, type_names = pd.factorize(pd.concat([alt["entity_type"], p["entity_type"]], ignore_index=True))
    docs = pd.factorize(pd.concat([alt["doc_id"], p["doc_id"]], ignore_index=True))[0]
    values = pd.concat([alt["value"], p["value"]], ignore_index=True).to_numpy(object)
    norm, normalised, comparable, *_ = normalizer.comparable_codes(values, list(type_names), types)
    cell = docs.astype(np.int64) * max(len(type_names), 1) + types
    held = np.isin(cell[:n] * (int(comparable.max(initial=0)) + 1) + comparable[:n],
                   cell[n:] * (int(comparable.max(initial=0)) + 1) + comparable[n:])
    score = np.where(held, 2.0, -1.0)
    pairs = (pd.DataFrame({"row": np.flatnonzero(~held), "cell": cell[:n][~held]})
             .merge(pd.DataFrame({"cell": cell[n:], "pred": np.arange(len(p))}), on="cell"))
    if len(pairs):
        shown = np.asarray(folded(normalised), dtype=object)
        similarity = cpdist(list(shown[norm[:n][pairs["row"].to_numpy()]]),
                            list(shown[norm[n:][pairs["pred"].to_numpy()]]),
                            scorer=Levenshtein.normalized_similarity, workers=1)
        np.maximum.at(score, pairs["row"].to_numpy(), np.asarray(similarity, np.float64))
    order = np.lexsort((np.arange(n), -score, sets[rows]))
    ordered = sets[rows][order]
    chosen = order[np.r_[True, ordered[1:] != ordered[:-1]]]
    keep = np.ones(len(e), bool)
    keep[rows] = False
    keep[rows[chosen]] = True
    return replace(gt, entities=e[keep].reset_index(drop=True))
