"""Every page of the dashboard run headless with ``streamlit.testing.v1.AppTest``: on the
built-in samples, after uploads through the widgets, and with bad input."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from kieval_app.live_chart import NAME as LIVE_CHART
from kieval_core import LoadOptions, evaluate, load
from kieval_core.count.causes import largest_cause
from kieval_core.figures.text import WORD_JOINER, number, pct
from kieval_core.review.automation import recommend, recommend_for_automation, recommend_for_budget, review_at

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
TIMEOUT = 120


def started() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def expand(at: AppTest, key: str) -> AppTest:
    """Open the expander created with ``key`` (its content is built only while open)."""
    at.session_state[key] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescape(text: str) -> str:
    """Text as shown: escapes resolved, the invisible joiners that break autolinks dropped."""
    return re.sub(r"\\(.)", r"\1", text).replace(WORD_JOINER, "")


def live_charts(at: AppTest) -> list[dict]:
    """What each chart drawn in place (:mod:`kieval_app.live_chart`) sends the browser: its
    figure, config, plotly.js address and revision."""
    sent = [json.loads(e.proto.json) for e in at.get("bidi_component")
            if e.proto.component_name == LIVE_CHART]
    return [{**data, "figure": json.loads(data["figure"])} for data in sent if "figure" in data]


def charts(at: AppTest) -> int:
    return len(at.get("plotly_chart")) + len(live_charts(at))


def metric_values(at: AppTest) -> dict[str, str]:
    return {unescape(m.label): m.value for m in at.metric}


def upload(at: AppTest, role: str, *files: tuple[str, bytes]) -> AppTest:
    key = f"upload_{role}_{at.session_state['uploader']}"
    widget = at.file_uploader(key=key)
    payload = [(name, data, "application/octet-stream") for name, data in files]
    widget.set_value(payload[0] if role == "gt" else payload)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


#: Three SROIE models: Textract (real confidences), an LLM, and one with unknown documents.
SROIE_MODELS = ["aws_textract_analyzeexpense", "claude_haiku_4.5", "gpt4o_vision_themurtez"]


def sroie_uploaded(sroie: Path) -> AppTest:
    """The app with SROIE's ground truth (metadata key ``split`` declared) and
    :data:`SROIE_MODELS` uploaded."""
    at = started()
    at.sidebar.text_input(key="opt_meta").input("split").run()
    upload(at, "gt", ("sroie_test_gt.jsonl", (sroie / "sroie_test_gt.jsonl").read_bytes()))
    return upload(at, "pred", *[(f"{n}.jsonl", (sroie / "predictions" / f"{n}.jsonl").read_bytes())
                                for n in SROIE_MODELS])


def _empty_predictions_box_event():
    import streamlit as st

    from kieval_app import session, uploads

    session.init_state()
    before = st.session_state["uploader"]
    st.session_state[uploads.pred_key()] = []  # the box reports "no files"
    uploads.on_prediction_upload()
    st.write(f"keys changed: {st.session_state['uploader'] != before}")


def test_an_empty_box_event_keeps_the_other_box():
    # The browser can report the predictions box as empty while a ground-truth file is still
    # uploading; new box keys then would drop the upload in flight (seen in a browser test).
    at = AppTest.from_function(_empty_predictions_box_event).run()
    assert not at.exception and at.markdown[0].value == "keys changed: False"


def frame_with(at: AppTest, *columns: str):
    """The first table of the page having all these columns."""
    for frame in at.dataframe:
        if set(columns) <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no table with columns {columns}")


def workspace(at: AppTest):
    return at.session_state["workspace"]


def headline(at: AppTest) -> dict[str, dict[str, float]]:
    """The overview's headline table: model -> metric label -> value (the table of metrics,
    after the rankings strict and under the rules)."""
    table = next(t.value for t in at.table if "KIEval_Aligned" in t.value.columns)
    return {row["model"]: row for row in table.to_dict("records")}


def errors(at: AppTest) -> list[str]:
    return [unescape(e.value) for e in at.error]


# --- every page on the sample data --------------------------------------------------------

PAGES = {
    # page: (title, plotly charts at least, metric cards at least)
    "overview": ("KIEval Workbench", 1, 0),
    "documents": ("Documents", 1, 6),
    "errors": ("Errors", 2, 0),
    "automation": ("Automation threshold", 5, 8),
    "compare": ("Compare models", 2, 0),
    "suspects": ("Suspect labels", 1, 0),
    "guide": ("Metrics guide", 2, 0),
}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_runs_on_the_sample(page):
    at = started()
    if page != "overview":
        open_page(at, page)
    title, n_charts, n_metrics = PAGES[page]
    assert [t.value for t in at.title] == [title]
    assert charts(at) >= n_charts
    assert len(at.metric) >= n_metrics
    assert not at.error


def test_overview_shows_the_sample_with_attribution_and_headline_figures(sample_result):
    at = started()
    info = " ".join(unescape(i.value) for i in at.info)
    assert "CC-BY-4.0" in info and "SIMULATED" in info and "CORD" in info
    rows = headline(at)
    strong = sample_result.models["simulated-strong"]
    assert rows["simulated-strong"]["KIEval_Aligned"] == pytest.approx(strong.aligned)
    assert rows["simulated-strong"]["KIEval entity F1"] == pytest.approx(strong.entity.f1)
    assert set(rows) == {"simulated-strong", "simulated-llm", "simulated-weak"}
    assert not any({"source", "missing"} <= set(f.value.columns) for f in at.dataframe)  # closed: not built
    report = frame_with(expand(at, "overview_load_report_open"), "source", "documents scored", "missing")
    weak = report[report["model"] == "simulated-weak"].iloc[0]
    assert (weak["documents scored"], weak["predicted"], weak["missing"]) == (100, 98, 2)  # not "98 scored"


def test_the_real_model_sample_reproduces_the_paper():
    at = started()
    at.button(key="sample_official").click().run()
    assert "REAL" in " ".join(unescape(i.value) for i in at.info)
    rows = headline(at)
    (name,) = rows
    assert "real" in name and round(100 * rows[name]["KIEval_Aligned"], 2) == 69.86
    open_page(at, "automation")
    assert any("no confidence" in i.value for i in at.info)
    assert not charts(at) and not at.get("select_slider")  # nothing made up


def test_upload_ground_truth_and_predictions_through_the_widgets():
    at = started()
    gt = (SAMPLE / "cord_v2_gt.jsonl").read_bytes()
    upload(at, "gt", ("my_gt.jsonl", gt))
    ws = workspace(at)
    assert not ws.sources.sample and ws.sources.gt.name == "my_gt.jsonl"
    assert ws.model_names == []  # the sample's simulated models do not fit a new ground truth
    assert any("my_gt.jsonl: loaded as the ground truth" in unescape(s.value) for s in at.success)
    preds = [("weak_model.jsonl", (SAMPLE / "sim_weak.jsonl").read_bytes()),
             ("llm_model.jsonl", (SAMPLE / "sim_llm.jsonl").read_bytes())]
    upload(at, "pred", *preds)
    ws = workspace(at)
    assert ws.model_names == ["weak_model", "llm_model"]
    assert at.file_uploader(key=f"upload_pred_{at.session_state['uploader']}").value == []  # emptied
    expected = evaluate(load(SAMPLE / "cord_v2_gt.jsonl"), {"w": load(SAMPLE / "sim_weak.jsonl")})
    assert headline(at)["weak_model"]["KIEval_Aligned"] == pytest.approx(expected.models["w"].aligned)
    at.sidebar.selectbox(key="model").set_value("llm_model").run()
    for page in ("documents", "errors", "automation", "compare", "overview"):
        open_page(at, page)
        assert not at.error
    assert workspace(at).model_names == ["weak_model", "llm_model"]  # kept across pages


def test_remove_and_add_prediction_files():
    at = started()
    files = [(f"{n}.jsonl", (SAMPLE / f"sim_{n}.jsonl").read_bytes()) for n in ("strong", "weak")]
    upload(at, "pred", *files)
    assert workspace(at).model_names == ["strong", "weak"]
    at.button(key="remove_0").click().run()
    assert workspace(at).model_names == ["weak"]
    open_page(at, "errors")
    open_page(at, "overview")
    assert workspace(at).model_names == ["weak"]
    upload(at, "pred", files[0])
    assert workspace(at).model_names == ["weak", "strong"]
    upload(at, "pred", files[0])  # the same file again replaces, never duplicates
    assert workspace(at).model_names == ["weak", "strong"]
    at.button(key="overview_sample").click().run()
    assert workspace(at).sources.sample


def test_a_bad_prediction_file_gives_one_error_and_keeps_everything_else():
    at = started()
    good = ("good.jsonl", (SAMPLE / "sim_strong.jsonl").read_bytes())
    bad = ("broken.jsonl", b'{"doc_id": "validation_0000", "prediction": {"menu": [}\n')
    upload(at, "pred", good, bad)
    (message,) = errors(at)
    assert "broken.jsonl" in message and "line 1" in message and "JSON" in message
    assert "Traceback" not in message
    ws = workspace(at)
    assert ws.model_names == ["good"] and ws.sources.gt.name == "cord_v2_gt.jsonl"


def test_a_bad_ground_truth_keeps_the_loaded_data():
    at = started()
    before, rows = workspace(at).model_names, headline(at)
    upload(at, "gt", ("gt.json", b"[1, 2"))
    (message,) = errors(at)
    assert "gt.json" in message
    ws = workspace(at)
    assert ws.sources.sample and ws.model_names == before
    assert headline(at).keys() == rows.keys()


def test_file_names_are_shown_as_text_not_markdown():
    at = started()
    name = "[click](http://evil.example) <b>x</b>.jsonl"
    upload(at, "pred", (name, b"not json\n"))
    assert len(at.error) == 1
    shown = at.error[0].value
    assert "](" not in shown and "<b>" not in shown
    assert name in unescape(shown)


def test_upload_size_limit_is_stated_and_enforced():
    old = st_config.get_option("server.maxUploadSize")
    st_config.set_option("server.maxUploadSize", 1)
    try:
        at = started()
        assert any("Up to 1 MB per file" in c.value for c in at.caption)
        upload(at, "pred", ("huge.jsonl", b" " * (1024 * 1024 + 1)))
        (message,) = errors(at)
        assert "huge.jsonl" in message and "limit is 1 MB" in message
        assert workspace(at).sources.sample
    finally:
        st_config.set_option("server.maxUploadSize", old)


def test_options_change_the_evaluation():
    at = started()
    at.sidebar.checkbox(key="opt_casefold").check().run()
    assert workspace(at).result.normalizer.casefold
    at.sidebar.text_area(key="opt_aliases").input("no alias here").run()
    assert any("Key aliases ignored" in e.value for e in at.sidebar.error)
    open_page(at, "errors")
    assert workspace(at).result.normalizer.casefold  # options survive a page switch


# --- reading exactly what the files say (issue 8) -------------------------------------------


def _jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_a_ground_truth_key_no_prediction_has_is_set_aside_and_can_be_scored():
    """SPEC 6.1: the first screen says which key was set aside and how to score it."""
    gt = _jsonl([{"doc_id": f"d{i}", "split": "test", "total": str(i)} for i in range(4)])
    pred = _jsonl([{"doc_id": f"d{i}", "total": str(i)} for i in range(4)])
    at = started()
    upload(at, "gt", ("gt.jsonl", gt))
    upload(at, "pred", ("model.jsonl", pred))
    assert any("Not scored: 'split' (4 values in the ground truth" in unescape(c.value) for c in at.caption)
    model = workspace(at).result.models["model"]
    assert model.entity.f1 == 1.0 and workspace(at).result.set_aside == ["split"]
    assert model.documents["split"].tolist() == ["test"] * 4
    at.button(key="score_split").click().run()
    assert at.session_state["opt_score_keys"] == ("split",)
    assert workspace(at).result.models["model"].entity.f1 < 1
    assert any("split" in unescape(w.value) and "metadata" in w.value for w in at.warning)
    at.button(key="meta_split").click().run()
    assert at.session_state["opt_meta"] == "split"
    model = workspace(at).result.models["model"]
    assert model.entity.f1 == 1.0 and not workspace(at).one_sided
    assert model.documents["split"].tolist() == ["test"] * 4


def test_keys_inside_documents_are_scored_in_the_app():
    at = started()
    upload(at, "gt", ("gt.json", json.dumps({"d1": {"total": "5"}}).encode()))
    upload(at, "pred", ("pred.json", json.dumps({"d1": {"id": "INV-001", "total": "5"}}).encode()))
    assert workspace(at).result.models["pred"].entity.f1 == pytest.approx(2 / 3)


def test_bare_iob2_files_are_uploaded_and_scored():
    """The uploader takes every suffix a reader reads (``.iob2`` was missing from its list)."""
    from kieval_app.uploads import UPLOAD_TYPES

    assert "iob2" in UPLOAD_TYPES
    at = started()
    upload(at, "gt", ("gt.iob2", b"Total O\n5.00 B-total\n\nDate O\n02/01/2024 B-date\n"))
    upload(at, "pred", ("tagger.iob2", b"Total O\n5.00 B-total\n\nDate B-date\n02/01/2024 O\n"))
    model = workspace(at).result.models["tagger"]
    assert model.format == "iob2" and (model.entity.tp, model.corrections.substitution) == (1, 1)


def test_predictions_uploaded_before_their_ground_truth_are_checked_again():
    gt = _jsonl([{"doc_id": "x1", "total": "5"}, {"doc_id": "x2", "total": "6"}])
    pred = _jsonl([{"doc_id": "x1", "total": "5"}, {"doc_id": "x2", "total": "7"}])
    at = started()
    upload(at, "pred", ("early.jsonl", pred))  # the sample's ground truth is active: refused
    (message,) = errors(at)
    assert "no document in common" in message and "checked again" in message
    upload(at, "gt", ("gt.jsonl", gt))
    assert workspace(at).model_names == ["early"]
    assert any("refused before, fits the new ground truth" in unescape(s.value) for s in at.success)


def test_ids_written_another_way_are_named_in_the_refusal():
    """The sample's ids in capitals: refused, with what would make them match."""
    at = started()
    upper = _jsonl([{"doc_id": f"VALIDATION_{i:04d}", "total": "1"} for i in range(3)])
    upload(at, "pred", ("upper.jsonl", upper))
    (message,) = errors(at)
    assert ("no document in common" in message and "the ids differ only by case: 'validation_0000' (ground "
            "truth) vs 'VALIDATION_0000' (predictions); 3 of the 3 predicted ids match" in message)


