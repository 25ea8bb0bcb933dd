"""What the browser tests share (Playwright driving Debian's Chromium): where the browser
is, what its absence means, and waiting for a script run to end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")

#: True in the page once the script run has finished (Streamlit's own marker).
_NOT_RUNNING = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def need_chromium() -> None:
    """Skip the test without Debian's Chromium; in CI (``.ci/run`` installs it) its absence
    is a failure."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"Debian chromium is not installed at {CHROMIUM}")
        pytest.skip(f"Debian chromium is not installed at {CHROMIUM}")


def wait_idle(page, timeout_ms: int, settle_ms: int = 500) -> None:
    """Wait until the script run has finished, then ``settle_ms`` for the page to draw."""
    page.wait_for_function(_NOT_RUNNING, timeout=timeout_ms)
    page.wait_for_timeout(settle_ms)
