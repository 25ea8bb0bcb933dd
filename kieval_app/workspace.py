"""The Streamlit boundary: uploads, options, cached loading and evaluation, shared state.

Everything that touches ``st.session_state`` or a cache lives here; the pages call
:func:`current` and render. Computation is cached with ``st.cache_data`` keyed by the
SHA-256 digest of the file content (plus the options), never by file name alone.

Session state (besides widget values) holds only these keys:

==================  ===============================================================
``sources``         :class:`~kieval_app.sources.Sources`: the files in use (the
                    embedded sample until the user uploads)
``pending``         uploads waiting to be read, as ``[(role, Source)]``; the upload
                    callbacks fill it, :func:`prepare` empties it
``load_errors``     messages of the last upload or option change that failed
``upload_seen``     ``{file_id: file name}`` taken from the predictions uploader
``workspace``       this run's :class:`~kieval_app.results.Workspace`, set by the frame
``doc``             the document shown on the Documents page
``url``             ``{"doc": ..., "model": ...}`` as last written to the URL, so a new
                    deep link can be told from the app's own query parameters
==================  ===============================================================

Widget keys: ``opt_*`` (sidebar options), ``model`` (sidebar model picker),
``upload_gt`` / ``upload_pred`` (main page), and ``docs_*``, ``errors_*``, ``auto_*``,
``cmp_*`` on the pages.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging

import streamlit as st

from kieval_core import (
    FORMATS,
    KievalInputError,
    LoadOptions,
    ModelResult,
    evaluate,
    load_bytes,
)
from kieval_core import registry as metric_registry
from kieval_core.evaluate import check_overlap
from kieval_core.model import Dataset

from . import compare
from .results import Workspace, combine, warm
from .sources import AppOptions, Source, Sources, parse_aliases, parse_keys, sample_sources
from .text import file_size, md

LOG = logging.getLogger("kieval_app")

SOURCES, PENDING, LOAD_ERRORS, UPLOAD_SEEN = "sources", "pending", "load_errors", "upload_seen"
WORKSPACE, DOC, URL = "workspace", "doc", "url"
UPLOAD_GT, UPLOAD_PRED, MODEL = "upload_gt", "upload_pred", "model"
OPT_TARGET = "opt_target"
UPLOAD_TYPES = ["json", "jsonl", "ndjson", "csv", "tsv", "parquet", "zip", "bio"]

_OPTION_DEFAULTS = {
    "opt_gt_format": "auto",
    "opt_pred_format": "auto",
    "opt_key": "",
    "opt_aliases": "",
    "opt_ignore": "",
    "opt_related": "",
    "opt_casefold": False,
    "opt_numbers": False,
    OPT_TARGET: 0.95,
    "opt_cer": 0.30,
    "opt_structure": "canonical",
}


def init_state() -> None:
    """Defaults on a session's first run: the sample data and default options."""
    st.session_state.setdefault(SOURCES, sample_sources())
    st.session_state.setdefault(PENDING, [])
    st.session_state.setdefault(LOAD_ERRORS, [])
    st.session_state.setdefault(UPLOAD_SEEN, {})
    st.session_state.setdefault(URL, {})
    for key, value in _OPTION_DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.session_state.setdefault("opt_families", list(metric_registry.FAMILIES))


def upload_limit_mb() -> int:
    """The upload size limit (``server.maxUploadSize`` in .streamlit/config.toml)."""
    return int(st.get_option("server.maxUploadSize"))


# --- uploads ---------------------------------------------------------------------------


def _take(file, role: str) -> Source | None:
    """An uploaded file as a pending source, or None (and a message) when too large."""
    limit = upload_limit_mb()
    if file.size > limit * 1024 * 1024:
        st.session_state[LOAD_ERRORS].append(
            f"{file.name}: the file is {file_size(file.size)}; the upload limit is {limit} MB"
        )
        return None
    return Source.of(file.name, file.getvalue())


def on_gt_upload() -> None:
    """Callback of the ground-truth uploader: queue the new file for reading."""
    file = st.session_state.get(UPLOAD_GT)
    st.session_state[LOAD_ERRORS] = []
    if file is not None and (source := _take(file, "gt")) is not None:
        st.session_state[PENDING] = [*st.session_state[PENDING], ("gt", source)]


def on_prediction_upload() -> None:
    """Callback of the predictions uploader: queue added files, drop removed ones."""
    files = st.session_state.get(UPLOAD_PRED) or []
    seen: dict[str, str] = st.session_state[UPLOAD_SEEN]
    st.session_state[LOAD_ERRORS] = []
    current = {f.file_id for f in files}
    for file_id in [i for i in seen if i not in current]:
        st.session_state[SOURCES] = st.session_state[SOURCES].without_prediction(seen.pop(file_id))
    for file in files:
        if file.file_id in seen:
            continue
        seen[file.file_id] = file.name
        if (source := _take(file, "pred")) is not None:
            st.session_state[PENDING] = [*st.session_state[PENDING], ("pred", source)]


