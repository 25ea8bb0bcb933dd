"""Sharded inputs and partition-by-partition scoring, without Dask: the plan of a
distributed run (read shards, split by the doc_id's hash, score each partition, merge)
gives the local engine's report to the byte, however the documents fall."""

from __future__ import annotations

import json
import math
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import dataset, long_table, write_shards
from conftest import SAMPLE_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kieval_core import DecisionOptions, KievalInputError, KievalOptionError, LoadOptions, evaluate, load
from kieval_core.count.alignment import document_alignment
from kieval_core.count.matching import match_block, match_stack
from kieval_core.count.normalize import Normalizer
from kieval_core.output.render import report_json
from kieval_core.output.runs import load_run, save_run
from kieval_core.read.shards import input_name, is_sharded, partition_of, read_shard, shard_paths, summarize
from kieval_core.rules import FieldRules
from kieval_core.scale.partitions import (
    GtDates,
    Input,
    Job,
    gt_dates,
    merge_partitions,
    scored_partition,
    with_rule_counts,
)

DECISIONS = DecisionOptions(resamples=30, target=0.7)


def partitioned(gt: str, preds: dict[str, str], n: int, options: LoadOptions | None = None,
                run_dir: Path | None = None, compared: dict[str, str] | None = None):
    """A distributed run's plan, step by step in this process (``compared``: the user's
    comparators, as ``evaluate(..., rules=compared, engine="dask")`` passes them on)."""
    options = options or LoadOptions()
    rules = FieldRules.of(compared)
    normalizer = Normalizer(comparators=rules.comparator_pairs())
    specs = {"ground truth": gt, **preds}
    reads = {name: [read_shard(p, i, options) for i, p in enumerate(shard_paths(spec))]
             for name, spec in specs.items()}
    summaries = {name: summarize([r.info for r in rows], specs[name], name, options.meta)
                 for name, rows in reads.items()}
    gt_summary = summaries.pop("ground truth")
    job = Job(Input(gt_summary.name, gt, gt_summary.format),
              tuple(Input(name, s.source, s.format) for name, s in summaries.items()),
              normalizer, options.meta, None if run_dir is None else str(run_dir), collect_error_list=True)
    splits = {name: [r.split(n) for r in rows] for name, rows in reads.items()}

    def rows_of(k: int) -> tuple[list, dict]:
        return [s[k] for s in splits["ground truth"]], {name: [s[k] for s in splits[name]] for name in preds}

    dates = sum((gt_dates(*rows_of(k), job) for k in range(n)), GtDates())
    job = replace(job, gt_orders=dates.orders())
    scored = [scored_partition(k, *rows_of(k), job) for k in range(n)]
    parts = [s.result for s in scored[::-1]]  # in any order
    merged = merge_partitions(parts, gt_summary, summaries, normalizer, rules, dates)
    return with_rule_counts(merged, parts, lambda function, *args: [function(s, *args) for s in scored[::-1]])


# --- random corpora ------------------------------------------------------------------------

VALUES = st.sampled_from(["1", "2", "A", "B", "x y"])
CONF = st.one_of(st.none(), st.sampled_from([0.2, 0.5, 0.5, 0.9]))


@st.composite
def document(draw, with_conf: bool):
    rows = []
    for _ in range(draw(st.integers(0, 3))):
        conf = draw(CONF) if with_conf else None
        rows.append(("", "", draw(st.sampled_from(["company", "total"])), draw(VALUES),
                     math.nan if conf is None else conf))
    for gtype in ("menu", "sub_total"):
        for g in range(draw(st.integers(0, 3 if gtype == "menu" else 1))):
            for _ in range(draw(st.integers(1, 3))):
                conf = draw(CONF) if with_conf else None
                rows.append((gtype, str(g), f"{gtype}.{draw(st.sampled_from(['nm', 'price']))}",
                             draw(VALUES), math.nan if conf is None else conf))
    return rows


@st.composite
def corpus(draw):
    """GT documents d0..; predictions of some of them (at least one) and of unknown ones."""
    n = draw(st.integers(1, 7))
    gt = {f"d{i}": draw(document(with_conf=False)) for i in range(n)}
    predicted = draw(st.lists(st.sampled_from(sorted(gt)), min_size=1, unique=True))
    unknown = [f"u{i}" for i in range(draw(st.integers(0, 2)))]
    pred = {d: draw(document(with_conf=True)) for d in [*predicted, *unknown]}
    return gt, pred


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus(), st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**32 - 1),
       st.sampled_from(["parquet", "csv", "jsonl"]))