def test_a_target_that_only_full_review_reaches_is_not_a_recommendation(strong):
    at = started()
    open_page(at, "automation")
    unreachable = recommend(strong.curve, 0.999, strong.n_documents)
    assert not unreachable.reachable
    at.number_input(key="auto_target").set_value(0.999).run()
    warning = " ".join(unescape(w.value) for w in at.warning)
    assert "not reachable with automation" in warning and pct(unreachable.best_reachable) in warning
    assert not any("reaches" in s.value for s in at.success)
    cards = metric_values(at)
    # deciding by threshold starts at that best point, not at review everything (0% automated)
    at.segmented_control(key="auto_mode").set_value("threshold").run()
    assert metric_values(at)["Automated"] == cards["Automated"] != pct(0.0)
    assert at.session_state["auto_tau"] < 1


# --- documents ----------------------------------------------------------------------------


def test_documents_deep_link_and_previous_next(weak):
    at = started()
    at.query_params["doc"] = "validation_0075"
    at.query_params["model"] = "simulated-weak"
    open_page(at, "documents")
    assert at.session_state["doc"] == "validation_0075"
    assert at.sidebar.selectbox(key="model").value == "simulated-weak"
    assert any("validation_0075" in unescape(h.value) for h in at.subheader)
    order = list(frame_with(at, "doc_id", "corrections")["doc_id"])
    at.button(key="docs_next").click().run()
    assert at.session_state["doc"] == order[order.index("validation_0075") + 1]
    assert at.query_params["doc"] == at.session_state["doc"]
    at.button(key="docs_prev").click().run()
    assert at.session_state["doc"] == "validation_0075"
    at.selectbox(key="docs_pick").set_value(order[0]).run()
    assert at.session_state["doc"] == order[0]


