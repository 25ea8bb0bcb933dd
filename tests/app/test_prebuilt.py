"""The built-in samples kept on disk between servers (``kieval_app.prebuilt``): a fresh
server reads them instead of computing them, never a stale or another session's figure."""

from __future__ import annotations

import json

import pytest

from kieval_app import compute, prebuilt
from kieval_app.serving.isolation import run_isolated
from kieval_app.serving.store import Store
from kieval_app.sources import AppOptions, Source, sample_sources
from kieval_core import DecisionOptions, load_bytes
from kieval_core.output.render import report_json
from kieval_core.result import suggest
from kieval_core.result.tables import metric_table


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(prebuilt.CACHE_DIR, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def counted(monkeypatch):
    """Every read and scoring the app makes (each in a child process), by file name."""
    calls = []

    def isolated(function, *args, **kwargs):
        if function is compute.score_file:
            calls.append(("score", kwargs["name"]))
        elif function in (load_bytes, compute.file_keys):
            calls.append(("read", args[1]))
        return run_isolated(function, *args, **kwargs)

    monkeypatch.setattr(compute, "run_isolated", isolated)
    return calls


def _report(ws) -> dict:
    return json.loads(report_json(ws.result, DecisionOptions(resamples=20)))


def test_a_fresh_server_reads_the_sample_scored_by_the_first(cache, counted):
    """The first server reads and scores the sample and keeps it; a second one (a new
    store, as after a restart) computes nothing and reports the same figures, page images
    included."""
    sample = sample_sources("simulated")
    first = compute.build_workspace(Store(), "a", sample, AppOptions())
    assert sorted(n for kind, n in counted if kind == "score") == ["sim_llm", "sim_strong", "sim_weak"]
    assert len([c for c in counted if c[0] == "read"]) == 4
    assert len(list(cache.glob("samples-*/*.pickle"))) == 8  # 4 reads, 3 scorings, the page images
    counted.clear()
    second = compute.build_workspace(Store(), "b", sample, AppOptions())
    assert counted == []
    assert _report(second) == _report(first)
    assert second.images.pages.keys() == first.images.pages.keys()
    doc = next(iter(first.images.pages))
    assert second.images.page(doc, 1) == first.images.page(doc, 1)


def test_another_option_or_another_code_is_computed_again(cache, counted, monkeypatch):
    sample = sample_sources("simulated")
    compute.build_workspace(Store(), "a", sample, AppOptions())
    counted.clear()
    casefolded = compute.build_workspace(Store(), "b", sample, AppOptions(casefold=True))
    assert sorted(n for kind, n in counted if kind == "score") == ["sim_llm", "sim_strong", "sim_weak"]
    fresh = compute.build_workspace(Store(), "c", sample, AppOptions(casefold=True))
    assert _report(fresh) == _report(casefolded)
    # another version of the code: a new folder, the old one deleted when it is made
    old = {p.name for p in cache.glob("samples-*")}
    monkeypatch.setattr(prebuilt, "fingerprint", lambda: "another-code")
    counted.clear()
    compute.build_workspace(Store(), "d", sample, AppOptions())
    assert len([c for c in counted if c[0] == "score"]) == 3
    assert {p.name for p in cache.glob("samples-*")} == {"samples-another-code"} != old


def test_the_fingerprint_follows_the_code(monkeypatch, tmp_path):
    """Any source file of the packages changes it (here: one more module)."""
    before = prebuilt.fingerprint()
    prebuilt.fingerprint.cache_clear()
    try:
        assert prebuilt.fingerprint() == before  # stable within a version of the code
        package = tmp_path / "kieval_extra"
        package.mkdir()
        (package / "__init__.py").write_text("X = 1\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        import kieval_extra  # noqa: F401

        monkeypatch.setattr(prebuilt, "PACKAGES", (*prebuilt.PACKAGES, "kieval_extra"))
        prebuilt.fingerprint.cache_clear()
        with_extra = prebuilt.fingerprint()
        (package / "__init__.py").write_text("X = 2\n")
        prebuilt.fingerprint.cache_clear()
        assert len({before, with_extra, prebuilt.fingerprint()}) == 3
    finally:
        prebuilt.fingerprint.cache_clear()


def test_an_upload_is_never_kept_on_disk(cache, counted):
    """Files that are not a built-in sample's (the same records under another content) are
    computed for the session and never written."""
    sample = sample_sources("simulated")
    gt = Source.of("my_gt.jsonl", sample.gt.data + b"\n")
    preds = tuple(Source.of(f"mine_{p.name}", p.data + b"\n") for p in sample.predictions)
    assert not prebuilt.builtin(gt) and prebuilt.builtin(sample.gt)
    compute.build_workspace(Store(), "a", type(sample)(gt, preds), AppOptions())
    assert not cache.exists() or not list(cache.rglob("*.pickle"))


def test_a_damaged_piece_is_computed_again_and_replaced(cache, counted):
    sample = sample_sources("simulated")
    first = compute.build_workspace(Store(), "a", sample, AppOptions())
    for piece in cache.glob("samples-*/*.pickle"):
        piece.write_bytes(piece.read_bytes()[:100])
    counted.clear()
    again = compute.build_workspace(Store(), "b", sample, AppOptions())
    assert len([c for c in counted if c[0] == "score"]) == 3
    assert _report(again) == _report(first)
    counted.clear()
    compute.build_workspace(Store(), "c", sample, AppOptions())
    assert counted == []


def test_no_cache_directory_computes_every_time(monkeypatch, counted):
    monkeypatch.setenv(prebuilt.CACHE_DIR, "off")
    sample = sample_sources("simulated")
    compute.build_workspace(Store(), "a", sample, AppOptions())
    counted.clear()
    compute.build_workspace(Store(), "b", sample, AppOptions())
    assert len([c for c in counted if c[0] == "score"]) == 3


def test_one_evaluation_per_content_for_every_run_and_session_until_options_or_peer_figures_change(
        monkeypatch):
    """A rerun and another session of the same files and options get the same result (with
    every figure derived from it: the rankings are derived once for all); another option,
    or peer figures that joined, give a new one."""
    derived, keys = [], []
    derive = suggest.rule_figures
    monkeypatch.setattr(suggest, "rule_figures", lambda result: derived.append(result) or derive(result))
    count = compute.KeyCounts.of
    monkeypatch.setattr(compute.KeyCounts, "of", lambda dataset: keys.append(dataset) or count(dataset))
    store, sample = Store(idle_bytes=10**9), sample_sources("simulated")
    first = compute.build_workspace(store, "s", sample, AppOptions())
    figures = first.result.rule_figures
    again = compute.build_workspace(store, "s", sample, AppOptions())
    another = compute.build_workspace(store, "t", sample, AppOptions())
    assert again.result is first.result and another.result is first.result
    assert another.result.rule_figures is figures and derived == [first.result]
    assert len(keys) == 1  # the ground truth's keys (for the one-sided ones): once too
    other = compute.build_workspace(store, "s", sample, AppOptions(casefold=True))
    assert other.result is not first.result
    peers = AppOptions(families=("kieval", "oi"))
    pending = compute.build_workspace(store, "s", sample, peers)
    assert pending.pending and pending.result is not other.result
    for task in pending.pending:
        task.future.result(timeout=120)
    joined = compute.build_workspace(store, "s", sample, peers)
    assert joined.result is not pending.result and joined.result.models["simulated-weak"].peer
    assert compute.build_workspace(store, "t", sample, peers).result is joined.result


def test_a_view_shown_before_the_peer_figures_joined_is_derived_again_with_them():
    """A page's table is shared by every session showing the same evaluation; peer figures
    that join make another evaluation, whose tables have their columns."""
    store, sample = Store(idle_bytes=10**9), sample_sources("simulated")
    peers = AppOptions(families=("kieval", "oi"))
    pending = compute.build_workspace(store, "s", sample, peers)
    before = compute.view(store, pending, "metrics", lambda: metric_table(pending.result))
    for task in pending.pending:
        task.future.result(timeout=120)
    joined = compute.build_workspace(store, "t", sample, peers)
    after = compute.view(store, joined, "metrics", lambda: metric_table(joined.result))
    assert len(after.columns) > len(before.columns) and after.equals(metric_table(joined.result))
    assert compute.view(store, joined, "metrics", lambda: None) is after


def test_the_suggested_rules_are_inferred_once_for_every_session(monkeypatch):
    """Applying the suggested rules infers them from a first scoring: once per content, not
    at every run of every session; the figures are those of a fresh store."""
    inferred = []
    infer = compute.suggested_rules
    monkeypatch.setattr(compute, "suggested_rules", lambda result: inferred.append(1) or infer(result))
    store, sample = Store(idle_bytes=10**9), sample_sources("simulated")
    options = AppOptions(apply_suggested=True)
    first = compute.build_workspace(store, "s", sample, options)
    compute.build_workspace(store, "s", sample, options)
    second = compute.build_workspace(store, "t", sample, options)
    assert len(inferred) == 1 and second.result is first.result
    assert _report(second) == _report(compute.build_workspace(Store(), "u", sample, options))


def test_peer_metrics_computed_once_are_there_from_the_start_of_the_next_server(cache, monkeypatch):
    """The first server computes the sample's peer metrics in the background and keeps them;
    the next one shows them at once (nothing pending): the figures computed afresh."""
    sample, options = sample_sources("simulated"), AppOptions(families=("kieval", "oi"))
    first = compute.build_workspace(Store(), "a", sample, options)
    assert len(first.pending) == 3
    for task in first.pending:
        task.future.result(timeout=120)
    second = compute.build_workspace(Store(), "b", sample, options)
    assert not second.pending and not second.problems
    monkeypatch.setenv(prebuilt.CACHE_DIR, "off")
    store = Store()
    fresh = compute.build_workspace(store, "c", sample, options)
    for task in fresh.pending:
        task.future.result(timeout=120)
    fresh = compute.build_workspace(store, "c", sample, options)
    assert _report(second) == _report(fresh)
    assert set(second.result.models["simulated-weak"].peer) == {"oi"}
