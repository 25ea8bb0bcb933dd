"""Views built ahead (:class:`kieval_app.compute.Ahead`): what is built is what the page
asks for next, the queue is bounded, a failed build costs nothing but itself."""

from __future__ import annotations

import json
import threading
import time
import uuid
from types import SimpleNamespace

from test_pages import open_page, started, upload, workspace

from kieval_app import compute, session
from kieval_app.serving.store import Store
from kieval_core.figures import documents

WS = SimpleNamespace(key="workspace", result=None)  # compute.view reads its key and its result's peers


def test_a_view_built_ahead_is_what_the_page_gets_without_building_it_again():
    store, built = Store(idle_bytes=10**9), []
    ahead = compute.Ahead()
    future = ahead.submit(store, WS, lambda view: view("pairs", lambda: built.append(1) or "P", "m", "d2"))
    future.result(timeout=10)
    assert compute.view(store, WS, "pairs", lambda: "built again", "m", "d2") == "P"
    assert built == [1]
    assert compute.view(store, WS, "pairs", lambda: "other", "m", "d3") == "other"  # another key


def test_at_most_queue_builds_wait_and_the_rest_are_not_queued():
    store, release = Store(idle_bytes=10**9), threading.Event()
    ahead = compute.Ahead(queue=2)
    first = ahead.submit(store, WS, lambda view: release.wait(10))
    second = ahead.submit(store, WS, lambda view: None)
    assert first is not None and second is not None
    assert ahead.submit(store, WS, lambda view: None) is None  # one running, one waiting: full
    release.set()
    first.result(timeout=10), second.result(timeout=10)
    assert ahead.submit(store, WS, lambda view: None).result(timeout=10) is None  # room again


def test_a_failed_build_is_dropped_and_the_page_builds_it_itself():
    store = Store(idle_bytes=10**9)
    ahead = compute.Ahead(queue=1)

    def fails(view):
        view("pairs", lambda: 1 / 0, "m", "d2")

    assert ahead.submit(store, WS, fails).result(timeout=10) is None  # no exception escapes
    assert compute.view(store, WS, "pairs", lambda: "built", "m", "d2") == "built"
    assert ahead.submit(store, WS, lambda view: None).result(timeout=10) is None  # its place is free


def _receipts(tag: str, wrong: bool) -> bytes:
    """Three receipts with boxed menu lines; ``tag`` makes the content (the workspace) new."""
    lines = []
    for d in range(3):
        menu = [{"nm": {"value": f"item {d}{i}{'x' if wrong and i == 1 else ''}",
                        "bbox": [10, 40 * i, 90, 40 * i + 30]},
                 "price": {"value": f"{i}.00", "bbox": [100, 40 * i, 150, 40 * i + 30]}} for i in range(3)]
        lines.append(json.dumps({"doc_id": f"{tag}-{d}", "fields": {"menu": menu}}))
    return ("\n".join(lines) + "\n").encode()


def test_the_documents_page_builds_the_next_document_ahead(monkeypatch):
    built: list[tuple[str, str, str]] = []  # (what, document, thread)
    parts = {"group_pairs", "document_view_tables", "document_figure", "matching_figure", "alignment_rows"}
    for what in parts:
        original = getattr(documents, what)

        def counted(*args, _what=what, _original=original, **kwargs):
            doc = kwargs.get("doc", args[1] if len(args) > 1 else None)
            built.append((_what, doc, threading.current_thread().name))
            return _original(*args, **kwargs)

        monkeypatch.setattr(documents, what, counted)
    tag = uuid.uuid4().hex[:8]
    at = started()
    upload(at, "gt", ("gt.jsonl", _receipts(tag, False)))
    upload(at, "pred", ("model.jsonl", _receipts(tag, True)))
    at.sidebar.selectbox(key="model").set_value("model").run()
    open_page(at, "documents")
    shown = at.session_state[session.DOC]
    while (drained := compute.AHEAD.submit(session.store(), workspace(at), lambda view: None)) is None:
        time.sleep(0.05)
    drained.result(timeout=60)
    at.button(key="docs_next").click().run()
    assert not at.exception
    following = at.session_state[session.DOC]
    assert following != shown
    of_next = [(what, thread) for what, doc, thread in built if doc == following]
    assert {what for what, _ in of_next} == parts
    assert all(thread.startswith("kieval-ahead") for _, thread in of_next), of_next  # none on the click
