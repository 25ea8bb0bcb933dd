"""The Dask engine on a LocalCluster of two worker processes: the local engine's report to
the byte, its error list and its saved run, whatever the shards and partitions."""

from __future__ import annotations

import json
import sys
import tempfile
import types
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import dataset, long_table, write_shards
from conftest import SAMPLE_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_partitions import corpus, split_evidence

from kieval_core import (
    DecisionOptions,
    KievalInputError,
    KievalOptionError,
    LoadOptions,
    NoCommonDocuments,
    evaluate,
    load,
)
from kieval_core.cli import main
from kieval_core.output.render import report_json
from kieval_core.output.runs import load_run

distributed = pytest.importorskip("distributed")

DECISIONS = DecisionOptions(resamples=50, slices=("split",))


@contextmanager
def plain_main():
    """Worker processes are spawned, and a spawned process first runs the parent's
    ``__main__``; after the app tests that is the Streamlit script (AppTest leaves it
    there), so the workers start from a bare ``__main__`` instead."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
        yield


@pytest.fixture(scope="module")
def client():
    with plain_main():
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=50)
    with cluster, distributed.Client(cluster) as connected:
        yield connected


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The CORD sample as long-table shards in three formats, GT and predictions not
    aligned; a GT document without predictions, a predicted document unknown to the GT,
    a metadata column."""
    folder = tmp_path_factory.mktemp("sample")
    rng = np.random.default_rng(11)
    gt_table = long_table(load(SAMPLE_DATA / "cord_v2_gt.jsonl"))
    gt_table["split"] = np.where(gt_table["doc_id"].str[-1].isin(list("13579")), "odd", "even")
    preds = {}
    for kind, name in zip(("parquet", "csv", "jsonl"), ("sim_strong", "sim_weak", "sim_llm"), strict=True):
        table = long_table(load(SAMPLE_DATA / f"{name}.jsonl"))
        table = table[table["doc_id"] != "validation_0010"]
        extra = table[table["doc_id"] == "validation_0001"].assign(doc_id=f"unknown_{name}")
        preds[name] = str(write_shards(pd.concat([table, extra]), folder / name, 5, rng, kind))
    return str(write_shards(gt_table, folder / "gt", 3, rng)), preds


def test_the_sample_gives_the_local_report(client, sample):
    gt, preds = sample
    options = LoadOptions(meta=("split",))
    local = evaluate(gt, preds, load_options=options)
    expected = report_json(local, DECISIONS)
    for partitions in (None, 3):
        result = evaluate(gt, preds, load_options=options, engine="dask", client=client,
                          partitions=partitions, collect_error_list=True)
        assert report_json(result, DECISIONS) == expected
        for name, model in result.models.items():
            assert model.unknown_documents == local.models[name].unknown_documents == (f"unknown_{name}",)
            assert "validation_0010" in model.missing_documents
            assert model.error_list.to_csv(index=False) == local.models[name].error_list.to_csv(index=False)
    with pytest.raises(KievalOptionError, match="not kept for a distributed run"):
        evaluate(gt, preds, load_options=options, engine="dask", client=client).models["sim_weak"].detail()


