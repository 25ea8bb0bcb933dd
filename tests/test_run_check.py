"""A tampered saved run is refused on open with one message naming the file and the
problem (exit 2), never an internal error (SPEC 8b)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import SAMPLE_DATA

from kieval_core import KievalInputError
from kieval_core.cli import main
from kieval_core.output.runs import load_run


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("saved")
    assert main(["evaluate", "--gt", str(SAMPLE_DATA / "cord_v2_gt.jsonl"), "--pred",
                 str(SAMPLE_DATA / "sim_weak.jsonl"), "--metrics", "all", "--bootstrap", "0",
                 "--save-run", str(folder / "run")]) == 0
    return folder / "run"


def _manifest(change: Callable[[dict], None], files: bool = True) -> Callable[[Path], None]:
    def tamper(run: Path) -> None:
        manifest = json.loads((run / "manifest.json").read_text("utf-8"))
        if not files:
            del manifest["files"]
        change(manifest)
        (run / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return tamper


def _table(name: str, change: Callable[[pd.DataFrame], pd.DataFrame], files: bool = True):
    def tamper(run: Path) -> None:
        if not files:
            _manifest(lambda m: None, files=False)(run)
        path = run / name
        change(pd.read_parquet(path)).to_parquet(path, index=False)
    return tamper


def _bytes(name: str, change: Callable[[bytes], bytes]):
    def tamper(run: Path) -> None:
        path = run / name
        path.write_bytes(change(path.read_bytes()))
    return tamper


def _set(path: str, value):
    *keys, last = path.split("/")

    def change(manifest: dict) -> None:
        node = manifest
        for key in keys:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return change


def _remove(name: str):
    return lambda run: (run / name).unlink()


PREDICTIONS = "models/0/predictions.parquet"
TAMPERED = {
    # what was changed: (how, a word the message must hold)
    "manifest not JSON": (_bytes("manifest.json", lambda b: b[:-40]), "manifest.json"),
    "manifest a list": (lambda run: (run / "manifest.json").write_text("[1]"), "not an object"),
    "no models": (_manifest(lambda m: m.pop("models")), "missing models"),
    "a model name a number": (_manifest(_set("models/0/name", 7)), "models[0].name"),
    "doc ids a text": (_manifest(_set("ground_truth/doc_ids", "abc")), "ground_truth.doc_ids"),
    "unknown normaliser option": (_manifest(_set("normalizer/lowercase_all", True)), "unknown option"),
    "a figure a text": (_manifest(_set("models/0/peer/oi/figures/oi.oiecer", "0.1")), "not a number"),
    "an integer beyond 64 bits": (_manifest(_set("models/0/peer/oi/figures/oi.oinerval.tp", 2**70)),
                                  "64 bits"),
    "unknown run format": (_manifest(_set("kieval_run", 99)), "unknown run format"),
    "files a list": (_manifest(_set("files", [])), "manifest.files"),
    "a table of garbage": (_bytes(PREDICTIONS, lambda b: b"x" * len(b)), "predictions.parquet"),
    "a truncated table": (_bytes("models/0/detail/pairs.parquet", lambda b: b[:99]), "pairs.parquet"),
    "a table with more rows": (_table(PREDICTIONS, lambda f: pd.concat([f] * 50)), "predictions.parquet"),
    "a table removed": (_remove("models/0/documents.parquet"), "documents.parquet"),
    "a partition added": (lambda run: shutil.copy(run / "models/0/detail/cells.parquet",
                                                  run / "models/0/detail/extra.parquet"), "extra.parquet"),
    # runs saved before the manifest listed its files: the tables are checked as they are read
    "old run, document index out of range": (
        _table(PREDICTIONS, lambda f: f.assign(doc=f["doc"] + 10_000), files=False), "the column doc"),
    "old run, a column removed": (_table(PREDICTIONS, lambda f: f.drop(columns="gain"), files=False), "gain"),
    "old run, a truncated table": (lambda run: (_manifest(lambda m: None, files=False)(run), _bytes(
        "models/0/detail/cells.parquet", lambda b: b[: len(b) // 2])(run)), "cells.parquet"),
    "old run, a table of another kind": (
        lambda run: (_manifest(lambda m: None, files=False)(run),
                     (run / "gt/entities.parquet").write_text("doc_id,value\n1,2\n")), "entities.parquet"),
    "old run, a second model that is not there": (
        _manifest(lambda m: m["models"].append(dict(m["models"][0], name="other")), files=False), "models/1"),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_a_tampered_run_is_refused_with_a_message(case, saved, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(saved, run)
    tamper, word = TAMPERED[case]
    tamper(run)
    with pytest.raises(KievalInputError, match=None) as refused:
        load_run(run)
    assert word in str(refused.value)
    assert main(["dashboard", str(run)]) == 2  # refused before any server starts
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and word in err
