"""The built-in samples' reads, scorings, peer metrics and page images, kept on disk between
servers.

A fresh server's first visitor would otherwise wait while the sample a session opens on is
read, scored and its page images downscaled (seconds, most of a first visit:
bench/README.md, "Dashboard latency"), its peer metrics computed in the background beside
it. :func:`kept` computes such a piece once and writes it under the cache directory
(``KIEVAL_CACHE_DIR``, default ``~/.cache/kieval``; :func:`keep` and :func:`load` for
background work); every later server reads it back.

Never stale: the pieces of one version of the code live in a folder named by its
:func:`fingerprint` (every source file of ``kieval_core`` and ``kieval_app``, the Python
version and the versions of the libraries the package requires), each in a file named by
the digest of its store key, which holds the files' digests and every option that changes
it. A change of the code, of a library or of an option is a new folder or a new file; the
folders of other fingerprints are deleted when a new one is made.

Only the built-in samples' files are kept (:func:`builtin`, by content digest): nothing a
user uploads is written here or read back by another session. The files are pickles of
the server's own objects, written atomically; one that cannot be read is computed again
and replaced. The directory is the server user's own (as ``~/.kieval/runs``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import pickle
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from .sources import SAMPLES, Source, sample_sources

_LOG = logging.getLogger(__name__)
T = TypeVar("T")
#: The distribution whose requirements' versions (its dashboard extra's too) enter the fingerprint.
DISTRIBUTION = "kieval-workbench"
#: The packages whose source enters the fingerprint (what computes and holds the pieces).
PACKAGES = ("kieval_core", "kieval_app")
#: The environment variable naming the cache directory ("" or "off": no cache on disk).
CACHE_DIR = "KIEVAL_CACHE_DIR"


def cache_root() -> Path | None:
    """Where the pieces are kept: ``KIEVAL_CACHE_DIR``, default ``~/.cache/kieval``; None when
    the variable is empty or ``off``."""
    value = os.environ.get(CACHE_DIR)
    if value is None:
        return Path.home() / ".cache" / "kieval"
    return None if value.strip().lower() in ("", "off") else Path(value)


@functools.cache
def fingerprint() -> str:
    """The digest of the code that computes the pieces: every ``.py`` file of
    :data:`PACKAGES` (path and bytes), the Python version, and the installed version of
    every library :data:`DISTRIBUTION` requires."""
    digest = hashlib.sha256(sys.version.encode())
    for package in PACKAGES:
        root = Path(sys.modules[package].__file__).resolve().parent
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode() + b"\0" + path.read_bytes())
    for name in _requirements():
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}=={version}\0".encode())
    return digest.hexdigest()[:16]


def _requirements() -> list[str]:
    """The names of the libraries :data:`DISTRIBUTION` requires, with its ``dashboard``
    extra (Pillow makes the pages' JPEGs); other extras left out."""
    try:
        required = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:  # a bare checkout: no metadata
        return []
    names = {re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0].lower() for r in required
             if "extra ==" not in r or 'extra == "dashboard"' in r}
    return sorted(names)


@functools.cache
def _builtin_digests() -> frozenset[str]:
    digests = set()
    for key in SAMPLES:
        sources = sample_sources(key)
        digests.update(s.digest for s in (sources.gt, *sources.predictions, sources.images) if s is not None)
    return frozenset(digests)


def builtin(*sources: Source) -> bool:
    """Whether every source is a file of a built-in sample (by its content's digest)."""
    return all(s.digest in _builtin_digests() for s in sources)


def kept(key: Hashable, compute: Callable[[], T]) -> Callable[[], T]:
    """``compute`` read from the cache directory when this code computed it before under
    ``key`` (a store key: it holds the files' digests and the options), else computed and
    written there. Only for the pieces of built-in samples (:func:`builtin`)."""

    def load_or_compute() -> T:
        value = load(key)
        if value is None:
            value = compute()
            keep(key, value)
        return value

    return load_or_compute


def _path(key: Hashable) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    return root / f"samples-{fingerprint()}" / f"{name}.pickle"


def load(key: Hashable) -> Any:
    """The piece this code kept under ``key``, or None (none kept, no cache directory, or a
    file that cannot be read: it is then computed again and replaced)."""
    path = _path(key)
    if path is None:
        return None
    try:
        with path.open("rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a damaged file is computed again and replaced
        _LOG.warning("the cached sample piece %s could not be read: computed again", path, exc_info=True)
        return None


def keep(key: Hashable, value: Any) -> None:
    """Keep ``value`` under ``key`` for the next servers (nothing without a cache directory)."""
    path = _path(key)
    if path is not None:
        _write(path, value)


def _write(path: Path, value: Any) -> None:
    """Write ``value`` atomically (a reader sees the whole file or none); the folders of
    other fingerprints go when this one is made. A piece that cannot be written is not kept."""
    part = None
    try:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
            for other in path.parent.parent.glob("samples-*"):
                if other != path.parent:
                    shutil.rmtree(other, ignore_errors=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as f:
            part = Path(f.name)
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(part, path)
    except Exception:  # noqa: BLE001 - a read-only home, a full disk: the server works without it
        _LOG.warning("a sample piece could not be kept in %s", path.parent, exc_info=True)
        if part is not None:
            part.unlink(missing_ok=True)