def test_partitions_merge_to_the_local_report(data, n_shards, n_parts, seed, kind):
    gt_docs, pred_docs = data
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        gt = write_shards(long_table(dataset(gt_docs, "gt")), folder / "gt", n_shards, rng, "parquet")
        pred = write_shards(long_table(dataset(pred_docs, "m")), folder / "m", n_shards + 1, rng, kind)
        local = evaluate(str(gt), {"m": str(pred)})
        merged = partitioned(str(gt), {"m": str(pred)}, n_parts)
        assert report_json(merged, DECISIONS) == report_json(local, DECISIONS)
        assert merged.models["m"].error_list.to_csv(index=False) == \
            local.models["m"].error_list.to_csv(index=False)


@pytest.mark.slow
def test_the_sample_in_shards(tmp_path):
    """CORD sample with metadata, predictions in three formats, a GT document without
    predictions and predicted documents unknown to the GT."""
    rng = np.random.default_rng(7)
    gt_table = long_table(load(SAMPLE_DATA / "cord_v2_gt.jsonl"))
    gt_table["split"] = np.where(gt_table["doc_id"].str[-1].isin(list("01234")), "a", "b")
    gt = write_shards(gt_table, tmp_path / "gt", 4, rng)
    preds = {}
    for kind, name in zip(("parquet", "csv", "jsonl"), ("sim_strong", "sim_weak", "sim_llm"), strict=True):
        table = long_table(load(SAMPLE_DATA / f"{name}.jsonl"))
        table = table[table["doc_id"] != "validation_0003"]
        extra = table[table["doc_id"] == "validation_0001"].assign(doc_id="unknown_doc")
        preds[name] = str(write_shards(pd.concat([table, extra]), tmp_path / name, 5, rng, kind))
    options = LoadOptions(meta=("split",))
    local = evaluate(str(gt), preds, load_options=options)
    assert local.models["sim_weak"].unknown_documents == ("unknown_doc",)
    assert "validation_0003" in local.models["sim_weak"].missing_documents
    decisions = DecisionOptions(resamples=50, slices=("split",))
    for n in (1, 4):
        merged = partitioned(str(gt), preds, n, options, run_dir=tmp_path / f"run{n}")
        text = report_json(merged, decisions)
        assert text == report_json(local, decisions)
        for name in preds:
            errors = merged.models[name].error_list
            assert errors.to_csv(index=False) == local.models[name].error_list.to_csv(index=False)
    # a saved partitioned run reads back to the same report, errors and alignments
    save_run(merged, tmp_path / "run4", text, {}, {})
    saved = load_run(tmp_path / "run4").result
    assert report_json(saved, decisions) == text
    model = saved.models["sim_llm"]
    assert model.error_list.to_csv(index=False) == local.models["sim_llm"].error_list.to_csv(index=False)
    for doc in ("validation_0000", "validation_0042", "validation_0099"):
        assert document_alignment(model.detail(), doc).equals(
            document_alignment(local.models["sim_llm"].detail(), doc))


# --- sharded inputs ------------------------------------------------------------------------


def test_shards_read_like_one_file(tmp_path):
    table = long_table(load(SAMPLE_DATA / "sim_weak.jsonl"))
    table.to_parquet(tmp_path / "whole.parquet", index=False)
    write_shards(table, tmp_path / "parts", 6, np.random.default_rng(1))
    whole, parts = load(tmp_path / "whole.parquet"), load(tmp_path / "parts")
    assert is_sharded(tmp_path / "parts") and not is_sharded(tmp_path / "whole.parquet")
    assert (parts.format, parts.name, parts.source) == ("table", "parts", str(tmp_path / "parts"))
    assert sorted(whole.doc_ids) == sorted(parts.doc_ids)
    assert (whole.n_entities, whole.n_groups) == (parts.n_entities, parts.n_groups)
    gt = load(SAMPLE_DATA / "cord_v2_gt.jsonl")
    glob = str(tmp_path / "parts" / "shard-00*.parquet")
    a, b, c = (evaluate(gt, {"m": p}).models["m"] for p in (whole, parts, glob))
    assert a.documents.equals(b.documents) and a.curve.equals(b.curve) and b.curve.equals(c.curve)


def test_nested_jsonl_shards(tmp_path):
    lines = (SAMPLE_DATA / "sim_llm.jsonl").read_text("utf-8").splitlines(keepends=True)
    (tmp_path / "llm").mkdir()
    for k in range(3):
        (tmp_path / "llm" / f"part-{k}.jsonl").write_text("".join(lines[k::3]), "utf-8")
    gt = SAMPLE_DATA / "cord_v2_gt.jsonl"
    whole = evaluate(gt, {"m": SAMPLE_DATA / "sim_llm.jsonl"}).models["m"]
    sharded = evaluate(gt, {"m": tmp_path / "llm"}).models["m"]
    assert sharded.format == "jsonl" and sharded.notes == whole.notes
    assert sharded.documents.equals(whole.documents)
    assert sharded.curve.equals(whole.curve)


