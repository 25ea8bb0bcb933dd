"""Uploads: every file ends, visibly, loaded, refused (with the message) or failed.

The uploaders are drop zones: their callbacks only queue the files (``pending``) and
empty the boxes (a new widget key); the frame then reads the queue. Loaded files are
listed by the app, each with a remove button, so what the page lists is always what is
in use. The queue is applied atomically: the new sources, the refused files and the
messages are computed first and written to session state in one step, and the queue is
emptied in that same step. A run interrupted by another rerun (a second upload while
the first is read) therefore loses nothing: the queue is still there for the next run.

A prediction file that shares no document with the ground truth is refused and kept
aside; whenever the ground truth changes, the files kept aside are checked again, and
every loaded prediction file is checked against the new ground truth.
"""

from __future__ import annotations

import streamlit as st

from kieval_core import NoCommonDocuments
from kieval_core.figures.text import file_size, md
from kieval_core.limits import SPECS
from kieval_core.read.page_images import unknown_documents
from kieval_core.read.readers import upload_suffixes

from . import compute
from .session import MESSAGES, PENDING, REFUSED, SOURCES, UPLOADER, session_id, store, upload_limit_mb
from .sources import AppOptions, Source, Sources, sample_sources

FILE_LIMIT = SPECS["file_mb"]
#: What an upload may be named: every suffix a reader reads, and .zip (a directory).
UPLOAD_TYPES = [suffix.removeprefix(".") for suffix in upload_suffixes()]
IMAGE_TYPES = ["zip", "png", "jpg", "jpeg", "webp", "tif", "tiff", "pdf"]


def gt_key() -> str:
    return f"upload_gt_{st.session_state[UPLOADER]}"


def pred_key() -> str:
    return f"upload_pred_{st.session_state[UPLOADER]}"


def images_key() -> str:
    return f"upload_images_{st.session_state[UPLOADER]}"


def _queue(role: str, files) -> None:
    if not files:
        # A box reported "no files" (the browser sends the other box's empty state with an
        # upload): changing the keys now would replace the other box mid-upload and lose
        # its file, so nothing happens.
        return
    limit = upload_limit_mb()
    queued, messages = [], []
    for file in files:
        if file.size > limit * 1024 * 1024:
            messages.append(
                (
                    "error",
                    f"{file.name}: refused, the file is {file_size(file.size)}; the "
                    f"upload limit is {limit} MB (the server's {FILE_LIMIT.env} raises it)",
                )
            )
            continue
        queued.append((role, Source.of(file.name, file.getvalue())))
    st.session_state[PENDING] = [*st.session_state[PENDING], *queued]
    st.session_state[MESSAGES] = messages
    st.session_state[UPLOADER] += 1  # empty the boxes: the page lists what is loaded


def on_gt_upload() -> None:
    file = st.session_state.get(gt_key())
    if file is not None:
        _queue("gt", [file])


def on_prediction_upload() -> None:
    _queue("pred", st.session_state.get(pred_key()) or [])


def on_images_upload() -> None:
    file = st.session_state.get(images_key())
    if file is not None:
        _queue("images", [file])


def cancel_pending() -> None:
    """The Cancel button beside the progress of uploads: the queue is dropped and nothing of
    the batch is loaded; the session keeps what it had. Streamlit starts the new run at
    once (fast reruns) and stops the old one at its next Streamlit call: a file waiting for
    its turn leaves the queue within half a second; a file being read or scored (in a
    child process, :func:`compute.read_dataset`, :func:`compute.score`,
    :func:`compute.page_images`) has its work stopped, its CPU and memory freed, within a
    quarter of a second."""
    names = [source.name for _, source in st.session_state[PENDING]]
    st.session_state[PENDING] = []
    st.session_state[MESSAGES] = [("warning", f"cancelled: {', '.join(names)} not loaded")]


def process_pending(options: AppOptions, show, cancel_slot=None) -> None:
    """Read the queued uploads; ``show(share, text)`` reports progress; ``cancel_slot``
    (a container) shows a Cancel button meanwhile.

    An upload is admitted first (:func:`compute.admit_upload`): one the session cannot
    hold, or the server cannot hold now, is refused with the limit or the server's figures
    and not started."""
    pending = list(st.session_state[PENDING])
    if not pending:
        return
    if cancel_slot is not None:
        cancel_slot.button("Cancel", key="cancel_uploads", icon=":material/cancel:", on_click=cancel_pending,
                           help="Stop reading these files (what was loaded before stays)")
    sources: Sources = st.session_state[SOURCES]
    refused: list[tuple[Source, str]] = list(st.session_state[REFUSED])
    messages = list(st.session_state[MESSAGES])
    shared = store()
    for i, (role, source) in enumerate(pending):
        text = f"Reading {source.name} ({file_size(source.size)})"
        show(i / len(pending), text)
        waiting = compute.while_waiting(show, i / len(pending), text)
        try:
            if role == "images":
                sources, notes = _new_images(sources, source, options, waiting)
                messages += notes
                continue
            compute.admit_upload(shared, session_id(), sources, source, options)
            if role == "gt":
                compute.read_dataset(shared, source, options, "gt", waiting)
                sources, refused, notes = _new_ground_truth(sources, source, refused, options, waiting)
                messages += [("success", f"{source.name}: loaded as the ground truth"), *notes]
                continue
            if sources.gt is not None:  # scored now (cached): the workspace finds it scored
                compute.score(shared, sources.gt, source, options, waiting)
            sources = sources.with_predictions((source,))
            refused = [(s, m) for s, m in refused if s.name != source.name]
            messages.append(("success", f"{source.name}: loaded"))
        except Exception as exc:  # one clear message per file; never a traceback
            message = compute.read_message(source, exc)
            if role == "pred" and isinstance(exc, NoCommonDocuments):
                refused = [(s, m) for s, m in refused if s.name != source.name] + [(source, message)]
                message += " It is kept aside and checked again when the ground truth changes."
            messages.append(("error", f"refused: {message}"))
    show(1.0, "Scoring")
    if cancel_slot is not None:
        cancel_slot.empty()
    st.session_state.update({SOURCES: sources, REFUSED: refused, MESSAGES: messages, PENDING: []})


