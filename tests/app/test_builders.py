"""Unit tests of the app's builders (tables and figures drawn from the core), the diff
rendering and the shared store; no Streamlit run."""

from __future__ import annotations

import html
import io
import json
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from builders import without_key

from kieval_app import compute, guide
from kieval_app.serving.store import Store, TaskCancelled, approximate_size
from kieval_app.sources import AppOptions, Source, sample_sources
from kieval_core import DecisionOptions, NoCommonDocuments, evaluate, load_bytes
from kieval_core.figures import automation, compare, documents, error_analysis, overview
from kieval_core.figures.diff import diff_html, table_html
from kieval_core.output.render import report_json
from kieval_core.result import registry as metric_registry
from kieval_core.result.compare import paired_bootstrap, per_document
from kieval_core.result.results import top_confusions
from kieval_core.result.tables import corrections_table

# --- overview -----------------------------------------------------------------------------


def test_metric_table_has_every_computed_metric_for_every_model(all_families):
    table = overview.metric_table(all_families)
    assert list(table.index) == list(all_families.models)
    for name, model in all_families.models.items():
        for metric in metric_registry.METRICS:
            if metric.label not in table.columns:
                assert not metric.computed(model) or metric.get(model) is None, metric.key
                continue
            expected = metric.get(model)
            got = table.loc[name, metric.label]
            assert (expected is None and pd.isna(got)) or got == pytest.approx(expected), metric.key
    assert "ANLS* (re-nested)" not in table.columns  # the variant that was not computed is absent


def test_best_models_follow_each_direction(sample_result):
    table = overview.metric_table(sample_result)
    best = overview.best_models(sample_result, table)
    assert best["KIEval_Aligned"] == "simulated-strong"
    assert best["Corrections"] == "simulated-strong"  # lower is better


def test_corrections_beside_fp_fn(sample_result):
    table = corrections_table(sample_result)
    strong = sample_result.models["simulated-strong"]
    assert table.loc["simulated-strong", "corrections"] == strong.corrections.total == 154
    assert table.loc["simulated-strong", "FP + FN"] == strong.entity.fp + strong.entity.fn
    fig = overview.corrections_figure(sample_result)
    assert [t.name for t in fig.data] == ["substitutions", "additions", "deletions", "FP + FN"]
    assert list(fig.data[1].base) == list(table["substitution"])  # the kinds are stacked


# --- documents ----------------------------------------------------------------------------


def test_document_table_filters_and_sorts(weak):
    table = documents.document_table(weak)
    assert len(table) == 100 and table["corrections"].is_monotonic_decreasing
    only = documents.document_table(weak, only_with_errors=True)
    assert (only["corrections"] > 0).all()
    subs = documents.document_table(weak, kinds=["substitution"], sort="document id")
    error_list = weak.error_list
    expected = error_list.loc[error_list["kind"] == "substitution", "doc_id"].astype(object).value_counts()
    assert dict(zip(subs["doc_id"], subs["matching corrections"], strict=True)) == expected.to_dict()


def test_neighbours():
    assert documents.neighbours(["a", "b", "c"], "a") == (None, "b")
    assert documents.neighbours(["a", "b", "c"], "c") == ("b", None)


def test_alignment_rows_account_for_every_entity(weak):
    counted = weak.counted
    for doc in weak.documents["doc_id"][:40]:
        rows = documents.alignment_rows(weak, doc)
        statuses = [status for _, status in rows]
        g = counted.gt_entities[counted.gt_entities["doc_id"] == doc]
        p = counted.pred_entities[counted.pred_entities["doc_id"] == doc]
        for status in ("correct", "substituted", "added"):
            assert statuses.count(status) == (g["status"] == status).sum()
        assert statuses.count("deleted") == (p["status"] == "deleted").sum()


def test_matching_figure_links_matched_pairs(weak):
    doc = "validation_0075"
    fig = documents.matching_figure(weak, doc)
    matching = weak.matching[weak.matching["doc_id"] == doc]
    matched = ((matching["gt_group"] >= 0) & (matching["pred_group"] >= 0)).sum()
    links = [y for t in fig.data if t.mode == "lines" for y in t.y[::3]]  # segments: [y, y, None]
    non_group = weak.counted.cells.query("doc_id == @doc and gt_group < 0 and pred_group < 0")
    assert len(links) == matched + (1 if len(non_group) and non_group["n_pred"].sum() else 0)
    labels = [(y, text) for t in fig.data if t.mode == "text" for y, text in zip(t.y, t.text, strict=True)]
    assert sorted(y for y, text in labels if text.startswith("S=")) == sorted(links)  # one label per link
    # built without plotly's validation (for speed): validating it changes nothing
    assert json.loads(pio.to_json(go.Figure(fig.to_dict()))) == json.loads(pio.to_json(fig))


def test_matching_labels_are_two_short_lines():
    """The group's line, then its values, each cut to MATCHING_LABEL_CHARS: one line of up to
    80 characters ran off both sides of the chart at 1,024 px (the browser test measures it)."""
    long = "PASARAYA BORONG PINTAR SDN BHD NO 3 JALAN"
    model = _one_doc({"a_very_long_group_type_name": [{"nm": long, "price": "1,000.00"}] * 12},
                     {"a_very_long_group_type_name": [{"nm": long + "!", "price": "1,000.00"}] * 12})
    fig = documents.matching_figure(model, "d")
    texts = [text for t in fig.data if t.mode == "markers+text" for text in t.text]
    assert len(texts) == 24 and all(text.count("<br>") == 1 for text in texts)
    lines = [html.unescape(line) for text in texts for line in text.split("<br>")]
    assert max(len(line) for line in lines) <= documents.MATCHING_LABEL_CHARS
    assert any(line.startswith("PASARAYA BORONG") and line.endswith("…") for line in lines)
    assert "a_very_long_group_… line 12" in lines and "GT" not in " ".join(lines)  # the side: the title


def _one_doc(gt: dict, pred: dict):
    gt_set = load_bytes((json.dumps({"doc_id": "d", "gt_parse": gt}) + "\n").encode(), "gt.jsonl")
    pred_set = load_bytes((json.dumps({"doc_id": "d", "gt_parse": pred}) + "\n").encode(), "p.jsonl")
    return evaluate(gt_set, {"p": pred_set}).models["p"]


def test_file_values_are_escaped_in_figures_and_tables():
    attack = "<a href='javascript:alert(1)'>x</a>"
    model = _one_doc({"menu": [{"nm": attack}]}, {"menu": [{"nm": attack + "!"}]})
    fig = documents.matching_figure(model, "d")
    texts = " ".join(str(t.text) + str(t.hovertext) for t in fig.data if t.mode != "lines")
    assert "<a href" not in texts and "&lt;a href" in texts
    html = table_html(["a", "b", "c", "d", "e", "f"], documents.alignment_rows(model, "d"))
    assert "<a href" not in html and "&lt;a href" in html


def test_confidences_read_like_thresholds():
    """Four decimals, as τ is written; a confidence below 1 is never shown as 1."""
    model = _one_doc({"a": "x", "b": "y"}, {"a": {"value": "x", "confidence": 0.99996},
                                              "b": {"value": "z", "confidence": 0.66754}})
    shown = {row[1]: row[4] for row, _ in documents.alignment_rows(model, "d")}
    assert shown == {"a": "> 0.9999", "b": "0.6675"}


def test_no_confidence_column_without_confidences():
    """A model without confidences (the official sample) gets no empty confidence column:
    it took the room the field names needed at 1,024 px."""
    bare = _one_doc({"a": "x", "b": "y"}, {"a": "x", "b": "z"})
    assert documents.value_columns(bare) == [c for c in documents.VALUE_COLUMNS if c != "confidence"]
    assert [len(cells) for cells, _ in documents.alignment_rows(bare, "d")] == [5, 5]
    sure = _one_doc({"a": "x"}, {"a": {"value": "x", "confidence": 0.5}})
    assert documents.value_columns(sure) == documents.VALUE_COLUMNS
    assert [cells[4] for cells, _ in documents.alignment_rows(sure, "d")] == ["0.5000"]


def test_substitutions_are_marked_character_by_character():
    gt, pred = diff_html("KM 458.4 BKT LANJAN UTARA, L/RA 458", "KM 458.4 BKT LANJAN UTARA, L/RA458")
    assert gt.count("<mark") == 1 and pred.count("<mark") == 0  # the missing space, shown on the GT side
    assert "␣" in gt
    gt, pred = diff_html("Pear", "Pea")
    assert gt == 'Pea<mark class="gt">r</mark>' and pred == "Pea"


def test_a_format_only_pair_says_how_the_values_are_the_same():
    """SPEC 2c ``format`` pairs read as "same date, other format" or "same text, other case"
    in the Documents page's table, not as a character diff; other substitutions keep it."""
    model = _one_doc({"date": "07 MAR 2018", "company": "ACME SDN BHD", "total": "9.00", "tax": "Pear"},
                     {"date": "2018-03-07", "company": "Acme Sdn Bhd", "total": "9", "tax": "Pea"})
    shown = {cells[1]: (cells[2], cells[3], cells[-1]) for cells, _ in documents.alignment_rows(model, "d")}
    note = '<span class="kv-muted">(same date, other format)</span>'
    assert shown["date"] == ("07 MAR 2018", f"2018-03-07 {note}", "substituted: format")
    assert shown["company"][1] == 'Acme Sdn Bhd <span class="kv-muted">(same text, other case)</span>'
    assert shown["total"][1] == '9 <span class="kv-muted">(same number, other format)</span>'
    assert "<mark" not in "".join(shown["date"] + shown["company"] + shown["total"])
    assert shown["tax"][0] == 'Pea<mark class="gt">r</mark>'  # a near miss: the characters that differ
    attack = _one_doc({"a": "<b>X</b>"}, {"a": "<B>x</B>"})
    cells = documents.alignment_rows(attack, "d")[0][0]
    assert "<b>" not in cells[2] + cells[3] and "&lt;B&gt;x&lt;/B&gt;" in cells[3]


# --- errors -------------------------------------------------------------------------------


def test_corrections_by_type_sum_to_the_totals(weak):
    table = error_analysis.corrections_by_type(weak)
    c = weak.corrections
    assert (table["substitution"].sum(), table["addition"].sum(), table["deletion"].sum()) == (
        c.substitution, c.addition, c.deletion)


def test_top_confusions(weak):
    confusions = top_confusions(weak.error_list, n=10)
    subs = weak.error_list[weak.error_list["kind"] == "substitution"]
    assert confusions["count"].is_monotonic_decreasing
    first = confusions.iloc[0]
    same = subs[(subs["gt_value"] == first["gt_value"]) & (subs["pred_value"] == first["pred_value"])
                & (subs["entity_type"] == first["entity_type"])]
    assert len(same) == first["count"] and same["doc_id"].nunique() == first["documents"]


def test_error_filters_and_exports(weak):
    errors = weak.error_list
    subs = error_analysis.filter_error_list(errors, kinds=["substitution"])
    assert (subs["kind"] == "substitution").all() and len(subs) == weak.corrections.substitution
    doc = errors["doc_id"].iloc[0]
    assert set(error_analysis.filter_error_list(errors, search=doc)["doc_id"]) == {doc}
    assert len(error_analysis.filter_error_list(errors, search="[a-z]+")) == 0  # plain text, no regex
    csv = pd.read_csv(io.BytesIO(error_analysis.error_list_csv(errors)), keep_default_na=False)
    assert len(csv) == len(errors) and list(csv.columns) == list(errors.columns)
    records = json.loads(error_analysis.error_list_json(errors))
    assert len(records) == len(errors) and records[0].keys() == set(errors.columns)


def test_cause_colours_are_shades_of_their_kind():
    """The causes chart sits beside the corrections chart: each cause is drawn in a shade of
    its kind's colour (additions were orange there, the substitutions' colour here)."""
    import colorsys

    from kieval_core.figures.style import KIND_COLORS

    def hue(color):
        rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        return colorsys.rgb_to_hls(*rgb)[0]

    colors = error_analysis.CAUSE_COLORS
    assert set(colors) == set(error_analysis.CAUSE_SERIES) and len(set(colors.values())) == len(colors)
    for (kind, _cause), color in colors.items():
        nearest = min(KIND_COLORS, key=lambda k: abs(hue(KIND_COLORS[k]) - hue(color)))
        assert nearest == kind, (kind, color)
    kinds = {kind for kind, _ in colors}
    assert all(KIND_COLORS[kind] in {c for (k, _), c in colors.items() if k == kind} for kind in kinds)


# --- automation ---------------------------------------------------------------------------


def test_the_threshold_chart_draws_the_target_line(strong):
    targets = [s for s in automation.threshold_figure(strong.curve, 0.5, 0.95).layout.shapes
               if s.line.dash == "dot"]
    assert [(s.y0, s.y1) for s in targets] == [(0.95, 0.95)]
    assert not [s for s in automation.threshold_figure(strong.curve, 0.5, None).layout.shapes
                if s.line.dash == "dot"]


def test_curves_are_steps_through_real_operating_points(strong):
    fig = automation.threshold_figure(strong.curve, 0.5, 0.95)
    lines = [t for t in fig.data if t.name in ("accuracy after review", "automation rate")]
    assert all(t.line.shape == "hv" for t in lines)
    shown = automation.operating_points(strong.curve)
    assert set(shown["threshold"]) <= set(strong.curve["threshold"])  # never interpolated
    trade = automation.tradeoff_figure(strong.curve, 0.5, 0.95)
    # points run from most to least automation: each keeps its accuracy down to the next
    # point's automation (horizontal first), never showing the next accuracy at its own
    x, y = trade.data[0].x, trade.data[0].y
    assert trade.data[0].line.shape == "hv" and (np.diff(x) <= 0).all() and (np.diff(y) >= -1e-12).all()
    assert set(trade.data[0].customdata[:, 0]) <= set(strong.curve["threshold"])


def test_threshold_ticks_are_whole_thresholds(strong):
    """The axis ends at "> 0.9993" (just above the largest confidence: review everything),
    never a label cut to six characters ("> 1 (r") or the confidence itself."""
    fig = automation.threshold_figure(strong.curve, 0.5, 0.95)
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[0] == "0.0000" and ticks[-1] == "> " + f"{strong.curve['threshold'].max():.4f}"
    assert fig.layout.margin.r >= 40  # the last tick sits on the plot's edge: plotly hid it in 10 px
    above_one = pd.concat([strong.curve, strong.curve.tail(1).assign(threshold=np.nextafter(1.0, 2.0))])
    assert list(automation.threshold_figure(above_one, 0.5, None).layout.xaxis.ticktext)[-1] == "> 1"


def test_the_ring_marks_the_chosen_point_also_at_review_everything(strong):
    """At τ just above the largest confidence (review everything; Textract's operating point
    when 95% is out of reach) the cards said 0% automated while the trade-off ring sat on
    the point before it (50% automated on SROIE)."""
    curve = strong.curve.tail(50).reset_index(drop=True)  # every point drawn (no thinning)
    for tau in (float(curve["threshold"].iloc[-1]), float(curve["threshold"].iloc[len(curve) // 2])):
        expected = curve[curve["threshold"] == tau].iloc[0]
        ring = next(t for t in automation.tradeoff_figure(curve, tau, None).data if t.name == "chosen point")
        assert (ring.x[0], ring.y[0]) == (expected["auto_rate"], expected["kieval_aligned"])
    assert curve["auto_rate"].iloc[-1] == 0


def test_operating_points_keep_the_ends_and_the_chosen_point(strong):
    curve = strong.curve
    chosen = float(curve["threshold"].iloc[len(curve) // 3])
    shown = automation.operating_points(curve, 50, keep=(chosen,))
    assert len(shown) <= 51 and chosen in set(shown["threshold"])
    assert shown["threshold"].iloc[0] == curve["threshold"].iloc[0]
    assert shown["threshold"].iloc[-1] == curve["threshold"].iloc[-1]


def test_threshold_of_a_clicked_point():
    assert automation.first_custom_value([0.61, 3]) == 0.61
    assert automation.first_custom_value({"0": 0.7, "1": 5}) == 0.7
    assert automation.first_custom_value(None) is None


def test_reliability_diagram_draws_the_mean_confidence_where_a_calibrated_bar_ends(strong):
    from kieval_core.review.calibration import reliability_of

    table = reliability_of(strong.review)
    fig = automation.reliability_figure(table)
    bars = next(t for t in fig.data if t.type == "bar")
    diamonds = next(t for t in fig.data if t.name.startswith("mean confidence"))
    filled = table[table["predictions"] > 0]
    assert list(bars.y) == list(table["accuracy"])
    assert list(diamonds.y) == list(filled["mean_confidence"])  # the marker's height is the confidence
    assert list(diamonds.x) == list((filled["low"] + filled["high"]) / 2)  # on its own bar


# --- compare ------------------------------------------------------------------------------


def test_paired_bootstrap_matches_a_naive_loop(sample_result):
    a, b = sample_result.models["simulated-weak"], sample_result.models["simulated-strong"]
    table = paired_bootstrap(a, b, resamples=50, seed=3).set_index("key")
    from kieval_core.review.uncertainty import resample_weights

    weights = resample_weights(np.random.default_rng(3), a.n_documents, 50)
    docs_a, docs_b = a.tally.documents, b.tally.documents.reindex(a.tally.documents.index, fill_value=0)
    deltas = []
    for w in weights:  # the naive loop: resample, sum, score, one resample at a time
        tp_a, fp_a, fn_a = (docs_a[c].to_numpy() @ w for c in ("tp", "fp", "fn"))
        tp_b, fp_b, fn_b = (docs_b[c].to_numpy() @ w for c in ("tp", "fp", "fn"))
        deltas.append(2 * tp_b / (2 * tp_b + fp_b + fn_b) - 2 * tp_a / (2 * tp_a + fp_a + fn_a))
    low, high = np.quantile(deltas, [0.025, 0.975])
    assert table.loc["kieval.entity.f1", "low"] == pytest.approx(low)
    assert table.loc["kieval.entity.f1", "high"] == pytest.approx(high)
    assert table.loc["kieval.entity.f1", "verdict"] == "B better"


def test_compare_display_names_the_models(sample_result):
    a, b = sample_result.models["simulated-weak"], sample_result.models["simulated-strong"]
    table = paired_bootstrap(a, b, resamples=50)
    shown = compare.deltas_display(table, "weak", "strong")
    assert "strong better" in set(shown["verdict"])


def test_compare_shows_cause_counts_as_counts(sample_result):
    """Cause counts (Subs: format, ...) are counts like the corrections: in the counts
    table, out of the forest plot of fractions (they were shown as 27,900% and squeezed
    every score difference to 0 on the plot's axis)."""
    a, b = sample_result.models["simulated-weak"], sample_result.models["simulated-strong"]
    table = paired_bootstrap(a, b, resamples=50)
    shown = compare.deltas_display(table, "weak", "strong").set_index("metric")
    for label in ("Subs: format", "Adds: missed", "Dels: hallucinated", "Corrections", "FP + FN"):
        assert shown.loc[label, "_count"], label
        assert not shown.loc[label, "95% interval"].endswith("pts"), label
    assert not shown.loc["KIEval_Aligned", "_count"]
    plotted = set(compare.deltas_figure(table, "weak", "strong").data[0].y)
    assert "KIEval_Aligned" in plotted and not plotted & {"Subs: format", "Adds: missed", "Corrections"}
    assert max(abs(x) for x in compare.deltas_figure(table, "weak", "strong").data[0].x) <= 1


def test_scatter_counts_documents_that_share_a_point(sample_result):
    a, b = sample_result.models["simulated-weak"], sample_result.models["simulated-strong"]
    frame = per_document(a, b, "aligned")
    fig = compare.scatter_figure(frame, "KIEval_Aligned", "weak", "strong", False)
    points = fig.data[1]
    assert sum(int(n) for n in points.customdata[:, 1]) == len(frame.dropna(subset=["A", "B"]))
    assert len(points.x) == len(frame.dropna(subset=["A", "B"]).drop_duplicates(["A", "B"]))


# --- guide --------------------------------------------------------------------------------


def test_fig2_worked_example_agrees_with_the_paper():
    table = guide.fig2_table(guide.fig2_result())
    assert (table["agrees"] == "yes").all() and len(table) == len(guide.FIG2_PAPER)


def test_metric_cards_list_the_whole_registry():
    cards = overview.metric_cards()
    assert list(cards["key"]) == [m.key for m in metric_registry.METRICS]


# --- the shared store ----------------------------------------------------------------------


def test_store_computes_each_key_once_for_concurrent_callers():
    store = Store(idle_bytes=10**9)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return np.zeros(10)

    threads = [threading.Thread(target=lambda: store.get("k", slow)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1


def test_store_keeps_held_entries_and_bounds_idle_ones_in_bytes():
    store = Store(idle_bytes=20_000)
    store.get("a", lambda: np.zeros(1000))  # 8,000 bytes
    store.get("b", lambda: np.zeros(1000))
    store.hold("s1", ["a"])
    store.get("c", lambda: np.zeros(2000))  # 16,000 bytes: b, the oldest idle entry, goes
    assert store.peek("a") is not None and store.peek("b") is None and store.peek("c") is not None
    store.release_session("s1")
    store.get("d", lambda: np.zeros(2000))
    assert store.stats()["bytes"] - store.stats()["held_bytes"] <= 20_000
    assert store.stats()["sessions"] == 0


def test_a_value_made_of_other_entries_counts_only_its_own_bytes_and_goes_with_them():
    """An evaluation refers to the datasets and models the store holds already: counted
    again, two sessions of one large ground truth would count it twice against the budget;
    kept after them, it would keep their memory while the store counts it as freed."""
    store = Store(idle_bytes=20_000)
    data = store.get("data", lambda: np.zeros(1000))  # 8,000 bytes
    made = {"data": data, "own": np.zeros(500)}
    store.put("made", made, parts=("data",))
    sizes = {k: e.size for k, e in store._entries.items()}
    assert sizes["made"] < 4000 + 1000 < sizes["data"]  # its own 4,000 bytes, not the 8,000 again
    assert store.peek("made") is made
    store.get("big", lambda: np.zeros(2000))  # 16,000 bytes: "data", the oldest idle entry, goes
    assert store.peek("data") is None and store.peek("made") is None and store.peek("big") is not None


def test_store_cancels_work_nobody_waits_for():
    store = Store()
    started, steps = threading.Event(), []

    def work(task):
        started.set()
        for i in range(200):
            time.sleep(0.01)
            task.checkpoint()
            steps.append(i)
        return "done"

    store.hold("s1", ["job"])
    task = store.submit("job", "a model", work)
    started.wait(5)
    store.release_session("s1")  # the only session waiting for it is gone
    with pytest.raises(TaskCancelled):
        task.future.result(timeout=5)
    assert len(steps) < 200 and store.peek("job") is None


def test_approximate_size_counts_frames_and_text():
    frame = pd.DataFrame({"a": np.zeros(1000), "b": ["x" * 20] * 1000})
    assert 8000 + 20_000 <= approximate_size(frame) <= 8000 + 100_000


def test_approximate_size_measures_a_large_container_on_a_sample(monkeypatch):
    """Hand-worked: 100,000 distinct 5-character strings are 100,000 x (5 + 49) bytes, plus
    8 bytes a slot and 56 for the list; a dict of them adds the keys. Only the first
    ``SAMPLE`` items are walked (a full walk of 60,000 documents' structures held the GIL
    for a second at every heavy upload)."""
    from kieval_app.serving import store as store_module

    texts = [f"{i:05d}" for i in range(100_000)]
    assert approximate_size(texts) == 100_000 * (5 + 49) + 8 * 100_000 + 56
    mapping = {t: t + "!" for t in texts}
    assert approximate_size(mapping) == 100_000 * ((5 + 49) + (6 + 49)) + 64
    calls = []
    measured = store_module.approximate_size

    def counting(value, _seen=None):
        calls.append(1)
        return measured(value, _seen)

    monkeypatch.setattr(store_module, "approximate_size", counting)
    counting({"structures": mapping})
    assert len(calls) <= 2 * store_module.SAMPLE + 3


def test_a_server_that_exits_early_is_reported_with_its_output():
    import subprocess
    import sys

    from kieval_app.serving.headless import server_log, wait_healthy

    with server_log() as log:
        process = subprocess.Popen([sys.executable, "-c", "print('no such app'); raise SystemExit(1)"],
                                   stdout=log, stderr=subprocess.STDOUT)
        process.wait(timeout=30)
        with pytest.raises(RuntimeError, match="exited early:\nno such app"):
            wait_healthy("http://127.0.0.1:9/", process, timeout=30, log=log)


# --- one scoring path ------------------------------------------------------------------------


def _settled_workspace(store, sources, options):
    ws = compute.build_workspace(store, "s", sources, options)
    for task in ws.pending:
        task.future.result(timeout=120)
    ws = compute.build_workspace(store, "s", sources, options)
    assert not ws.pending and not ws.problems
    return ws


def test_the_app_reports_what_evaluate_reports(all_families):
    """The app scores through the core's pipeline: with every family (the peer metrics
    computed in the background), its report is the API's, file names apart."""
    sources = sample_sources("simulated")
    options = AppOptions(families=tuple(metric_registry.FAMILIES))
    ws = _settled_workspace(Store(), sources, options)
    decisions = DecisionOptions(resamples=50)
    # the app names a directory as its .zip: the reports agree apart from the file names
    app, api = (json.loads(report_json(r, decisions)) for r in (ws.result, all_families))
    assert without_key(app, "source") == without_key(api, "source")


def test_each_upload_is_read_once(monkeypatch):
    """The upload check scores the file (in a child, through the core), the workspace finds
    what it scored, and the peer metrics read the prediction in their own child: the ground
    truth is parsed once and each prediction file twice (its scoring and its peer metrics),
    whatever the workspace asks for. The children are replaced by calls in this process
    so that the parses can be counted."""
    reads = []

    def counting_load_bytes(data, source, *args, **kwargs):
        reads.append(source)
        return load_bytes(data, source, *args, **kwargs)

    def in_process(function, *args, tick=None, progress=None, **kwargs):
        return function(*args, **kwargs)

    monkeypatch.setattr(compute, "load_bytes", counting_load_bytes)
    monkeypatch.setattr(compute, "run_isolated", in_process)
    store = Store(idle_bytes=10**9)
    sample = sample_sources("simulated")
    options = AppOptions(families=("kieval", "anls_star", "oi"))
    compute.read_dataset(store, sample.gt, options, "gt")  # as the uploads check a ground truth
    for pred in sample.predictions:
        compute.score(store, sample.gt, pred, options)  # as the uploads check a prediction file
    ws = _settled_workspace(store, sample, options)
    predictions = [p.name for p in sample.predictions]
    assert sorted(reads) == sorted([sample.gt.name, *predictions, *predictions])
    assert set(ws.result.models["simulated-weak"].peer) == {"anls_star", "oi"}


def test_a_file_sharing_no_document_is_refused_by_type():
    sample = sample_sources("simulated")
    stranger = Source.of("stranger.jsonl", json.dumps({"doc_id": "zz", "total": "1"}).encode())
    with pytest.raises(NoCommonDocuments, match="no document in common"):
        compute.score(Store(), sample.gt, stranger, AppOptions())


def test_screenshots_keep_every_chart_colour_exactly():
    """A README screenshot in 256 colours: a few pixels of each chart colour on a page of
    greys and text keep their exact colour (median cut alone merged them)."""
    import importlib.util

    from PIL import Image, ImageDraw

    script = Path(__file__).resolve().parents[2] / "docs" / "make_screenshots.py"
    spec = importlib.util.spec_from_file_location("make_screenshots", script)
    shots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shots)
    colors = shots.chart_colors()
    assert {"#E69F00", "#D55E00", "#56B4E9", "#0072B2"} <= set(colors)
    rng = np.random.default_rng(0)  # a page: light greys, and noise of every colour (text, images)
    page = np.broadcast_to(np.linspace(200, 255, 600)[:, None, None], (600, 600, 3)).copy()
    page[300:] = rng.integers(0, 256, (300, 600, 3))
    image = Image.fromarray(page.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for i, color in enumerate(colors):
        draw.rectangle([10 + 12 * i, 10, 14 + 12 * i, 14], fill=color)
    small = shots.quantize(image).convert("RGB")
    for i, color in enumerate(colors):
        assert small.getpixel((12 + 12 * i, 12)) == tuple(int(color[k:k + 2], 16) for k in (1, 3, 5)), color


def test_the_threshold_chart_says_its_target_where_the_curves_are_not(strong):
    """At the right, under the line: both curves crossed "target 95%" at the left (1,024 px)."""
    (label,) = automation.threshold_figure(strong.curve, 0.5, 0.95).layout.annotations
    assert (label.text, label.x, label.xref, label.xanchor, label.yanchor) == (
        "target 95%", 1, "x domain", "right", "top")
    right_half = strong.curve[strong.curve["threshold"] >= strong.curve["threshold"].median()]
    assert (right_half["auto_rate"] < 0.9).all()  # automation leaves that corner (accuracy is above it)


def test_half_width_charts_have_axis_titles_that_fit(strong):
    """At 1,024 px a half-width chart shows about 34 characters of an axis title; longer ones
    were cut ("automation rate (predictions not review", and at 36 the trade-off's closing
    parenthesis)."""
    documents = automation.tradeoff_figure(strong.curve, None, None, x="straight_through_rate",
                                           y="document_accuracy",
                                           labels=("straight through (none below τ)", "documents right"))
    figures = [automation.tradeoff_figure(strong.curve, 0.5, 0.95), documents,
               automation.policies_figure(strong.curve, strong.curve, None, None),
               automation.threshold_figure(strong.curve, 0.5, 0.95)]
    for fig in figures:
        assert len(fig.layout.xaxis.title.text) <= 32, fig.layout.xaxis.title.text