def test_the_command_line(client, sample, tmp_path, capsys):
    gt, preds = sample
    common = ["evaluate", "--gt", gt, *(a for p in preds.values() for a in ("--pred", p)), "--meta", "split",
              "--bootstrap", "50"]
    outputs = {}
    for engine in ("local", "dask"):
        extra = ["--engine", "dask", "--scheduler", client.scheduler.address] if engine == "dask" else []
        outputs_of = ["--json", str(tmp_path / f"{engine}.json"),
                      "--errors-csv", str(tmp_path / f"{engine}.csv"), "--save-run", str(tmp_path / engine)]
        assert main([*common, *extra, *outputs_of]) == 0
        outputs[engine] = capsys.readouterr()
    # the local engine adds "try: --compare ..." lines, re-counted from the entity-level
    # tables a distributed run does not keep; everything else is the same
    lines = outputs["local"].out.splitlines(True)
    local_out = "".join(line for line in lines if not line.startswith("try: "))
    assert (outputs["dask"].out, outputs["dask"].err) == (local_out, outputs["local"].err)
    for suffix in ("json", "csv"):
        assert (tmp_path / f"dask.{suffix}").read_bytes() == (tmp_path / f"local.{suffix}").read_bytes()
    parts = sorted(p.name for p in (tmp_path / "dask" / "models" / "0" / "detail").iterdir())
    assert parts[0] == "part-00000"
    saved = load_run(tmp_path / "dask")
    assert report_json(saved.result, DecisionOptions(resamples=50, slices=("split",))) == \
        (tmp_path / "local.json").read_text("utf-8")
    assert saved.result.models["sim_weak"].error_list.to_csv(index=False) == \
        load_run(tmp_path / "local").result.models["sim_weak"].error_list.to_csv(index=False)
    dask = ["--engine", "dask", "--scheduler", client.scheduler.address]
    assert main([*common, *dask, "--metrics", "all"]) == 2
    assert "computes the kieval family only" in capsys.readouterr().err
    assert main([*common, "--scheduler", client.scheduler.address]) == 2
    assert "--scheduler needs --engine dask" in capsys.readouterr().err


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(corpus(), st.integers(1, 4), st.sampled_from([None, 1, 2, 5]), st.integers(0, 2**32 - 1))
def test_random_corpora(client, data, n_shards, partitions, seed):
    gt_docs, pred_docs = data
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        gt = write_shards(long_table(dataset(gt_docs, "gt")), Path(tmp) / "gt", n_shards, rng)
        pred = write_shards(long_table(dataset(pred_docs, "m")), Path(tmp) / "m", n_shards + 1, rng, "csv")
        local = evaluate(str(gt), {"m": str(pred)})
        result = evaluate(str(gt), {"m": str(pred)}, engine="dask", client=client, partitions=partitions,
                          collect_error_list=True)
        decisions = DecisionOptions(resamples=30, target=0.7)
        assert report_json(result, decisions) == report_json(local, decisions)
        assert result.models["m"].error_list.to_csv(index=False) == \
            local.models["m"].error_list.to_csv(index=False)


def test_aligned_shards_are_not_shuffled(client, tmp_path, monkeypatch):
    import kieval_core.scale.distributed as engine

    def no_shuffle(*args):
        raise AssertionError("aligned shards were shuffled")

    monkeypatch.setattr(engine, "_shuffle", no_shuffle)
    for name in ("cord_v2_gt", "sim_weak"):  # nested JSONL records, shard k of both inputs alike
        lines = (SAMPLE_DATA / f"{name}.jsonl").read_text("utf-8").splitlines(keepends=True)
        shard = [int(json.loads(line)["doc_id"][-2:]) % 3 for line in lines]
        (tmp_path / name).mkdir()
        for k in range(3):
            part = [line for line, s in zip(lines, shard, strict=True) if s == k]
            (tmp_path / name / f"part-{k}.jsonl").write_text("".join(part), "utf-8")
    gt, pred = str(tmp_path / "cord_v2_gt"), {"sim_weak": str(tmp_path / "sim_weak")}
    local = evaluate(gt, pred)
    result = evaluate(gt, pred, engine="dask", client=client)
    assert report_json(result, DECISIONS) == report_json(local, DECISIONS)
    assert result.gt.notes == local.gt.notes
    assert result.models["sim_weak"].notes == local.models["sim_weak"].notes


def test_bad_input_is_reported_as_locally(client, tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "gt" / "a.jsonl").write_text(json.dumps({"doc_id": "a", "fields": {"x": "1"}}) + "\n")
    (tmp_path / "gt" / "b.jsonl").write_text('{"doc_id": "b", "fields": \n')
    with pytest.raises(KievalInputError) as raised:
        evaluate(tmp_path / "gt", tmp_path / "gt", engine="dask", client=client)
    assert raised.value.source == str(tmp_path / "gt" / "b.jsonl")
    (tmp_path / "gt" / "b.jsonl").write_text(json.dumps({"doc_id": "a", "fields": {"x": "2"}}) + "\n")
    with pytest.raises(KievalInputError, match=r"'a' appears twice \(a.jsonl line 1 and b.jsonl line 1\)"):
        evaluate(tmp_path / "gt", SAMPLE_DATA / "sim_weak.jsonl", engine="dask", client=client)
    with pytest.raises(NoCommonDocuments, match="no document in common"):
        evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", tmp_path / "gt" / "a.jsonl", engine="dask", client=client)
    (tmp_path / "whole.json").write_text(json.dumps({"a": {"x": "1"}}))
    with pytest.raises(KievalInputError, match="format json cannot be read in shards"):
        evaluate(tmp_path / "whole.json", tmp_path / "gt" / "a.jsonl", engine="dask", client=client)
    with pytest.raises(KievalInputError, match="per-document files"):
        official = SAMPLE_DATA / "kieval_official_cord"
        evaluate(official / "gt_csv", official / "pred_csv", engine="dask", client=client)
    with pytest.raises(KievalOptionError, match="reads files"):
        evaluate(load(SAMPLE_DATA / "cord_v2_gt.jsonl"), SAMPLE_DATA / "sim_weak.jsonl", engine="dask",
                 client=client)


