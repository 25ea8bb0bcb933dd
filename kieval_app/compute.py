"""From the loaded files to what the pages read: one evaluation per content, shared.

:func:`build_workspace` reads the ground truth and scores every prediction file with the
KIEval family at once (seconds even at 10,000 receipts), through the pipeline of
:func:`kieval_core.evaluate` (``score_model`` per file, ``finish`` for the result),
from the server's :class:`~kieval_app.serving.store.Store`: a file already read with the same
options, or a model already scored against the same ground truth, is not computed again,
by this session or any other (the uploads score a file to check it, so the workspace
finds it scored); every read and scoring runs in a child process
(:mod:`kieval_app.serving.isolation`) that a cancelled upload or a closed tab stops at
once. Peer metric families are computed in the background by the core's
``peer_metrics``, one task per model, in a child process too (:func:`peer_file`), and
join the results when they are ready (:attr:`Workspace.pending`). Pages derive their
tables through :func:`view`, cached per (workspace, view, parameters). This module keeps
only cache keys, progress and scheduling.

No Streamlit here: the frame passes the store, the session id and a progress callback.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kieval_core import (
    Dataset,
    DecisionOptions,
    EvaluationResult,
    KievalInputError,
    LoadOptions,
    ModelResult,
    Normalizer,
    load_bytes,
)
from kieval_core.count.peer_families import PeerFigures, PeerOptions, needs_structures
from kieval_core.keys import KeyCounts, one_sided_keys
from kieval_core.limits import Limits, load_cost, matching_cost
from kieval_core.output.render import render_report
from kieval_core.output.runs import SavedRun, load_run, save_run
from kieval_core.read.formats import group_counts, load_estimate
from kieval_core.read.page_images import ImageLimits, PageImages, image_files, images_cost, read_page_images
from kieval_core.result.registry import resolve_families
from kieval_core.result.results import OneSidedKey
from kieval_core.result.scoring import finish, peer_metrics, score_model
from kieval_core.result.suggest import suggested_rules
from kieval_core.rules import Applied, FieldRules

from . import prebuilt
from .serving.isolation import ChildDied, report, run_isolated
from .serving.store import Busy, Store, Task, TaskCancelled
from .sources import AppOptions, Source, Sources

_LOG = logging.getLogger(__name__)

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
    ``saved`` is the saved run shown, read-only; ``images`` the page images of the
    documents (None without any).
    """

    sources: Sources
    options: AppOptions
    result: EvaluationResult | None
    problems: tuple[str, ...] = ()
    key: str = ""
    pending: tuple[Task, ...] = ()
    one_sided: tuple[OneSidedKey, ...] = ()
    saved: SavedRun | None = None
    images: PageImages | None = None

    @property
    def model_names(self) -> list[str]:
        return list(self.result.models) if self.result is not None else []

    @property
    def has_models(self) -> bool:
        return bool(self.model_names)


def _keep_structures(options: AppOptions) -> bool:
    """Whether the selected peer families score the uploaded structures: the files are then
    read with them, once, for the KIEval counts and the peer metrics alike."""
    return needs_structures(options.peer_families, options.peer_options)


def _dataset_key(source: Source, options: AppOptions, role: str) -> tuple:
    return ("dataset", source.digest, source.name, options.load_options(role), _keep_structures(options))


#: Called every fraction of a second while a read or a scoring waits: with the number of
#: heavy pieces of work ahead while it waits for its turn (:class:`Store`), with 0 while its
#: file is read or scored in a child process. Each call is where the app stops a cancelled run.
Waiting = Callable[[int], None]


def read_dataset(store: Store, source: Source, options: AppOptions, role: str,
                 waiting: Waiting | None = None) -> Dataset:
    """A file read with the options of its role (``"gt"`` or ``"pred"``), once per content
    and options: the upload check, the scoring and the peer metrics share the copy.

    Every read runs in a child process (:func:`~kieval_app.serving.isolation.run_isolated`),
    whatever its estimate (a few KB can cost minutes): the server's other sessions keep
    the GIL, and a read whose ``waiting`` raises (a cancelled upload, a closed tab) is
    stopped at once, its memory freed. It reserves what reading costs
    (:func:`~kieval_core.read.formats.load_estimate`). It raises what the read raised, or
    :class:`~kieval_app.serving.isolation.ChildDied`."""
    name = "ground truth" if role == "gt" else source.stem
    read = functools.partial(run_isolated, load_bytes, source.data, source.name, options.load_options(role),
                             name=name, keep_structures=_keep_structures(options), tick=_tick(waiting))
    return _shared(store, _dataset_key(source, options, role), read, load_estimate(source.data, source.name),
                   waiting, source)


