"""Measure the two structural figures of issue 30 with ``sys.setprofile`` (stdlib only).

``python bench/trace_house.py`` prints both (``--calls``: every counted call and frame):

(a) **Returns following gt.** ``evaluate(gt, {"weak": pred})`` on the sample
    (``sample_data/cord_v2_gt.jsonl`` and ``sim_weak.jsonl``, the default metrics). A call
    counts when its function lives in ``kieval_core`` and one of its arguments (``self``
    included) is the ground truth's path (as text or a ``Path``), an object a counted call
    returned (the Dataset read from it, and so on), or a tuple, list or dict holding one.
    Accessors (a ``@property``, a dataclass's generated methods) are left out. Each counted
    call is placed in its layer (``kieval_core.read.formats.nested`` is in ``read``,
    ``kieval_core.rules`` is ``rules``); a *return* is a run of calls in a layer the
    sequence had already left (``result > count > result`` is one).
(b) **Hops from an upload to the first Overview figure.** The dashboard run headless with
    ``streamlit.testing.v1.AppTest``: the sample's ground truth is uploaded through the
    widget, then ``sim_weak.jsonl`` as the predictions (each with a last empty line: an
    upload, not a built-in sample kept on disk). The work the app runs in a child process is
    done in this one through the child's entry (:func:`in_this_process`), so the stacks
    follow it there. At the first call of each stage
    (the file read: ``load_bytes``; counted: ``engine.count``; the result finished:
    ``scoring.finish``; the Overview's first figure: ``corrections_figure``) the project's
    frames on the stack are kept. A *hop* is one project call between the script's run and
    the four stages, each call counted once (a frame shared by two stacks is one hop); the
    frames summed over the four stacks are printed beside it.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
GT = SAMPLE / "cord_v2_gt.jsonl"
PRED = SAMPLE / "sim_weak.jsonl"


class Follower:
    """A profile function that follows values through the calls of some packages."""

    def __init__(self, packages: tuple[str, ...], path: str) -> None:
        self.kept: dict[int, object] = {}  # what counted calls returned, kept alive: ids stay unique
        self.packages = packages
        self.path = path
        self.calls: list[tuple[str, str, bool]] = []  # (module, function, is an accessor)
        self.open: set[int] = set()  # frames of counted calls, waiting for their return

    def _held(self, value: object) -> bool:
        if id(value) in self.kept:
            return True
        if isinstance(value, (str, Path)) and str(value) == self.path:
            return True
        if isinstance(value, (tuple, list)):
            return any(id(v) in self.kept for v in value[:64])
        if isinstance(value, dict):
            return any(id(v) in self.kept for v in list(value.values())[:64])
        return False

    def __call__(self, frame, event: str, arg: object) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if not module.startswith(self.packages) or frame.f_code.co_name == "<module>":
                return
            code = frame.f_code
            names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            arguments = [frame.f_locals.get(n) for n in names]
            if any(self._held(a) for a in arguments):
                self.calls.append((module, code.co_qualname, _accessor(frame)))
                self.open.add(id(frame))
        elif event == "return" and id(frame) in self.open:
            self.open.discard(id(frame))
            if arg is not None and not isinstance(arg, (bool, int, float, str)):
                self.kept[id(arg)] = arg


def _accessor(frame) -> bool:
    """A call that only reads a field: a ``@property`` or a dataclass's generated method."""
    code = frame.f_code
    if code.co_filename.startswith("<"):
        return True
    owner = frame.f_locals.get("self")
    if owner is None:
        return False
    attribute = getattr(type(owner), code.co_name, None)
    return isinstance(attribute, property)


def layer(module: str) -> str:
    """The part of the project a module belongs to: ``kieval_core.read.formats.nested`` is
    in ``read``, ``kieval_core.rules`` is ``rules``."""
    return module.split(".")[1] if module.count(".") else module


def returns(modules: list[str]) -> tuple[list[str], int]:
    """The sequence of layers (runs collapsed) and how often it returns to one it had left."""
    layers = [layer(m) for m in modules]
    runs = [m for i, m in enumerate(layers) if i == 0 or layers[i - 1] != m]
    return runs, sum(m in runs[:i] for i, m in enumerate(runs))


def trace_evaluate(show: bool) -> int:
    from kieval_core import evaluate

    follower = Follower(("kieval_core",), path=str(GT))
    gt_path = str(GT)
    sys.setprofile(follower)
    try:
        evaluate(gt_path, {"weak": str(PRED)})
    finally:
        sys.setprofile(None)
    runs, n = returns([m for m, _, accessor in follower.calls if not accessor])
    if show:
        for module, function, accessor in follower.calls:
            print(f"  {module}.{function}{'  (accessor)' if accessor else ''}")
    print(f"(a) following gt from evaluate(): {len(follower.calls)} calls, {len(runs)} runs of layers, "
          f"{n} returns to a layer it had left")
    print("    " + " > ".join(runs))
    return n


