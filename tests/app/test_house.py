"""Issue 30's second structural bar, measured by ``bench/trace_house.py`` (its docstring
defines it): an upload reaches the first Overview figure in at most 15 hops."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_upload_reaches_the_first_overview_figure_in_at_most_15_hops():
    spec = importlib.util.spec_from_file_location("trace_house", ROOT / "bench" / "trace_house.py")
    trace_house = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trace_house)
    assert trace_house.trace_upload(show=False) <= 15