def _new_ground_truth(sources: Sources, gt: Source, refused: list, options: AppOptions,
                      waiting: compute.Waiting | None = None):
    """The new ground truth with every prediction that fits it: the loaded ones (of an
    upload, not a sample) and the ones kept aside."""
    candidates = [*([] if sources.sample else sources.predictions), *(s for s, _ in refused)]
    kept, still_refused, notes = [], [], []
    for pred in candidates:
        try:
            compute.score(store(), gt, pred, options, waiting)
        except Exception as exc:
            still_refused.append((pred, compute.read_message(pred, exc)))
            notes.append(("warning", f"{pred.name}: set aside, it does not fit the new ground truth"))
            continue
        kept.append(pred)
        if pred in {s for s, _ in refused}:
            notes.append(("success", f"{pred.name}: refused before, fits the new ground truth: loaded"))
    images = None if sources.sample else sources.images
    return Sources(gt, tuple(kept), images=images), still_refused, notes


def _new_images(sources: Sources, source: Source, options: AppOptions,
                waiting: compute.Waiting | None = None) -> tuple[Sources, list[tuple[str, str]]]:
    """Page images read once per content: loaded when any page is usable, with one warning
    per file or document that is not (raises for an archive that cannot be read)."""
    held = store().held_bytes(session_id()) + sources.size + source.size
    options.limits.check("session_mb", held, source.name, "held by this session with it")
    images = compute.page_images(store(), source, waiting)
    notes = [("warning", problem) for problem in images.problems]
    shown = list(images.pages)
    if sources.gt is not None:
        gt_ids = compute.read_dataset(store(), sources.gt, options, "gt").doc_ids
        notes += [("warning", problem) for problem in unknown_documents(images, gt_ids)]
        shown = [d for d in shown if d in set(gt_ids)]
    if not shown:
        return sources, [("error", f"refused: {source.name}: no usable page image of a loaded document"),
                         *notes]
    pages = sum(images.n_pages(d) for d in shown)
    loaded = f"{source.name}: {pages:,} page(s) of {len(shown):,} document(s) loaded"
    return sources.with_images(source), [("success", loaded), *notes]


def remove_prediction(name: str) -> None:
    st.session_state[SOURCES] = st.session_state[SOURCES].without_prediction(name)
    st.session_state[MESSAGES] = [("success", f"{name}: removed")]


def use_sample(key: str) -> None:
    st.session_state.update({SOURCES: sample_sources(key), MESSAGES: [], PENDING: [], REFUSED: []})


def render_uploaders() -> None:
    """The two drop zones, and what is loaded, each file with a remove button."""
    left, right = st.columns(2)
    left.file_uploader(
        "Ground truth",
        type=UPLOAD_TYPES,
        key=gt_key(),
        on_change=on_gt_upload,
        help="One file with every document (JSON, JSONL, CSV/TSV/Parquet long table, CORD), or a .zip "
        "of one file per document (KIEval CSV, JSON).",
    )
    right.file_uploader(
        "Predictions",
        type=UPLOAD_TYPES,
        key=pred_key(),
        accept_multiple_files=True,
        on_change=on_prediction_upload,
        help="One file per model; the model is named after the file. Add more files at any time.",
    )
    st.file_uploader(
        "Page images (optional)",
        type=IMAGE_TYPES,
        key=images_key(),
        on_change=on_images_upload,
        help="A .zip of DOC_ID.png / .jpg / .webp / .tif, DOC_ID/PAGE.png or DOC_ID.pdf, or one such file. "
        "The Documents page draws the boxes of the files on them.",
    )
    caps = compute.image_limits()
    st.caption(
        f"Up to {upload_limit_mb()} MB per file. Formats are detected automatically; reading "
        "and scoring options are in the sidebar. A directory of per-document files is "
        f"uploaded as one .zip. Page images: up to {caps.max_pixels:,} pixels a page and "
        f"{caps.max_pages} pages a PDF."
    )


def render_loaded(sources: Sources) -> None:
    """The files in use, with a remove button per prediction file."""
    if sources.sample or sources.gt is None:
        return
    names = sources.model_names()
    # each button as wide as its name, wrapping onto more lines: in four equal columns a
    # 1,024 px window cut qwen2.5vl_lora and qwen2.5vl_zeroshot both to "qwen2.5v..."
    with st.container(horizontal=True, gap="small"):
        for i, (name, source) in enumerate(zip(names, sources.predictions, strict=True)):
            st.button(
                md(name),
                key=f"remove_{i}",
                icon=":material/close:",
                help=f"Remove {md(source.name)}",
                on_click=remove_prediction,
                args=(source.name,),
                width="content",
            )
