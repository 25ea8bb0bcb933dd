"""Shared fixtures: the ``../shared/data`` folder, skipped cleanly when absent; the ``slow``
mark of the tests the inner loop (``pytest -m "not slow"``) leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
SAMPLE_DATA = ROOT / "sample_data"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


#: Test files that start servers, browsers, Dask clusters or virtual environments, or run
#: hypothesis over whole corpora. ``python -m pytest -m "not slow"`` leaves them out (the
#: core's inner loop); CI runs every test through the README's command.
SLOW_FILES = frozenset({"test_dask.py", "test_fuzz.py", "test_invariance.py", "test_readme.py",
                        "test_tracking.py", "test_limits.py", "test_outputs.py", "test_accumulator.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        if path.parent.name == "app" or path.name in SLOW_FILES or item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.slow)
