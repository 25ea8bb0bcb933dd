"""Functions the tests of :mod:`kieval_app.serving.isolation` run in a child process (the child
imports them by name: a test module imported by pytest's importlib mode cannot be)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def raise_it(exc: BaseException) -> None:
    raise exc


class Unrebuildable(Exception):
    """An exception pickle cannot rebuild: its ``__init__`` takes other arguments."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a} and {b}")


def raise_unrebuildable() -> None:
    raise Unrebuildable(1, 2)


def sleep_after_writing_pid(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    time.sleep(60)


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def grow_and_give_pid(n_bytes: int) -> int:
    """Touch ``n_bytes`` of memory (the child's peak grows by as much), then free it."""
    block = bytearray(n_bytes)
    block[::4096] = b"x" * len(block[::4096])
    del block
    return os.getpid()


def report_steps(total: int) -> str:
    """Report ``(done, total)`` after each of ``total`` steps to the waiting parent."""
    from kieval_app.serving.isolation import report

    for done in range(1, total + 1):
        report(done, total)
    return "done"
