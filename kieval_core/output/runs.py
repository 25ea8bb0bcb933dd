"""Runs that outlive a process: an evaluation saved as Parquet plus a JSON manifest, and
read back without the raw inputs (``kieval evaluate --save-run DIR``, ``kieval dashboard
DIR``).

Layout of a run directory::

    manifest.json                  what was evaluated, how, with the inputs' digests
    report.json                    the JSON report of the run
    gt/entities.parquet            the ground truth's entity table
    gt/entities/part-<k>.parquet     ... or the same, one file per partition
    gt/meta.parquet                its metadata (when declared)
    models/<i>/documents.parquet   per-document counts (the tally), and per entity type,
    models/<i>/entity_types.parquet  per group type
    models/<i>/group_types.parquet
    models/<i>/predictions.parquet the review model: per prediction, and per (type, document)
    models/<i>/base.parquet
    models/<i>/peer_documents.parquet, models/<i>/peer_<table>.parquet   peer metrics
    models/<i>/detail/<table>.parquet          the engine's cells, pairs and entities
    models/<i>/detail/part-<k>/<table>.parquet   ... or the same, one folder per partition

A distributed run writes the ground truth's entities and the detail per partition (its
workers write them, :func:`save_partition`); :func:`load_detail` reads the partitions that
hold a document (Parquet filters), so a laptop can open one document of a run scored on a
cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from .._version import __version__
from ..count.engine import STATUSES, Counted
from ..count.normalize import Normalizer
from ..count.peer_families import PeerFigures
from ..exceptions import KievalInputError, KievalOptionError
from ..read.dataset import Dataset, DatasetSummary
from ..read.shards import is_glob, shard_paths
from ..result.results import EvaluationResult, ModelResult
from ..result.tally import Tally
from ..review.automation import ReviewModel
from ..rules import FieldRules
from .outputs import DirectoryLock, replace_directory, staging_directory
from .run_check import check_files, check_indices, check_manifest, parquet_files, read_manifest

RUN_FORMAT = 2
DETAIL_TABLES = ("cells", "pairs", "gt_entities", "pred_entities", "flat")
_REVIEW_ARRAYS = ("confidence", "has_confidence", "doc", "entity_type", "wrong", "gain", "cell", "copies")
_BASE_ARRAYS = ("base_type", "base_doc", "base_tp", "base_addition")


def digest(path: str | Path) -> str:
    """SHA-256 of a file, or of a directory's files or a glob's (names and contents, sorted)."""
    if is_glob(path):
        files = shard_paths(path)
        base = Path(str(path)).parent
    else:
        path = Path(path)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        base = path if path.is_dir() else None
    h = hashlib.sha256()
    for file in files:
        if base is not None:
            h.update(str(file.relative_to(base)).encode())
        with file.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _write(frame: pd.DataFrame, path: Path, index: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=index)


def save_detail(counted: Counted, directory: Path) -> None:
    """The engine's tables of one model (or one partition of it) as Parquet."""
    for name in DETAIL_TABLES:
        table = getattr(counted, name).copy()
        if "status" in table:
            table["status"] = table["status"].astype(str)
        for column in table.columns:  # object columns of text and None stay text
            if table[column].dtype == object:
                table[column] = table[column].astype("string")
        _write(table, directory / f"{name}.parquet")


def partition_name(index: int) -> str:
    """The folder or file name of partition ``index`` (zero-padded: names sort as numbers)."""
    return f"part-{index:05d}"


def save_partition(directory: str | Path, index: int, gt: Dataset, counted: Sequence[Counted | None]) -> None:
    """What one partition of a distributed run keeps: its ground-truth entities and each
    model's detail (``counted[i]`` of model ``i``; None when the partition has no GT
    document)."""
    directory = Path(directory)
    _write(gt.entities, directory / "gt" / "entities" / f"{partition_name(index)}.parquet")
    for i, model in enumerate(counted):
        if model is not None:
            save_detail(model, directory / "models" / str(i) / "detail" / partition_name(index))


