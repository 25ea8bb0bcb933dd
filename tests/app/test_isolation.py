"""Heavy reads in a child process the server can kill (issue 22: long work in the page can be
cancelled; other sessions' clicks beside a read): the runner gives back the value and every
error as itself, a cancelled wait leaves no process behind, a dead child is one message, and
the app's heavy reads run there (the store's heavy threshold set low to use small files)."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import signal
import time
from pathlib import Path

import isolated_work
import pandas as pd
import psutil
import pytest
from builders import replicated_jsonl

import kieval_app
import kieval_core
from kieval_app import compute
from kieval_app.serving import isolation
from kieval_app.serving.isolation import ChildDied, run_isolated
from kieval_app.serving.store import Busy, Store, TaskCancelled
from kieval_app.sources import AppOptions, Source
from kieval_core import NoCommonDocuments, load_bytes
from kieval_core.exceptions import (
    KievalInputError,
    KievalOptionError,
    UndefinedMetricWarning,
    UnscoredKeyWarning,
)
from kieval_core.keys import KeyCounts
from kieval_core.limits import LimitExceeded
from kieval_core.output.outputs import Interrupted
from kieval_core.read.formats.jsontext import NeedsSourceText
from kieval_core.read.locations import BadLocation
from kieval_core.result.scoring import peer_metrics

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_GT = ROOT / "sample_data" / "cord_v2_gt.jsonl"

#: One instance of every exception class of the project (a new class must be added here).
EXAMPLES = {
    KievalInputError: KievalInputError("pred.jsonl", "line 3", "invalid JSON"),
    NoCommonDocuments: NoCommonDocuments("pred.jsonl", None, "no document in common with the ground truth"),
    LimitExceeded: LimitExceeded("bomb.zip", "uncompressed_mb", "1,000 MiB uncompressed", 512),
    KievalOptionError: KievalOptionError("unknown normaliser 'x'"),
    UndefinedMetricWarning: UndefinedMetricWarning("group F1 is 0/0"),
    UnscoredKeyWarning: UnscoredKeyWarning("'split': in no prediction file, set aside"),
    BadLocation: BadLocation("'x' is not a number"),
    NeedsSourceText: NeedsSourceText(),
    Interrupted: Interrupted(signal.SIGTERM),
    Busy: Busy("the server is busy (2 sessions, 900 of 1,000 MB in use)"),
    TaskCancelled: TaskCancelled("peer metrics of m"),
    ChildDied: ChildDied(-9),
}


def _project_exceptions() -> set[type]:
    """Every public exception class defined in kieval_core and kieval_app."""
    found = set()
    for package in (kieval_core, kieval_app):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            found |= {c for name, c in vars(module).items() if inspect.isclass(c)
                      and issubclass(c, BaseException) and c.__module__ == module.__name__
                      and not name.startswith("_")}
    return found


def _gone(pid: int, within_s: float = 2.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return False  # ended but never reaped would still be a leak
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _readers() -> list[psutil.Process]:
    """The children the fork server of this process runs that are at work (the reads in
    progress; the spare ones wait for work)."""
    spare = {child.process.pid for child in isolation._spare}
    servers = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    return [c for s in servers for c in s.children() if c.pid not in spare]


class Stopped(Exception):
    """What Streamlit raises from a cancelled run's progress update, as far as the app sees."""


def _stop_seeing(seen: list[psutil.Process]):
    """A ``waiting`` callback that notes the reading children in ``seen``, then stops the run
    (the upload's Cancel)."""

    def waiting(ahead: int) -> None:
        seen.extend(_readers())
        raise Stopped

    return waiting


def test_the_child_gives_back_the_value():
    assert run_isolated(divmod, 7, 2) == (3, 1)
    assert run_isolated(int, "ff", base=16) == 255
    data = SAMPLE_GT.read_bytes()
    read = run_isolated(load_bytes, data, "gt.jsonl", name="ground truth")
    assert read.doc_ids == load_bytes(data, "gt.jsonl", name="ground truth").doc_ids


def test_the_child_runs_nicer_than_the_server():
    assert run_isolated(os.nice, 0) == min(os.nice(0) + isolation.NICE, 19)


def test_every_exception_of_the_project_is_listed():
    assert _project_exceptions() == set(EXAMPLES)


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda k: k.__name__)
def test_an_exception_raised_in_the_child_comes_back_as_itself(kind):
    """Same type, same message, same parts: every message shown today stays as it is."""
    exc = EXAMPLES[kind]
    with pytest.raises(BaseException) as info:
        run_isolated(isolated_work.raise_it, exc)
    assert type(info.value) is kind
    assert str(info.value) == str(exc)
    assert vars(info.value) == vars(exc)


