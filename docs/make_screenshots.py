"""Take screenshots of every dashboard page with headless Chromium.

    python docs/make_screenshots.py [--out docs/screenshots] [--width 1400]
        [--gt FILE --pred FILE ... [--images FILE]] [--meta KEY] [--prefix NAME] [--view]
        [--review documents] [--scope field]

Starts ``streamlit run app.py`` on a free port, opens each page (on the built-in sample,
or after uploading ``--gt`` and ``--pred`` files), waits until the app is idle, and
saves one PNG per page (the full page up to 3,400 px, in 256 colours). ``--view`` also
saves the Documents page's document view alone (``<prefix>document_view.png``);
``--review documents`` shows the Automation page reviewing whole documents, ``--scope
field`` its per-field plan (floors, automation blockers).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kieval_app.serving.headless import CHROMIUM_ARGS, streamlit_server  # noqa: E402

PAGES = [
    ("overview", "Overview"),
    ("documents", "Documents"),
    ("errors", "Errors"),
    ("automation", "Automation"),
    ("compare", "Compare"),
    ("suspects", "Suspect labels"),
    ("guide", "Metrics guide"),
]


def wait_idle(page, timeout_ms: int = 120_000) -> None:
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


def capture(page, path: Path, width: int, max_height: int = 3400) -> None:
    """Screenshot the whole scrollable app at ``width`` (at most ``max_height`` tall), then
    reduce it to a 256-colour palette so it stays small for the README."""
    height = page.evaluate(
        """() => {
            const main = document.querySelector('[data-testid="stMain"]')
                || document.querySelector('section.main');
            return main ? main.scrollHeight : document.body.scrollHeight;
        }"""
    )
    page.set_viewport_size({"width": width, "height": min(max(int(height) + 40, 768), max_height)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(path), full_page=True)
    with contextlib.suppress(ImportError):
        from PIL import Image

        with Image.open(path) as image:
            small = quantize(image.convert("RGB"))
        small.save(path, optimize=True)


def chart_colors() -> list[str]:
    """Every #RRGGBB colour the app's figures are drawn with (its style modules' constants)."""
    from kieval_core.figures import automation, error_analysis, overview, style

    found = set()
    for module in (style, automation, error_analysis, overview):
        for value in vars(module).values():
            for item in value.values() if isinstance(value, dict) else [value]:
                if isinstance(item, str) and re.fullmatch(r"#[0-9A-Fa-f]{6}", item):
                    found.add(item.upper())
    return sorted(found)


def quantize(image):
    """256 colours: the charts' own colours exactly, the rest by median cut (alone, median cut
    turned the Errors legend's vermillion deletions into the substitutions' orange; octree
    turned the sidebar white, max coverage pink), no dithering."""
    from PIL import Image

    colors = chart_colors()
    n = 256 - len(colors)
    base = image.quantize(colors=n, method=Image.Quantize.MEDIANCUT)
    palette = base.getpalette()[: 3 * n] + [int(c[i:i + 2], 16) for c in colors for i in (1, 3, 5)]
    holder = Image.new("P", (1, 1))
    holder.putpalette(palette)
    return image.quantize(palette=holder, dither=Image.Dither.NONE)


def upload(page, gt: Path, preds: list[Path], meta: str | None, images: Path | None = None) -> None:
    """Upload files on the Overview page (and declare metadata keys first)."""
    if meta:
        page.get_by_text("Reading files").click()
        box = page.locator(".st-key-opt_meta input")
        box.fill(meta)
        box.press("Enter")
        wait_idle(page)
    page.locator('[class*="st-key-upload_gt_"]').locator("input[type=file]").set_input_files(str(gt))
    page.get_by_text(f"{gt.name}: loaded as the ground truth").wait_for(timeout=120_000)
    wait_idle(page)
    page.locator('[class*="st-key-upload_pred_"]').locator("input[type=file]").set_input_files(
        [str(p) for p in preds]
    )
    page.get_by_test_id("stTable").first.wait_for(timeout=120_000)
    wait_idle(page)
    if images is not None:
        page.locator('[class*="st-key-upload_images_"]').locator("input[type=file]").set_input_files(str(images))
        page.get_by_text(f"{images.name}: ").first.wait_for(timeout=120_000)
        wait_idle(page)


def mark_first_suspect(page) -> None:
    """On the Suspect labels page: the first suspect marked "label is wrong", so the figures
    with the fix show beside the original."""
    form = page.get_by_test_id("stForm").first
    form.get_by_text("label is wrong: use this value").click()
    form.get_by_role("textbox").nth(1).fill("checked against the receipt")
    form.get_by_role("button", name="Save verdict").click()
    wait_idle(page)


def capture_view(page, path: Path) -> None:
    """The document view and the values table beside it, alone."""
    view = page.locator(".st-key-docs_view")
    view.scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    box = view.bounding_box()
    table = page.locator(".st-key-docs_values").bounding_box()
    bottom = table["y"] + table["height"] if table else box["y"] + box["height"]
    clip = {"x": box["x"], "y": box["y"] - 60, "width": box["width"], "height": bottom - box["y"] + 70}
    page.screenshot(path=str(path), full_page=True, clip=clip)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--pages", nargs="*", default=[p for p, _ in PAGES])
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--gt", type=Path)
    parser.add_argument("--pred", type=Path, action="append", default=[])
    parser.add_argument("--meta")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--images", type=Path)
    parser.add_argument("--view", action="store_true")
    parser.add_argument("--review", choices=["predictions", "documents"], default="predictions")
    parser.add_argument("--scope", choices=["one", "field"], default="one")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with streamlit_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": 900})
        page.goto(url)
        wait_idle(page)
        if args.gt:
            upload(page, args.gt, args.pred, args.meta, args.images)
        for name, title in PAGES:
            if name not in args.pages:
                continue
            page.set_viewport_size({"width": args.width, "height": 900})
            page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
            wait_idle(page)
            if name == "automation" and args.review == "documents":
                page.locator(".st-key-auto_review").get_by_text("whole documents").click()
                wait_idle(page)
            if name == "automation" and args.scope == "field":
                page.locator(".st-key-auto_scope").get_by_role("combobox").click()
                page.get_by_role("option", name="one τ per field").click()
                wait_idle(page)
            if name == "suspects":
                mark_first_suspect(page)
            target = out / f"{args.prefix}{name}.png"
            if name == "documents" and args.view:
                view = out / f"{args.prefix}document_view.png"
                capture_view(page, view)
                print(f"wrote {view}")
            capture(page, target, args.width)
            print(f"wrote {target}")
        browser.close()


if __name__ == "__main__":
    main()