def _shared(store: Store, key: Hashable, compute: Callable[[], Any], cost: int, waiting: Waiting | None,
            *sources: Source) -> Any:
    """``compute()`` once per ``key`` for every session (:meth:`Store.get`, reserving
    ``cost``); when ``sources`` are all a built-in sample's, once for every server too (kept
    on disk by :mod:`kieval_app.prebuilt`)."""
    if prebuilt.builtin(*sources):
        compute = prebuilt.kept(key, compute)
    return store.get(key, compute, cost=cost, waiting=waiting)


def _tick(waiting: Waiting | None) -> Callable[[], None] | None:
    """What a child's wait calls at every poll: ``waiting(0)`` (its file is being worked on)."""
    return None if waiting is None else functools.partial(waiting, 0)


def waiting_text(ahead: int) -> str:
    """What a session waiting for its turn is told.

    >>> waiting_text(1)
    'waiting for 1 other upload to finish'
    """
    return f"waiting for {ahead} other upload{'' if ahead == 1 else 's'} to finish"


def while_waiting(progress: Progress, share: float, text: str) -> Waiting:
    """The ``waiting`` callback of a read or a scoring shown as ``text`` at ``share`` of a
    progress bar: how many uploads are ahead while it waits for its turn, ``text`` alone
    while its file is read (each call is also where Streamlit stops a run that was
    cancelled: it then leaves the queue, or its read is stopped)."""
    return lambda ahead: progress(share, f"{text}: {waiting_text(ahead)}" if ahead else text)


def admit_upload(store: Store, session: str, sources: Sources, source: Source, options: AppOptions) -> None:
    """Refuse an upload beyond the limits before it is read: the file's own (size,
    uncompressed bytes, rows, memory), then the session's: its bytes, what reading it takes
    and what the session holds already (its uploads, its results) above the session limit
    (:class:`~kieval_core.limits.LimitExceeded`). The server's budget is checked when the
    file is read (:meth:`Store.reserve`)."""
    limits = options.limits
    cost = load_estimate(source.data, source.name, limits)  # the file's own limits first
    held = store.held_bytes(session) + sources.size + source.size + cost
    limits.check("session_mb", held, source.name, "held by this session with it")


def page_images(store: Store, source: Source, waiting: Waiting | None = None) -> PageImages:
    """Page images read and downscaled once per content, shared by every session (raises
    :class:`KievalInputError` for an archive that cannot be read or is too large). They are
    read in a child process, as every upload is (:func:`read_dataset`): a few KB can hold
    pages of millions of pixels, so they reserve what their pixels cost
    (:func:`~kieval_core.read.page_images.images_cost`), and a read whose ``waiting`` raises
    (a cancelled upload, a closed tab) is stopped at once."""
    limits = image_limits()
    read = functools.partial(run_isolated, read_images, source.data, source.name, limits, tick=_tick(waiting))
    return _shared(store, _images_key(source, limits), read, images_cost(source.data, source.name, limits),
                   waiting, source)


def read_images(data: bytes, name: str, limits: ImageLimits) -> PageImages:
    """The pages of one upload of page images (a zip or one file): what the child runs."""
    return read_page_images(image_files(data, name, limits), name, limits)


def image_limits() -> ImageLimits:
    """The caps on page images of this server (:class:`kieval_core.limits.Limits`)."""
    return ImageLimits.of(Limits.from_env("app"))


def _images_key(source: Source, limits: ImageLimits) -> tuple:
    return ("images", source.digest, source.name, limits)


def _with_images(store: Store, ws: Workspace, held: list[Hashable],
                 progress: Progress | None = None) -> Workspace:
    """The workspace with its page images (a failure to read them is one more problem);
    ``progress`` shows their read (and is where a closed tab's run stops it)."""
    source = ws.sources.images
    if source is None:
        return ws
    text = f"Reading the page images {source.name}"
    try:
        images = page_images(store, source, None if progress is None else while_waiting(progress, 1.0, text))
    except Exception as exc:
        return dataclasses.replace(ws, problems=(*ws.problems, read_message(source, exc)))
    held.append(_images_key(source, image_limits()))
    return dataclasses.replace(ws, images=images)