def test_documents_filters(weak):
    at = started()
    at.sidebar.selectbox(key="model").set_value("simulated-weak").run()
    open_page(at, "documents")
    at.multiselect(key="docs_kinds").set_value(["deletion"]).run()
    with_deletions = set(weak.error_list.loc[weak.error_list["kind"] == "deletion", "doc_id"])
    assert set(frame_with(at, "doc_id", "matching corrections")["doc_id"]) == with_deletions


# --- errors, automation, compare ----------------------------------------------------------


def test_errors_filter_and_downloads(strong):
    at = started()
    open_page(at, "errors")
    assert [b.label for b in at.download_button] == ["Download CSV", "Download JSON"]
    at.multiselect(key="errors_kinds").set_value(["addition"]).run()
    assert len(frame_with(at, "doc_id", "kind")) == strong.corrections.addition
    at.text_input(key="errors_search").input("validation_0003").run()
    assert set(frame_with(at, "doc_id", "kind")["doc_id"]) == {"validation_0003"}


def test_errors_lead_with_why_and_one_click_compares(strong):
    """The causes chart, the format-only share in words, a one-click comparator that
    re-scores, its undo in the sidebar, and the error table filtered by cause."""
    at = started()
    open_page(at, "errors")
    assert "format" in " ".join(m.value for m in at.markdown)
    buttons = [b for b in at.button if b.key and b.key.startswith("errors_compare_")]
    assert buttons, "no comparator offered"
    field = buttons[0].key.removeprefix("errors_compare_")
    # escaped names (total\.total\_price) are never in a code span, where the backslashes show
    said = [m.value for m in at.markdown if "differ only in format" in m.value] + [b.label for b in buttons]
    assert said and not any(re.search(r"`[^`]*\\[^`]*`", text) for text in said), said
    before = strong.by_entity_type.set_index("entity_type").loc[field, "substitution_format"]
    buttons[0].click().run()
    assert any(k == field for k, _ in at.session_state["opt_comparators"])
    undo = at.sidebar.button(key=f"opt_uncompare_{field}")
    assert "(undo)" in undo.label
    at.multiselect(key="errors_causes_filter").set_value(["missed"]).run()
    assert len(frame_with(at, "doc_id", "kind")) == strong.causes["addition"]["missed"]
    at.sidebar.button(key=f"opt_uncompare_{field}").click().run()
    assert at.session_state["opt_comparators"] == ()
    assert before > 0
    open_page(at, "overview")
    kind, cause, n = largest_cause(strong.causes)
    label = f": {kind} {cause.replace('_', ' ')}, {n} of {strong.corrections.total})"  # the name is escaped
    assert any(label in link.label for link in at.get("page_link")), label


