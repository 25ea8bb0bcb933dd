"""The Automation page's review modes (issue 19): every combination of decide-by x scope
x review mode x missing-confidence policy runs without an exception, the cards show the
core's operating point, consensus confidences from the loaded models, and Textract on
SROIE (skipped without ../shared/data)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_pages import (
    SAMPLE,
    SROIE_MODELS,
    charts,
    expand,
    frame_with,
    metric_values,
    open_page,
    sroie_uploaded,
    started,
    unescape,
    upload,
)

from kieval_core import LoadOptions, evaluate, load
from kieval_core.figures.text import number, pct
from kieval_core.result.consensus import with_confidence_sources
from kieval_core.review.automation import review_documents_with, review_with
from kieval_core.review.operating_point import operating_point

DECIDE_BY = ("accuracy", "automation", "budget", "threshold")


def _no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def test_every_combination_of_the_controls_runs():
    """Review mode x missing-confidence policy x decide-by x scope, and the assurance where it
    applies: no exception, every card and chart, a decision file to download (issue 31)."""
    at = open_page(started(), "automation")
    scopes = at.selectbox(key="auto_scope").options
    assert len(scopes) >= 2
    for review in ("predictions", "documents"):
        at.segmented_control(key="auto_review").set_value(review).run()
        for missing in ("automate", "review"):
            at.segmented_control(key="auto_missing").set_value(missing).run()
            for mode in DECIDE_BY:
                # the order that raised StreamlitAPIException: decide by, then the scope
                at.selectbox(key="auto_scope").set_value("one").run()
                at.segmented_control(key="auto_mode").set_value(mode).run()
                _no_exception(at)
                for scope in ("one", "field"):
                    at.selectbox(key="auto_scope").set_value(scope).run()
                    _no_exception(at)
                    assert at.session_state["auto_mode"] == mode  # never switched behind the user's back
                    shown = (len(at.metric), charts(at) >= 5, len(at.get("download_button")))
                    assert shown == (8, True, 1), (review, missing, mode, scope)
                    asked = (mode, scope, review) == ("accuracy", "one", "predictions")
                    assert len(at.selectbox(key="auto_assurance").options if asked else []) == 4 * asked
                    assurances = (0.9, 0.99, 0.0, 0.95) if asked else ()  # 0.0: the point estimate
                    for assurance in assurances:
                        at.selectbox(key="auto_assurance").set_value(assurance).run()
                        _no_exception(at)
                        assert len(at.metric) == 8 and len(at.success) + len(at.warning) >= 1


def test_floors_set_in_the_per_field_table_are_the_plans(sample_result):
    """A floor edited in the per-field table reaches the core: the table shows it and the
    cards are the plan with that floor."""
    from kieval_core.review.field_thresholds import per_field_thresholds

    strong = sample_result.models["simulated-strong"]
    at = open_page(started(), "automation")
    at.selectbox(key="auto_scope").set_value("field").run()
    field = strong.review.entity_types[0]
    at.session_state["auto_floors"] = {field: 0.5}  # what an edit of its floor cell stores
    at.run()
    _no_exception(at)
    plan = per_field_thresholds(strong.review, 0.95, {field: 0.5})
    point = review_with(strong.review, strong.review.thresholds_of(plan.thresholds))
    assert _cards(at)["Accuracy after review"] == pct(point.kieval_aligned)
    table = frame_with(at, "entity_type", "floor")  # the data editor of the per-field plan
    assert table.set_index("entity_type").loc[field, "floor"] == pytest.approx(50.0)
    at.session_state["auto_floors"] = {field: 0.5, "a field of another model": 0.9}
    at.sidebar.selectbox(key="model").set_value("simulated-weak").run()
    _no_exception(at)  # floors of fields this model lacks are left aside


def _cards(at) -> dict[str, str]:
    return metric_values(at)


def test_whole_documents_cards_are_the_cores_operating_point(sample_result):
    strong = sample_result.models["simulated-strong"]
    at = open_page(started(), "automation")
    at.segmented_control(key="auto_review").set_value("documents").run()
    at.number_input(key="auto_target").set_value(0.9).run()
    op = operating_point(strong, review="documents", decide_by="accuracy", value=0.9, target=0.9)
    expected = review_documents_with(strong.review, np.full(strong.n_predictions, op.threshold))
    assert op.point == expected
    cards = _cards(at)
    assert cards["Automated"] == pct(expected.auto_rate)
    assert cards["Accuracy after review"] == pct(expected.kieval_aligned)
    assert cards["Straight through"] == pct(expected.straight_through_rate)
    assert cards["Right after review"] == pct(expected.document_accuracy)
    assert cards["Documents opened / 1,000 docs"] == number(round(op.opened_per_1000_documents))
    assert cards["Predictions reviewed / 1,000 docs"] == number(round(expected.reviews_per_1000_documents))
    assert cards["Cost / 1,000 docs"] == number(round(expected.cost_per_1000_documents))
    table = frame_with(at, "entity_type", "fixed", "errors_left")
    assert int(table["errors_left"].sum()) == expected.errors_left  # the per-field table follows the mode too
    at.segmented_control(key="auto_review").set_value("predictions").run()
    assert _cards(at)["Accuracy after review"] != cards["Accuracy after review"]


def _without_confidences(path) -> bytes:
    """A prediction file with every confidence removed (values kept)."""

    def strip(node):
        if isinstance(node, dict):
            if "value" in node and "confidence" in node:
                return node["value"]
            return {k: strip(v) for k, v in node.items()}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return "".join(json.dumps(strip(r)) + "\n" for r in lines).encode()


def test_consensus_confidences_from_the_loaded_models():
    at = started()
    upload(at, "pred", ("bare.jsonl", _without_confidences(SAMPLE / "sim_llm.jsonl")))
    at.sidebar.selectbox(key="model").set_value("bare").run()
    open_page(at, "automation")
    assert any("no confidence" in i.value for i in at.info) and not charts(at)
    at.toggle(key="auto_consensus").set_value(True).run()
    _no_exception(at)
    infos = " ".join(unescape(i.value) for i in at.info)
    assert "needs at least 3 models" in infos  # the sample was replaced by one upload: one model
    gt = (SAMPLE / "cord_v2_gt.jsonl").read_bytes()
    at = started()
    upload(at, "gt", ("cord_v2_gt.jsonl", gt))
    upload(
        at,
        "pred",
        ("bare.jsonl", _without_confidences(SAMPLE / "sim_llm.jsonl")),
        ("sim_strong.jsonl", (SAMPLE / "sim_strong.jsonl").read_bytes()),
        ("sim_weak.jsonl", (SAMPLE / "sim_weak.jsonl").read_bytes()),
    )
    at.sidebar.selectbox(key="model").set_value("bare").run()
    open_page(at, "automation")
    at.toggle(key="auto_consensus").set_value(True).run()
    _no_exception(at)
    assert "consensus of 2 models" in " ".join(c.value for c in at.caption)
    assert "own confidences kept" in " ".join(unescape(i.value) for i in at.info)
    assert charts(at) >= 5  # a threshold to choose now
    at.sidebar.selectbox(key="model").set_value("sim_strong").run()
    expand(at, "auto_calibration_open")
    both = frame_with(at, "confidences", "auroc")
    assert both["confidences"].tolist() == ["own", "consensus"]


@pytest.mark.shared_data
def test_textract_review_modes_and_missing_confidences(shared_data):
    sroie = shared_data / "sroie"
    at, names = sroie_uploaded(sroie), SROIE_MODELS
    at.sidebar.selectbox(key="model").set_value(names[0]).run()
    open_page(at, "automation")
    said = " ".join(i.value for i in at.info)  # the default: never automated, named per field
    assert "are never automated" in said and "date 93% (317 of 342)" in said
    at.segmented_control(key="auto_missing").set_value("automate").run()
    _no_exception(at)
    assert "count as 1.0" in " ".join(i.value for i in at.info)
    at.segmented_control(key="auto_missing").set_value("review").run()
    options = LoadOptions(meta=("split",))
    result = evaluate(load(sroie / "sroie_test_gt.jsonl", options),
                      {names[0]: load(sroie / "predictions" / f"{names[0]}.jsonl", options)})
    textract = with_confidence_sources(result, "review").models[names[0]]
    for review in ("predictions", "documents"):
        at.segmented_control(key="auto_review").set_value(review).run()
        for mode in DECIDE_BY:
            at.selectbox(key="auto_scope").set_value("one").run()
            at.segmented_control(key="auto_mode").set_value(mode).run()
            for scope in ("one", "field", "slice:split"):
                at.selectbox(key="auto_scope").set_value(scope).run()
                _no_exception(at)
    at.selectbox(key="auto_scope").set_value("one").run()
    at.segmented_control(key="auto_mode").set_value("accuracy").run()
    op = operating_point(textract, review="documents", decide_by="accuracy", value=0.95, target=0.95)
    assert _cards(at)["Accuracy after review"] == pct(op.point.kieval_aligned)
    at.toggle(key="auto_consensus").set_value(True).run()
    at.sidebar.selectbox(key="model").set_value(names[1]).run()
    _no_exception(at)
    assert "consensus of 2 models" in " ".join(c.value for c in at.caption)