def test_an_exception_pickle_cannot_rebuild_comes_back_named():
    with pytest.raises(RuntimeError, match=r"^Unrebuildable: 1 and 2$"):
        run_isolated(isolated_work.raise_unrebuildable)


def test_a_cancelled_wait_leaves_no_child(tmp_path):
    """``tick`` raising (Streamlit stopping a cancelled run) ends the wait and the child."""
    path = tmp_path / "pid"

    class Cancelled(Exception):
        pass

    def tick():
        if path.exists() and path.read_text():
            raise Cancelled

    started = time.monotonic()
    with pytest.raises(Cancelled):
        run_isolated(isolated_work.sleep_after_writing_pid, str(path), tick=tick)
    assert time.monotonic() - started < 10  # not the child's 60 s
    assert _gone(int(path.read_text()))


def test_what_the_child_reports_reaches_the_progress_callback():
    steps: list[tuple[int, int]] = []
    assert run_isolated(isolated_work.report_steps, 3, progress=lambda *step: steps.append(step)) == "done"
    assert steps == [(1, 3), (2, 3), (3, 3)]
    assert run_isolated(isolated_work.report_steps, 2) == "done"  # nobody listening: nothing lost

@pytest.mark.parametrize(("work", "how"), [
    ((os._exit, 3), "exit code 3"),
    ((isolated_work.kill_self,), "killed by SIGKILL, perhaps for lack of memory"),
])
def test_a_child_that_dies_gives_one_clear_message(work, how):
    with pytest.raises(ChildDied) as info:
        run_isolated(*work)
    assert str(info.value) == f"its process ended unexpectedly ({how})"
    message = compute.read_message(Source.of("gt.jsonl", b""), info.value)
    assert message == f"gt.jsonl: could not be read, its process ended unexpectedly ({how})"


# --- the app's reads ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_gt(tmp_path_factory) -> Source:
    """A ground truth that takes about a second to read (heavy for a store whose heavy
    threshold is 1 MiB)."""
    path = replicated_jsonl(SAMPLE_GT, tmp_path_factory.mktemp("gt") / "big_gt.jsonl", 12)
    return Source.of(path.name, path.read_bytes())


def test_a_heavy_read_runs_in_a_child(big_gt):
    store = Store(heavy_bytes=2**20)
    calls: list[int] = []
    read = compute.read_dataset(store, big_gt, AppOptions(), "gt", calls.append)
    assert calls and set(calls) == {0}  # told while its child read the file
    assert read.doc_ids == load_bytes(big_gt.data, big_gt.name, AppOptions().load_options("gt")).doc_ids
    assert store.peek(compute._dataset_key(big_gt, AppOptions(), "gt")) is read  # kept for every session


@pytest.fixture
def isolated(monkeypatch) -> list[str]:
    """The names of the functions the app runs in a child process, in order."""
    children: list[str] = []

    def recorded(function, *args, **kwargs):
        children.append(function.__name__)
        return run_isolated(function, *args, **kwargs)

    monkeypatch.setattr(compute, "run_isolated", recorded)
    return children


def test_every_read_and_scoring_runs_in_a_child_whatever_its_estimate(isolated):
    """Issue 33: small reads and scorings ran in the server's thread (a few KB can cost
    minutes, and work there cannot be stopped or kept from the other sessions' GIL)."""
    gt = Source.of("gt.jsonl", SAMPLE_GT.read_bytes())
    pred = Source.of("weak.jsonl", (ROOT / "sample_data" / "sim_weak.jsonl").read_bytes())
    store = Store()
    model, keys, _ = compute.score(store, gt, pred, AppOptions())
    assert isolated == ["load_bytes", "score_file"]
    here = load_bytes(pred.data, pred.name, AppOptions().load_options("pred"), name="weak")
    assert keys == KeyCounts.of(here) and len(model.tally.documents) == 100
    assert compute.keys_of(store, pred, AppOptions()) == keys  # left by the scoring: not read again
    assert isolated == ["load_bytes", "score_file"]
    compute.keys_of(Store(), pred, AppOptions())
    assert isolated[-1] == "file_keys"


def test_a_child_that_stayed_small_does_the_next_work_and_a_stopped_one_does_not():
    """What makes every read in a child cheap: the child of a small read waits for the next
    one (a fresh child's first read costs about three times a later one); a child whose
    wait was stopped is ended, never reused."""
    first = run_isolated(os.getpid)
    assert run_isolated(os.getpid) == first != os.getpid()

    class Cancelled(Exception):
        pass

    def tick():
        raise Cancelled

    with pytest.raises(Cancelled):
        run_isolated(time.sleep, 5, tick=tick)  # in the child of the last work: the spare taken last
    assert _gone(first)
    assert run_isolated(os.getpid) != first


