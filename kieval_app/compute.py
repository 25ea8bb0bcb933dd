"""From the loaded files to what the pages read: one evaluation per content, shared.

:func:`build_workspace` reads the ground truth and scores every prediction file with the
KIEval family at once (seconds even at 10,000 receipts), from the server's
:class:`~kieval_app.store.Store`: a file already read with the same options, or a model
already scored against the same ground truth, is not computed again, by this session or
any other. Peer metric families are computed in the background, one task per model,
and join the results when they are ready (:attr:`Workspace.pending`). Pages derive their
tables through :func:`view`, cached per (workspace, view, parameters).

No Streamlit here: the frame passes the store, the session id and a progress callback.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kieval_core import Dataset, DecisionOptions, EvaluationResult, KievalInputError, ModelResult, load_bytes
from kieval_core.evaluate import KeyCounts, OneSidedKey, check_overlap, evaluate_model, one_sided_keys
from kieval_core.peer_families import PeerFigures, needs_structures
from kieval_core.registry import FAMILY_FUNCTIONS, resolve_families
from kieval_core.report import render_report
from kieval_core.runs import SavedRun, load_run, save_run

from .sources import AppOptions, Source, Sources
from .store import Store, Task, TaskCancelled

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Failed:
    """Background work that failed: its message replaces its result."""

    message: str


@dataclass(frozen=True)
class Workspace:
    """What every page reads: the evaluation of the loaded files, and what was loaded.

    ``result`` is None when the ground truth cannot be read with the current options
    (``problems`` says why). ``pending`` lists the background tasks still computing peer
    metrics; ``key`` identifies the content and options (views are cached by it);
    ``one_sided`` lists top-level keys present on one side only (likely metadata);
    ``saved`` is the saved run shown, read-only.
    """

    sources: Sources
    options: AppOptions
    result: EvaluationResult | None
    problems: tuple[str, ...] = ()
    key: str = ""
    pending: tuple[Task, ...] = ()
    one_sided: tuple[OneSidedKey, ...] = ()
    saved: SavedRun | None = None

    @property
    def model_names(self) -> list[str]:
        return list(self.result.models) if self.result is not None else []

    @property
    def has_models(self) -> bool:
        return bool(self.model_names)


def read_dataset(store: Store, source: Source, options: AppOptions, role: str, name: str) -> Dataset:
    """A file read with the options of its role, shared by content; without the nested
    structures (only the background peer metrics need them, and read the file again)."""
    load_options = options.load_options(role)

    def read() -> Dataset:
        return load_bytes(source.data, source.name, load_options, name=name, keep_structures=False)

    return store.get(("dataset", source.digest, source.name, load_options, name), read)


def _model_key(gt: Source, pred: Source, name: str, options: AppOptions) -> tuple:
    return (
        "model",
        gt.digest,
        gt.name,
        pred.digest,
        pred.name,
        name,
        options.load_options("gt"),
        options.load_options("pred"),
        options.normalizer,
    )


def _peer_key(gt: Source, pred: Source, name: str, options: AppOptions) -> tuple:
    return ("peer", *_model_key(gt, pred, name, options)[1:], options.peer_families, options.peer_options)


def check_prediction(store: Store, gt: Source, pred: Source, options: AppOptions) -> None:
    """Refuse a prediction file that cannot be read or shares no document with the ground
    truth (raises :class:`KievalInputError`)."""
    gt_set = read_dataset(store, gt, options, "gt", "ground truth")
    check_overlap(gt_set, read_dataset(store, pred, options, "pred", pred.stem))


def score(
    store: Store, gt: Source, pred: Source, name: str, options: AppOptions
) -> tuple[ModelResult, KeyCounts]:
    """One model scored with the KIEval family, and its keys (for the one-sided-key
    warnings); shared by content."""

    def compute():
        gt_set = read_dataset(store, gt, options, "gt", "ground truth")
        pred_options = options.load_options("pred")
        pred_set = load_bytes(pred.data, pred.name, pred_options, name=name, keep_structures=False)
        model = evaluate_model(gt_set, pred_set, name=name, normalizer=options.normalizer)
        return model, KeyCounts.of(pred_set)

    return store.get(_model_key(gt, pred, name, options), compute)


def _peer_work(gt: Source, pred: Source, name: str, options: AppOptions) -> Callable[[Task], dict]:
    """Background work: every selected peer family of one model, one checkpoint per family."""

    def work(task: Task) -> dict[str, PeerFigures] | Failed:
        try:
            return compute(task)
        except TaskCancelled:
            raise
        except Exception as exc:  # kept as the outcome, shown once, never retried in a loop
            return Failed(f"{name}: the peer metrics could not be computed ({type(exc).__name__}: {exc})")

    def compute(task: Task) -> dict[str, PeerFigures]:
        keep = needs_structures(options.peer_families, options.peer_options)
        gt_set = load_bytes(gt.data, gt.name, options.load_options("gt"), name="ground truth",
                            keep_structures=keep)
        pred_set = load_bytes(pred.data, pred.name, options.load_options("pred"), name=name,
                              keep_structures=keep)
        ids = set(gt_set.doc_ids)
        entities = pred_set.entities[pred_set.entities["doc_id"].isin(ids)].reset_index(drop=True)
        pred_set = dataclasses.replace(
            pred_set, entities=entities, doc_ids=tuple(d for d in pred_set.doc_ids if d in ids)
        )
        figures = {}
        families = options.peer_families
        for i, family in enumerate(families):
            task.progress(i, len(families))
            task.checkpoint()
            figures[family] = FAMILY_FUNCTIONS[family](gt_set, pred_set, options.peer_options)
        task.progress(len(families), len(families))
        return figures

    return work


def workspace_key(sources: Sources, options: AppOptions) -> str:
    parts = [repr(options), sources.gt.digest if sources.gt else ""]
    parts += [f"{n}:{p.digest}" for n, p in zip(sources.model_names(), sources.predictions, strict=True)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def build_workspace(
    store: Store,
    session: str,
    sources: Sources,
    options: AppOptions,
    progress: Progress = lambda share, text: None,
) -> Workspace:
    """Read the ground truth and score every prediction file (KIEval now, peer families in
    the background); declare to the store what this session holds."""
    if sources.run is not None:
        return open_run(store, session, sources, options)
    key = workspace_key(sources, options)
    if sources.gt is None:
        store.hold(session, ())
        return Workspace(sources, options, None, ("No ground truth loaded.",), key)
    gt = sources.gt
    held: list[Hashable] = [("dataset", gt.digest, gt.name, options.load_options("gt"), "ground truth")]
    try:
        progress(0.0, f"Reading {gt.name}")
        gt_set = read_dataset(store, gt, options, "gt", "ground truth")
    except Exception as exc:
        store.hold(session, ())
        return Workspace(sources, options, None, (read_message(gt, exc),), key)
    models: dict[str, ModelResult] = {}
    root_keys = {}
    problems, pending = [], []
    names = sources.model_names()
    for i, (name, pred) in enumerate(zip(names, sources.predictions, strict=True)):
        progress((i + 0.5) / (len(names) + 0.5), f"Scoring {name} ({i + 1} of {len(names)})")
        try:
            model, root_keys[name] = score(store, gt, pred, name, options)
        except Exception as exc:
            problems.append(read_message(pred, exc))
            continue
        held.append(_model_key(gt, pred, name, options))
        if options.peer_families:
            peer_key = _peer_key(gt, pred, name, options)
            held.append(peer_key)
            figures = store.peek(peer_key)
            if figures is None:
                pending.append(store.submit(peer_key, name, _peer_work(gt, pred, name, options)))
            elif isinstance(figures, Failed):
                problems.append(figures.message)
            else:
                model = dataclasses.replace(model, peer=figures)
        models[name] = model
    store.hold(session, held)
    families = resolve_families(options.families)
    one_sided = tuple(one_sided_keys(KeyCounts.of(gt_set), root_keys))
    warnings = tuple(k.message for k in one_sided)
    result = EvaluationResult(gt_set, models, options.normalizer, families, warnings)
    return Workspace(sources, options, result, tuple(problems), key, tuple(pending), one_sided)


def open_run(store: Store, session: str, sources: Sources, options: AppOptions) -> Workspace:
    """A saved run, read once per directory and content, as a read-only workspace."""
    directory = Path(sources.run)
    manifest = directory / "manifest.json"
    stamp = manifest.stat().st_mtime_ns if manifest.exists() else 0
    key = ("run", str(directory.resolve()), stamp)
    try:
        run = store.get(key, lambda: load_run(directory))
    except Exception as exc:
        store.hold(session, ())
        return Workspace(sources, options, None, (f"{directory}: {exc}",), "")
    store.hold(session, [key])
    return Workspace(sources, options, run.result, (), run.key, saved=run)


def read_message(source: Source, exc: Exception) -> str:
    """One line for a file that could not be used: the input error as it is, anything
    else as a failure of the tool on that file."""
    if isinstance(exc, KievalInputError):
        return str(exc)
    return f"{source.name}: could not be read ({type(exc).__name__}: {exc})"


def view(store: Store, ws: Workspace, name: str, compute: Callable[[], Any], *key: Hashable) -> Any:
    """A derived table or figure of the workspace, computed once per ``key`` (the model
    and the parameters it depends on)."""
    return store.get(("view", ws.key, name, key), compute)


def save_workspace(ws: Workspace, directory: Path) -> Path:
    """Save the workspace's evaluation as a run (the report with the default decisions)."""
    sources = ws.sources
    inputs = {
        "gt": {"source": sources.gt.name, "digest": sources.gt.digest},
        "models": {
            n: {"source": p.name, "digest": p.digest}
            for n, p in zip(sources.model_names(), sources.predictions, strict=True)
        },
    }
    options = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(ws.options).items()}
    report = render_report(ws.result, DecisionOptions())
    return save_run(ws.result, directory / ws.key, report.text, inputs, options)
