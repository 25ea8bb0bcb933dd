"""The Suspect labels page (SPEC 2f) run headless: the list and its field filter, a suspect
opened, a verdict marked, the figures with the fix beside the original, the verdict kept
across a page switch and in a saved run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kieval_core import evaluate
from kieval_core.evaluate import with_label_fixes
from kieval_core.figures.suspects import fix_rows_of, suspect_key
from kieval_core.review.label_fixes import parse_fixes

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
#: The built-in sample's models: file stem -> the name the app gives them.
MODELS = {"sim_strong": "simulated-strong", "sim_llm": "simulated-llm", "sim_weak": "simulated-weak"}
TIMEOUT = 120


def ok(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page(at: AppTest, name: str) -> AppTest:
    at.switch_page(f"app_pages/{name}.py")
    return ok(at)


@pytest.fixture(scope="module")
def sample():
    return evaluate(SAMPLE / "cord_v2_gt.jsonl", {name: SAMPLE / f"{m}.jsonl" for m, name in MODELS.items()})


def mark_wrong(at: AppTest, key: str, value: str, note: str) -> AppTest:
    at.selectbox(key="sus_pick").set_value(key)
    ok(at)
    at.radio(key="sus_verdict").set_value("wrong")
    at.text_input(key="sus_value").set_value(value)
    at.text_input(key="sus_note").set_value(note)
    at.button(key="FormSubmitter:sus_form-Save verdict").click()
    return ok(at)


def test_the_page_lists_opens_marks_and_shows_the_figures_with_the_fix(sample):
    at = page(ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)), "suspects")
    assert [t.value for t in at.title] == ["Suspect labels"]
    suspects = sample.suspects
    listed = at.dataframe[0].value
    assert len(listed) == len(suspects) > 0
    assert list(listed["ground truth"].fillna("")) == list(suspects["gt_value"].fillna(""))
    # the field filter
    field = suspects["entity_type"].iloc[-1]
    at.multiselect(key="sus_fields").set_value([field])
    ok(at)
    assert len(at.dataframe[0].value) == int((suspects["entity_type"] == field).sum())
    at.multiselect(key="sus_fields").set_value([])
    ok(at)
    # open the second suspect: its document, the GT beside every model's values
    second = suspects.iloc[1]
    at.selectbox(key="sus_pick").set_value(suspect_key(second))
    ok(at)
    assert second["doc_id"] in at.subheader[0].value.replace("\\", "")
    evidence = at.dataframe[1].value
    assert list(evidence["model"]) == list(MODELS.values())
    assert set(evidence.loc[evidence["agrees"], "model"]) == set(second["models"])
    assert at.text_input(key="sus_value").value == second["proposed_value"]  # proposed by default
    assert len(at.get("plotly_chart")) == 1  # the page with its boxes
    # mark it: the label is wrong
    mark_wrong(at, suspect_key(second), second["proposed_value"], "checked on the receipt")
    assert "label is wrong" in at.dataframe[0].value["verdict"].iloc[1]
    headline = at.table[0].value.reset_index()
    verdicts = {suspect_key(second): {"verdict": "wrong", "fixed_value": second["proposed_value"],
                                      "note": "checked on the receipt"}}
    fixed = with_label_fixes(sample, parse_fixes(fix_rows_of(suspects, verdicts), "test"))
    aligned = headline[headline["figure"] == "KIEval_Aligned"].set_index("model")
    for name in MODELS.values():
        assert aligned.loc[name, "as given"] == f"{sample.models[name].aligned:.2%}"
        assert aligned.loc[name, "with fixes"] == f"{fixed.models[name].aligned:.2%}"
    assert any(aligned["as given"] != aligned["with fixes"])
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Download the fix file", "Download the corrected ground truth"]
    # another page and back: the verdict is kept, and shown in the form again
    page(at, "overview")
    page(at, "suspects")
    assert "label is wrong" in at.dataframe[0].value["verdict"].iloc[1]
    at.session_state["suspect"] = suspect_key(second)  # what a click on its row sets
    ok(at)
    assert at.radio(key="sus_verdict").value == "wrong"
    assert at.text_input(key="sus_note").value == "checked on the receipt"


def test_verdicts_are_saved_with_a_run_and_come_back_when_it_opens(sample, tmp_path, monkeypatch):
    monkeypatch.setenv("KIEVAL_RUNS_DIR", str(tmp_path))
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT))
    at.file_uploader(key="upload_gt_0").set_value(
        ("cord_v2_gt.jsonl", (SAMPLE / "cord_v2_gt.jsonl").read_bytes(), "application/octet-stream"))
    ok(at)
    at.file_uploader(key=f"upload_pred_{at.session_state['uploader']}").set_value(
        [(f"{m}.jsonl", (SAMPLE / f"{m}.jsonl").read_bytes(), "application/octet-stream") for m in MODELS])
    ok(at)
    page(at, "suspects")
    first = sample.suspects.iloc[0]
    mark_wrong(at, suspect_key(first), "12,500", "a value of my own")
    page(at, "overview")
    at.button(key="overview_save").click()
    ok(at)
    (run,) = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
    saved = json.loads((run / "manifest.json").read_text())["label_verdicts"]
    expected = {"verdict": "wrong", "fixed_value": "12,500", "note": "a value of my own"}
    assert saved == {suspect_key(first): expected}
    fresh = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT))
    fresh.session_state["overview_saved_runs_open"] = True
    ok(fresh)
    fresh.selectbox(key="runs_pick").set_value(run.name)
    fresh.button(key="runs_open").click()
    ok(fresh)
    page(fresh, "suspects")
    assert "label is wrong" in fresh.dataframe[0].value["verdict"].iloc[0]
    assert fresh.text_input(key="sus_value").value == "12,500"