def _model_key(gt: Source, pred: Source, options: AppOptions, suggested: FieldRules | None = None) -> tuple:
    return (
        "model",
        gt.digest,
        gt.name,
        pred.digest,
        pred.name,
        options.load_options("gt"),
        options.load_options("pred"),
        options.normalizer,
        _rules(options, suggested),
    )


def _rules(options: AppOptions, suggested: FieldRules | None) -> FieldRules:
    """The rules a model is scored under: the options' over the suggestions applied."""
    rules = options.rules.over(suggested or FieldRules())
    return dataclasses.replace(rules, apply_suggested=False)


def _peer_key(gt: Source, pred: Source, options: AppOptions) -> tuple:
    return ("peer", *_model_key(gt, pred, options)[1:], options.peer_families, options.peer_options)


def score(store: Store, gt: Source, pred: Source, options: AppOptions,
          waiting: Waiting | None = None, suggested: FieldRules | None = None
          ) -> tuple[ModelResult, KeyCounts, dict[str, int]]:
    """One prediction file scored with the KIEval family by the core's
    :func:`~kieval_core.result.scoring.score_model` (named after the file's stem) under the
    options' field rules (over the ``suggested`` ones applied), its keys (for the one-sided-key
    warnings) and how many of its values the rules ignored, per field; shared by content.

    Raises :class:`~kieval_core.KievalInputError` for a file that cannot be read, and its
    subclass :class:`~kieval_core.NoCommonDocuments` for one that shares no document with
    the ground truth: the uploads call it to check a file, so the workspace finds it scored.
    The file is read and scored in one child process (:func:`score_file`), as every read is
    (:func:`read_dataset`); the scoring reserves what reading both files and matching the
    ground truth's groups cost (:func:`scoring_cost`).
    """
    key = _model_key(gt, pred, options, suggested)
    scored = store.peek(key)
    if scored is None:
        gt_set = read_dataset(store, gt, options, "gt", waiting)
        rules, structures = _rules(options, suggested), _keep_structures(options)
        work = functools.partial(run_isolated, score_file, gt_set, rules, options.normalizer, pred.data,
                                 pred.name, options.load_options("pred"), name=pred.stem,
                                 keep_structures=structures, tick=_tick(waiting))
        scored = _shared(store, key, work, scoring_cost(gt, pred, gt_set), waiting, gt, pred)
        if store.peek(_keys_key(pred, options)) is None:  # the workspace's one-sided keys need no read
            store.put(_keys_key(pred, options), scored[1])
    return scored


def scoring_cost(gt: Source, pred: Source, gt_set: Dataset) -> int:
    """What scoring ``pred`` against ``gt`` is estimated to hold at its peak: about what
    reading both files takes (bench/README.md, "Admission"), at least what reading either
    takes, and what matching the ground truth's groups takes (a few thousand lines in one
    document cost more than their bytes say; a prediction file's own groups are held to the
    ``groups_per_doc`` limit when it is read)."""
    groups = group_counts(gt_set).to_dict()
    return max(load_cost(gt.size + pred.size), *(load_estimate(s.data, s.name) for s in (gt, pred)),
               matching_cost(groups, groups))


def score_file(gt: Dataset, rules: FieldRules, normalizer: Normalizer, data: bytes, source: str,
               load_options: LoadOptions, name: str, keep_structures: bool
               ) -> tuple[ModelResult, KeyCounts, dict[str, int]]:
    """What :func:`score` runs in its child process: the prediction file read, the rules
    applied to both sides, the file scored; the model, the file's keys and the values the
    rules ignored in it, per field (the file itself stays in the child)."""
    pred = load_bytes(data, source, load_options, name=name, keep_structures=keep_structures)
    applied = rules.applied(gt, {}, normalizer)
    ignored: dict[str, int] = {}
    model = score_model(applied.gt, applied.rules.without_ignored(pred, ignored), name=name,
                        normalizer=applied.normalizer)
    return model, KeyCounts.of(pred), ignored


def file_keys(data: bytes, source: str, load_options: LoadOptions, name: str,
              keep_structures: bool) -> KeyCounts:
    """What :func:`keys_of` runs in its child process: the keys of one file."""
    return KeyCounts.of(load_bytes(data, source, load_options, name=name, keep_structures=keep_structures))


def _keys_key(source: Source, options: AppOptions) -> tuple:
    return ("keys", *_dataset_key(source, options, "pred")[1:])