def test_without_a_scheduler_a_local_cluster_is_started(sample, tmp_path):
    gt, preds = sample
    args = ["evaluate", "--gt", gt, "--pred", preds["sim_llm"], "--bootstrap", "20"]
    assert main([*args, "--json", str(tmp_path / "local.json")]) == 0
    with plain_main():
        assert main([*args, "--engine", "dask", "--json", str(tmp_path / "dask.json")]) == 0
    assert (tmp_path / "dask.json").read_bytes() == (tmp_path / "local.json").read_bytes()


def test_local_and_dask_runs_replace_each_other_whole(client, sample, tmp_path):
    """One directory, a Dask run of ~100 documents then a local run of 30, then Dask again:
    each read back is the run saved last (the other engine's partitioned or flat files
    used to stay beside it and be read with it)."""
    gt, preds = sample
    local_gt = tmp_path / "gt30.jsonl"
    records = (SAMPLE_DATA / "cord_v2_gt.jsonl").read_text("utf-8").splitlines()[:30]
    local_gt.write_text("\n".join(records) + "\n", "utf-8")
    run = tmp_path / "run"
    dask = ["evaluate", "--gt", gt, "--pred", preds["sim_weak"], "--engine", "dask",
            "--scheduler", client.scheduler.address, "--bootstrap", "0", "--save-run", str(run)]
    local = ["evaluate", "--gt", str(local_gt), "--pred", f"sim_weak={SAMPLE_DATA / 'sim_weak.jsonl'}",
             "--bootstrap", "0", "--save-run", str(run)]
    for args, n_docs in ((dask, 100), (local, 30), (dask, 100)):
        assert main(args) == 0
        saved = load_run(run).result
        assert len(saved.gt.doc_ids) == n_docs
        assert saved.gt.entities["doc_id"].nunique() == n_docs
        model = saved.models["sim_weak"]
        detail = model.detail()
        assert set(detail.cells["doc_id"].astype(str)) <= set(saved.gt.doc_ids)
        fresh = evaluate(local_gt if n_docs == 30 else gt, {"sim_weak": preds["sim_weak"] if n_docs == 100
                                                            else SAMPLE_DATA / "sim_weak.jsonl"})
        assert model.error_list.to_csv(index=False) == fresh.models["sim_weak"].error_list.to_csv(index=False)
        assert not [p for p in tmp_path.iterdir() if ".kieval-" in p.name]


def test_the_rules_strict_and_suggested_figures_are_the_local_ones(client, sample):
    """A user comparator in a distributed run: options.rules says where it comes from, the
    strict figures are counted again on the workers, the suggested rules leave that field
    alone and their figures come from a pass over the partitions, all as locally."""
    gt, preds = sample
    rules = {"menu.price": "number"}
    local = evaluate(gt, preds, rules=rules)
    result = evaluate(gt, preds, rules=rules, engine="dask", client=client, partitions=3)
    text = report_json(result, DECISIONS)
    assert text == report_json(local, DECISIONS)
    report = json.loads(text)
    assert {"type": "menu.price", "source": "user"}.items() <= next(
        r for r in report["options"]["rules"] if r["type"] == "menu.price").items()
    assert report["options"]["suggested_rules"]
    assert "menu.price" not in {r["type"] for r in report["options"]["suggested_rules"]}
    models = report["models"].values()
    assert any(m["kieval_strict"]["aligned"] != m["kieval"]["aligned"] for m in models)
    assert all("kieval_suggested" in m for m in models)


def test_the_causes_date_order_is_the_whole_ground_truths(client, tmp_path):
    """The one GT date that settles the order sits in one of six partitions: the Dask run's
    causes and warnings are the local run's (SPEC 2c)."""
    gt, pred = split_evidence(tmp_path)
    result = evaluate(gt, {"m": pred}, engine="dask", client=client, partitions=6)
    text = report_json(result, DECISIONS)
    assert text == report_json(evaluate(gt, {"m": pred}), DECISIONS)
    rows = json.loads(text)["models"]["m"]["by_entity_type"]
    date = next(row for row in rows if row["entity_type"] == "date")
    assert date["causes"]["substitution"]["format"] == 5
