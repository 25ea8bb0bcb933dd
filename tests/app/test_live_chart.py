"""The chart redrawn in place (:mod:`kieval_app.live_chart`): what it sends the browser.
Drawing, redrawing in place and clicks are checked in a real browser
(``test_e2e_document_view.py``)."""

from __future__ import annotations

import gzip
import json

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from kieval_app.live_chart import NAME, PLOTLY_GZ, PLOTLY_JS, PLOTLY_ROOT, plotly_assets


def _chart_app() -> None:
    import plotly.graph_objects as go

    from kieval_app.live_chart import live_chart

    live_chart(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], customdata=[7, 8]), layout={"height": 300}),
               key="chart", revision="doc 1", config={"scrollZoom": True})


@pytest.mark.parametrize(("base", "prefix"), [("", ""), ("team/kie/", "/team/kie"), ("/kie", "/kie")])
def test_what_the_browser_is_sent(base, prefix):
    st_config.set_option("server.baseUrlPath", base)
    try:
        at = AppTest.from_function(_chart_app).run()
    finally:
        st_config.set_option("server.baseUrlPath", "")
    (element,) = at.get("bidi_component")
    assert element.proto.component_name == NAME
    sent = json.loads(element.proto.json)
    # under the server's base path
    assert sent["src"] == f"{prefix}/_stcore/bidi-components/{NAME}/{PLOTLY_GZ}"
    assert sent["revision"] == "doc 1"
    assert sent["config"] == {"responsive": True, "displaylogo": False, "scrollZoom": True}
    figure = json.loads(sent["figure"])
    assert figure["data"][0]["customdata"] == [7, 8] and figure["layout"]["height"] == 300
    assert "template" not in figure["layout"]  # the browser themes it from the page


def test_the_plotly_js_served_is_the_plotly_packages_own_gzipped_once():
    shipped = PLOTLY_ROOT / "package_data" / PLOTLY_JS
    assert shipped.stat().st_size > 1_000_000
    assert "* plotly.js v" in shipped.read_text(encoding="utf-8", errors="replace")[:100]
    assets = plotly_assets()
    assert [p.name for p in assets.iterdir()] == [PLOTLY_GZ] and plotly_assets() == assets
    assert gzip.decompress((assets / PLOTLY_GZ).read_bytes()) == shipped.read_bytes()


def _html_app() -> None:
    from kieval_app.live_chart import live_html
    from kieval_core.figures.diff import table_html

    live_html(table_html(["value"], [(["&lt;b&gt;x&lt;/b&gt;"], None)]), key="pairs", revision="doc 2")


def test_html_is_sent_as_built_with_its_revision():
    (element,) = AppTest.from_function(_html_app).run().get("bidi_component")
    sent = json.loads(element.proto.json)
    assert sent["revision"] == "doc 2" and set(sent) == {"html", "revision"}
    assert "<td>&lt;b&gt;x&lt;/b&gt;</td>" in sent["html"] and "<b>" not in sent["html"]


def _image_app() -> None:
    import plotly.graph_objects as go

    from kieval_app.live_chart import live_chart

    page = "data:image/jpeg;base64,AAAA"
    figure = go.Figure(layout={"images": [{"source": page, "xref": "x"}, {"source": page, "xref": "x2"},
                                          {"source": "data:image/png;base64,BBBB"}]})
    live_chart(figure, key="a", revision="1")
    live_chart(figure, key="b", revision="1")  # the same figure again (as cached): unchanged


def test_each_image_source_is_sent_once():
    first, second = AppTest.from_function(_image_app).run().get("bidi_component")
    for element in (first, second):
        sent = json.loads(element.proto.json)
        assert sent["images"] == ["data:image/jpeg;base64,AAAA", "data:image/png;base64,BBBB"]
        images = json.loads(sent["figure"])["layout"]["images"]
        assert [i["source"] for i in images] == [0, 0, 1] and images[1]["xref"] == "x2"