def _cards(at: AppTest) -> dict[str, str]:
    return {k: v for k, v in metric_values(at).items()}


def test_every_way_of_deciding_moves_every_card(strong):
    """Target accuracy, automation rate, review budget and threshold each set one
    operating point, and every card shows that point (issue 12)."""
    at = started()
    open_page(at, "automation")
    review = strong.review

    def expect(point):
        cards = _cards(at)
        assert cards["Automated"] == pct(point.auto_rate)
        assert cards["Accuracy after review"] == pct(point.kieval_aligned)
        assert cards["Predictions reviewed / 1,000 docs"] == number(round(point.reviews_per_1000_documents))
        assert cards["Straight through"] == pct(point.straight_through_rate)
        assert cards["Right after review"] == pct(point.document_accuracy)
        assert cards["Errors left"] == number(point.errors_left)
        assert cards["Cost / 1,000 docs"] == number(round(point.cost_per_1000_documents))
        return cards

    from kieval_core.review.uncertainty import assured_threshold

    assured = assured_threshold(review, 0.95, 0.95, 1000, 0)  # the default: τ on the 95% lower bound
    expect(review_at(review, assured.threshold if assured.reachable else assured.point_threshold))
    at.selectbox(key="auto_assurance").set_value(0.0).run()  # the point estimate
    rec = recommend(strong.curve, 0.95, strong.n_documents)
    first = expect(review_at(review, rec.threshold))
    at.number_input(key="auto_target").set_value(0.9).run()
    second = expect(review_at(review, recommend(strong.curve, 0.9, strong.n_documents).threshold))
    assert first != second
    at.segmented_control(key="auto_mode").set_value("automation").run()
    at.number_input(key="auto_goal").set_value(0.5).run()
    expect(review_at(review, recommend_for_automation(strong.curve, 0.5, strong.n_documents).threshold))
    at.segmented_control(key="auto_mode").set_value("budget").run()
    at.number_input(key="auto_budget").set_value(500.0).run()
    expect(review_at(review, recommend_for_budget(strong.curve, 500.0, strong.n_documents).threshold))
    at.segmented_control(key="auto_mode").set_value("threshold").run()
    from kieval_core.figures.automation import operating_points

    chosen = float(operating_points(strong.curve)["threshold"].iloc[3])
    at.select_slider(key="auto_tau").set_value(chosen).run()
    assert at.session_state["auto_tau"] == chosen
    expect(review_at(review, chosen))
    at.segmented_control(key="auto_mode").set_value("accuracy").run()
    at.selectbox(key="auto_scope").set_value("field").run()
    from kieval_core.review.field_thresholds import per_field_thresholds

    fields = per_field_thresholds(review, 0.9)
    expect(review_at(review, fields.thresholds))
    assert not at.exception