def test_bad_shards_are_named(tmp_path):
    record = json.dumps({"doc_id": "a", "fields": {"x": "1"}}) + "\n"
    (tmp_path / "dup").mkdir()
    for k in range(2):
        (tmp_path / "dup" / f"p{k}.jsonl").write_text(record)
    with pytest.raises(KievalInputError, match=r"'a' appears twice \(p0.jsonl line 1 and p1.jsonl line 1\)"):
        load(tmp_path / "dup")
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "a.jsonl").write_text(record)
    (tmp_path / "mixed" / "b.jsonl").write_text('{"doc_id": "b", "entity": "x", "value": "1"}\n')
    with pytest.raises(KievalInputError, match="b.jsonl: format table differs from the first shard's"):
        load(tmp_path / "mixed")
    (tmp_path / "meta").mkdir()
    for k, split in enumerate(("a", "b")):
        pd.DataFrame({"doc_id": ["d"], "entity": ["x"], "value": ["1"], "split": [split]}).to_csv(
            tmp_path / "meta" / f"{k}.csv", index=False)
    with pytest.raises(KievalInputError, match="more than one value of the metadata column 'split'"):
        load(tmp_path / "meta", LoadOptions(meta=("split",)))
    with pytest.raises(KievalInputError, match="matches no file"):
        load(str(tmp_path / "nothing-*.parquet"))


def test_names_and_hashes():
    assert input_name("preds/model_a-*.parquet") == "model_a"
    assert input_name("preds/model_b/*.jsonl") == "model_b"
    ids = pd.Series([f"doc {i}" for i in range(1000)])
    parts = partition_of(ids, 7)
    assert set(parts.tolist()) == set(range(7))
    assert (partition_of(ids.astype("category"), 7) == parts).all()
    assert partition_of(pd.Series(["a\ud800"], dtype=object), 3).tolist()[0] in range(3)
    # a fixed value: the hash is stable across runs and machines
    assert partition_of(pd.Series(["receipt_1"]), 1000).tolist() == [int(
        pd.util.hash_array(np.array(["receipt_1"], object), hash_key="0123456789123456")[0] % 1000)]


def test_a_blocks_pairing_does_not_depend_on_the_other_blocks():
    """Blocks of one shape are solved as a stack; their weights are scaled per block, so a
    partition boundary never changes a pairing."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        small = rng.integers(0, 2, (3, 4)), rng.integers(0, 2, (3, 4)), rng.integers(0, 2, (3, 4))
        big = [np.full((3, 4), 10**7), np.full((3, 4), 10**7), np.zeros((3, 4), int)]
        rows, cols = match_stack(*(np.stack([s, b]) for s, b in zip(small, big, strict=True)))
        alone = match_block(*small)
        assert rows[0].tolist() == alone[0].tolist() and cols[0].tolist() == alone[1].tolist()


def test_the_dask_engine_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(KievalOptionError, match=r"pip install kieval-workbench\[dask\]"):
        evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", SAMPLE_DATA / "sim_weak.jsonl", engine="dask")
    with pytest.raises(KievalOptionError, match="only with engine='dask'"):
        evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", SAMPLE_DATA / "sim_weak.jsonl", scheduler="tcp://x:1")


def test_the_partitions_rank_the_suspect_labels_of_the_whole(tmp_path):
    """Suspects (SPEC 2f) depend on each document alone: ranked per partition, concatenated
    and sorted, they are the local run's, in the same order."""
    rng = np.random.default_rng(3)
    gt = write_shards(long_table(load(SAMPLE_DATA / "cord_v2_gt.jsonl")), tmp_path / "gt", 3, rng)
    preds = {name: str(write_shards(long_table(load(SAMPLE_DATA / f"{name}.jsonl")), tmp_path / name, 2, rng))
             for name in ("sim_strong", "sim_weak", "sim_llm")}
    local = evaluate(str(gt), preds).suspects
    assert len(local) > 0
    for n in (1, 3):
        pd.testing.assert_frame_equal(partitioned(str(gt), preds, n).suspects, local)


def split_evidence(tmp_path: Path) -> tuple[str, str]:
    """GT and predictions whose fields' evidence sits in different documents: the one date
    that tells the order (25/12/2018, day first) in d0, the substitutions that dates,
    numbers and case would fix in the others."""
    gt_docs = {f"d{i}": [("", "", "date", "25/12/2018" if i == 0 else f"0{i}/02/2019"),
                         ("", "", "company", "ACME Sdn Bhd"), ("", "", "total", f"1{i}.50")]
               for i in range(6)}
    pred_docs = {f"d{i}": [("", "", "date", f"2019-02-0{i}" if i else "25/12/2018", 0.9),
                           ("", "", "company", "acme sdn bhd" if i % 2 else "ACME Sdn Bhd", 0.8),
                           ("", "", "total", f"1{i}.5", 0.7)] for i in range(6)}
    rng = np.random.default_rng(3)
    gt = write_shards(long_table(dataset(gt_docs, "gt")), tmp_path / "gt", 2, rng)
    pred = write_shards(long_table(dataset(pred_docs, "m")), tmp_path / "m", 3, rng, "jsonl")
    return str(gt), str(pred)