def keys_of(store: Store, pred: Source, options: AppOptions, waiting: Waiting | None = None) -> KeyCounts:
    """The keys of a prediction file, once per content and options (its scoring leaves them
    in the store too), read in a child process that keeps the file."""
    read = functools.partial(run_isolated, file_keys, pred.data, pred.name, options.load_options("pred"),
                             name=pred.stem, keep_structures=_keep_structures(options), tick=_tick(waiting))
    return _shared(store, _keys_key(pred, options), read, load_estimate(pred.data, pred.name), waiting, pred)


def _peer_work(store: Store, gt: Source, pred: Source, options: AppOptions) -> Callable[[Task], dict]:
    """Background work: the core's peer metrics of one prediction file, in a child process
    (:func:`peer_file`) as every read and scoring is: the task's thread only waits for it,
    so a task nobody wants any more (Cancel, a closed tab) stops it within a poll, and a
    server told to stop does not wait for it. It reserves what scoring the file costs
    (:func:`scoring_cost`: both files read, the ground truth's groups matched)."""

    def work(task: Task) -> dict[str, PeerFigures] | Failed:
        def waiting(_ahead: int) -> None:
            task.checkpoint()  # a read nobody wants any more is stopped too

        try:
            gt_set = read_dataset(store, gt, options, "gt", waiting)
            with store.reserve(scoring_cost(gt, pred, gt_set), waiting):
                figures = run_isolated(peer_file, gt_set, pred.data, pred.name, options.load_options("pred"),
                                       pred.stem, _keep_structures(options), options.peer_families,
                                       options.peer_options, options.normalizer, tick=task.checkpoint,
                                       progress=task.progress)
        except TaskCancelled:
            raise
        except Exception as exc:  # kept as the outcome, shown once, never retried in a loop
            problem = f"{type(exc).__name__}: {exc}"
            return Failed(f"{pred.name}: the peer metrics could not be computed ({problem})")
        if prebuilt.builtin(gt, pred):  # the next server finds them (_scored)
            prebuilt.keep(_peer_key(gt, pred, options), figures)
        return figures

    return work


