"""Reading a path: a file, a directory of per-document files, or a directory or glob of
shards read as one input (:mod:`kieval_core.read.shards`). Uploads, which have bytes and no
path, are read by :func:`kieval_core.read.formats.load_bytes`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..exceptions import KievalInputError
from ..limits import MIB
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
    return read_bytes(path, options, name, keep_structures=keep_structures)()


def read_bytes(path: str | Path, options: LoadOptions = LoadOptions(), name: str | None = None, *,
               keep_structures: bool = True) -> Callable[[], Dataset]:
    """:func:`load` in two steps: the bytes of the file or of the directory's files are
    read now, and the function returned parses them into the dataset. Reading holds the
    interpreter (Python calls per file); parsing runs mostly in Arrow and numpy, which
    release it, so a thread can parse one input while the caller reads the next
    (:func:`~kieval_core.evaluate`). Each error is raised by the step that meets it.
    """
    if is_sharded(path, options):
        return lambda: check_scoring_cost(load_shards(path, options, name), options.limits)
    path = Path(path)
    source = str(path)
    name = name or (path.name if path.is_dir() else path.stem)
    if path.is_dir():
        with os.scandir(path) as entries:  # sorted by name, as Path objects sort
            names = sorted(e.name for e in entries if e.is_file() and not e.name.startswith(".")
                           and e.name not in IGNORED_FILES)
        if len(names) > MAX_FILES:
            raise KievalInputError(source, None, f"{len(names)} files; at most {MAX_FILES} are read")
        files = read_directory(path, names, options, source)
        return lambda: load_files(files, source, options, name, keep_structures=keep_structures)
    if not path.exists():
        raise KievalInputError(source, None, "no such file or directory")
    options.check_size(path.stat().st_size, source)
    data = path.read_bytes()
    return lambda: load_bytes(data, source, options, name=name, keep_structures=keep_structures)


#: The size of the first read of each file of a directory: per-document files are smaller,
#: so one read and a second that finds the end of the file take each whole.
FIRST_READ = 1 << 16
#: The size of each further read of a larger file.
NEXT_READ = 1 << 20
_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def read_directory(path: Path, names: list[str], options: LoadOptions, source: str) -> dict[str, bytes]:
    """The bytes of the files ``names`` of the directory ``path``, each read to its end.

    No file is measured first (a ``stat`` per file cost as much as reading it): the bytes
    read are summed as they come, and once they pass the file size limit the files' sizes
    on disk are summed and the directory is refused as it was before reading (the figure
    shown is the larger of the two sums). Names are opened relative to the directory where
    the system allows it (no path is joined per file).
    """
    limit = options.limits.file_mb * MIB
    relative = os.open in os.supports_dir_fd
    directory = os.open(path, os.O_RDONLY) if relative else None

    def at(name: str) -> str | Path:  # opened with dir_fd=directory
        return name if relative else path / name

    files: dict[str, bytes] = {}
    total = 0
    try:
        for name in names:
            try:
                fd = os.open(at(name), _FLAGS, dir_fd=directory)
                try:
                    data = os.read(fd, FIRST_READ)
                    more = os.read(fd, FIRST_READ) if data else b""  # b"": the end of the file
                    if more:
                        data = _rest(fd, [data, more], limit - total)
                finally:
                    os.close(fd)
            except OSError as exc:  # named by its path, not by its name in the directory
                raise type(exc)(exc.errno, exc.strerror, str(path / name)) from None
            total += len(data)
            if total > limit:
                on_disk = sum(os.stat(at(name), dir_fd=directory).st_size for name in names)
                options.check_size(max(on_disk, total), source)
            files[name] = data
    finally:
        if directory is not None:
            os.close(directory)
    return files


def _rest(fd: int, parts: list[bytes], budget: int) -> bytes:
    """The bytes of a file whose first reads were ``parts``, read to its end or until they
    pass ``budget`` bytes (the caller then refuses the directory)."""
    size = sum(map(len, parts))
    while size <= budget and (chunk := os.read(fd, NEXT_READ)):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)
