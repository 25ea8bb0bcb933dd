"""The Streamlit boundary: session state, the shared store, and the workspace of a run.

Everything that touches ``st.session_state`` or the store lives here and in
:mod:`kieval_app.uploads` and :mod:`kieval_app.sidebar`; pages call :func:`current` and
render. Session state holds only these keys (besides widget values):

==================  ===============================================================
``sources``         :class:`~kieval_app.sources.Sources`: the files in use (a built-in
                    sample until the user uploads)
``pending``         uploads waiting to be read, ``[(role, Source)]``
``refused``         prediction files refused against the current ground truth,
                    ``[(Source, message)]``; checked again when the ground truth changes
``messages``        ``[(level, text)]``: how the last uploads ended (loaded, refused,
                    failed), shown until the next upload
``uploader``        a counter in the uploaders' keys: a new value empties the boxes
``workspace``       this run's :class:`~kieval_app.compute.Workspace`, set by the frame
``doc``, ``url``    the document shown on the Documents page; the deep link last
                    written to the URL (to tell a new deep link from the app's own)
``fresh``           True on a session's first run (a refresh, a restart, a shared link)
``arrival``         what the address named when the session began: ``(run id or None,
                    sources then)``; the Overview offers to reopen that run while the
                    session still shows what it began with (reruns do not lose it)
``delete_run``      the id of the saved run whose deletion waits for a confirmation
``saved``           the ids of the runs this session saved: the ones it may delete
                    (every run with ``kieval dashboard --delete-any-run``)
``verdicts``        the reviewer's verdicts on suspect labels, per ground truth (its
                    digest): ``{gt: {suspect key: verdict}}`` (:func:`verdicts`); saved
                    with a run and taken up again when it is opened
``suspect``         the key of the suspect shown on the Suspect labels page
==================  ===============================================================

Saved runs live under :func:`runs_dir`; the URL's ``run=<id>`` names the run a page
showed, so a new session (after a refresh or a restart) can offer to reopen it.

Widget keys: ``opt_*`` (sidebar options), ``model`` (model picker), ``upload_gt_<n>`` /
``upload_pred_<n>`` (Overview), ``docs_*``, ``errors_*``, ``auto_*``, ``cmp_*`` on the
pages, ``sus_*`` on the Suspect labels page. Every key is fixed: none grows with the data.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
import uuid
from pathlib import Path

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from kieval_core.exceptions import KievalInputError, KievalOptionError
from kieval_core.figures.text import file_size, md
from kieval_core.limits import Limits
from kieval_core.output.retention import default_runs_dir, is_run_id
from kieval_core.read.page_images import directory_files

from . import compute
from .compute import Workspace
from .serving import isolation
from .serving.collector import Collector
from .serving.launch import DELETE_ANY_RUN, IMAGES_DIR, OPEN_RUN
from .serving.reaper import Reaper, streamlit_reaper
from .serving.store import Store
from .serving.tuning import SWITCH_INTERVAL_S, idle_bytes
from .sources import DEFAULT_SAMPLE, AppOptions, Source, Sources, sample_sources, zipped

#: Seconds from the store's creation (a fresh server's first visit) to the fork server's start.
WARM_AFTER_S = 10.0
SOURCES, PENDING, REFUSED, MESSAGES, UPLOADER = "sources", "pending", "refused", "messages", "uploader"
WORKSPACE, DOC, URL, FRESH, MODEL = "workspace", "doc", "url", "fresh", "model"
ARRIVAL, DELETE_RUN, SAVED = "arrival", "delete_run", "saved"
VERDICTS, SUSPECT = "verdicts", "suspect"


@st.cache_resource(show_spinner=False)
def store() -> Store:
    """The one store of this server process (``KIEVAL_IDLE_CACHE_MB`` sizes its idle part,
    the memory budget of :mod:`kieval_core.limits` its admissions, the heavy loads limit
    how many large reads and scorings run at once); made once, with the process's GIL
    switch interval shortened (:data:`~kieval_app.serving.tuning.SWITCH_INTERVAL_S`), the
    fork server of the uploads' reads and scorings started :data:`WARM_AFTER_S` later
    (:mod:`kieval_app.serving.isolation`) and, in a
    server, its full garbage collections skipping what survived the last one
    (:mod:`kieval_app.serving.collector`)."""
    limits = Limits.from_env("app")
    sys.setswitchinterval(SWITCH_INTERVAL_S)  # why: kieval_app.serving.tuning
    # every read and scoring runs in a child process (compute.read_dataset); their fork
    # server imports the readers once, started after the first visitor's page rather than beside it (two
    # cores shared with its browser); a read before then starts it itself
    warming = threading.Timer(WARM_AFTER_S, isolation.warm)
    warming.daemon = True
    warming.start()
    collector = None
    if Runtime.exists() and type(Runtime.instance()) is Runtime:  # a server (AppTest: a stand-in)
        collector = Collector()
        collector.install()
    return Store(idle_bytes=idle_bytes(), budget=limits.memory_bytes, heavy_slots=limits.heavy_loads,
                 collector=collector)


@st.cache_resource(show_spinner=False)
def reaper() -> Reaper | None:
    """The timer that closes sessions whose tab was closed (:mod:`kieval_app.serving.reaper`)."""
    return streamlit_reaper(store())


def _session_ended(session: str) -> None:
    store().release_session(session)


@st.cache_resource(scope="session", on_release=_session_ended, show_spinner=False)
def session_id() -> str:
    """This session's id in the store; released (with what only it held) when it ends,
    and when its tab has been closed for a while (:func:`reaper`)."""
    session = uuid.uuid4().hex
    context = get_script_run_ctx()
    timer = reaper()
    if context is not None and timer is not None:
        timer.register(context.session_id, session, functools.partial(_forget, context.session_state))
    return session


@st.cache_resource(show_spinner=False)
def directory_images() -> tuple[Source | None, tuple[str, ...]]:
    """The page images of ``kieval dashboard --images DIR``, read once per process as one
    zip, and one message per file of it not read; used whenever the loaded files bring none
    (None without the option)."""
    directory = os.environ.get(IMAGES_DIR)
    if not directory:
        return None, ()
    files, problems = directory_files(directory, compute.image_limits())
    return Source.of(*zipped(Path(directory).name, files)), tuple(problems)


def _forget(state) -> None:
    """Drop a closed session's files and results from its state (the reaper calls it),
    widget values too (an uploader's last files): Streamlit's ``SessionState.clear``."""
    for key in (SOURCES, PENDING, REFUSED, MESSAGES, WORKSPACE, SAVED):
        with contextlib.suppress(KeyError):
            del state[key]
    inner = getattr(state, "_state", None)  # Streamlit 1.67's SafeSessionState wraps it
    with contextlib.suppress(AttributeError):
        inner.clear()


def runs_dir() -> Path:
    """Where the dashboard saves runs (``KIEVAL_RUNS_DIR``, default ``~/.kieval/runs``)."""
    return default_runs_dir()


def initial_sources() -> Sources:
    """What a new session opens: the run named by ``kieval dashboard DIR``, else a sample."""
    opened = os.environ.get(OPEN_RUN)
    return Sources(None, run=opened) if opened else sample_sources(DEFAULT_SAMPLE)


def init_state() -> None:
    """Defaults on a session's first run: a saved run or a built-in sample, no messages."""
    st.session_state[FRESH] = SOURCES not in st.session_state
    st.session_state.setdefault(SOURCES, initial_sources())
    if st.session_state[FRESH] and (st.query_params.get("doc") or st.query_params.get("run")):
        st.session_state[ARRIVAL] = (_saved_run(st.query_params.get("run")), st.session_state[SOURCES])
    for key in (PENDING, REFUSED, MESSAGES):
        st.session_state.setdefault(key, [])
    st.session_state.setdefault(UPLOADER, 0)
    st.session_state.setdefault(URL, {})


def prepare(options: AppOptions) -> Workspace:
    """Score the loaded files (shared, cached by content); a progress bar shows while
    files are read or scored, and disappears at once when everything was cached."""
    bar = st.empty()

    def progress(share: float, text: str) -> None:
        bar.progress(min(max(share, 0.0), 1.0), text=md(text))

    sources = st.session_state[SOURCES]
    if sources.images is None:
        try:
            given, problems = directory_images()
        except (KievalInputError, OSError) as exc:  # the --images directory: one message, the rest works
            st.error(md(str(exc) if isinstance(exc, KievalInputError) else f"--images: {exc.strerror}"),
                     icon=":material/error:")
            given, problems = None, ()
        for problem in problems:
            st.warning(md(problem), icon=":material/warning:")
        sources = sources.with_images(given) if given is not None else sources
    ws = compute.build_workspace(store(), session_id(), sources, options, progress)
    bar.empty()
    st.session_state[WORKSPACE] = ws
    return ws


def current() -> Workspace:
    """The workspace the frame prepared in this run."""
    return st.session_state[WORKSPACE]


def view(name: str, fn, *key):
    """A page's derived table, cached per (workspace, view, ``key``) in the store: ``key``
    must hold everything ``fn`` depends on besides the workspace."""
    return compute.view(store(), current(), name, fn, *key)


def ahead(build) -> None:
    """Build views in the background that the next click will likely ask for: ``build(view)``
    with ``view`` as :func:`view` (:class:`kieval_app.compute.Ahead`)."""
    compute.AHEAD.submit(store(), current(), build)


def finish_background(ws: Workspace, slot) -> None:
    """After the page is drawn with its KIEval figures: wait for the peer metrics computed
    in the background, showing their progress in ``slot``, then redraw the page with them.

    Waiting here, at the end of the script, keeps the page usable: any interaction starts
    a new run (the progress update is where Streamlit stops this one), and the new run
    waits for the same background work instead of starting it again. A timer (a fragment
    with ``run_every``) would compete with uploads for reruns and lose some.
    """
    pending = [t for t in ws.pending if not t.done]
    if not pending:
        return
    box = slot.container()
    bar = box.empty()
    box.button("Cancel", key="cancel_peer", icon=":material/cancel:", on_click=cancel_background,
               args=(pending,), help="Stop the peer metrics (KIEval figures stay)")
    while not all(t.done for t in pending):
        done = sum(t.done_steps for t in pending)
        total = sum(t.total_steps for t in pending)
        bar.progress(
            done / max(total, 1),
            text=f"Peer metrics: {done} of {total} family runs "
            f"({', '.join(md(t.label) for t in pending if not t.done)}). KIEval figures are final.",
        )
        time.sleep(0.25)
    slot.empty()
    st.rerun()


def cancel_background(tasks) -> None:
    """The Cancel button of the peer metrics: the tasks stop at their next checkpoint and
    the sidebar keeps the KIEval family only (choosing the others again restarts them)."""
    for task in tasks:
        task.cancelled.set()
    st.session_state["opt_families"] = ["kieval"]
    st.session_state[MESSAGES] = [("warning", "Peer metrics cancelled: choose their families again in the "
                                              "sidebar's options to compute them.")]


def render_messages(ws: Workspace) -> None:
    """How the last uploads ended, then the problems of the current files."""
    messages = st.session_state.get(MESSAGES, [])
    loaded = [text for level, text in messages if level == "success"]
    if loaded:  # one line for every file that went well
        st.success(" · ".join(md(text) for text in loaded), icon=":material/check_circle:")
    for level, text in messages:
        if level == "error":
            st.error(md(text), icon=":material/error:")
        elif level == "warning":
            st.warning(md(text), icon=":material/warning:")
    for message in ws.problems:
        st.error(md(message), icon=":material/error:")


def require_models(ws: Workspace) -> None:
    """Stop the page with a pointer to the Overview page when nothing can be shown."""
    if ws.result is None or not ws.has_models:
        render_messages(ws)
        text = (
            "Fix the ground truth or its options on the Overview page."
            if ws.result is None
            else "No predictions loaded yet: upload one or more prediction files on the Overview page."
        )
        st.info(text)
        st.page_link("app_pages/overview.py", label="Go to the Overview page", icon=":material/upload:")
        st.stop()


def selected_model(ws: Workspace) -> str:
    name = st.session_state.get(MODEL)
    return name if name in ws.model_names else ws.model_names[0]


def document_link(doc_id: str, model: str, label: str | None = None) -> None:
    """A link to the Documents page showing ``doc_id`` of ``model``."""
    st.page_link(
        "app_pages/documents.py",
        label=md(label or doc_id),
        icon=":material/description:",
        query_params={"doc": doc_id, "model": model},
    )


def keep_valid(key: str, options) -> None:
    """Drop remembered choices of a multiselect that the current options no longer hold."""
    chosen = st.session_state.get(key)
    if isinstance(chosen, list):
        allowed = set(options)
        st.session_state[key] = [c for c in chosen if c in allowed]


def upload_limit_mb() -> int:
    """The upload size limit: the file limit of :mod:`kieval_core.limits` (``KIEVAL_MAX_FILE_MB``),
    or Streamlit's ``server.maxUploadSize`` when that is lower (the browser refuses larger)."""
    return int(min(st.get_option("server.maxUploadSize"), Limits.from_env("app").file_mb))


def describe(ws: Workspace) -> str:
    """One line saying what is loaded."""
    sources = ws.sources
    if sources.sample:
        return ""
    n = len(sources.predictions)
    gt = sources.gt
    gt_text = f"{md(gt.name)} ({file_size(gt.size)})" if gt else "none"
    return f"Ground truth {gt_text}, {n} prediction file{'' if n == 1 else 's'}."


def verdicts(ws: Workspace) -> dict[str, dict]:
    """The reviewer's verdicts on this ground truth's suspect labels (a dict the Suspect
    labels page changes in place): kept per ground truth for the session, so a page switch
    or another set of models keeps them; a saved run brings its own when first opened."""
    book = st.session_state.setdefault(VERDICTS, {})
    if ws.saved is not None:
        gt = ws.saved.manifest.get("inputs", {}).get("gt", {}).get("digest", ws.saved.key)
    else:
        gt = ws.sources.gt.digest if ws.sources.gt is not None else ""
    if gt not in book:
        book[gt] = ws.saved.verdicts if ws.saved is not None else {}
    return book[gt]


def save_run() -> None:
    """Save the current evaluation under the runs directory and put its id in the URL, so
    a refresh or a restart can offer to reopen it."""
    ws = current()
    try:
        path = compute.save_workspace(ws, runs_dir(), verdicts(ws))
    except (KievalInputError, KievalOptionError, OSError) as exc:  # e.g. another session saves it now
        st.session_state[MESSAGES] = [("error", f"The run was not saved: {exc}")]
        return
    st.query_params["run"] = ws.key
    st.session_state[SAVED] = {*st.session_state.get(SAVED, ()), path.name}
    st.session_state[MESSAGES] = [("success", f"Saved as run {path.name}; this page's address reopens it.")]


def may_delete(run_id: str) -> bool:
    """Whether this session may delete a saved run: one it saved, or any when the server
    was started with ``--delete-any-run``."""
    return run_id in st.session_state.get(SAVED, ()) or os.environ.get(DELETE_ANY_RUN) == "1"


def open_saved(key: str) -> None:
    if _saved_run(key) is not None:
        st.session_state.update({SOURCES: Sources(None, run=str(runs_dir() / key)), MESSAGES: []})
        st.query_params["run"] = key


def _saved_run(key: object) -> str | None:
    """``key`` if it names a saved run (the id is checked before any file system call)."""
    if not is_run_id(key):
        return None
    return key if (runs_dir() / key / "manifest.json").is_file() else None  # type: ignore[operator]


def arrival() -> tuple[bool, str | None]:
    """Whether this session began from an address naming a document or a run and still
    shows what it began with, and the id of the saved run that address names (if it
    exists)."""
    began = st.session_state.get(ARRIVAL)
    if began is None or began[1] != st.session_state.get(SOURCES):
        return False, None
    return True, began[0]