def peer_file(gt: Dataset, data: bytes, source: str, load_options: LoadOptions, name: str,
              keep_structures: bool, families: tuple[str, ...], peer_options: PeerOptions,
              normalizer: Normalizer) -> dict[str, PeerFigures]:
    """What the peer work runs in its child process: the prediction file read as
    :func:`read_dataset` reads it, then the core's
    :func:`~kieval_core.result.scoring.peer_metrics`, each family done reported to the
    parent (:func:`~kieval_app.serving.isolation.report`)."""
    pred = load_bytes(data, source, load_options, name=name, keep_structures=keep_structures)
    return peer_metrics(gt, pred, families, peer_options, report, normalizer)


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
    the background) and the page images; declare to the store what this session holds.

    The evaluation is shared by content too: a rerun, or another session, of the same files
    with the same options and the same peer figures gets the same result object, with every
    figure already derived from it (none is derived again)."""
    if sources.run is not None:
        return open_run(store, session, sources, options)
    key = workspace_key(sources, options)
    if sources.gt is None:
        store.hold(session, ())
        return Workspace(sources, options, None, ("No ground truth loaded.",), key)
    gt = sources.gt
    held: list[Hashable] = [_dataset_key(gt, options, "gt")]
    try:
        progress(0.0, f"Reading {gt.name}")
        gt_set = read_dataset(store, gt, options, "gt", while_waiting(progress, 0.0, f"Reading {gt.name}"))
    except Exception as exc:
        store.hold(session, ())
        return Workspace(sources, options, None, (read_message(gt, exc),), key)
    gt_keys = store.get(("gt keys", *held[0][1:]), lambda: KeyCounts.of(gt_set))  # once per content too
    pred_keys = _pred_keys(store, sources, options, progress)
    rules = options.rules  # a key they ignore is not scored, whichever side has it
    aside = tuple(k.key for k in one_sided_keys(gt_keys, pred_keys, options.score_keys, rules) if k.set_aside)
    if aside:  # read as metadata, exactly as the metadata option reads them
        options = dataclasses.replace(options, gt_meta=aside)
        held[0] = _dataset_key(gt, options, "gt")
        gt_set = read_dataset(store, gt, options, "gt", while_waiting(progress, 0.0, f"Reading {gt.name}"))
    families = resolve_families(options.families)
    applied, models, keys, problems, pending = _scored(store, gt, gt_set, sources, options, progress, held)
    one_sided = one_sided_keys(gt_keys, keys, options.score_keys, rules)
    if options.apply_suggested and models:
        suggested = store.get(("suggested", key, tuple(models)), lambda: suggested_rules(
            finish(applied.gt, models, keys, applied.normalizer, families, rules=applied.rules,
                   ignored=applied.ignored, one_sided=one_sided)))
        applied, models, keys, problems, pending = _scored(store, gt, gt_set, sources, options, progress,
                                                           held, suggested)
    # one evaluation per content for every session and run: the figures derived from it
    # (rankings, suggestions, corpus tables: cached on the result) are derived once. Two
    # first runs at once may both finish it (a tenth of a second on the sample); the
    # second's is kept, each is complete
    result_key = ("result", key, _joined(models))
    result = store.peek(result_key)
    if result is None:
        result = finish(applied.gt, models, keys, applied.normalizer, families, rules=applied.rules,
                        ignored=applied.ignored, one_sided=one_sided)
        store.put(result_key, result, parts=tuple(held))
    held.append(result_key)
    ws = Workspace(sources, options, result, tuple(problems), key, tuple(pending), result.one_sided)
    ws = _with_images(store, ws, held, progress)
    store.hold(session, held, own_bytes=sources.size)
    return ws


def _joined(models: dict[str, ModelResult]) -> tuple:
    """What two evaluations of the same files and options can differ by: which models' peer
    figures have joined (background work joins when it is done)."""
    return tuple((name, bool(m.peer)) for name, m in models.items())


def _scored(store: Store, gt: Source, gt_set: Dataset, sources: Sources, options: AppOptions,
            progress: Progress, held: list[Hashable], suggested: FieldRules | None = None
            ) -> tuple[Applied, dict[str, ModelResult], dict[str, KeyCounts], list[str], list]:
    """Every prediction file scored under the options' rules over the ``suggested`` ones
    (KIEval now, peer families in the background): the rules applied to the ground truth
    (with the values they ignored in every file), the models, their keys, the problems met
    and the peer work pending. What it holds in the store goes into ``held``."""
    applied = _rules(options, suggested).applied(gt_set, {}, options.normalizer)
    ignored = dict(applied.ignored)
    models: dict[str, ModelResult] = {}
    keys: dict[str, KeyCounts] = {}
    problems, pending = [], []
    names = sources.model_names()
    for i, (name, pred) in enumerate(zip(names, sources.predictions, strict=True)):
        share, text = (i + 0.5) / (len(names) + 0.5), f"Scoring {name} ({i + 1} of {len(names)})"
        progress(share, text)
        try:
            waiting = while_waiting(progress, share, text)
            model, keys[name], pred_ignored = score(store, gt, pred, options, waiting, suggested)
        except Exception as exc:
            problems.append(read_message(pred, exc))
            continue
        for entity_type, n in pred_ignored.items():
            ignored[entity_type] = ignored.get(entity_type, 0) + n
        held.append(_model_key(gt, pred, options, suggested))
        peer = {}
        if options.peer_families:
            peer_key = _peer_key(gt, pred, options)
            held.append(peer_key)
            figures = store.peek(peer_key)
            if figures is None and prebuilt.builtin(gt, pred):  # a built-in sample's, kept on disk
                figures = prebuilt.load(peer_key)
                if figures is not None:
                    store.put(peer_key, figures)
            if figures is None:
                pending.append(store.submit(peer_key, name, _peer_work(store, gt, pred, options)))
            elif isinstance(figures, Failed):
                problems.append(figures.message)
            else:
                peer = figures
        models[name] = dataclasses.replace(model, name=name, peer=peer)
    return dataclasses.replace(applied, ignored=ignored), models, keys, problems, pending


def _pred_keys(store: Store, sources: Sources, options: AppOptions,
               progress: Progress) -> dict[str, KeyCounts]:
    """The keys of every prediction file that can be read (one that cannot is reported by
    its scoring), for the keys present on one side only."""
    keys = {}
    for name, pred in zip(sources.model_names(), sources.predictions, strict=True):
        try:
            keys[name] = keys_of(store, pred, options, while_waiting(progress, 0.0, f"Reading {name}"))
        except Exception:  # noqa: BLE001 - the scoring below reports it
            continue
    return keys


def open_run(store: Store, session: str, sources: Sources, options: AppOptions) -> Workspace:
    """A saved run, read once per directory and content, as a read-only workspace. A run
    this session has open stays as it was read when its directory is deleted or replaced
    meanwhile (by another session or ``kieval runs``): the session holds it in the store."""
    directory = Path(sources.run)
    manifest = directory / "manifest.json"
    stamp = manifest.stat().st_mtime_ns if manifest.exists() else 0
    key = ("run", str(directory.resolve()), stamp)
    if stamp == 0:  # gone from the disk: the copy this session holds, if any
        key = next((k for k in store.held_keys(session) if isinstance(k, tuple) and k[:2] == key[:2]
                    and store.peek(k) is not None), key)
    try:
        run = store.get(key, lambda: load_run(directory))
    except Exception as exc:
        store.hold(session, ())
        return Workspace(sources, options, None, (_run_message(directory, exc),), "")
    held: list[Hashable] = [key]
    ws = Workspace(sources, options, run.result, (), run.key, saved=run)
    ws = _with_images(store, ws, held)
    store.hold(session, held)
    return ws


def _run_message(directory: Path, exc: Exception) -> str:
    """A saved run that cannot be opened, in one line naming the run and its file, not the
    server's path."""
    if not isinstance(exc, KievalInputError):
        return f"Saved run {directory.name}: not readable ({type(exc).__name__})"
    path = Path(exc.source)
    inside = path.is_relative_to(directory) and path != directory
    place = ", ".join(p for p in (path.relative_to(directory).as_posix() if inside else "", exc.where) if p)
    return f"Saved run {directory.name}: {place + ': ' if place else ''}{exc.problem}"


