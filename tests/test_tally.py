"""Tally sums: one factorization of the keys against a groupby per key and part."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core.result.tally import summed_by

KEYS = st.sampled_from(["", "a", "b", "menu.nm", "Ä", "10", "9"])
PART = st.lists(st.tuples(KEYS, st.integers(0, 2**40)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(PART, PART)
def test_summed_by_is_an_outer_join_of_groupby_sums(first, second):
    a = pd.DataFrame(first, columns=["k", "n"]).astype({"k": object, "n": np.int64})
    b = pd.DataFrame(second, columns=["k", "m"]).astype({"k": object, "m": np.int64})
    got = summed_by("k", [(a, ["n"]), (b, ["m"])])
    want = pd.concat([a.groupby(a["k"].astype(object), sort=True)[["n"]].sum(),
                      b.groupby(b["k"].astype(object), sort=True)[["m"]].sum()], axis=1)
    want = want.sort_index().fillna(0).astype(np.int64)
    pd.testing.assert_frame_equal(got, want, check_index_type=False)
    assert got.index.tolist() == sorted(set(a["k"]) | set(b["k"]))
    assert got.to_numpy().dtype == np.int64 and (got.to_numpy() >= 0).all()