def test_a_child_that_grew_ends_after_its_work():
    """Its memory goes back to the system: a child whose peak went above REUSE_BYTES is not kept."""
    pid = run_isolated(isolated_work.grow_and_give_pid, isolation.REUSE_BYTES + 2**24)
    assert _gone(pid)
    assert run_isolated(os.getpid) != pid


def test_a_cancelled_heavy_read_stops_its_child_at_once(big_gt):
    """The upload's Cancel: Streamlit raises from the progress update; the read's process is
    gone within two seconds and nothing is stored or reserved."""
    store = Store(heavy_bytes=2**20, heavy_slots=1)
    seen: list[psutil.Process] = []
    with pytest.raises(Stopped):
        compute.read_dataset(store, big_gt, AppOptions(), "gt", _stop_seeing(seen))
    assert seen, "the read was not in a child process"
    assert all(_gone(p.pid) for p in seen)
    assert store.peek(compute._dataset_key(big_gt, AppOptions(), "gt")) is None
    assert store.stats()["reserved"] == 0 and store.stats()["heavy_running"] == 0


def test_a_heavy_read_whose_child_is_killed_is_one_message(big_gt):
    """The out-of-memory killer, as the server sees it: one line naming the file."""
    store = Store(heavy_bytes=2**20)

    def waiting(ahead: int) -> None:
        for child in _readers():
            child.send_signal(signal.SIGKILL)

    with pytest.raises(ChildDied) as info:
        compute.read_dataset(store, big_gt, AppOptions(), "gt", waiting)
    assert compute.read_message(big_gt, info.value) == (
        "big_gt.jsonl: could not be read, its process ended unexpectedly "
        "(killed by SIGKILL, perhaps for lack of memory)")



@pytest.fixture(scope="module")
def big_pred(tmp_path_factory) -> Source:
    """The simulated LLM's predictions of the same documents as :func:`big_gt`."""
    path = tmp_path_factory.mktemp("pred") / "llm.jsonl"
    replicated_jsonl(ROOT / "sample_data" / "sim_llm.jsonl", path, 12)
    return Source.of(path.name, path.read_bytes())


def test_a_heavy_scoring_runs_in_a_child_with_the_same_figures(big_gt, big_pred):
    store = Store(heavy_bytes=2**20)
    for source, role in ((big_gt, "gt"), (big_pred, "pred")):  # read first: the scoring alone is timed
        compute.read_dataset(store, source, AppOptions(), role)
    calls: list[int] = []
    model, keys, _ = compute.score(store, big_gt, big_pred, AppOptions(), calls.append)
    assert calls and set(calls) == {0}  # told while its child scored
    here, here_keys, _ = compute.score(Store(), big_gt, big_pred, AppOptions())
    pd.testing.assert_frame_equal(model.tally.documents, here.tally.documents)
    pd.testing.assert_frame_equal(model.tally.entity_types, here.tally.entity_types)
    assert keys == here_keys and len(model.tally.documents) > 1000


def test_a_cancelled_heavy_scoring_stops_its_child(big_gt, big_pred):
    store = Store(heavy_bytes=2**20, heavy_slots=1)
    for source, role in ((big_gt, "gt"), (big_pred, "pred")):
        compute.read_dataset(store, source, AppOptions(), role)
    seen: list[psutil.Process] = []
    with pytest.raises(Stopped):
        compute.score(store, big_gt, big_pred, AppOptions(), _stop_seeing(seen))
    assert seen and all(_gone(p.pid) for p in seen)
    assert store.peek(compute._model_key(big_gt, big_pred, AppOptions())) is None
    assert store.stats()["reserved"] == 0 and store.stats()["heavy_running"] == 0


#: Python minor versions whose standard library the launch override was checked against
#: (requires-python >= 3.10); a new minor version fails below until its _launch is compared.
CHECKED_PYTHONS = {(3, 10), (3, 11), (3, 12), (3, 13)}


def _statements(function) -> list[str]:
    """The statements of a function's body as ASTs (docstring, comments and annotations left out)."""
    import ast
    import textwrap

    (node,) = ast.parse(textwrap.dedent(inspect.getsource(function))).body
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return [ast.dump(s) for s in body]