def forget_uploader_if_reset() -> None:
    """Call before drawing the predictions uploader: after a page switch Streamlit
    recreates it empty, so the files it showed before must not count as removed."""
    if UPLOAD_PRED not in st.session_state:
        st.session_state[UPLOAD_SEEN] = {}


def remove_prediction(name: str) -> None:
    st.session_state[SOURCES] = st.session_state[SOURCES].without_prediction(name)
    st.session_state[LOAD_ERRORS] = []


def use_sample() -> None:
    st.session_state[SOURCES] = sample_sources()
    st.session_state[LOAD_ERRORS] = []
    st.session_state[PENDING] = []


# --- options ---------------------------------------------------------------------------


def render_options() -> AppOptions:
    """The sidebar's options; returns them as one value. Bad alias text is reported."""
    with st.sidebar.expander("Reading files", expanded=False):
        st.selectbox(
            "Ground-truth format",
            FORMATS,
            key="opt_gt_format",
            persist_state="session",
            help="auto detects the format from the name and content of each file",
        )
        st.selectbox("Predictions format", FORMATS, key="opt_pred_format", persist_state="session")
        st.text_input(
            "Structure key (JSONL)",
            key="opt_key",
            placeholder="auto",
            persist_state="session",
            help="Key under which each JSONL record holds its fields; auto tries "
            "fields, gt_parse, parse, prediction, predictions, output",
        )
        st.text_area(
            "Key aliases",
            key="opt_aliases",
            placeholder="subtotal=sub_total",
            persist_state="session",
            help="Rename keys while reading nested JSON: one old=new per line",
        )
        st.text_input(
            "Ignore keys",
            key="opt_ignore",
            placeholder="split",
            persist_state="session",
            help="Top-level record keys that are metadata, not fields (comma-separated)",
        )
        st.text_input(
            "Related fields (format lists)",
            key="opt_related",
            placeholder="date, description, amount",
            persist_state="session",
            help="Fields holding |-separated parallel lists; their i-th values form row i",
        )
    with st.sidebar.expander("Scoring", expanded=False):
        st.checkbox("Ignore case", key="opt_casefold", persist_state="session")
        st.checkbox(
            "Ignore separators inside numbers (45,500 = 45500)",
            key="opt_numbers",
            persist_state="session",
        )
        st.number_input(
            "Target accuracy",
            min_value=0.0,
            max_value=1.0,
            step=0.01,
            format="%.3f",
            key=OPT_TARGET,
            persist_state="session",
            help="Accuracy after review the automation threshold must reach",
        )
        families = list(metric_registry.FAMILIES)
        if len(families) > 1:
            st.multiselect(
                "Metric families",
                families,
                format_func=lambda f: f"{f}: {metric_registry.FAMILIES[f]}",
                key="opt_families",
                persist_state="session",
                help="KIEval is always computed. Peer metrics cost time on large uploads "
                "(nTED most: about 2 s per 1,000 documents).",
            )
            st.number_input(
                "OINerval CER threshold",
                min_value=0.0,
                max_value=1.0,
                step=0.05,
                format="%.2f",
                key="opt_cer",
                persist_state="session",
                help="An entity counts as found when its character error rate is at most this",
            )
            st.selectbox(
                "ANLS* and nTED score",
                ["canonical", "uploaded"],
                format_func={
                    "canonical": "the entities, re-nested the same way on both sides",
                    "uploaded": "the files' own nested structures",
                }.get,
                key="opt_structure",
                persist_state="session",
            )
    try:
        aliases = parse_aliases(st.session_state["opt_aliases"])
    except ValueError as exc:
        st.sidebar.error(f"Key aliases ignored: {md(exc)}")
        aliases = ()
    wanted = set(st.session_state.get("opt_families", []))
    chosen = [f for f in metric_registry.FAMILIES if f in wanted]
    return AppOptions(
        gt_format=st.session_state["opt_gt_format"],
        pred_format=st.session_state["opt_pred_format"],
        key=st.session_state["opt_key"].strip() or None,
        aliases=aliases,
        ignore_keys=parse_keys(st.session_state["opt_ignore"]),
        related_fields=parse_keys(st.session_state["opt_related"]),
        casefold=st.session_state["opt_casefold"],
        number_punctuation=st.session_state["opt_numbers"],
        families=tuple(chosen) or ("kieval",),
        target_accuracy=float(st.session_state[OPT_TARGET]),
        cer_threshold=float(st.session_state["opt_cer"]),
        structure=st.session_state["opt_structure"],
    )


