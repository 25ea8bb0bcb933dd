"""Peer metrics through evaluate, the registry, the report and the CLI."""

from __future__ import annotations

import json

import pytest
from anls_star import anls_score
from builders import dataset, write_jsonl
from conftest import SAMPLE_DATA

from kieval_core import evaluate
from kieval_core.cli import main
from kieval_core.count.peer_families import PeerOptions, renest
from kieval_core.output.render import report_json
from kieval_core.result.registry import FAMILIES, METRICS, metrics_of


@pytest.fixture(scope="module")
def sample():
    return evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl",
                    {"strong": SAMPLE_DATA / "sim_strong.jsonl", "weak": SAMPLE_DATA / "sim_weak.jsonl"},
                    metrics="all")


def test_every_registered_metric_has_a_value(sample):
    for metric in METRICS:
        if not metric.computed(sample.models["strong"]):
            assert metric.key.split(".")[0].endswith("_renested"), metric.key  # the other variant
            continue
        value = metric.get(sample.models["strong"])
        assert value is not None, metric.key
        if metric.family != "kieval" or metric.key.endswith(("f1", "aligned")):
            assert value == value  # not NaN


def test_counts_are_marked_as_counts(sample):
    """A metric is a count exactly when it counts things (whole numbers beyond 1 on the
    sample); every other metric is a fraction. Tables and the Compare page read ``count``
    to show a count as a number, never as a percentage (the causes were shown as 27,900%)."""
    weak = sample.models["weak"]
    for metric in METRICS:
        if not metric.computed(weak):
            continue
        value = metric.get(weak)
        if metric.count:
            assert float(value).is_integer(), metric.key
        else:
            assert 0 <= value <= 1 or metric.key.startswith("oi."), metric.key  # OI rates are not capped
    counted = {m.key for m in METRICS if m.count}
    assert {"kieval.corrections.total", "kieval.fp_plus_fn", "kieval.causes.substitution.format",
            "kieval.causes.addition.missed", "kieval.causes.deletion.hallucinated"} <= counted
    assert max(metric.get(weak) for metric in METRICS if metric.count) > 1


def test_registry_is_consistent():
    keys = [m.key for m in METRICS]
    assert len(keys) == len(set(keys))
    assert {m.family for m in METRICS} == set(FAMILIES)
    assert all(m.definition and m.citation and m.how_to_read for m in METRICS)
    assert metrics_of(["kieval"]) and all(m.family == "kieval" for m in metrics_of(["kieval"]))


def test_identity_is_perfect_for_every_family():
    gt = SAMPLE_DATA / "cord_v2_gt.jsonl"
    m = evaluate(gt, {"same": gt}, metrics="all").models["same"]
    for metric in METRICS:
        if not metric.computed(m):
            continue
        value = metric.get(m)
        if not metric.higher_is_better:  # error counts and rates (corrections, causes, OIECER, ...)
            assert value == 0, metric.key
        else:
            assert value == 1.0, metric.key


def test_report_keys_per_spec(sample, tmp_path):
    report = json.loads(report_json(sample))["models"]["weak"]
    assert 0 < report["anls_star"] < 1 and 0 < report["nted"] < 1
    assert set(report["oi"]) >= {"oiecer", "oiewer", "oinerval"}
    assert set(report["oi"]["oinerval"]) >= {"precision", "recall", "f1"}
    assert set(report["bag"]) == {"words", "entities"}
    assert set(report["lists"]) == {"items", "positional", "rows"}
    assert set(report["tokens"]) == {"found", "added"}
    doc = report["documents"][0]
    for column in ("anls_star", "nted", "oi_oiecer", "oi_nerval_f1", "bag_botw_f1", "lists_strict",
                   "tokens_found"):
        assert column in doc
    assert {"oi_by_entity_type", "bag_by_entity_type", "lists_by_field"} <= set(report["peer_tables"])


def test_donut_field_f1_equals_flat_entity_f1_on_clean_values(sample):
    for model in sample.models.values():
        flat = model.entity_f1
        assert model.peer["nted"].figures["donut_field_f1.f1"] == pytest.approx(flat.f1, abs=1e-12)


