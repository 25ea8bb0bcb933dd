"""Saved runs in the dashboard: listed with size and date, deleted after a confirmation,
reopened from an address on a session's first visit (even when that visit reruns), and
bad addresses or bad runs give one message, never a traceback (SPEC 8b)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from kieval_core.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
TIMEOUT = 120


@pytest.fixture
def runs(tmp_path, monkeypatch, capsys):
    """A runs directory with two saved runs, ``weak`` and ``strong``."""
    monkeypatch.setenv("KIEVAL_RUNS_DIR", str(tmp_path))
    for name in ("weak", "strong"):
        pred = str(SAMPLE / f"sim_{name}.jsonl")
        assert main(["evaluate", "--gt", str(SAMPLE / "cord_v2_gt.jsonl"), "--pred", pred, "--bootstrap", "0",
                     "--save-run", str(tmp_path / name)]) == 0
    capsys.readouterr()
    return tmp_path


def app(**query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_saved_runs_are_listed_and_one_is_deleted_after_a_confirmation(runs, monkeypatch):
    monkeypatch.setenv("KIEVAL_DELETE_ANY_RUN", "1")  # kieval dashboard --delete-any-run
    at = app()
    at.session_state["overview_saved_runs_open"] = True
    rerun(at)
    table = at.dataframe[0].value
    assert sorted(table["id"]) == ["strong", "weak"]
    assert all(size.endswith("MiB") for size in table["size"]) and all("UTC" in d for d in table["saved"])
    at.selectbox(key="runs_pick").set_value("weak")
    at.button(key="runs_delete").click()
    rerun(at)
    assert (runs / "weak").is_dir()  # nothing is deleted before the confirmation
    assert any("Delete the saved run" in w.value for w in at.warning)
    at.button(key="runs_delete_no").click()
    rerun(at)
    assert (runs / "weak").is_dir() and not any("Delete the saved run" in w.value for w in at.warning)
    at.button(key="runs_delete").click()
    rerun(at)
    at.button(key="runs_delete_yes").click()
    rerun(at)
    assert not (runs / "weak").exists() and (runs / "strong").is_dir()
    assert any("Deleted the saved run weak" in s.value for s in at.success)
    assert list(at.dataframe[0].value["id"]) == ["strong"]
    at.button(key="runs_open").click()
    rerun(at)
    assert at.session_state["sources"].run == str(runs / "strong")


def test_a_run_named_by_the_address_is_offered_on_the_first_visit_of_a_fresh_server(runs):
    """A fresh server computes the sample's peer metrics in the background, and the page
    reruns once they are done: the offer must survive that rerun (it used to vanish)."""
    st.cache_resource.clear()  # a fresh server: an empty store
    at = app(run="strong")
    assert at.button(key="overview_reopen")
    rerun(at)  # another run of the same session (a rerun, a widget) keeps the offer
    at.button(key="overview_reopen").click()
    rerun(at)
    assert at.session_state["sources"].run == str(runs / "strong")
    assert "overview_reopen" not in [b.key for b in at.button]


@pytest.mark.parametrize("run_id", ["x" * 300, "../strong", "strong/../../etc", "%00", "a" * 65])
def test_a_bad_run_id_in_the_address_is_not_looked_up(runs, run_id):
    at = app(run=run_id)
    assert not [b for b in at.button if b.key == "overview_reopen"]
    text = " ".join(w.value for w in at.warning)
    assert "no saved run is named" in text and str(runs) not in text


def test_a_tampered_run_opens_as_one_message(runs):
    manifest = json.loads((runs / "strong" / "manifest.json").read_text())
    manifest["models"][0]["doc_ids"] = manifest["models"][0]["doc_ids"][:3]
    del manifest["files"]  # an older run: the review table's document index now points past the list
    (runs / "strong" / "manifest.json").write_text(json.dumps(manifest))
    shutil.rmtree(runs / "weak")
    at = app(run="strong")
    at.button(key="overview_reopen").click()
    rerun(at)
    for page in ("overview", "automation", "documents"):
        at.switch_page(f"app_pages/{page}.py")
        rerun(at)
        messages = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]
        assert len(messages) == 1 and "predictions.parquet" in messages[0] and "the column doc" in messages[0]


# --- issue 33, N3: who may delete a run, and a run open elsewhere ----------------------------


def test_a_session_deletes_only_the_runs_it_saved(runs):
    at = app()
    at.session_state["overview_saved_runs_open"] = True
    rerun(at)
    assert sorted(at.dataframe[0].value["id"]) == ["strong", "weak"]
    for pick in ("strong", "weak"):  # saved by someone else: no Delete
        at.selectbox(key="runs_pick").set_value(pick)
        rerun(at)
        assert not [b for b in at.button if b.key == "runs_delete"]
    at.session_state["saved"] = {"weak"}  # what Save this run records
    rerun(at)
    at.button(key="runs_delete").click()
    rerun(at)
    at.button(key="runs_delete_yes").click()
    rerun(at)
    assert not (runs / "weak").exists() and (runs / "strong").is_dir()
    at.selectbox(key="runs_pick").set_value("strong")
    rerun(at)
    assert not [b for b in at.button if b.key == "runs_delete"]
    said = " ".join(c.value for c in [*at.caption, *at.success, *at.error])
    assert str(runs) not in said  # no server path


def test_a_run_open_in_a_session_stays_readable_when_it_is_deleted_elsewhere(runs):
    at = app(run="weak")
    at.button(key="overview_reopen").click()
    rerun(at)
    assert at.session_state["sources"].run == str(runs / "weak")
    shown = [m.value for m in at.metric]
    shutil.rmtree(runs / "weak")  # another session, or kieval runs rm
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    assert [m.value for m in at.metric] == shown
    fresh = app()  # a new session opening it: the run is gone, said without the server's path
    fresh.session_state["sources"] = at.session_state["sources"]
    rerun(fresh)
    said = re.sub(r"\\(.)", r"\1", " ".join(e.value for e in fresh.error))
    assert "Saved run weak: not a saved run (no manifest.json)" in said and str(runs) not in said


def test_delete_any_run_is_an_explicit_option_of_the_server(monkeypatch):
    from kieval_app.serving import launch

    started = []
    monkeypatch.setattr(launch.os, "execve", lambda path, line, env: started.append(env))
    monkeypatch.setattr(launch.os, "chdir", lambda path: None)
    monkeypatch.delenv("KIEVAL_DELETE_ANY_RUN", raising=False)
    main(["dashboard", "--port", "8599"])  # execve stands in for the server: nothing starts
    main(["dashboard", "--port", "8599", "--delete-any-run"])
    assert [env.get("KIEVAL_DELETE_ANY_RUN") for env in started] == [None, "1"]
