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


@settings(max_examples=200, deadline=None)
@given(PART, PART, st.sampled_from(["sorted", "unsorted"]))
def test_summed_by_reads_categorical_keys_as_their_strings(first, second, kind):
    """The engine's frames key by categoricals sharing sorted categories (some unused):
    read off their codes, the sums and the index equal those of the same keys as strings;
    unsorted categories take the strings' path."""
    a = pd.DataFrame(first, columns=["k", "n"]).astype({"k": object, "n": np.int64})
    b = pd.DataFrame(second, columns=["k", "m"]).astype({"k": object, "m": np.int64})
    names = sorted(set(a["k"]) | set(b["k"]) | {"unused", "zz"})
    if kind == "unsorted":
        names = names[::-1]
    categories = pd.Index(names, dtype=object)

    def coded(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(k=pd.Categorical(frame["k"], categories=categories))

    got = summed_by("k", [(coded(a), ["n"]), (coded(b), ["m"])])
    want = summed_by("k", [(a, ["n"]), (b, ["m"])])
    pd.testing.assert_frame_equal(got, want)
    assert got.index.dtype == want.index.dtype