def test_anls_family_agrees_with_the_package():
    gt = {"d1": [("", "", "total", "10.00"), ("menu", "0", "menu.nm", "Tea"),
                 ("menu", "1", "menu.nm", "Cake")],
          "d2": [("", "", "store", "ACME")]}
    pred = {"d1": [("", "", "total", "10.0O"), ("menu", "0", "menu.nm", "Cake")],
            "d2": [("", "", "store", "ACNE"), ("", "", "date", "1/1")]}
    # datasets built from rows have no uploaded structure: only the re-nested variant exists
    m = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")}, metrics=["anls_star"]).models["m"]
    assert "anls_star" not in m.peer["anls_star"].figures
    expected = []
    for doc in ("d1", "d2"):
        g = renest([(r[0], int(r[1]) if r[1] else -1, r[2], r[3]) for r in gt[doc]])
        p = renest([(r[0], int(r[1]) if r[1] else -1, r[2], r[3]) for r in pred[doc]])
        expected.append(anls_score(g, p))
    per_doc = m.documents.set_index("doc_id")["anls_star_renested"]
    assert per_doc.tolist() == pytest.approx(expected, abs=1e-12)
    assert m.peer["anls_star"].figures["anls_star_renested"] == pytest.approx(sum(expected) / 2, abs=1e-12)


def test_list_worked_example_through_groups():
    """Three transactions; descriptions rotated against their dates and amounts."""
    rows = [("EFTPOS", "01/02", "$50"), ("ATM", "02/02", "$100"), ("Purchase", "03/02", "$75")]
    rotated = [(rows[(i + 1) % 3][0], *rows[i][1:]) for i in range(3)]

    def doc(lines):
        return {"s": [("txn", str(i), f"txn.{k}", v) for i, line in enumerate(lines)
                      for k, v in zip(("desc", "date", "amount"), line, strict=True)]}

    m = evaluate(dataset(doc(rows), "gt"), {"m": dataset(doc(rotated), "m")}, metrics=["lists"]).models["m"]
    figures = m.peer["lists"].figures
    assert figures["lists.rows.strict"] == 0.0
    assert figures["lists.rows.partial"] == pytest.approx(2 / 3)
    assert figures["lists.items.f1"] == 1.0


def test_cli_cer_threshold_and_bad_value(tmp_path, capsys):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"store": "ACME MARKET"}}])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "a", "prediction": {"store": "ACME MARKT"}}])
    f1 = {}
    for threshold in ("0.0", "0.3"):
        out = tmp_path / f"{threshold}.json"
        assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--metrics", "oi",
                     "--cer-threshold", threshold, "--json", str(out)]) == 0
        f1[threshold] = json.loads(out.read_text())["models"]["p"]["oi"]["oinerval"]["f1"]
    assert f1 == {"0.0": 0.0, "0.3": 1.0}
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--cer-threshold", "3"]) == 2
    assert "CER threshold" in capsys.readouterr().err


def test_structure_option_names_the_renested_variant():
    gt = SAMPLE_DATA / "cord_v2_gt.jsonl"
    strong = SAMPLE_DATA / "sim_strong.jsonl"
    uploaded = evaluate(gt, strong, metrics=["anls_star"]).models["sim_strong"]
    renested = evaluate(gt, strong, metrics=["anls_star"],
                        peer_options=PeerOptions(structure="renested")).models["sim_strong"]
    assert set(uploaded.peer["anls_star"].figures) == {"anls_star"}
    assert set(renested.peer["anls_star"].figures) == {"anls_star_renested"}
    # CORD writes one-item menus as objects, the model as lists: ANLS* punishes the shape
    assert (uploaded.peer["anls_star"].figures["anls_star"]
            < renested.peer["anls_star"].figures["anls_star_renested"])


def test_iob2_files_evaluate(tmp_path):
    (tmp_path / "gt.bio").write_text("Anna B-name\nSmith I-name\nborn O\n1890 B-date\n\nBob B-name\n")
    (tmp_path / "pred.bio").write_text("Anna B-name\nSmyth I-name\n1890 B-date\n\nBob B-date\n")
    m = evaluate(tmp_path / "gt.bio", tmp_path / "pred.bio", metrics=["oi"]).models["pred"]
    assert m.n_documents == 2 and m.entity.tp == 1
    assert m.peer["oi"].figures["oi.oinerval.tp"] == 2  # 'Anna Smyth' is within CER 0.3