def test_costs_change_the_cost_card(strong):
    at = started()
    open_page(at, "automation")
    before = _cards(at)["Cost / 1,000 docs"]
    at.number_input(key="auto_cost_review").set_value(5.0).run()
    after = _cards(at)["Cost / 1,000 docs"]
    assert before != after


def test_compare_needs_two_different_models():
    at = started()
    open_page(at, "compare")
    deltas = frame_with(at, "metric", "verdict")
    assert "KIEval_Aligned" in set(deltas["metric"]) and "95% interval" in deltas.columns
    formats = [json.loads(d.proto.columns)["B - A"]["type_config"]["format"] for d in at.dataframe[:2]]
    assert formats == ["%+.2f pts", "localized"]  # points beside their interval in points; counts
    assert len(at.get("page_link")) >= 24  # A and B links for the disagreeing documents
    at.selectbox(key="cmp_b").set_value("simulated-strong").run()
    assert any("two different" in w.value for w in at.warning)


def test_compare_with_one_model_explains_itself():
    at = started()
    upload(at, "pred", ("only.jsonl", (SAMPLE / "sim_llm.jsonl").read_bytes()))
    open_page(at, "compare")
    assert any("at least two" in i.value for i in at.info)


def test_guide_shows_the_registry_and_the_live_fig2_example():
    from kieval_core.result import registry

    at = started()
    open_page(at, "guide")
    text = " ".join(unescape(m.value) for m in at.markdown)
    for metric in registry.METRICS:
        assert metric.label in text
    fig2 = next(df.value for df in at.dataframe if "agrees" in df.value.columns)
    assert (fig2["agrees"] == "yes").all()


