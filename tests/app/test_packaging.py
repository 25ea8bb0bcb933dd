"""The package works outside the checkout: build the wheel, install it into a clean
virtual environment, start ``kieval dashboard`` from another directory, and see the
sample's numbers in a browser, with no request leaving the machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from browser_setup import CHROMIUM, need_chromium
from test_e2e_browser import TIMEOUT_MS, _headline, _idle

from kieval_app.serving.headless import CHROMIUM_ARGS, free_port, server_log, wait_healthy
from kieval_core import evaluate
from kieval_core.figures.text import pct

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def dependency_paths() -> list[str]:
    """The directories this interpreter imports its packages from (site-packages and
    dist-packages: the global interpreter's, a venv's and, for a venv made with
    ``--system-site-packages``, its base's too)."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A virtual environment (outside the checkout) with the wheel installed in it.

    Its dependencies come from the running interpreter, whatever it is (global, venv,
    conda): a ``.pth`` file appends that interpreter's package directories to the new
    environment's path, after its own site-packages, so the wheel is found first. A
    ``.pth`` line is only a path: the running environment's own ``.pth`` files (an
    editable install of this checkout among them) are not run, so the checkout stays out.
    """
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(base / "dist"), "-q"],
        check=True,
        cwd=base,
    )
    (wheel,) = (base / "dist").glob("kieval_workbench-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True)
    python = base / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text("\n".join(dependency_paths()) + "\n", "utf-8")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True
    )
    return base / "venv"


def test_the_wheel_carries_the_dashboard(installed):
    python = installed / "bin" / "python"
    code = "import kieval_app.paths as p; print(p.app_root())"
    root = Path(
        subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, check=True, cwd=installed.parent
        ).stdout.strip()
    )
    assert installed in root.parents  # the installed copy, not the checkout
    for name in ("app.py", "app_pages/overview.py", ".streamlit/config.toml", "sample_data/cord_v2_gt.jsonl"):
        assert (root / name).is_file(), name


def test_kieval_dashboard_from_the_wheel_shows_the_sample(installed):
    from playwright.sync_api import sync_playwright

    need_chromium()
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "HOME": str(installed.parent)}
    log = server_log()
    server = subprocess.Popen(
        [
            str(installed / "bin" / "kieval"),
            "dashboard",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--server.headless",
            "true",
        ],
        cwd=installed.parent,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    outside: list[str] = []
    try:
        wait_healthy(url, server, log=log)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on(
                "request",
                lambda r: (
                    None
                    if r.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                    else outside.append(r.url)
                ),
            )
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            page.get_by_test_id("stTable").first.wait_for()
            _idle(page)
            rows = _headline(page)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()
    # stopping `kieval dashboard` stops the server: no orphan keeps the port
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    sample = ROOT / "sample_data"
    strong = evaluate(sample / "cord_v2_gt.jsonl", {"s": sample / "sim_strong.jsonl"}).models["s"]
    assert rows["simulated-strong"]["KIEval_Aligned"] == pct(strong.aligned)
    assert outside == []  # no font host, no favicon host: nothing leaves the machine
