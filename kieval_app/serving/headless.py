"""Run the dashboard headless on a free local port (screenshots and browser tests).

Not used by the app itself; it lives here so that ``docs/make_screenshots.py`` and the
end-to-end tests start the server the same way.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO

from ..paths import app_root

ROOT = app_root()
#: Flags for Debian's Chromium in this sandbox (no GPU, no network of its own).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_log() -> IO[bytes]:
    """Where a server started here writes its output: a temporary file, never a pipe (a pipe
    nobody reads blocks the server once it holds ~64 KB)."""
    return tempfile.TemporaryFile()


def wait_healthy(
    url: str, process: subprocess.Popen, timeout: float = 60, poll: float = 0.3, log: IO[bytes] | None = None
) -> None:
    """Wait until the server at ``url`` answers its health check, asking every ``poll``
    seconds (the end of its ``log`` on failure)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            output = ""
            if log is not None:
                log.seek(0)
                output = log.read().decode(errors="replace")
            msg = f"streamlit exited early:\n{output[-3000:]}"
            raise RuntimeError(msg)
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(poll)
    msg = f"streamlit did not become healthy within {timeout:.0f} s"
    raise RuntimeError(msg)


@contextlib.contextmanager
def streamlit_server(root: Path = ROOT, port: int | None = None):
    """Run the app headless; yield its base URL; stop it (by its own pid) afterwards."""
    port = port or free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    log = server_log()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_healthy(url, process, log=log)
        yield url
    finally:
        stop(process)
        log.close()


def stop(process: subprocess.Popen, timeout: float = 10) -> None:
    """Stop a server (terminate, then kill if it has not ended within ``timeout`` seconds)."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