# --- real files from ../shared/data --------------------------------------------------------


@pytest.mark.shared_data
def test_sroie_with_metadata_and_real_confidences(shared_data):
    sroie = shared_data / "sroie"
    at, names = sroie_uploaded(sroie), SROIE_MODELS
    ws = workspace(at)
    assert ws.model_names == names and not at.error and not ws.one_sided
    options = LoadOptions(meta=("split",))
    gt = load(sroie / "sroie_test_gt.jsonl", options)
    expected = evaluate(gt, {"aws": load(sroie / "predictions" / f"{names[0]}.jsonl", options)})
    assert ws.result.models[names[0]].aligned == pytest.approx(expected.models["aws"].aligned)
    assert ws.result.models[names[2]].unknown_documents  # reported, not silently dropped
    for page in ("documents", "errors", "compare"):
        open_page(at, page)
    at.sidebar.selectbox(key="model").set_value(names[0]).run()
    open_page(at, "automation")
    assert charts(at) == 5  # real confidences: the curves; the closed expanders build nothing
    # 95% (the default target) with the predictions without a confidence reviewed (the default):
    # τ 0.9997 on the 95% lower bound, the point estimate's 0.9996 beside it
    note = " ".join(s.value for s in at.success)
    assert "**τ = 0.9997** reaches 95.0% with 95% assurance" in note and "from τ = 0.9996" in note
    assert charts(expand(at, "auto_calibration_open")) == 6  # the reliability diagram
    expand(at, "auto_uncertainty_open")
    assert any("carr" in m.value for m in [*at.success, *at.error, *at.info])  # the holdout verdict
    slices = frame_with(expand(at, "auto_slices_open"), "split", "documents")
    assert slices["documents"].tolist() == [347]
    at.selectbox(key="auto_scope").set_value("slice:split").run()
    assert not at.exception
    # reviewing whole documents reaches 95% (τ 0.9981), while the checks below, which review
    # single predictions, say it is out of reach: they say which policy they check
    assert not any("single predictions" in i.value for i in at.info)
    at.selectbox(key="auto_scope").set_value("one").run()
    at.segmented_control(key="auto_review").set_value("documents").run()
    assert any("reaches" in s.value for s in at.success)
    notes = [i.value for i in at.info if "review **single predictions**" in i.value]
    assert len(notes) == 2  # the uncertainty and the per-slice boxes