def clear_partitions(directory: str | Path) -> None:
    """Remove what an earlier distributed run wrote per partition into ``directory``
    (``gt/entities/`` and ``models/*/detail/``), so no stale partition is read back."""
    directory = Path(directory)
    for folder in [directory / "gt" / "entities", *directory.glob("models/*/detail")]:
        if folder.is_dir():
            shutil.rmtree(folder)


def save_tally(tally: Tally, directory: Path) -> dict:
    """The mergeable counts and the review model of one model; returns their labels."""
    for name in ("documents", "entity_types", "group_types"):
        _write(getattr(tally, name).reset_index(), directory / f"{name}.parquet")
    review = tally.review
    _write(pd.DataFrame({k: getattr(review, k) for k in _REVIEW_ARRAYS}), directory / "predictions.parquet")
    _write(pd.DataFrame({k: getattr(review, k) for k in _BASE_ARRAYS}), directory / "base.parquet")
    return {"doc_ids": list(review.doc_ids), "entity_types": list(review.entity_types)}


def is_saved_run(directory: Path) -> bool:
    """Whether ``directory`` holds a run (a manifest that says so), whole or not."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and "kieval_run" in manifest


def check_run_destination(directory: Path, force: bool = False) -> None:
    """A run may replace nothing, an empty directory or an earlier run; anything else
    only with ``force`` (``--force``), and never a file."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise KievalOptionError(f"--save-run {directory}: is a file, not a directory")
    if force or is_saved_run(directory) or not any(directory.iterdir()):
        return
    msg = (f"--save-run {directory}: the directory holds files and is not a saved run; choose another "
           "directory, or add --force to replace everything in it")
    raise KievalOptionError(msg)


class RunStage:
    """A run being saved: built in a temporary directory beside ``destination`` and swapped
    in whole by :meth:`commit`, so an interrupted save leaves the earlier run as it was and
    no file of it (a model, a partition) survives into the new one. Holds the
    destination's lock from creation to commit or discard: a second save into the same
    directory is refused at once.

    ``path`` is where the run is built (a distributed run's workers write their
    partitions there); :meth:`write` adds the rest.
    """

    def __init__(self, destination: str | Path, force: bool = False, partitions: bool = False) -> None:
        """``partitions``: ``destination`` holds the partitions a distributed run's workers
        wrote (``gt/entities``, ``models/*/detail``); they move into the new run."""
        self.destination = Path(destination)
        self.force = force
        self.done = False
        if not partitions:
            check_run_destination(self.destination, force)
        self._lock = DirectoryLock(self.destination)
        self._lock.acquire()
        self.path = Path()
        try:
            self.path = staging_directory(self.destination)
            if partitions:
                self._adopt_partitions()
                check_run_destination(self.destination, force)
        except BaseException:
            self.discard()
            raise

    def _adopt_partitions(self) -> None:
        directory = self.destination
        for folder in [directory / "gt" / "entities", *directory.glob("models/*/detail")]:
            if folder.is_dir():
                target = self.path / folder.relative_to(directory)
                target.parent.mkdir(parents=True, exist_ok=True)
                folder.rename(target)
        for folder in [directory / "gt", *directory.glob("models/*"), directory / "models"]:
            with contextlib.suppress(OSError):  # the folders the partitions left empty
                folder.rmdir()

    def write(self, result: EvaluationResult, report_text: str, inputs: dict[str, Any],
              options: dict[str, Any], verdicts: Mapping[str, dict] | None = None) -> None:
        write_run(result, self.path, report_text, inputs, options, verdicts)

    def commit(self) -> None:
        check_run_destination(self.destination, self.force)  # nothing else came meanwhile
        replace_directory(self.path, self.destination)
        self.done = True
        self._lock.release()

    def discard(self) -> None:
        if not self.done:
            if self.path != Path():
                shutil.rmtree(self.path, ignore_errors=True)
            self.done = True
        self._lock.release()

    def __enter__(self) -> RunStage:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()