def rule_sections(report: dict) -> dict:
    """The parts of a report that SPEC 2d's rules give: the rules, the suggestions, the
    rankings and every model's three figure sets."""
    return {"rules": report["options"]["rules"], "suggested_rules": report["options"]["suggested_rules"],
            "rankings": report["rankings"],
            "models": {n: {k: m[k] and {f: m[k].get(f) for f in ("entity", "aligned", "corrections", "rank")}
                           for k in ("kieval_strict", "kieval", "kieval_suggested") if k in m}
                       for n, m in report["models"].items()}}


def test_the_suggested_rules_and_their_figures_from_partitions(tmp_path):
    """With the fields' evidence in different partitions, the merged suggested rules, the
    strict figures (counted again under the user's comparator) and the suggested ones are
    the local run's."""
    gt, pred = split_evidence(tmp_path)
    for compared in ({}, {"total": "number"}):
        local = rule_sections(json.loads(report_json(evaluate(gt, {"m": pred}, rules=compared), DECISIONS)))
        for n in (1, 3, 6):
            merged = rule_sections(json.loads(report_json(partitioned(gt, {"m": pred}, n, compared=compared),
                                                          DECISIONS)))
            assert merged == local
        suggested = {r["type"]: r["comparator"] for r in merged["suggested_rules"]}
        expected = {"company": "casefold", "date": "date:dmy", **({} if compared else {"total": "number"})}
        assert suggested == expected
        model = merged["models"]["m"]
        assert model["kieval_suggested"]["entity"]["tp"] == 18  # every value equal under the suggestions
        assert model["kieval_strict"]["entity"]["tp"] == 1 + 3 + 0
        assert model["kieval"]["entity"]["tp"] == 1 + 3 + (6 if compared else 0)


def test_the_causes_date_order_is_the_whole_ground_truths(tmp_path):
    """The one date that tells the order (25/12/2018, in d0) sits in one partition: the
    others' ambiguous pairs (01/02/2019 vs 2019-02-01) are still ``format``, as locally."""
    gt, pred = split_evidence(tmp_path)
    local = report_json(evaluate(gt, {"m": pred}), DECISIONS)
    merged = report_json(partitioned(gt, {"m": pred}, 6), DECISIONS)
    assert merged == local
    model = json.loads(merged)["models"]["m"]
    date = next(row for row in model["by_entity_type"] if row["entity_type"] == "date")
    assert date["causes"]["substitution"] == {"format": 5, "date_order": 0, "near_miss": 0, "other_value": 0}
    assert model["kieval"]["aligned_if_format_right"] == 1.0


@pytest.mark.parametrize(("first", "second", "warned"), [
    ("25/12/2018", "12/25/2018", True),  # the whole GT contradicts itself, each partition need not
    ("25/12/2018", "26/12/2018", False),  # settled (day first): 2019-01-02 for 01/02/2019 is date_order
])
def test_the_date_order_warning_reads_the_whole_ground_truth(tmp_path, first, second, warned):
    """The "does not settle a date order" warning of a distributed run is the local run's:
    read from the whole GT's dates, not from the (absent) entities of its summary."""
    gt_docs = {f"d{i}": [("", "", "date", {0: first, 1: second}.get(i, f"0{i}/02/2019"))] for i in range(6)}
    pred_docs = {f"d{i}": [("", "", "date", f"2019-0{i}-02" if i > 1 else gt_docs[f"d{i}"][0][3], 0.9)]
                 for i in range(6)}
    rng = np.random.default_rng(5)
    gt = str(write_shards(long_table(dataset(gt_docs, "gt")), tmp_path / "gt", 2, rng))
    pred = str(write_shards(long_table(dataset(pred_docs, "m")), tmp_path / "m", 3, rng, "jsonl"))
    local = report_json(evaluate(gt, {"m": pred}), DECISIONS)
    assert report_json(partitioned(gt, {"m": pred}, 6), DECISIONS) == local
    report = json.loads(local)
    assert any("does not settle a date order" in w for w in report["warnings"]) == warned
    date = report["models"]["m"]["by_entity_type"][0]
    assert date["causes"]["substitution"]["date_order"] == 3  # 02/02/2019 reads the same in every order