def target_input(key: str, label: str = "Target accuracy after review") -> float:
    """A second input for the sidebar's target accuracy (e.g. on the Automation page);
    both stay in sync."""
    st.session_state[key] = st.session_state[OPT_TARGET]

    def copy_back() -> None:
        st.session_state[OPT_TARGET] = st.session_state[key]

    st.number_input(
        label, min_value=0.0, max_value=1.0, step=0.01, format="%.3f", key=key, on_change=copy_back
    )
    return float(st.session_state[key])


# --- cached loading and evaluation -------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=64)
def _load(digest: str, file_name: str, options: LoadOptions, name: str, _data: bytes) -> Dataset:
    """Read one file; cached by content digest, file name (format, messages) and options."""
    return load_bytes(_data, file_name, options, name=name)


@st.cache_data(show_spinner=False, max_entries=16)
def _load_gt(digest: str, file_name: str, options: LoadOptions, _data: bytes) -> Dataset:
    """The ground truth as the pages need it: without the nested structures (those only
    feed peer metrics during evaluation), so a cache hit copies little."""
    full = _load(digest, file_name, options, "ground truth", _data=_data)
    return dataclasses.replace(full, structures=None)


@st.cache_data(show_spinner=False, max_entries=32)
def _evaluate_one(
    gt_digest: str,
    gt_file: str,
    gt_options: LoadOptions,
    pred_digest: str,
    pred_file: str,
    pred_options: LoadOptions,
    model_name: str,
    normalizer,
    families: tuple[str, ...],
    peer_options,
    _gt_data: bytes,
    _pred_data: bytes,
) -> ModelResult:
    """Evaluate one prediction file against the ground truth, with its tables computed.

    Returns the model's result alone (not the ground truth), so a cache hit is cheap.
    """
    gt = _load(gt_digest, gt_file, gt_options, "ground truth", _data=_gt_data)
    pred = _load(pred_digest, pred_file, pred_options, model_name, _data=_pred_data)
    result = evaluate(
        gt, {model_name: pred}, normalizer=normalizer, metrics=families, peer_options=peer_options
    )
    return warm(result.models[model_name])


def _read_message(source: Source, exc: Exception) -> str:
    if isinstance(exc, KievalInputError):
        return str(exc)
    LOG.exception("unexpected error while reading %s", source.name)
    return f"{source.name}: could not be read ({type(exc).__name__}: {exc})"


def _accept_pending(options: AppOptions, progress) -> None:
    """Read queued uploads; readable ones replace or join the sources, others get a message."""
    pending = st.session_state[PENDING]
    if not pending:
        return
    st.session_state[PENDING] = []
    sources: Sources = st.session_state[SOURCES]
    added: list[Source] = []
    for i, (role, source) in enumerate(pending):
        progress.progress(
            i / len(pending), text=f"Reading {md(source.name)} ({file_size(source.size)})"
        )
        try:
            dataset = _load(
                source.digest,
                source.name,
                options.load_options(role),
                source.stem,
                _data=source.data,
            )
            if role != "gt" and sources.gt is not None:  # the wrong file, most likely
                gt = sources.gt
                check_overlap(_load_gt(gt.digest, gt.name, options.load_options("gt"), _data=gt.data),
                              dataset)
        except Exception as exc:  # one clear message per bad file; never a traceback
            st.session_state[LOAD_ERRORS].append(_read_message(source, exc))
            continue
        if role == "gt":
            sources = sources.with_gt(source)
        else:
            added.append(source)
    if added:
        sources = sources.with_predictions(tuple(added))
    st.session_state[SOURCES] = sources


