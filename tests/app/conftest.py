"""Fixtures of the dashboard tests: the sample evaluation, paths, shared-data skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from kieval_core import evaluate, load

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = ROOT / "sample_data"
SHARED = ROOT.parent / "shared" / "data"
SAMPLE_MODELS = {
    "simulated-strong": "sim_strong.jsonl",
    "simulated-llm": "sim_llm.jsonl",
    "simulated-weak": "sim_weak.jsonl",
}


@pytest.fixture(scope="session", autouse=True)
def no_sample_cache():
    """No built-in sample read from or kept on disk (``kieval_app.prebuilt``): each test
    computes what it checks; the cache's own tests point it at a folder of theirs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KIEVAL_CACHE_DIR", "off")
        yield


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def sample_result():
    """The built-in sample evaluated with the core, as the app does by default."""
    gt = load(SAMPLE / "cord_v2_gt.jsonl")
    return evaluate(gt, {name: load(SAMPLE / file) for name, file in SAMPLE_MODELS.items()})


@pytest.fixture(scope="session")
def all_families():
    """The sample with every metric family of the registry (peer metrics too)."""
    gt = load(SAMPLE / "cord_v2_gt.jsonl", keep_structures=True)  # ANLS* and nTED score them
    models = {name: load(SAMPLE / file, keep_structures=True) for name, file in SAMPLE_MODELS.items()}
    return evaluate(gt, models, metrics="all")


@pytest.fixture(scope="session")
def weak(sample_result):
    return sample_result.models["simulated-weak"]


@pytest.fixture(scope="session")
def strong(sample_result):
    return sample_result.models["simulated-strong"]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED
