"""Unit tests of the figure and table builders (pure functions, no Streamlit)."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from kieval_app import automation, compare, documents, error_analysis, guide, overview
from kieval_core import evaluate, load_bytes
from kieval_core import registry as metric_registry

# --- overview -----------------------------------------------------------------------------


def test_overview_has_every_registry_metric_for_every_model(sample_result):
    table = overview.overview_table(sample_result)
    metrics = metric_registry.metrics_of(sample_result.metrics)
    assert list(table.index) == list(sample_result.models)
    assert [c for c in table.columns if c != "documents"] == [m.label for m in metrics]
    for name, model in sample_result.models.items():
        for metric in metrics:
            expected = metric.get(model)
            got = table.loc[name, metric.label]
            assert (expected is None and pd.isna(got)) or got == pytest.approx(expected)


def test_metric_rows_read_as_text_with_the_best_model(sample_result):
    rows = overview.metric_rows(sample_result).set_index("metric")
    assert rows.loc["KIEval_Aligned", "simulated-strong"] == "87.73%"
    assert rows.loc["Corrections", "simulated-weak"] == "561"
    assert rows.loc["KIEval_Aligned", "best model"] == "simulated-strong"
    assert rows.loc["Corrections", "better"] == "↓ lower"
    assert rows.loc["Corrections", "best model"] == "simulated-strong"


def test_metric_kinds(sample_result):
    kinds = overview.metric_kinds(overview.overview_table(sample_result))
    assert kinds["Corrections"] == "count" and kinds["KIEval entity F1"] == "score"


def test_corrections_beside_fp_fn(sample_result):
    table = overview.corrections_table(sample_result)
    strong = sample_result.models["simulated-strong"]
    assert table.loc["simulated-strong", "corrections"] == strong.corrections.total == 154
    assert table.loc["simulated-strong", "FP + FN"] == strong.entity.fp + strong.entity.fn
    fig = overview.corrections_figure(sample_result)
    assert [t.name for t in fig.data] == ["substitutions", "additions", "deletions", "FP + FN"]
    # the three kinds are stacked: each bar starts where the previous one ends
    assert list(fig.data[1].base) == list(table["substitution"])


def test_load_report_counts_documents(sample_result):
    files = [("ground truth", "gt.jsonl", 10)] + [
        ("predictions", f"{n}.jsonl", 1) for n in sample_result.models
    ]
    report = overview.load_report(sample_result, files).set_index("file")
    assert report.loc["gt.jsonl", "documents read"] == 100
    weak = report.loc["simulated-weak.jsonl"]
    assert (weak["documents read"], weak["missing"], weak["unknown"]) == (98, 2, 0)
    assert weak["confidences"] == "all"
    lists = overview.document_lists(sample_result.models["simulated-weak"])
    assert sorted(lists["doc_id"]) == ["validation_0021", "validation_0058"]


def test_headline_cards_and_reading_guide(sample_result, strong):
    cards = overview.headline(sample_result, strong)
    computed = metric_registry.metrics_of(sample_result.metrics)
    assert [m.label for m, _ in cards] == [m.label for m in computed if m.headline]
    assert len(overview.how_to_read(sample_result)) == len(computed)


def test_overview_follows_the_families_computed(all_families):
    table = overview.overview_table(all_families)
    for metric in metric_registry.METRICS:  # every registered metric, peer ones included
        assert metric.label in table.columns
    rows = overview.metric_rows(all_families).set_index("metric")
    assert rows.loc["ANLS*", "better"] == "↑ higher"


# --- documents ----------------------------------------------------------------------------


def test_document_table_filters_and_sorts(weak):
    table = documents.document_table(weak)
    assert len(table) == 100
    assert table["errors"].is_monotonic_decreasing
    subs = documents.document_table(weak, entity_types=["menu.price"], kinds=["substitution"])
    errors = weak.errors
    expected = errors[(errors["entity_type"] == "menu.price") & (errors["kind"] == "substitution")]
    assert set(subs["doc_id"]) == set(expected["doc_id"])
    assert subs["matching errors"].sum() == len(expected)
    only = documents.document_table(weak, only_with_errors=True, sort="document id")
    assert (only["errors"] > 0).all() and only["doc_id"].is_monotonic_increasing


def test_neighbours():
    assert documents.neighbours(["a", "b", "c"], "a") == (None, "b")
    assert documents.neighbours(["a", "b", "c"], "c") == ("b", None)


def test_aligned_entities_account_for_every_entity(sample_result):
    for model in sample_result.models.values():
        gt, pred = model.counted.gt_entities, model.counted.pred_entities
        for doc in model.documents["doc_id"][:60]:
            aligned = documents.aligned_entities(model, doc, sample_result.normalizer)
            g, p = gt[gt["doc_id"] == doc], pred[pred["doc_id"] == doc]
            assert aligned["gt_value"].notna().sum() == len(g)
            assert aligned["pred_value"].notna().sum() == len(p)
            for status in ("correct", "substituted", "added", "deleted"):
                side = g if status in ("correct", "substituted", "added") else p
                assert (aligned["status"] == status).sum() == (side["status"] == status).sum()
            correct = aligned[aligned["status"] == "correct"]
            assert all(
                sample_result.normalizer(a) == sample_result.normalizer(b)
                for a, b in zip(correct["gt_value"], correct["pred_value"], strict=True)
            )


def test_group_pairs_match_the_engine(weak):
    doc = "validation_0075"
    pairs = documents.group_pairs(weak, doc)
    matching = weak.matching[weak.matching["doc_id"] == doc]
    assert (pairs["status"] != "non-group").sum() == len(matching)
    assert (pairs["status"] == "exact").sum() == matching["exact"].sum()
    assert (pairs["status"] == "unmatched prediction").sum() == (matching["gt_group"] < 0).sum()
    doc_row = documents.document_figures(weak, doc)
    assert pairs["errors"].sum() == doc_row["errors"]


def test_matching_figure_links_matched_pairs(weak):
    doc = "validation_0075"
    fig = documents.matching_figure(weak, doc)
    matching = weak.matching[weak.matching["doc_id"] == doc]
    matched = ((matching["gt_group"] >= 0) & (matching["pred_group"] >= 0)).sum()
    links = [t for t in fig.data if t.mode == "lines"]
    non_group = weak.counted.cells.query("doc_id == @doc and gt_group < 0 and pred_group < 0")
    assert len(links) == matched + (1 if len(non_group) and non_group["n_pred"].sum() else 0)
    assert sum(1 for a in fig.layout.annotations if str(a.text).startswith("S=")) == len(links)


def _one_doc(gt: dict, pred: dict):
    gt_set = load_bytes((json.dumps({"doc_id": "d", "gt_parse": gt}) + "\n").encode(), "gt.jsonl")
    pred_set = load_bytes(
        (json.dumps({"doc_id": "d", "gt_parse": pred}) + "\n").encode(), "p.jsonl"
    )
    return evaluate(gt_set, {"p": pred_set})


def test_file_values_are_escaped_in_figures():
    attack = "<a href='javascript:alert(1)'>x</a>"
    result = _one_doc({"menu": [{"nm": attack}]}, {"menu": [{"nm": attack + "!"}]})
    model = result.models["p"]
    fig = documents.matching_figure(model, "d")
    texts = " ".join(str(t.text) + str(t.hovertext) for t in fig.data if t.mode != "lines")
    assert "<a href" not in texts and "&lt;a href" in texts
    confusion_fig = error_analysis.corrections_by_type_figure(model)
    assert confusion_fig.data[0].y == ("menu.nm",)


# --- errors -------------------------------------------------------------------------------


def test_corrections_by_type_sum_to_the_totals(weak):
    table = error_analysis.corrections_by_type(weak)
    c = weak.corrections
    assert (table["substitution"].sum(), table["addition"].sum(), table["deletion"].sum()) == (
        c.substitution,
        c.addition,
        c.deletion,
    )
    fig = error_analysis.corrections_by_type_figure(weak)
    assert fig.layout.barmode == "stack" and len(fig.data) == 3
    assert sum(sum(t.x) for t in fig.data) == c.total


def test_flat_vs_kieval_f1_per_type(weak):
    table = error_analysis.f1_by_type(weak)
    assert (table["flat_f1"] >= table["kieval_f1"] - 1e-12).all()
    assert table["gap"].is_monotonic_decreasing
    fig = error_analysis.f1_by_type_figure(weak)
    assert {t.name for t in fig.data if t.showlegend is not False} >= {
        "flat entity F1",
        "KIEval entity F1",
    }


def test_top_confusions(weak):
    top = error_analysis.top_confusions(weak, n=5)
    assert len(top) == 5 and top["count"].is_monotonic_decreasing
    first = top.iloc[0]
    errors = weak.errors
    same = errors[
        (errors["kind"] == "substitution")
        & (errors["gt_value"] == first["gt_value"])
        & (errors["pred_value"] == first["pred_value"])
        & (errors["entity_type"] == first["entity_type"])
    ]
    assert len(same) == first["count"]


def test_error_filters_and_exports(weak):
    errors = weak.errors
    additions = error_analysis.filter_errors(errors, kinds=["addition"])
    assert len(additions) == weak.corrections.addition
    found = error_analysis.filter_errors(errors, search="VALIDATION_0021")
    assert set(found["doc_id"]) == {"validation_0021"}

    def has_paren(column):
        return errors[column].astype(object).fillna("").astype(str).str.contains("(", regex=False)

    expected = (has_paren("gt_value") | has_paren("pred_value") | has_paren("doc_id")).sum()
    assert len(error_analysis.filter_errors(errors, search="(")) == expected
    csv = pd.read_csv(io.BytesIO(error_analysis.errors_csv(errors)), keep_default_na=False)
    assert list(csv.columns) == list(errors.columns) and len(csv) == len(errors)
    records = json.loads(error_analysis.errors_json(errors))
    assert len(records) == len(errors) and records[0].keys() == set(errors.columns)
    assert all(r["pred_value"] is None for r in records if r["kind"] == "addition")


# --- automation ---------------------------------------------------------------------------


def test_review_summary_is_exact_along_the_curve(sample_result):
    for model in sample_result.models.values():
        curve = model.curve
        for tau in list(curve["threshold"][:: max(1, len(curve) // 40)]) + [0.5, 2.0]:
            summary = automation.review_summary(model, tau)
            point = automation.point_at(curve, tau)
            assert summary["kieval_aligned"] == pytest.approx(point["kieval_aligned"], abs=1e-12)
            assert summary["reviewed"] == point["reviewed"]
            assert summary["auto_rate"] == pytest.approx(point["auto_rate"])


def test_escaping_errors_start_at_the_corrections_and_only_fall(weak):
    start = automation.review_summary(weak, 0.0)
    c = weak.corrections
    assert (start["substitution"], start["addition"], start["deletion"]) == (
        c.substitution,
        c.addition,
        c.deletion,
    )
    previous = start["errors"]
    for tau in np.linspace(0, 1.01, 30):
        now = automation.review_summary(weak, float(tau))
        assert now["errors"] <= previous and now["addition"] == c.addition
        previous = now["errors"]


def test_spec_automation_example():
    result = guide.automation_result()
    model = result.models["prediction"]
    rec = model.recommend(0.85)
    assert (rec.threshold, rec.auto_rate) == (0.60, pytest.approx(0.7))
    at = automation.review_summary(model, 0.60)
    assert (at["substitution"], at["addition"], at["deletion"]) == (0, 1, 0)
    before = automation.review_summary(model, 0.0)
    assert (before["substitution"], before["addition"], before["deletion"]) == (2, 1, 1)
    mid = automation.review_summary(model, 0.35)  # the spurious tax (0.30) is reviewed
    assert (mid["substitution"], mid["addition"], mid["deletion"]) == (2, 1, 0)


def test_per_field_thresholds_reach_the_target_with_no_more_reviews(sample_result):
    for model in sample_result.models.values():
        for target in (0.8, 0.9, 0.95):
            fields = automation.per_field_thresholds(model, target)
            assert set(fields["entity_type"]) == set(model.review_effects["entity_type"])
            combined = automation.review_summary(
                model, dict(zip(fields["entity_type"], fields["threshold"], strict=True))
            )
            single = model.recommend(target)
            if single.reachable:
                assert combined["kieval_aligned"] >= target - 1e-9
                assert combined["reviewed"] <= single.reviews


def test_threshold_figures_and_selection(strong):
    curve = strong.curve
    rec = strong.recommend(0.95)
    fig7 = automation.threshold_figure(curve, 0.5, rec.threshold, 0.95)
    assert [t.name for t in fig7.data][:2] == [
        "KIEval_Aligned^τ (accuracy after review)",
        "automation rate",
    ]
    first = fig7.data[0]
    assert list(first.customdata[:, 0]) == list(first.x)  # every point carries its threshold
    trade = automation.tradeoff_figure(curve, 0.5, rec.threshold, 0.95)
    point = {"x": trade.data[0].x[10], "customdata": list(trade.data[0].customdata[10])}
    assert automation.threshold_from_selection({"points": [point]}) == curve["threshold"][10]
    assert automation.threshold_from_selection(None) is None


def test_thin_curve_keeps_ends():
    curve = pd.DataFrame(
        {
            "threshold": np.linspace(0, 1, 5000),
            "auto_rate": 0.0,
            "kieval_aligned": 0.0,
            "reviewed": 0,
        }
    )
    thin = automation.thin_curve(curve, 100)
    assert len(thin) <= 100 and thin["threshold"].iloc[0] == 0 and thin["threshold"].iloc[-1] == 1


def test_reliability_diagram(sample_result):
    model = sample_result.models["simulated-llm"]
    table = automation.reliability(model, bins=10)
    pred = model.counted.pred_entities
    assert table["predictions"].sum() == pred["confidence"].notna().sum()
    filled = table[table["predictions"] > 0]
    correct = (filled["accuracy"] * filled["predictions"]).sum()
    assert correct == pytest.approx((pred["status"] == "correct").sum())
    ece = automation.expected_calibration_error(table)
    assert 0 <= ece <= 1
    assert isinstance(automation.reliability_figure(table), go.Figure)


# --- compare ------------------------------------------------------------------------------


def test_bootstrap_matches_a_naive_loop(sample_result):
    a = compare.document_counts(sample_result.models["simulated-strong"]).to_numpy()
    b = compare.document_counts(sample_result.models["simulated-weak"]).to_numpy()
    sums_a, sums_b = compare.bootstrap_sums(a, b, n_resamples=50, seed=7)
    rng = np.random.default_rng(7)
    index = rng.integers(0, len(a), size=(50, len(a)))  # the same draws, one resample at a time
    for r in range(50):
        assert (sums_a[r] == a[index[r]].sum(axis=0)).all()
        assert (sums_b[r] == b[index[r]].sum(axis=0)).all()


def test_paired_bootstrap_table(sample_result):
    strong, weak = sample_result.models["simulated-strong"], sample_result.models["simulated-weak"]
    table = compare.paired_bootstrap(strong, weak, n_resamples=300, seed=1).set_index("key")
    assert table.loc["kieval.aligned", "A"] == pytest.approx(strong.aligned)
    assert table.loc["kieval.aligned", "B"] == pytest.approx(weak.aligned)
    assert table.loc["kieval.group.f1", "A"] == pytest.approx(strong.group.f1)
    assert table.loc["entity_f1.f1", "B"] == pytest.approx(weak.entity_f1.f1)
    assert table.loc["kieval.group_aligned", "A"] == pytest.approx(strong.group_aligned)
    assert ((table["low"] <= table["delta"]) & (table["delta"] <= table["high"])).all()
    assert (table["verdict"] == "A better").all()
    same = compare.paired_bootstrap(strong, strong, n_resamples=100)
    assert (same[["delta", "low", "high"]].to_numpy() == 0).all()
    assert (same["verdict"] == "no clear difference").all()
    again = compare.paired_bootstrap(strong, weak, n_resamples=300, seed=1).set_index("key")
    pd.testing.assert_frame_equal(table, again)
    display = compare.deltas_display(table.reset_index())
    assert display["95% CI (points)"].str.match(r"^\[[+-]\d+\.\d\d, [+-]\d+\.\d\d\]$").all()
    assert len(compare.deltas_figure(table.reset_index(), "a", "b").data) == 1


def test_peer_means_are_bootstrapped_per_document(all_families):
    strong = all_families.models["simulated-strong"]
    weak = all_families.models["simulated-weak"]
    table = compare.paired_bootstrap(strong, weak, n_resamples=200).set_index("key")
    for key in ("anls_star", "nted"):
        figure = metric_registry_value(key, strong)
        assert table.loc[key, "A"] == pytest.approx(figure)
        assert table.loc[key, "low"] <= table.loc[key, "delta"] <= table.loc[key, "high"]
    labels = compare.document_metrics(strong)
    assert labels["ANLS*"] == "peer:anls_star"
    values = compare.document_values(strong, "peer:anls_star")
    assert values.mean() == pytest.approx(metric_registry_value("anls_star", strong))
    worst = compare.disagreements(strong, weak, "peer:nted", n=3)
    assert len(worst) == 3


def metric_registry_value(key, model):
    return next(m for m in metric_registry.METRICS if m.key == key).get(model)


def test_disagreements_and_scatter(sample_result):
    strong, llm = sample_result.models["simulated-strong"], sample_result.models["simulated-llm"]
    worst = compare.disagreements(strong, llm, "aligned", n=5)
    assert len(worst) == 5 and worst["difference"].abs().is_monotonic_decreasing
    fig = compare.scatter_figure(strong, llm, "aligned", "KIEval_Aligned", "strong", "llm")
    points = fig.data[1]
    assert len(points.x) == 100
    doc = points.customdata[3][0]
    assert (
        compare.doc_from_selection({"points": [{"customdata": list(points.customdata[3])}]}) == doc
    )


# --- guide --------------------------------------------------------------------------------


def test_fig2_worked_example_agrees_with_the_paper():
    table = guide.fig2_table(guide.fig2_result())
    assert (table["agrees"] == "yes").all(), table
    assert len(guide.menu_lines(guide.FIG2_GT)) == 6


def test_metric_cards_list_the_whole_registry():
    cards = guide.metric_cards()
    assert list(cards["key"]) == [m.key for m in metric_registry.METRICS]
    assert cards["definition"].str.len().gt(0).all() and cards["source"].str.len().gt(0).all()