def test_the_launch_override_is_the_standard_librarys_without_the_main_module():
    """kieval_app.serving.isolation overrides the private ``Popen._launch`` of the fork
    server. Pinned: on the Python running the tests it is the standard library's method
    statement for statement, plus the two lines that drop the main module from what the
    child prepares; and the standard library still names those two keys. A CPython whose
    ``_launch`` changed fails here, before a server starts children that rerun a page."""
    import sys
    from multiprocessing import popen_forkserver, spawn

    from kieval_app.serving.isolation import _Popen

    assert sys.version_info[:2] in CHECKED_PYTHONS, "compare _launch with this Python's standard library"
    ours = _statements(_Popen._launch)
    dropped = [s for s in ours if "init_main_from" in s]
    assert len(dropped) == 2 and all("pop" in s for s in dropped)
    assert [s for s in ours if s not in dropped] == _statements(popen_forkserver.Popen._launch)
    preparation = inspect.getsource(spawn.get_preparation_data)
    assert "init_main_from_name" in preparation and "init_main_from_path" in preparation


def test_a_child_does_not_run_the_parents_main_module(tmp_path, monkeypatch):
    """What the override is for: in a Streamlit server ``__main__`` is the latest page script,
    which a child prepared the standard library's way would run again as it starts."""
    import sys
    import types

    marker = tmp_path / "ran"
    page = tmp_path / "page.py"
    page.write_text(f"open({str(marker)!r}, 'w').write('ran')\n", "utf-8")
    script = types.ModuleType("__main__")
    script.__file__, script.__spec__ = str(page), None
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert run_isolated(divmod, 7, 2) == (3, 1)
    assert not marker.exists()


def _menu_source(name: str, key: str, lines: int) -> Source:
    import json

    menu = [{"nm": {"value": f"ITEM {i % 97}"}, "price": {"value": f"{(i * 37) % 100},000"}}
            for i in range(lines)]
    return Source.of(name, (json.dumps({"doc_id": "big", key: {"menu": menu}}) + "\n").encode())


def test_a_scoring_whose_matching_is_heavy_runs_in_a_child_whatever_the_bytes():
    """Issue 33, N8: 1,000 menu lines in one document are 50 KB files, but matching them
    takes ~150 MiB: the scoring is costed by its groups and runs in the killable child."""
    gt, pred = _menu_source("gt.jsonl", "gt_parse", 1_000), _menu_source("pred.jsonl", "prediction", 1_000)
    assert gt.size < 60_000
    store = Store()  # the default heavy threshold: 64 MiB
    calls: list[int] = []
    model = compute.score(store, gt, pred, AppOptions(), calls.append)[0]
    assert calls and set(calls) == {0}  # told while its child scored (before: in the server's thread)
    assert len(model.tally.documents) == 1


def test_page_images_are_read_in_a_child(monkeypatch):
    """Issue 33, N1/N11: a few KB of page images can cost minutes; they never run in the
    server's thread."""
    import io
    import zipfile

    from PIL import Image

    children: list[str] = []

    def isolated(function, *args, **kwargs):
        children.append(function.__name__)
        return run_isolated(function, *args, **kwargs)

    monkeypatch.setattr(compute, "run_isolated", isolated)
    png = io.BytesIO()
    Image.new("RGB", (40, 60), "white").save(png, "PNG")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("validation_0000.png", png.getvalue())
    images = compute.page_images(Store(), Source.of("pages.zip", archive.getvalue()))
    assert children == ["read_images"] and images.n_pages("validation_0000") == 1


@pytest.fixture(scope="module")
def slow_pages() -> Source:
    """Six blank pages of 7,000 x 7,000 pixels in a 1 MB zip: seconds to decode and scale,
    under every cap (issue 33, N11)."""
    import io
    import zipfile

    from PIL import Image

    png = io.BytesIO()
    Image.new("L", (7_000, 7_000), 255).save(png, "PNG")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(6):
            z.writestr(f"validation_{i:04d}.png", png.getvalue())
    return Source.of("pages.zip", archive.getvalue())


def test_a_page_image_read_stops_when_its_run_stops(slow_pages):
    """Issue 33: the page images' child was never told to stop: a cancelled upload or a
    closed tab (the reaper stops its run, whose progress update then raises) left it
    reading (N1: 13 minutes). Now its wait calls ``waiting`` and ends the child."""
    store = Store()
    seen: list[psutil.Process] = []
    with pytest.raises(Stopped):
        compute.page_images(store, slow_pages, _stop_seeing(seen))
    assert seen, "the read was not in a child process"
    assert all(_gone(p.pid) for p in seen)
    assert store.peek(compute._images_key(slow_pages, compute.image_limits())) is None
    assert store.stats()["reserved"] == 0


