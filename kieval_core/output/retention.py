"""Saved runs are managed (SPEC 8b): listed with their size and date, removed one by one,
pruned by age and total size (``kieval runs list | rm ID | prune``; the dashboard's list
of saved runs). A run's id is its directory's name under the runs directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import KievalInputError, KievalOptionError
from ..safe_text import for_terminal
from .outputs import TEMP_MARK, DirectoryLock
from .runs import is_saved_run

#: A run id: a directory name, short and plain (checked before any file system call, so a
#: crafted ``?run=`` cannot reach another path or an over-long name).
MAX_ID_LENGTH = 64
_RUN_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_ID_LENGTH - 1}}}")
#: A staging directory left by a save that was killed (SIGKILL, power loss) is removed by
#: ``prune`` once it is this old and no save holds its lock.
STALE_STAGING_S = 3600


def default_runs_dir() -> Path:
    """Where the dashboard saves runs: ``KIEVAL_RUNS_DIR``, default ``~/.kieval/runs``."""
    return Path(os.environ.get("KIEVAL_RUNS_DIR", Path.home() / ".kieval" / "runs"))


def is_run_id(text: object) -> bool:
    """Whether ``text`` can name a run (a plain directory name of at most 64 characters).

    >>> is_run_id("3f2a9c0d1e4b5a67"), is_run_id("../etc"), is_run_id("x" * 300)
    (True, False, False)
    """
    return isinstance(text, str) and _RUN_ID.fullmatch(text) is not None


def _check_id(run_id: str) -> None:
    if not is_run_id(run_id):
        shown = run_id[:MAX_ID_LENGTH] + ("..." if len(run_id) > MAX_ID_LENGTH else "")
        msg = (f"{shown!r} is not a run id (letters, digits, '.', '_' or '-', at most {MAX_ID_LENGTH} "
               "characters; `kieval runs list` shows them)")
        raise KievalOptionError(msg)


@dataclass(frozen=True)
class RunInfo:
    """One saved run in the runs directory."""

    id: str
    path: Path
    bytes: int
    saved: float  # seconds since the epoch: when its manifest was written
    ground_truth: str
    models: tuple[str, ...]

    @property
    def age_days(self) -> float:
        return (time.time() - self.saved) / 86400


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _info(path: Path) -> RunInfo:
    manifest_path = path / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text("utf-8"))
        gt = str(manifest["ground_truth"]["source"])
        models = tuple(str(m["name"]) for m in manifest["models"])
    except (OSError, ValueError, KeyError, TypeError):  # listed all the same: it can be removed
        gt, models = "(unreadable manifest)", ()
    return RunInfo(path.name, path, _size(path), manifest_path.stat().st_mtime, gt, models)


def list_runs(root: str | Path | None = None) -> list[RunInfo]:
    """The saved runs under ``root`` (default :func:`default_runs_dir`), newest first; a
    symbolic link is no run of the directory (:func:`linked_entries` names them)."""
    root = Path(root) if root is not None else default_runs_dir()
    if not root.is_dir():
        return []
    runs = [_info(p) for p in root.iterdir()
            if not p.name.startswith(".") and not p.is_symlink() and p.is_dir() and is_saved_run(p)]
    return sorted(runs, key=lambda r: (-r.saved, r.id))


def linked_entries(root: str | Path | None = None) -> list[str]:
    """The names of the symbolic links in the runs directory: never listed, removed or
    followed (a link can point anywhere)."""
    root = Path(root) if root is not None else default_runs_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".") and p.is_symlink())


def remove_run(run_id: str, root: str | Path | None = None) -> RunInfo:
    """Delete the saved run ``run_id`` under ``root`` (not while it is being saved)."""
    _check_id(run_id)
    root = Path(root) if root is not None else default_runs_dir()
    path = root / run_id
    if path.is_symlink():
        raise KievalInputError(run_id, None, "a symbolic link, not a saved run of the directory: not removed")
    if not (path.is_dir() and is_saved_run(path)):
        raise KievalInputError(str(path), None, "no saved run of that id (`kieval runs list` shows them)")
    info = _info(path)
    lock = DirectoryLock(path)
    lock.acquire()  # a save into it is under way: refused
    try:
        shutil.rmtree(path)
        lock.path.unlink(missing_ok=True)  # the run is gone: a later save locks a new file
    finally:
        lock.release()
    return info


@dataclass(frozen=True)
class Pruned:
    """What :func:`prune_runs` did: the runs removed (or that would be), those whose removal
    failed with the reason, the symbolic links left alone."""

    removed: list[RunInfo]
    failed: list[tuple[str, str]]
    linked: list[str]


def prune_runs(root: str | Path | None = None, older_than_days: float | None = None,
               max_total_mb: float | None = None, dry_run: bool = False) -> Pruned:
    """Remove the runs older than ``older_than_days``, then the oldest until the rest take
    at most ``max_total_mb`` MiB; also staging directories left by killed saves. A run that
    cannot be removed (being saved again, a file the process may not delete) is reported
    and the others are still removed."""
    for value, option in ((older_than_days, "--older-than"), (max_total_mb, "--max-total-mb")):
        if value is not None and not value >= 0:
            msg = f"{option} must be >= 0, got {value}"
            raise KievalOptionError(msg)
    root = Path(root) if root is not None else default_runs_dir()
    runs = list_runs(root)
    doomed = [r for r in runs if older_than_days is not None and r.age_days > older_than_days]
    kept = [r for r in runs if r not in doomed]
    if max_total_mb is not None:
        total = sum(r.bytes for r in kept)
        for run in reversed(kept):  # oldest first
            if total <= max_total_mb * 2**20:
                break
            doomed.append(run)
            total -= run.bytes
    removed, failed = [], []
    for run in doomed:
        if dry_run:
            removed.append(run)
            continue
        try:
            removed.append(remove_run(run.id, root))
        except (KievalInputError, KievalOptionError) as exc:  # e.g. being saved again right now
            failed.append((run.id, getattr(exc, "problem", str(exc))))
        except OSError as exc:
            failed.append((run.id, exc.strerror or type(exc).__name__))
    if not dry_run:
        _remove_stale_staging(root)
    return Pruned(removed, failed, linked_entries(root))


def _remove_stale_staging(root: Path) -> None:
    for path in root.glob(f".*{TEMP_MARK}*"):
        if not path.is_dir() or time.time() - path.stat().st_mtime < STALE_STAGING_S:
            continue
        lock = DirectoryLock(root / path.name[1:].split(TEMP_MARK)[0])
        try:
            lock.acquire()
        except KievalOptionError:  # its save is still running
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            lock.release()


def describe_size(n_bytes: int) -> str:
    """A size in MiB for the run lists.

    >>> describe_size(3 * 2**20)
    '3.0 MiB'
    """
    return f"{n_bytes / 2**20:,.1f} MiB"


def saved_at(run: RunInfo) -> str:
    """When a run was saved, in UTC to the minute."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run.saved))


def format_runs(runs: list[RunInfo]) -> str:
    """The runs as a table for a terminal (names from files as escaped text): id, date,
    size, models, ground truth."""
    rows = [("id", "saved", "size", "models", "ground truth")]
    rows += [(r.id, saved_at(r), describe_size(r.bytes), for_terminal(", ".join(r.models)),
              for_terminal(r.ground_truth)) for r in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)), row[4]]).rstrip()
                     for row in rows)
