"""Starting the dashboard: ``kieval dashboard [RUN] [--host] [--port] [-- server options]``.

Streamlit reads ``.streamlit/config.toml`` from its working directory, so the server runs
in :func:`~kieval_app.paths.app_root` (the checkout, or the installed bundle) whatever the
directory the user starts it from. Options for Streamlit's server are passed before the
script, where ``streamlit run`` reads them (after it they would reach the script).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from ..paths import app_root
from .tuning import ALLOCATOR_ENV

#: Environment variable naming a saved run the dashboard opens.
OPEN_RUN = "KIEVAL_OPEN_RUN"
#: Environment variable naming the directory of page images (``kieval dashboard --images``).
IMAGES_DIR = "KIEVAL_IMAGES_DIR"
#: Environment variable set to 1 by ``kieval dashboard --delete-any-run``: every session may
#: delete every saved run (by default a session deletes only the runs it saved).
DELETE_ANY_RUN = "KIEVAL_DELETE_ANY_RUN"


def command(port: int, host: str, server_options: Sequence[str] = ()) -> list[str]:
    """The ``streamlit run`` command line.

    >>> command(8501, "localhost", ["--", "--server.maxUploadSize", "500"])[3:-1]
    ['run', '--server.port', '8501', '--server.address', 'localhost', '--server.maxUploadSize', '500']
    """
    options = [o for o in server_options if o != "--"]
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "--server.port",
        str(port),
        "--server.address",
        host,
        *options,
        str(app_root() / "app.py"),
    ]


def launch(port: int, host: str, server_options: Sequence[str] = (), run: Path | None = None,
           limits: Mapping[str, str] | None = None, images: Path | None = None,
           delete_any_run: bool = False) -> NoReturn:
    """Become the dashboard server; ``run`` opens a saved run; ``limits`` are the
    ``KIEVAL_...`` variables of its limits (:mod:`kieval_core.limits`); ``images`` is a
    directory of page images shown with every evaluation; ``delete_any_run`` lets every
    session delete every saved run (:data:`DELETE_ANY_RUN`). The server allocates memory as
    :data:`ALLOCATOR_ENV` says, unless the environment sets those variables.

    The process is replaced rather than given a child, so whatever stops ``kieval
    dashboard`` (Ctrl-C, a service manager's SIGTERM, a test's ``terminate()``) stops the
    server itself instead of orphaning it.
    """
    env = {**ALLOCATOR_ENV, **os.environ, **(limits or {})}
    if run is not None:
        env[OPEN_RUN] = str(Path(run).resolve())
    if images is not None:
        env[IMAGES_DIR] = str(Path(images).resolve())
    if delete_any_run:
        env[DELETE_ANY_RUN] = "1"
    os.chdir(app_root())
    line = command(port, host, server_options)
    os.execve(line[0], line, env)