def _zip_dir(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(directory.iterdir()):
            archive.write(path, f"{directory.name}/{path.name}")
    return buffer.getvalue()


def test_official_kieval_csv_sample_as_zips():
    base = SAMPLE / "kieval_official_cord"
    at = started()
    upload(at, "gt", ("gt_csv.zip", _zip_dir(base / "gt_csv")))
    upload(at, "pred", ("pred_csv.zip", _zip_dir(base / "pred_csv")))
    model = workspace(at).result.models["pred_csv"]
    assert model.entity.tp == 1020 and model.corrections.substitution == 167
    assert model.corrections.addition + model.corrections.deletion == 273
    assert round(model.aligned, 4) == 0.6986
    for page in ("documents", "errors", "automation"):
        open_page(at, page)


def _bad_files():
    """The CLI catalogue, less the file types the uploader refuses before we see them."""
    from test_loaders import BAD_FILES

    from kieval_app.uploads import UPLOAD_TYPES

    return [b for b in BAD_FILES if b[0].rsplit(".", 1)[-1] in UPLOAD_TYPES]


@pytest.mark.parametrize(("name", "data", "expected"), _bad_files(), ids=[b[0] for b in _bad_files()])
def test_every_bad_input_gives_one_error_in_the_app(name, data, expected):
    """The CLI's catalogue of bad inputs (tests/test_loaders.py), uploaded as predictions."""
    at = started()
    rows = headline(at)
    upload(at, "pred", (name, data))
    (message,) = errors(at)
    assert name in message and expected in message, message
    assert workspace(at).sources.sample and headline(at).keys() == rows.keys()


def test_parallel_list_upload_with_related_fields():
    at = started()
    at.sidebar.selectbox(key="opt_pred_format").select("lists").run()
    at.sidebar.selectbox(key="opt_gt_format").select("lists").run()
    at.sidebar.text_input(key="opt_related").input("description, amount").run()
    gt = b'{"doc_id": "s1", "description": "EFTPOS|ATM|Purchase", "amount": "$50|$100|$75"}\n'
    pred = b'{"doc_id": "s1", "description": "ATM|EFTPOS|Purchase", "amount": "$50|$100|$75"}\n'
    upload(at, "gt", ("statements.jsonl", gt))
    upload(at, "pred", ("model.jsonl", pred))
    assert not at.error, [e.value for e in at.error]
    model = workspace(at).result.models["model"]
    assert model.group.tp == 1 and model.entity.tp == 4
    assert np.isclose(model.aligned, 4 / 6)


# --- saved runs and honest state ----------------------------------------------------------


def test_save_a_run_and_reopen_it_in_a_new_session(tmp_path, monkeypatch):
    monkeypatch.setenv("KIEVAL_RUNS_DIR", str(tmp_path))
    at = started()
    upload(at, "pred", ("mine.jsonl", (SAMPLE / "sim_weak.jsonl").read_bytes()))
    before = headline(at)
    at.button(key="overview_save").click().run()
    key = at.query_params["run"][0] if isinstance(at.query_params["run"], list) else at.query_params["run"]
    assert (tmp_path / key / "manifest.json").is_file()
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)  # a refresh, a restart
    fresh.query_params["run"] = key
    fresh.run()
    assert workspace(fresh).sources.sample  # never the old figures as if they were live
    assert any("new session" in w.value for w in fresh.warning)
    fresh.button(key="overview_reopen").click().run()
    ws = workspace(fresh)
    assert ws.saved is not None and headline(fresh) == before
    for page in ("documents", "errors", "automation", "compare"):
        open_page(fresh, page)
        assert not fresh.error