def save_run(
    result: EvaluationResult,
    directory: str | Path,
    report_text: str,
    inputs: dict[str, Any],
    options: dict[str, Any],
    force: bool = False,
    verdicts: Mapping[str, dict] | None = None,
) -> Path:
    """Save a run whole into ``directory`` (see :class:`RunStage`): ``inputs`` names each
    input's source and digest, ``options`` how it was read and scored (both as JSON
    values), ``verdicts`` a reviewer's verdicts on the suspect labels (SPEC 2f; see
    :mod:`kieval_core.figures.suspects`). A distributed result's partitions, written by
    its workers into ``directory``, are moved into the new run."""
    directory = Path(directory)
    with RunStage(directory, force=force, partitions=isinstance(result.gt, DatasetSummary)) as stage:
        stage.write(result, report_text, inputs, options, verdicts)
        stage.commit()
    return directory


def write_run(
    result: EvaluationResult,
    directory: Path,
    report_text: str,
    inputs: dict[str, Any],
    options: dict[str, Any],
    verdicts: Mapping[str, dict] | None = None,
) -> None:
    """Write a run's files into ``directory`` (a :class:`RunStage`'s: not whole until
    committed)."""
    gt = result.gt
    if not isinstance(gt, DatasetSummary):  # a distributed run's workers wrote them per partition
        _write(gt.entities, directory / "gt" / "entities.parquet")
    if gt.meta is not None:
        _write(gt.meta.reset_index(), directory / "gt" / "meta.parquet")
    models = []
    for i, (name, model) in enumerate(result.models.items()):
        folder = directory / "models" / str(i)
        labels = save_tally(model.tally, folder)
        if model.counted is not None:
            save_detail(model.counted, folder / "detail")
        peer = {}
        documents = [figures.documents for figures in model.peer.values()]
        if documents:
            _write(pd.concat(documents, axis=1).reset_index(), folder / "peer_documents.parquet")
        for family, figures in model.peer.items():
            peer[family] = {
                "figures": dict(figures.figures),
                "documents": list(figures.documents.columns),
                "tables": list(figures.tables),
            }
            for table_name, table in figures.tables.items():
                _write(table, folder / f"peer_{table_name}.parquet", index=True)
        models.append(
            {
                "name": name,
                "source": model.source,
                "format": model.format,
                "notes": list(model.notes),
                "warnings": list(model.warnings),
                "missing_documents": list(model.missing_documents),
                "unknown_documents": list(model.unknown_documents),
                "peer": peer,
                "missing_confidence": model.missing_confidence,
                "consensus_of": model.consensus_of,
                **labels,
            }
        )
    manifest = {
        "kieval_run": RUN_FORMAT,
        "tool": {"name": "kieval-workbench", "version": __version__},
        "inputs": inputs,
        "options": options,
        "normalizer": asdict(result.normalizer),
        "field_rules": {"rules": result.rules.to_json(), "warnings": list(result.rules.warnings),
                        "apply_suggested": result.rules.apply_suggested, "ignored": dict(result.ignored)},
        "metrics": list(result.metrics),
        "warnings": list(result.warnings),
        "ground_truth": {
            "name": gt.name,
            "source": gt.source,
            "format": gt.format,
            "doc_ids": list(gt.doc_ids),
            "warnings": list(gt.warnings),
            "notes": list(gt.notes),
        },
        "models": models,
        "label_verdicts": dict(verdicts or {}),
        "files": parquet_files(directory),  # checked on open: sizes and rows as saved
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), "utf-8")
    (directory / "report.json").write_text(report_text, "utf-8")


@dataclass(frozen=True)
class SavedRun:
    """A run read back: the evaluation, and its manifest."""

    directory: Path
    result: EvaluationResult
    manifest: dict

    @property
    def verdicts(self) -> dict[str, dict]:
        """The reviewer's verdicts on suspect labels saved with the run (well-formed ones:
        a text key, a known verdict, text or null values)."""
        saved = self.manifest.get("label_verdicts")
        if not isinstance(saved, dict):
            return {}
        return {key: {"verdict": v["verdict"], "fixed_value": v.get("fixed_value"),
                      "note": v.get("note") or ""}
                for key, v in saved.items() if isinstance(key, str) and _is_verdict(v)}

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.manifest["inputs"], sort_keys=True).encode()).hexdigest()[:16]


