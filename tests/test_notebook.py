"""Notebooks: the HTML summary of a result, per-document frames, and the dashboard's charts
from Python without Streamlit."""

from __future__ import annotations

import html
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kieval_core import KievalOptionError, evaluate
from kieval_core.accumulator import Accumulator
from kieval_core.figures import charts
from kieval_core.result.tables import cell_text

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"


@pytest.fixture(scope="module")
def result():
    return evaluate(SAMPLE / "cord_v2_gt.jsonl",
                    {"strong": SAMPLE / "sim_strong.jsonl", "weak": SAMPLE / "sim_weak.jsonl"})


def _cells(text: str) -> list[str]:
    """The text of every table cell of an HTML fragment, in order."""
    import re

    return [html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", text)]


def test_the_summary_shows_headline_corrections_and_recommended_threshold(result):
    cells = _cells(result._repr_html_())
    for model in result.models.values():
        for value in (model.entity.f1, model.group.f1, model.aligned, model.entity_f1.f1):
            assert cell_text(value) in cells
        c = model.corrections
        for count in (c.substitution, c.addition, c.deletion, c.total, model.entity.fp + model.entity.fn):
            assert f"{count:,}" in cells
        rec = model.recommend(0.95)
        if rec.reachable:
            assert cell_text(rec.threshold) in cells and f"{round(rec.reviews_per_1000_documents):,}" in cells
        else:
            assert f"not reachable with automation (best {cell_text(rec.best_reachable)})" in cells
    strong = _cells(result.models["strong"]._repr_html_())
    assert cell_text(result.models["strong"].aligned) in strong
    assert cell_text(result.models["weak"].aligned) not in strong


def test_text_from_files_is_escaped(tmp_path):
    acc = Accumulator('<img src=x onerror="alert(1)">')
    acc.update({"total": "5"}, {"total": "5"}, doc_ids="<script>alert(2)</script>")
    acc.update({"total": "5"}, {"total": "6"})  # no confidence at all
    result = acc.compute()
    for text in (result._repr_html_(), result.models[acc.name]._repr_html_()):
        assert "<img" not in text and "<script" not in text
        assert html.escape(acc.name) in text
        assert "no confidences: no automation figures" in text


def test_to_frame_is_the_per_document_table(result):
    frame = result.to_frame()
    assert frame.columns[0] == "model" and len(frame) == 200
    weak = frame[frame["model"] == "weak"].drop(columns="model").reset_index(drop=True)
    pd.testing.assert_frame_equal(weak, result.models["weak"].documents, check_dtype=False)
    one = result.models["weak"].to_frame()
    one.loc[0, "tp"] = -1  # a copy: the result is unchanged
    assert result.models["weak"].documents.loc[0, "tp"] != -1


def test_charts_are_the_dashboards_on_the_results_figures(result):
    model = result.models["strong"]
    rec = model.recommend(0.9)
    fig = charts.automation_figure(model, target=0.9)
    accuracy = next(t for t in fig.data if t.name == "accuracy after review")
    thresholds = np.asarray(accuracy.customdata)[:, 0]
    at = model.curve.set_index("threshold").loc[thresholds, "kieval_aligned"]
    np.testing.assert_allclose(accuracy.y, at.to_numpy())  # the core's curve at each point drawn
    assert np.isclose(accuracy.customdata[int(fig.layout.shapes[-1].x0)][0], rec.threshold)
    bars = {t.name: list(t.x) for t in charts.corrections_figure(result).data}
    assert bars["FP + FN"] == [m.entity.fp + m.entity.fn for m in result.models.values()]
    cost = charts.cost_figure(model)
    assert len(cost.data) >= 1
    for figure in (charts.tradeoff_figure(model), charts.corrections_by_type_figure(model),
                   charts.f1_by_type_figure(model), charts.matching_figure(model, model.doc_ids[0])):
        assert figure.data


def test_a_model_without_confidences_has_no_automation_chart():
    acc = Accumulator()
    acc.update({"a": "1"}, {"a": "2"})
    with pytest.raises(KievalOptionError, match="no prediction has a confidence"):
        charts.automation_figure(acc.compute().models["model"])


def test_the_core_loads_neither_plotly_nor_streamlit_and_the_charts_no_streamlit():
    code = (
        "import sys\n"
        "from kieval_core import evaluate\nfrom kieval_core.figures import charts\n"
        f"r = evaluate({str(SAMPLE / 'cord_v2_gt.jsonl')!r}, {{'m': {str(SAMPLE / 'sim_strong.jsonl')!r}}})\n"
        "r._repr_html_(); r.to_frame()\n"
        "assert 'plotly' not in sys.modules and 'streamlit' not in sys.modules, 'core'\n"
        "charts.automation_figure(r.models['m']); charts.corrections_figure(r)\n"
        "assert 'plotly' in sys.modules and 'streamlit' not in sys.modules, 'charts'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