def test_a_deep_link_in_a_new_session_says_the_uploads_are_gone():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["doc"] = "X51005230605"
    at.query_params["model"] = "aws"
    at.run()
    assert any("not kept across sessions" in w.value for w in at.warning)


def test_the_dashboard_opens_a_run_given_on_the_command_line(tmp_path, monkeypatch):
    from kieval_core.cli import main

    run = tmp_path / "run"
    gt, pred = str(SAMPLE / "cord_v2_gt.jsonl"), str(SAMPLE / "sim_llm.jsonl")
    assert main(["evaluate", "--gt", gt, "--pred", pred, "--save-run", str(run), "--bootstrap", "0"]) == 0
    monkeypatch.setenv("KIEVAL_OPEN_RUN", str(run))
    at = started()
    assert workspace(at).saved is not None and set(headline(at)) == {"sim_llm"}
    open_page(at, "documents")
    assert not at.error


def test_a_new_session_on_the_sample_derives_none_of_its_figures_again(monkeypatch):
    """The server's store shares the sample's evaluation by content: a second session's
    Overview (its first page) shows the same figures without deriving the rankings again
    (each session derived them: ~0.1 s of the server's CPU per new visitor)."""
    from kieval_app import session
    from kieval_app.serving.store import Store
    from kieval_core.result import suggest

    server = Store()  # AppTest clears the caches of Streamlit's: one store for both, as in one server
    monkeypatch.setattr(session, "store", lambda: server)
    derived = []
    derive = suggest.rule_figures
    monkeypatch.setattr(suggest, "rule_figures", lambda result: derived.append(result) or derive(result))
    first = started()
    for task in workspace(first).pending:  # the peer metrics join: what every later visitor finds
        task.future.result(timeout=TIMEOUT)
    first.run()
    before = len(derived)
    second = started()
    assert workspace(second).result is workspace(first).result
    assert before >= 1 and len(derived) == before and headline(second) == headline(first)
