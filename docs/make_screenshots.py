"""Take the README screenshots of every dashboard page (sample data) with headless Chromium.

    python docs/make_screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]

Starts ``streamlit run app.py`` on a free port, opens each page, waits until the app is
idle, and saves one PNG per page (the full page up to 3,400 px, in 256 colours).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kieval_app.headless import CHROMIUM_ARGS, streamlit_server  # noqa: E402

PAGES = [
    ("overview", ""),
    ("documents", "documents?doc=validation_0075&model=simulated-weak"),
    ("errors", "errors"),
    ("automation", "automation"),
    ("compare", "compare"),
    ("guide", "guide"),
]


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script run finished (no 'Running' status, no skeletons)."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning'
                && !document.querySelector('[data-testid="stSkeleton"]');
        }""",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(1200)  # plotly and data grids draw after the run


def capture(page, path: Path, width: int = 1400, max_height: int = 3400) -> None:
    """Screenshot the whole scrollable app at ``width`` (at most ``max_height`` tall), then
    reduce it to a 256-colour palette so it stays small for the README."""
    height = page.evaluate(
        """() => {
            const main = document.querySelector('[data-testid="stMain"]')
                || document.querySelector('section.main');
            return main ? main.scrollHeight : document.body.scrollHeight;
        }"""
    )
    page.set_viewport_size({"width": width, "height": min(max(int(height) + 40, 900), max_height)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(path), full_page=True)
    with contextlib.suppress(ImportError):
        from PIL import Image

        with Image.open(path) as image:
            small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
        small.save(path, optimize=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--pages", nargs="*", default=[p for p, _ in PAGES])
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with streamlit_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        for name, path in PAGES:
            if name not in args.pages:
                continue
            page.set_viewport_size({"width": 1400, "height": 900})
            page.goto(url + path)
            wait_idle(page)
            capture(page, out / f"{name}.png")
            print(f"wrote {out / f'{name}.png'}")
        browser.close()


if __name__ == "__main__":
    main()