def _is_verdict(value: object) -> bool:
    return (isinstance(value, dict) and value.get("verdict") in ("wrong", "right", "skip")
            and all(isinstance(value.get(k), (str, type(None))) for k in ("fixed_value", "note")))


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except FileNotFoundError:
        raise KievalInputError(str(path), None, "is missing from the saved run") from None
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise KievalInputError(str(path), None, f"not a readable Parquet table ({exc})") from None


def _categorical(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    for column in columns:
        if column in frame:
            frame[column] = frame[column].astype(object).astype("category")
    return frame


def load_detail(directory: str | Path, doc_id: str | None = None) -> Counted | None:
    """The engine's tables of one model (``models/<i>/detail``), whole or for one document;
    None when the run kept none."""
    directory = Path(directory)
    if not directory.exists():
        return None
    tables = {}
    for name in DETAIL_TABLES:
        files = sorted(directory.glob(f"**/{name}.parquet"))
        dataset = pads.dataset([str(f) for f in files], format="parquet")
        flt = (pads.field("doc_id") == doc_id) if doc_id is not None else None
        frame = dataset.to_table(filter=flt).to_pandas()
        if doc_id is None and len(files) > 1:  # partitions: their row numbers become global
            tables[f"_{name}_sizes"] = [pq.ParquetFile(f).metadata.num_rows for f in files]
        for column in frame.columns:
            if pd.api.types.is_string_dtype(frame[column].dtype) and column not in ("doc_id",):
                frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
        if "status" in frame:
            frame["status"] = pd.Categorical(frame["status"], categories=list(STATUSES))
        tables[name] = _categorical(frame, ("doc_id", "group_type", "entity_type"))
    if "_cells_sizes" in tables:
        _global_rows(tables)
    doc_ids = tuple(sorted(set(tables["cells"]["doc_id"].astype(object))))
    return Counted(doc_ids=doc_ids, **tables)


def _global_rows(tables: dict) -> None:
    """Row references of partitioned detail tables (``cell``, ``partner``) point into their
    own partition; shift them by the rows of the partitions before it."""
    sizes = {name: np.asarray(tables.pop(f"_{name}_sizes"), np.int64) for name in DETAIL_TABLES}
    starts = {name: np.concatenate([[0], np.cumsum(n)[:-1]]) for name, n in sizes.items()}
    for side, other in (("gt_entities", "pred_entities"), ("pred_entities", "gt_entities")):
        part = np.repeat(np.arange(len(sizes[side])), sizes[side])
        frame = tables[side]
        frame["cell"] = frame["cell"].to_numpy() + starts["cells"][part]
        partner = frame["partner"].to_numpy()
        frame["partner"] = np.where(partner >= 0, partner + starts[other][part], -1)


def load_run(directory: str | Path) -> SavedRun:
    """Read a run written by :func:`save_run` (refuses anything else with a message)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if manifest.get("kieval_run") != RUN_FORMAT:
        raise KievalInputError(
            str(directory), "manifest.json", f"unknown run format {str(manifest.get('kieval_run'))[:40]!r}"
        )
    check_manifest(manifest, directory, tuple(f.name for f in fields(Normalizer)))
    check_files(directory, manifest)
    try:
        return _read_run(directory, manifest)
    except KievalInputError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError, pa.ArrowException) as exc:
        msg = f"the saved run's tables do not fit together ({type(exc).__name__}: {exc})"
        raise KievalInputError(str(directory), None, msg) from None


def _read_run(directory: Path, manifest: dict) -> SavedRun:
    info = manifest["ground_truth"]
    meta = None
    if (directory / "gt" / "meta.parquet").exists():
        meta = _read(directory / "gt" / "meta.parquet").set_index("doc_id")
    entities = directory / "gt" / "entities.parquet"
    if not entities.exists():  # a distributed run: one file per partition
        entities = directory / "gt" / "entities"
    gt = Dataset(
        info["name"],
        info["source"],
        _read(entities),
        tuple(info["doc_ids"]),
        None,
        tuple(info["warnings"]),
        meta,
        info["format"],
        tuple(info["notes"]),
    )
    models = {}
    for i, entry in enumerate(manifest["models"]):
        folder = directory / "models" / str(i)
        tally = _load_tally(folder, entry)
        peer = {}
        peer_documents = (
            _read(folder / "peer_documents.parquet").set_index("doc_id") if entry["peer"] else None
        )
        for family, saved in entry["peer"].items():
            tables = {t: _read(folder / f"peer_{t}.parquet") for t in saved["tables"]}
            peer[family] = PeerFigures(saved["figures"], peer_documents[saved["documents"]], tables)
        models[entry["name"]] = ModelResult(
            name=entry["name"],
            source=entry["source"],
            tally=tally,
            missing_documents=tuple(entry["missing_documents"]),
            unknown_documents=tuple(entry["unknown_documents"]),
            warnings=tuple(entry["warnings"]),
            peer=peer,
            meta=meta,
            counted=load_detail(folder / "detail"),
            format=entry["format"],
            notes=tuple(entry["notes"]),
            missing_confidence=entry["missing_confidence"],
            consensus_of=entry["consensus_of"],
        )
    result = EvaluationResult(
        gt,
        models,
        Normalizer(**manifest["normalizer"]),
        tuple(manifest["metrics"]),
        tuple(manifest["warnings"]),
        *_field_rules(directory, manifest.get("field_rules", {})),
    )
    return SavedRun(directory, result, manifest)


def _field_rules(directory: Path, saved: dict) -> tuple[FieldRules, dict[str, int]]:
    """The field rules of a saved run and its ignored counts (a run saved before field rules
    existed has none: its comparators are in the normaliser)."""
    try:
        rules = FieldRules.from_json(saved.get("rules", []))
        rules = FieldRules(rules.rules, tuple(map(str, saved.get("warnings", []))),
                           bool(saved.get("apply_suggested", False)))
        ignored = {str(t): int(n) for t, n in saved.get("ignored", {}).items()}
    except (TypeError, ValueError, AttributeError, KievalOptionError) as e:
        raise KievalInputError(str(directory), None, f"manifest.json: unreadable field rules ({e})") from None
    return rules, ignored


def _load_tally(folder: Path, entry: dict) -> Tally:
    def indexed(name: str) -> pd.DataFrame:
        frame = _read(folder / f"{name}.parquet")
        return frame.set_index(frame.columns[0]).astype(np.int64)

    predictions = _read(folder / "predictions.parquet")
    base = _read(folder / "base.parquet")
    for path, frame, columns in ((folder / "predictions.parquet", predictions, _REVIEW_ARRAYS),
                                 (folder / "base.parquet", base, _BASE_ARRAYS)):
        missing = [c for c in columns if c not in frame]
        if missing:
            raise KievalInputError(str(path), None, f"lacks the column(s) {', '.join(missing)}")
    n_docs, n_types = len(entry["doc_ids"]), len(entry["entity_types"])
    for path, frame, doc, kind in ((folder / "predictions.parquet", predictions, "doc", "entity_type"),
                                   (folder / "base.parquet", base, "base_doc", "base_type")):
        check_indices(path, frame[doc].to_numpy(), n_docs, f"the column {doc}")
        check_indices(path, frame[kind].to_numpy(), n_types, f"the column {kind}")
    review = ReviewModel(
        **{k: predictions[k].to_numpy() for k in _REVIEW_ARRAYS},
        doc_ids=tuple(entry["doc_ids"]),
        entity_types=tuple(entry["entity_types"]),
        **{k: base[k].to_numpy() for k in _BASE_ARRAYS},
    )
    documents = indexed("documents")
    documents.index = pd.Index(documents.index.astype(object), name="doc_id", dtype=object)
    return Tally(documents, indexed("entity_types"), indexed("group_types"), review)