def read_message(source: Source, exc: Exception) -> str:
    """One line for a file that could not be used: the input error as it is, anything
    else as a failure of the tool on that file."""
    if isinstance(exc, KievalInputError):
        return str(exc)
    if isinstance(exc, Busy):
        return f"{source.name}: not read, {exc}"
    if isinstance(exc, ChildDied):
        return f"{source.name}: could not be read, {exc}"
    return f"{source.name}: could not be read ({type(exc).__name__}: {exc})"


def view(store: Store, ws: Workspace, name: str, compute: Callable[[], Any], *key: Hashable) -> Any:
    """A derived table or figure of the workspace, computed once per ``key`` (the model
    and the parameters it depends on) for every session showing the same evaluation (the
    same files and options, the same peer figures joined)."""
    joined = _joined(ws.result.models) if ws.result is not None else ()
    return store.get(("view", ws.key, joined, name, key), compute)


class Ahead:
    """Views built in the background before they are asked for (the next document while the
    user looks at this one): one worker for the whole server, at most ``queue`` builds
    waiting or running; beyond that a build is not queued (it is a guess, not a promise).
    A build starts ``delay_s`` after it is asked for: started at once, it held the GIL
    against the server's event loop while that sent the page just built (the next
    document's view reached the browser ~30 ms later).

    A page that asks for a view being built ahead waits for it instead of building it again
    (:meth:`Store.get`). A build that fails is dropped: the page builds the view itself when
    it is asked for, and says what is wrong then.
    """

    def __init__(self, queue: int = 2, delay_s: float = 0.2) -> None:
        self._queue = queue
        self._delay_s = delay_s
        self._queued = 0
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kieval-ahead")

    def submit(self, store: Store, ws: Workspace, build: Callable[[Callable], None]) -> Future | None:
        """Run ``build(view)``, ``view(name, fn, *key)`` being :func:`view` on ``store`` and
        ``ws``; the future, or None when too many builds are waiting."""
        with self._lock:
            if self._queued >= self._queue:
                return None
            self._queued += 1

        def run() -> None:
            time.sleep(self._delay_s)  # the run that asked sends its page first (same GIL)
            try:
                build(lambda name, compute, *key: view(store, ws, name, compute, *key))
            except Exception:  # the page builds it again and shows the error
                _LOG.debug("a view built ahead failed", exc_info=True)
            finally:
                with self._lock:
                    self._queued -= 1

        return self._worker.submit(run)


#: The server's one :class:`Ahead`.
AHEAD = Ahead()


def save_workspace(ws: Workspace, directory: Path, verdicts: dict[str, dict] | None = None) -> Path:
    """Save the workspace's evaluation as a run (the report with the default decisions),
    with the reviewer's verdicts on its suspect labels."""
    sources = ws.sources
    inputs = {
        "gt": {"source": sources.gt.name, "digest": sources.gt.digest},
        "models": {
            n: {"source": p.name, "digest": p.digest}
            for n, p in zip(sources.model_names(), sources.predictions, strict=True)
        },
    }
    options = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(ws.options).items()
               if k != "limits"}
    report = render_report(ws.result, DecisionOptions())
    return save_run(ws.result, directory / ws.key, report.text, inputs, options, verdicts=verdicts)