class _Reserving(Store):
    """A store that notes what each piece of work reserved."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.costs: list[int] = []

    def _acquire(self, cost, waiting):
        self.costs.append(cost)
        return super()._acquire(cost, waiting)


def test_a_scoring_reserves_what_matching_its_groups_costs():
    """Issue 33, N8: admission reserved a scoring by its files' bytes (~0.5 MiB for 1,000 menu
    lines in 50 KB files) while matching them takes ~150 MiB; a server without that room
    now says it is busy instead of starting it."""
    from kieval_core.limits import MIB, matching_cost

    gt, pred = _menu_source("gt.jsonl", "gt_parse", 1_000), _menu_source("pred.jsonl", "prediction", 1_000)
    store = _Reserving()
    compute.score(store, gt, pred, AppOptions())
    assert max(store.costs) >= matching_cost({("big", "menu"): 1_000}, {}) > 100 * MIB
    tight = Store(budget=store.in_use() + 100 * MIB)
    with pytest.raises(Busy):
        compute.score(tight, gt, pred, AppOptions())


def test_page_images_reserve_what_their_pixels_cost(slow_pages):
    """Issue 33, N11: page images reserved nothing (a 1 MB zip decodes pages of 49 million
    pixels, one at a time): now the upload, its files and the largest page the caps let
    through; a server without that room says it is busy."""
    from kieval_core.limits import MIB

    limits = compute.image_limits()
    assert compute.images_cost(slow_pages.data, slow_pages.name, limits) >= limits.max_pixels * 4 > 100 * MIB
    store = _Reserving()
    tight = _Reserving(budget=store.in_use() + 100 * MIB)
    with pytest.raises(Busy):
        compute.page_images(tight, slow_pages)
    assert tight.costs == [compute.images_cost(slow_pages.data, slow_pages.name, limits)]


@pytest.mark.parametrize("stop", ["closed tab", "cancel"])
def test_peer_metrics_run_in_a_child_that_a_closed_tab_or_cancel_stops(stop):
    """Issue 33: the peer families ran in a thread of the server, which a closed tab or
    Cancel stopped only between two families (ANLS* of 900 nested lines alone takes
    seconds) and the server's exit waited for. They run in a child now: the session's end
    (the reaper closes a closed tab's session) or Cancel (``session.cancel_background``
    sets the task's flag) stops it within a poll, keeps nothing and leaves no reservation."""
    gt, pred = _menu_source("gt.jsonl", "gt_parse", 900), _menu_source("pred.jsonl", "prediction", 897)
    options = AppOptions(families=("kieval", "anls_star"))
    store = Store()
    key = compute._peer_key(gt, pred, options)
    store.hold("s", [key])
    task = store.submit(key, "pred", compute._peer_work(store, gt, pred, options))
    deadline = time.monotonic() + 60
    working: list[psutil.Process] = []
    while not working and time.monotonic() < deadline:
        working = [p for p in _readers() if p.cpu_percent(0.2) > 0]
    assert working, "the peer metrics did not run in a child process"
    time.sleep(0.5)
    assert not task.done  # into ANLS*
    stopped = time.monotonic()
    if stop == "closed tab":
        store.release_session("s")
    else:
        task.cancelled.set()
    with pytest.raises(TaskCancelled):
        task.future.result(timeout=5)
    assert time.monotonic() - stopped < 2
    assert all(_gone(p.pid) for p in working)
    assert store.peek(key) is None and store.stats()["reserved"] == 0


def test_peer_metrics_in_a_child_report_each_family_and_equal_the_cores():
    gt, pred = _menu_source("gt.jsonl", "gt_parse", 30), _menu_source("pred.jsonl", "prediction", 28)
    options = AppOptions(families=("kieval", "anls_star", "nted", "oi"))
    store = Store()
    key = compute._peer_key(gt, pred, options)
    store.hold("s", [key])
    task = store.submit(key, "pred", compute._peer_work(store, gt, pred, options))
    figures = task.future.result(timeout=120)
    assert (task.done_steps, task.total_steps) == (3, 3)
    structures = compute._keep_structures(options)
    here = peer_metrics(*(load_bytes(s.data, s.name, options.load_options(role), name=name,
                                     keep_structures=structures)
                          for s, role, name in ((gt, "gt", "ground truth"), (pred, "pred", "pred"))),
                        options.peer_families, options.peer_options, normalizer=options.normalizer)
    assert set(figures) == {"anls_star", "nted", "oi"}
    assert {k: f.report() for k, f in figures.items()} == {k: f.report() for k, f in here.items()}
    for family, figure in figures.items():
        pd.testing.assert_frame_equal(figure.documents, here[family].documents)
