"""Reading a path: a file, a directory of per-document files, or a directory or glob of
shards read as one input (:mod:`kieval_core.read.shards`). Uploads, which have bytes and no
path, are read by :func:`kieval_core.read.formats.load_bytes`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..exceptions import KievalInputError
from .dataset import Dataset
from .formats import IGNORED_FILES, MAX_FILES, LoadOptions, check_scoring_cost, load_bytes, load_files
from .shards import is_sharded, load_shards


def load(path: str | Path, options: LoadOptions = LoadOptions(), name: str | None = None, *,
         keep_structures: bool = True) -> Dataset:
    """Read a file or directory.

    ``keep_structures`` keeps each document's nested structure (nested JSON and CORD) in
    :attr:`Dataset.structures`, for ANLS* and nTED on the uploaded structures. They cost
    several times the file's size; :func:`~kieval_core.evaluate` and the dashboard pass
    False when no selected metric needs them. A dataset read without them is scored by
    ANLS* and nTED on re-nested entities, reported under ``*_renested`` keys.

    A directory or glob of shards (long tables, JSONL records) is read as one input
    (:mod:`kieval_core.read.shards`).

    >>> ds = load("sample_data/cord_v2_gt.jsonl")  # doctest: +SKIP
    """
    if is_sharded(path, options):
        return check_scoring_cost(load_shards(path, options, name), options.limits)
    path = Path(path)
    source = str(path)
    name = name or (path.name if path.is_dir() else path.stem)
    if path.is_dir():
        with os.scandir(path) as entries:  # sorted by name, as Path objects sort
            members = sorted((e for e in entries if e.is_file() and not e.name.startswith(".")
                              and e.name not in IGNORED_FILES), key=lambda e: e.name)
        if len(members) > MAX_FILES:
            raise KievalInputError(source, None, f"{len(members)} files; at most {MAX_FILES} are read")
        sizes = [e.stat().st_size for e in members]
        options.check_size(sum(sizes), source)
        files = {e.name: read_file(e.path, size) for e, size in zip(members, sizes, strict=True)}
        return load_files(files, source, options, name, keep_structures=keep_structures)
    if not path.exists():
        raise KievalInputError(source, None, "no such file or directory")
    options.check_size(path.stat().st_size, source)
    return load_bytes(path.read_bytes(), source, options, name=name, keep_structures=keep_structures)


def read_file(path: str, size: int) -> bytes:
    """The bytes of a file listed with ``size`` bytes: one ``read`` when it still has that
    size (``open(path, "rb").read()`` asks for the size twice more and reads twice), read
    to its end when it grew or shrank since."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        data = os.read(fd, size + 1)
        if len(data) == size:
            return data
        parts = [data]
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)
