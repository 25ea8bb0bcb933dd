"""Every page of the dashboard run headless with ``streamlit.testing.v1.AppTest``:
on the built-in sample, after uploads through the widgets, and with bad input."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from kieval_app import automation
from kieval_app.text import pct
from kieval_core import LoadOptions, evaluate, load

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
TIMEOUT = 60


def started() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def charts(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


def metric_values(at: AppTest) -> dict[str, str]:
    return {unescape(m.label): m.value for m in at.metric}


def upload(at: AppTest, key: str, *files: tuple[str, bytes]) -> AppTest:
    widget = at.file_uploader(key=key)
    payload = [(name, data, "application/octet-stream") for name, data in files]
    widget.set_value(payload[0] if key == "upload_gt" else payload)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame_with(at: AppTest, *columns: str):
    """The first table of the page having all these columns."""
    for frame in at.dataframe:
        if set(columns) <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no table with columns {columns}")


def workspace(at: AppTest):
    return at.session_state["workspace"]


# --- every page on the sample data --------------------------------------------------------

PAGES = {
    # page: (title, plotly charts, dataframes at least, metric cards at least)
    "overview": ("KIEval Workbench", 1, 5, 4),
    "documents": ("Documents", 1, 2, 8),
    "errors": ("Errors", 2, 2, 0),
    "automation": ("Automation threshold", 3, 0, 7),
    "compare": ("Compare models", 2, 1, 0),
    "guide": ("Metrics guide", 2, 4, 0),
}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_runs_on_the_sample(page):
    at = started()
    if page != "overview":
        open_page(at, page)
    title, n_charts, n_frames, n_metrics = PAGES[page]
    assert [t.value for t in at.title] == [title]
    assert charts(at) >= n_charts
    assert len(at.dataframe) >= n_frames
    assert len(at.metric) >= n_metrics
    assert not at.error


def test_overview_shows_the_sample_with_attribution_and_every_metric(sample_result):
    at = started()
    info = " ".join(i.value for i in at.info)
    assert "CC-BY-4.0" in info and "SIMULATED" in info and "CORD" in info
    cards = metric_values(at)
    strong = sample_result.models["simulated-strong"]
    assert cards["KIEval_Aligned"] == pct(strong.aligned)
    assert cards["KIEval entity F1"] == pct(strong.entity.f1)
    rows = frame_with(at, "metric", "best model")  # every metric, one row each
    assert list(rows["metric"])[:3] == [
        "KIEval entity F1",
        "KIEval entity precision",
        "KIEval entity recall",
    ]
    assert {"simulated-strong", "simulated-llm", "simulated-weak"} <= set(rows.columns)
    assert any("overstates" in c.value for c in at.caption)


def test_upload_ground_truth_and_predictions_through_the_widgets():
    at = started()
    gt = (SAMPLE / "cord_v2_gt.jsonl").read_bytes()
    upload(at, "upload_gt", ("my_gt.jsonl", gt))
    ws = workspace(at)
    assert not ws.sources.sample and ws.sources.gt.name == "my_gt.jsonl"
    assert ws.model_names == []  # the sample's simulated models do not fit a new ground truth
    assert any("Upload one or more prediction files" in i.value for i in at.info)

    preds = [
        ("weak_model.jsonl", (SAMPLE / "sim_weak.jsonl").read_bytes()),
        ("llm_model.jsonl", (SAMPLE / "sim_llm.jsonl").read_bytes()),
    ]
    upload(at, "upload_pred", *preds)
    ws = workspace(at)
    assert ws.model_names == ["weak_model", "llm_model"]
    expected = evaluate(load(SAMPLE / "cord_v2_gt.jsonl"), {"w": load(SAMPLE / "sim_weak.jsonl")})
    assert metric_values(at)["KIEval_Aligned"] == pct(expected.models["w"].aligned)
    report = frame_with(at, "file", "missing")
    assert list(report["file"]) == ["my_gt.jsonl", "weak_model.jsonl", "llm_model.jsonl"]
    assert list(report["missing"]) == [0, 2, 0]

    # every page works on the upload; the model picked in the sidebar is used
    at.sidebar.selectbox(key="model").set_value("llm_model").run()
    for page in ("documents", "errors", "automation", "compare"):
        open_page(at, page)
        assert not at.error
    assert workspace(at).model_names == ["weak_model", "llm_model"]  # kept across pages


def test_removing_a_file_in_the_uploader_removes_its_model():
    at = started()
    files = [(f"{n}.jsonl", (SAMPLE / f"sim_{n}.jsonl").read_bytes()) for n in ("strong", "weak")]
    upload(at, "upload_pred", *files)
    assert workspace(at).model_names == ["strong", "weak"]
    upload(at, "upload_pred", files[1])
    assert workspace(at).model_names == ["weak"]
    # after a page switch the uploader is drawn empty: the loaded model must stay
    open_page(at, "errors")
    open_page(at, "overview")
    assert workspace(at).model_names == ["weak"]
    upload(at, "upload_pred", files[0])
    assert workspace(at).model_names == ["weak", "strong"]
    at.button(key="overview_sample").click().run()
    assert workspace(at).sources.sample


def test_a_bad_prediction_file_gives_one_error_and_keeps_everything_else():
    at = started()
    good = ("good.jsonl", (SAMPLE / "sim_strong.jsonl").read_bytes())
    bad = ("broken.jsonl", b'{"doc_id": "validation_0000", "prediction": {"menu": [}\n')
    upload(at, "upload_pred", good, bad)
    assert len(at.error) == 1
    message = unescape(at.error[0].value)
    assert "broken.jsonl" in message and "line 1" in message and "JSON" in message
    assert "Traceback" not in message
    ws = workspace(at)
    assert ws.model_names == ["good"]
    assert ws.sources.gt.name == "cord_v2_gt.jsonl"  # the sample ground truth stays
    assert metric_values(at)["KIEval_Aligned"]


def test_a_bad_ground_truth_keeps_the_loaded_data():
    at = started()
    before, cards = workspace(at).model_names, metric_values(at)
    upload(at, "upload_gt", ("gt.json", b"[1, 2"))
    assert len(at.error) == 1 and "gt.json" in unescape(at.error[0].value)
    ws = workspace(at)
    assert ws.sources.sample and ws.model_names == before
    assert metric_values(at) == cards


def test_file_names_are_shown_as_text_not_markdown():
    at = started()
    name = "[click](http://evil.example) <b>x</b>.jsonl"
    upload(at, "upload_pred", (name, b"not json\n"))
    assert len(at.error) == 1
    shown = at.error[0].value
    assert "](" not in shown and "<b>" not in shown
    assert unescape(shown).startswith(name)


def test_upload_size_limit_is_stated_and_enforced():
    old = st_config.get_option("server.maxUploadSize")
    st_config.set_option("server.maxUploadSize", 1)
    try:
        at = started()
        assert any("Up to 1 MB per file" in c.value for c in at.caption)
        upload(at, "upload_pred", ("huge.jsonl", b" " * (1024 * 1024 + 1)))
        assert len(at.error) == 1
        message = unescape(at.error[0].value)
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


# --- documents ----------------------------------------------------------------------------


def test_documents_deep_link_and_previous_next(weak):
    at = started()
    at.query_params["doc"] = "validation_0075"
    at.query_params["model"] = "simulated-weak"
    open_page(at, "documents")
    assert at.session_state["doc"] == "validation_0075"
    assert at.sidebar.selectbox(key="model").value == "simulated-weak"
    assert any("validation_0075" in unescape(h.value) for h in at.subheader)
    pairs = weak.matching[weak.matching["doc_id"] == "validation_0075"]
    assert len(frame_with(at, "gt_value", "pred_value")) >= len(pairs)  # aligned entities
    order = list(frame_with(at, "doc_id", "errors")["doc_id"])
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
    with_deletions = set(weak.errors.loc[weak.errors["kind"] == "deletion", "doc_id"])
    assert set(frame_with(at, "doc_id", "matching errors")["doc_id"]) == with_deletions
    assert at.session_state["doc"] in set(weak.documents["doc_id"])


# --- errors, automation, compare ----------------------------------------------------------


def test_errors_filter_and_downloads(strong):
    at = started()
    open_page(at, "errors")
    assert [b.label for b in at.download_button] == ["Download errors CSV", "Download errors JSON"]
    at.multiselect(key="errors_kinds").set_value(["addition"]).run()
    assert len(frame_with(at, "doc_id", "kind")) == strong.corrections.addition
    at.text_input(key="errors_search").input("validation_0003").run()
    assert set(frame_with(at, "doc_id", "kind")["doc_id"]) == {"validation_0003"}


def test_automation_threshold_slider_button_and_target(strong):
    at = started()
    open_page(at, "automation")
    rec = strong.recommend(0.95)
    assert at.slider(key="auto_tau").value == pytest.approx(rec.threshold)
    at.slider(key="auto_tau").set_value(0.9).run()
    expected = automation.review_summary(strong, 0.9)
    assert metric_values(at)["Automation rate"] == pct(expected["auto_rate"], 1)
    assert metric_values(at)["Accuracy after review"] == pct(expected["kieval_aligned"], 2)
    at.button(key="auto_use_recommended").click().run()
    assert at.slider(key="auto_tau").value == pytest.approx(rec.threshold)
    at.number_input(key="auto_target").set_value(0.9).run()
    assert at.session_state["opt_target"] == pytest.approx(0.9)  # synced with the sidebar
    assert any("Recommended for 90.0% accuracy" in s.value for s in at.success)
    at.toggle(key="auto_per_field").set_value(True).run()
    assert not at.exception and len(at.metric) >= 10


def test_compare_needs_two_different_models():
    at = started()
    open_page(at, "compare")
    deltas = frame_with(at, "metric", "verdict")
    assert "KIEval_Aligned" in set(deltas["metric"]) and "95% CI (points)" in deltas.columns
    assert len(at.get("page_link")) >= 24  # A and B links for the disagreeing documents
    at.selectbox(key="cmp_b").set_value("simulated-strong").run()
    assert any("two different" in w.value for w in at.warning)


def test_compare_with_one_model_explains_itself():
    at = started()
    upload(at, "upload_pred", ("only.jsonl", (SAMPLE / "sim_llm.jsonl").read_bytes()))
    open_page(at, "compare")
    assert any("at least two" in i.value for i in at.info)


def test_guide_shows_the_registry_and_the_live_fig2_example():
    from kieval_core import registry

    at = started()
    open_page(at, "guide")
    text = " ".join(unescape(m.value) for m in at.markdown)
    for metric in registry.METRICS:
        assert metric.label in text
    fig2 = next(df.value for df in at.dataframe if "agrees" in df.value.columns)
    assert (fig2["agrees"] == "yes").all()


# --- real files from ../shared/data --------------------------------------------------------


@pytest.mark.shared_data
def test_sroie_upload_with_an_ignored_key(shared_data):
    sroie = shared_data / "sroie"
    at = started()
    at.sidebar.text_input(key="opt_ignore").input("split").run()
    upload(at, "upload_gt", ("sroie_test_gt.jsonl", (sroie / "sroie_test_gt.jsonl").read_bytes()))
    names = ["aws_textract_analyzeexpense", "claude_haiku_4.5", "gpt4o_vision_themurtez"]
    upload(
        at,
        "upload_pred",
        *[(f"{n}.jsonl", (sroie / "predictions" / f"{n}.jsonl").read_bytes()) for n in names],
    )
    ws = workspace(at)
    assert ws.model_names == names and not at.error
    options = LoadOptions(ignore_keys=("split",))
    gt = load(sroie / "sroie_test_gt.jsonl", options)
    expected = evaluate(gt, {"aws": load(sroie / "predictions" / f"{names[0]}.jsonl", options)})
    assert ws.result.models[names[0]].aligned == pytest.approx(expected.models["aws"].aligned)
    assert ws.result.models[names[2]].unknown_documents  # reported, not silently dropped
    for page in ("documents", "errors", "compare"):
        open_page(at, page)
    at.sidebar.selectbox(key="model").set_value(names[0]).run()
    open_page(at, "automation")
    assert charts(at) == 3  # real confidences: the reliability diagram is drawn


def _zip_dir(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(directory.iterdir()):
            archive.write(path, f"{directory.name}/{path.name}")
    return buffer.getvalue()


@pytest.mark.shared_data
def test_official_kieval_csv_sample_as_zips(shared_data):
    base = shared_data / "kieval_qwenvl72b_cord"
    at = started()
    upload(at, "upload_gt", ("gt_csv.zip", _zip_dir(base / "gt_csv")))
    upload(at, "upload_pred", ("pred_csv.zip", _zip_dir(base / "pred_csv")))
    model = workspace(at).result.models["pred_csv"]
    assert model.entity.tp == 1020 and model.corrections.substitution == 167
    assert model.corrections.addition + model.corrections.deletion == 273
    assert round(model.aligned, 4) == 0.6986
    for page in ("documents", "errors", "automation"):
        open_page(at, page)
    assert any("no confidence" in w.value for w in at.warning)


def _bad_files():
    """The CLI catalogue, less the file types the uploader refuses before we see them."""
    from test_loaders import BAD_FILES

    from kieval_app.workspace import UPLOAD_TYPES

    return [b for b in BAD_FILES if b[0].rsplit(".", 1)[-1] in UPLOAD_TYPES]


@pytest.mark.parametrize(("name", "data", "expected"), _bad_files(), ids=[b[0] for b in _bad_files()])
def test_every_bad_input_gives_one_error_in_the_app(name, data, expected):
    """The CLI's catalogue of bad inputs (tests/test_loaders.py), uploaded as predictions."""
    at = started()
    cards = metric_values(at)
    upload(at, "upload_pred", (name, data))
    assert len(at.error) == 1
    message = unescape(at.error[0].value)
    assert name in message and expected in message, message
    assert workspace(at).sources.sample and metric_values(at) == cards


def test_predictions_with_no_document_in_common():
    at = started()
    cards = metric_values(at)
    upload(at, "upload_pred", ("other.jsonl", b'{"doc_id": "zzz", "prediction": {"total": "1"}}\n'))
    assert len(at.error) == 1
    message = unescape(at.error[0].value)
    assert "other.jsonl" in message and "no document in common" in message, message
    assert metric_values(at) == cards


def test_parallel_list_upload_with_related_fields():
    at = started()
    at.sidebar.selectbox(key="opt_pred_format").select("lists").run()
    at.sidebar.selectbox(key="opt_gt_format").select("lists").run()
    at.sidebar.text_input(key="opt_related").input("description, amount").run()
    gt = b'{"doc_id": "s1", "description": "EFTPOS|ATM|Purchase", "amount": "$50|$100|$75"}\n'
    pred = b'{"doc_id": "s1", "description": "ATM|EFTPOS|Purchase", "amount": "$50|$100|$75"}\n'
    upload(at, "upload_gt", ("statements.jsonl", gt))
    upload(at, "upload_pred", ("model.jsonl", pred))
    assert not at.error, [e.value for e in at.error]
    model = workspace(at).result.models["model"]
    assert model.group.tp == 1 and model.entity.tp == 4