def _key(sources: Sources, options: AppOptions) -> str:
    parts = [repr(options), sources.gt.digest if sources.gt else ""]
    parts += [
        f"{n}:{p.digest}" for n, p in zip(sources.model_names(), sources.predictions, strict=True)
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def prepare(options: AppOptions) -> Workspace:
    """Read pending uploads and evaluate every loaded model (cached); called by the frame.

    A progress bar shows while files are read or models evaluated; cached work returns
    at once and the bar disappears before it is drawn.
    """
    progress = st.empty()
    _accept_pending(options, progress)
    sources: Sources = st.session_state[SOURCES]
    if sources.gt is None:
        return Workspace(sources, options, None, problems=("No ground truth loaded.",))
    gt = sources.gt
    gt_options = options.load_options("gt")
    try:
        progress.progress(0.0, text=f"Reading {md(gt.name)} ({file_size(gt.size)})")
        gt_set = _load_gt(gt.digest, gt.name, gt_options, _data=gt.data)
    except Exception as exc:
        progress.empty()
        return Workspace(sources, options, None, problems=(_read_message(gt, exc),))
    results, files, problems = [], [("ground truth", gt.name, gt.size)], []
    pred_options = options.load_options("pred")
    names = sources.model_names()
    for i, (name, source) in enumerate(zip(names, sources.predictions, strict=True)):
        progress.progress(
            (i + 0.5) / (len(names) + 0.5),
            text=f"Evaluating {md(name)} ({i + 1} of {len(names)}, {file_size(source.size)}; "
            f"{len(options.families)} metric famil{'y' if len(options.families) == 1 else 'ies'})",
        )
        try:
            results.append(
                _evaluate_one(
                    gt.digest,
                    gt.name,
                    gt_options,
                    source.digest,
                    source.name,
                    pred_options,
                    name,
                    options.normalizer,
                    options.families,
                    options.peer_options,
                    _gt_data=gt.data,
                    _pred_data=source.data,
                )
            )
        except Exception as exc:
            problems.append(_read_message(source, exc))
            continue
        files.append(("predictions", source.name, source.size))
    progress.empty()
    families = metric_registry.resolve_families(options.families)
    result = combine(gt_set, results, options, families)
    return Workspace(
        sources, options, result, tuple(files), tuple(problems), _key(sources, options)
    )


# --- what pages share ------------------------------------------------------------------


def current() -> Workspace:
    """The workspace the frame prepared in this run."""
    return st.session_state[WORKSPACE]


def render_problems(ws: Workspace) -> None:
    """One ``st.error`` per file that failed, naming the file and the problem."""
    for message in [*st.session_state.get(LOAD_ERRORS, []), *ws.problems]:
        st.error(md(message), icon=":material/error:")


def require_models(ws: Workspace) -> None:
    """Stop the page with a pointer to the Overview page when nothing can be shown."""
    if ws.result is None:
        render_problems(ws)
        st.info("Fix the ground truth or its options on the Overview page.")
        st.page_link(
            "app_pages/overview.py", label="Go to the Overview page", icon=":material/upload:"
        )
        st.stop()
    if not ws.has_models:
        st.info(
            "No predictions loaded yet: upload one or more prediction files on the Overview page."
        )
        st.page_link(
            "app_pages/overview.py", label="Go to the Overview page", icon=":material/upload:"
        )
        st.stop()


def adopt_model_from_url(ws: Workspace) -> None:
    """A deep link's ``?model=`` selects that model (once; the user's choice wins after)."""
    wanted = st.query_params.get("model")
    if wanted and wanted in ws.model_names and wanted != st.session_state[URL].get("model"):
        st.session_state[MODEL] = wanted
        st.session_state[URL] = {**st.session_state[URL], "model": wanted}


def render_model_picker(ws: Workspace) -> str | None:
    """The model choice shared by the single-model pages (drawn in the sidebar)."""
    names = ws.model_names
    if not names:
        return None
    if st.session_state.get(MODEL) not in names:
        st.session_state[MODEL] = names[0]
    st.selectbox(
        "Model",
        names,
        key=MODEL,
        persist_state="session",
        help="The model shown on the Documents, Errors and Automation pages",
    )
    return st.session_state[MODEL]


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


@st.cache_data(show_spinner="Resampling documents...", max_entries=32)
def paired_bootstrap(
    key: str, name_a: str, name_b: str, n_resamples: int, seed: int, _model_a, _model_b
):
    """:func:`kieval_app.compare.paired_bootstrap`, cached on the workspace key and names."""
    return compare.paired_bootstrap(_model_a, _model_b, n_resamples=n_resamples, seed=seed)


def render_data_summary(ws: Workspace) -> None:
    """One line saying what is loaded (drawn in the sidebar by the frame)."""
    sources = ws.sources
    if sources.sample:
        st.caption(
            "Data: built-in sample, 100 CORD v2 receipts (CC-BY-4.0) and three "
            "**simulated** models."
        )
    elif sources.gt is not None:
        n = len(sources.predictions)
        st.caption(
            f"Data: ground truth {md(sources.gt.name)}, {n} prediction file{'' if n == 1 else 's'}."
        )


def keep_valid(key: str, options) -> None:
    """Drop remembered choices of a multiselect that the current options no longer hold
    (e.g. entity types of another model)."""
    chosen = st.session_state.get(key)
    if isinstance(chosen, list):
        allowed = set(options)
        st.session_state[key] = [c for c in chosen if c in allowed]