#: The stages of an upload, each at the first call of its function: reading the file,
#: counting it, finishing the result, and the Overview's first figure.
STAGES = {
    "read": ("kieval_core.read.formats", "load_bytes"),
    "count": ("kieval_core.count.engine", "count"),
    "finish": ("kieval_core.result.scoring", "finish"),
    "figure": ("kieval_core.figures.overview", "corrections_figure"),
}
PROJECT = ("kieval_core", "kieval_app", "app_pages", "__main__")


class Stacks:
    """A profile function that keeps the project's frames on the stack at the first call
    of each stage's function."""

    def __init__(self) -> None:
        self.stacks: dict[str, list[tuple[object, str]]] = {}  # frames kept alive: ids stay unique
        self.wanted = {v: k for k, v in STAGES.items()}

    def __call__(self, frame, event: str, arg: object) -> None:
        if event != "call":
            return
        stage = self.wanted.get((frame.f_globals.get("__name__", ""), frame.f_code.co_name))
        if stage is None or stage in self.stacks:
            return
        frames = []
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if module.startswith(PROJECT) and not frame.f_code.co_filename.startswith("<"):
                where = Path(frame.f_code.co_filename).stem if module == "__main__" else module.split(".")[-1]
                frames.append((frame, f"{where}.{frame.f_code.co_qualname}"))
            frame = frame.f_back
        self.stacks[stage] = frames[::-1]


class _Inline:
    """The child's end of the pipe for :func:`in_this_process`: one piece of work in, its
    outcome out, then the end of the pipe."""

    def __init__(self, work: tuple) -> None:
        self.work, self.outcome = [work], None

    def recv(self) -> tuple:
        if not self.work:
            raise EOFError
        return self.work.pop()

    def send(self, outcome: tuple) -> None:
        self.outcome = outcome


def in_this_process(function, *args, tick=None, progress=None, **kwargs):
    """``run_isolated`` with the child's work done in this thread, through the child's work
    loop (``isolation._serve``), so that the stacks follow the work into the child: this
    frame stands for ``run_isolated``'s, ``_serve``'s for the child's. Like it, it takes
    the peer work's ``progress`` (here unused): without it the sample's peer work failed,
    and the failure stayed in the server's store for the tests after this one."""
    from kieval_app.serving import isolation

    pipe = _Inline((function, args, kwargs))
    isolation._serve(pipe)
    succeeded, value, _ = pipe.outcome
    if succeeded:
        return value
    raise value


def _upload_stacks() -> Stacks:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    # a byte more than the sample's files (a last empty line): an upload, not a built-in
    # sample kept on disk (kieval_app.prebuilt)
    upload(at, "gt", ("my_gt.jsonl", GT.read_bytes() + b"\n"))
    stacks = Stacks()
    threading.setprofile(stacks)
    sys.setprofile(stacks)
    try:
        upload(at, "pred", ("weak_model.jsonl", PRED.read_bytes() + b"\n"))
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return stacks


def trace_upload(show: bool) -> int:
    from kieval_app import compute

    isolated, compute.run_isolated = compute.run_isolated, in_this_process  # follow the work into the child
    try:
        stacks = _upload_stacks()
    finally:
        compute.run_isolated = isolated
    missing = sorted(set(STAGES) - set(stacks.stacks))
    assert not missing, f"stages not reached: {missing}"
    summed = 0
    distinct: dict[int, str] = {}
    for stage in STAGES:
        frames = stacks.stacks[stage]
        summed += len(frames)
        distinct.update((id(frame), label) for frame, label in frames[1:])  # from the script's frame
        labels = " > ".join(label for _, label in frames)
        print(f"    {stage}: {len(frames)} frames on the stack" + (f": {labels}" if show else ""))
    print(f"(b) upload to the first Overview figure: {len(distinct)} hops (calls from the script's run "
          f"to the four stages, each call counted once; {summed} frames summed over the four stacks)")
    return len(distinct)


def upload(at, role: str, *files: tuple[str, bytes]) -> None:
    key = f"upload_{role}_{at.session_state['uploader']}"
    payload = [(name, data, "application/octet-stream") for name, data in files]
    at.file_uploader(key=key).set_value(payload[0] if role == "gt" else payload)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", action="store_true", help="print every counted call")
    parser.add_argument("--only", choices=("a", "b"), help="measure one figure only")
    options = parser.parse_args()
    if options.only in (None, "a"):
        trace_evaluate(options.calls)
    if options.only in (None, "b"):
        trace_upload(options.calls)
