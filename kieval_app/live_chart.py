"""Charts and HTML redrawn in place: the Documents page's parts that change with every
document, the Automation page's charts that change with every τ.

``st.plotly_chart`` gives every new figure a new element, so the browser builds the chart
anew (``Plotly.newPlot``) each time the figure changes. This Streamlit component (custom
components v2, no iframe) keeps one chart per key and hands each new figure to
``Plotly.react``, which updates only what changed. plotly.js is the copy in the plotly
package the server already has, served once per page through Streamlit's component assets,
gzipped once per server process (:func:`plotly_assets`); nothing is fetched from the
internet. The chart takes the page's font and colours (``live_chart.js``) instead of
Streamlit's plotly theme.

Either kind is drawn when it comes near the visible part of the page (hidden until then,
so what it showed before is never seen): moving to the next document draws what is on the
screen first, not the table a screen below (``st.html`` of the pair-by-pair table alone
cost ~130 ms per document in the browser, sanitised and laid out far out of sight).

A click on a point that carries ``customdata`` calls ``on_click`` with that value.
"""

from __future__ import annotations

import gzip
import hashlib
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plotly
import plotly.graph_objects as go
import streamlit as st
from plotly.io.json import to_json_plotly
from streamlit.components.v2.manifest_scanner import ComponentConfig, ComponentManifest
from streamlit.runtime import Runtime

from kieval_core import __version__

_PACKAGE, _COMPONENT = "kieval", "live_chart"
NAME = f"{_PACKAGE}.{_COMPONENT}"
#: plotly's own directory; ``package_data/plotly.min.js`` is the plotly.js it was built with.
PLOTLY_ROOT = Path(plotly.__file__).parent
PLOTLY_JS = "plotly.min.js"
#: What the browser is sent: :data:`PLOTLY_JS` gzipped (``live_chart.js`` inflates it).
PLOTLY_GZ = PLOTLY_JS + ".gz"

_JS = Path(__file__).with_name("live_chart.js").read_text(encoding="utf-8")
_mount = st.components.v2.component(NAME, js=_JS, isolate_styles=False)
_registering = threading.Lock()
_assets: tempfile.TemporaryDirectory | None = None  # removed when the process exits


def plotly_assets() -> Path:
    """The component's asset folder: :data:`PLOTLY_GZ`, written once per process.

    Served plain, plotly.js (4.8 MB) went through the server's gzip layer (Starlette's, at
    level 9) at every new visitor's first chart: 0.13 s of the server's CPU each time, half
    of what a new session cost it (bench/README.md, "Admission and release"). Served as a
    gzip file (``application/gzip``, which that layer passes as it is) it costs a file read;
    the browser inflates it (``DecompressionStream``), the same 1.5 MB on the wire."""
    global _assets
    with _registering:
        if _assets is None:
            folder = tempfile.TemporaryDirectory(prefix="kieval-live-chart-")
            data = (PLOTLY_ROOT / "package_data" / PLOTLY_JS).read_bytes()
            (Path(folder.name) / PLOTLY_GZ).write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
            _assets = folder
        return Path(_assets.name)


def _serve_plotly_js() -> str:
    """Declare :func:`plotly_assets` as this component's assets on the running server (once
    per runtime); the URL path of :data:`PLOTLY_GZ`."""
    manager = Runtime.instance().bidi_component_registry
    folder = plotly_assets()
    with _registering:  # registering leaves a bare placeholder until the script is put back
        if manager.get_component_asset_root(NAME) is None:
            manager.register_from_manifest(
                ComponentManifest(name=_PACKAGE, version=__version__,
                                  components=[ComponentConfig(name=_COMPONENT, asset_dir=folder.name)]),
                folder.parent,
            )
            manager.ensure_definition_if_missing_or_placeholder(component_key=NAME, html=None, css=None,
                                                                js=_JS)
    base = st.get_option("server.baseUrlPath").strip("/")
    return f"{'/' + base if base else ''}/_stcore/bidi-components/{NAME}/{PLOTLY_GZ}"


def _images_once(layout: dict) -> list[str]:
    """The layout images' sources, each sent once (the page view shows its page image in
    both panels): every source becomes its index in the list returned, which the browser
    puts back."""
    sources: dict[str, int] = {}
    for image in layout.get("images") or ():
        if isinstance(image.get("source"), str):
            image["source"] = sources.setdefault(image["source"], len(sources))
    return list(sources)


def live_chart(figure: go.Figure, *, key: str, revision: str | None = None,
               config: dict[str, Any] | None = None, on_click: Callable[[Any], None] | None = None) -> None:
    """Draw ``figure`` under ``key``, updating the chart already drawn there.

    ``revision`` names what is shown (the document and page, say; default: a digest of the
    figure); the browser writes it on the chart (``data-drawn``) once drawn, for tests and
    benchmarks to wait on. ``on_click(customdata)`` runs, as a widget callback, when a
    point with customdata is clicked.
    """
    spec = figure.to_dict()
    # the browser themes the chart from the page; Streamlit's template (colour placeholders
    # its own chart element fills in) would be sent for nothing
    spec["layout"].pop("template", None)
    images = _images_once(spec["layout"])
    shown = to_json_plotly(spec)
    if revision is None:
        revision = hashlib.blake2b(shown.encode(), digest_size=8).hexdigest()
    data = {
        "figure": shown,
        "images": images,
        "config": {"responsive": True, "displaylogo": False, **(config or {})},
        "src": _serve_plotly_js(),
        "revision": revision,
    }
    if on_click is None:
        _mount(data=data, key=key)
        return

    def clicked() -> None:
        value = st.session_state[key].get("click")
        if value is not None:
            on_click(value)

    _mount(data=data, key=key, on_click_change=clicked)


def live_html(html: str, *, key: str, revision: str) -> None:
    """Show ``html`` under ``key`` once it comes near the visible part of the page.

    ``html`` must be built from escaped text (:func:`kieval_core.figures.diff.table_html`): it is
    set as is, where ``st.html`` would also sanitise it.
    """
    _mount(data={"html": html, "revision": revision}, key=key)
