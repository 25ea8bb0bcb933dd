"""Page images and boxes in the app (AppTest): every bad image gives one message and
nothing else is lost; the Documents page draws the view, a layout without images and the
image beside the values without boxes; boxes outside the page are said."""

from __future__ import annotations

import io
import json

import plotly.graph_objects as go
import plotly.io as pio
from PIL import Image
from test_page_images import _pdf, _zip
from test_pages import live_charts, open_page, started, unescape, upload

from kieval_core import evaluate
from kieval_core.count.alignment import document_boxes
from kieval_core.figures import document_view
from kieval_core.read.page_images import Page


def _png(width=400, height=300, mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), "white" if mode == "RGB" else 0).save(out, "PNG")
    return out.getvalue()


def _records(boxes: bool = True, bad: bool = False) -> tuple[bytes, bytes]:
    def leaf(value, box, conf=None):
        out = {"value": value, **({"bbox": box} if boxes else {})}
        return {**out, **({"confidence": conf} if conf is not None else {})}

    gt = [{"doc_id": d, "total": leaf("5", [10, 10, 60, 30]), "date": leaf("1/2", [10, 50, 60, 70]),
           "name": leaf("far", [350, 250, 900, 280])} for d in ("d1", "d2", "d3")]
    pred = [{"doc_id": d, "total": leaf("5", [10, 10, 60, 30], 0.9),
             "date": leaf("1/3", [10, 50, 60, 70], 0.4),
             "name": leaf("far", [900, 250, 350, 280] if bad else [350, 250, 900, 280], 0.8)}
            for d in ("d1", "d2", "d3")]
    return tuple(("\n".join(map(json.dumps, rows)) + "\n").encode() for rows in (gt, pred))


def _messages(at) -> list[str]:
    return [unescape(m.value) for m in (*at.error, *at.warning, *at.success)]


def test_each_bad_image_gives_one_message_and_the_rest_is_kept():
    gt, pred = _records(bad=True)
    at = upload(upload(started(), "gt", ("gt.jsonl", gt)), "pred", ("model.jsonl", pred))
    bomb = _png(20_000, 20_000, mode="1")
    images = _zip({"d1.png": _png(), "d2.png": b"\x89PNG broken", "d3/1.png": bomb,
                   "d3.pdf": _pdf(1000), "nobody.png": _png()})
    at = upload(at, "images", ("pages.zip", images))
    messages = _messages(at)

    def once(text: str) -> None:
        assert sum(text in m for m in messages) == 1, (text, messages)

    once("pages.zip: 51 page(s) of 2 document(s) loaded")  # d1, and d3's first 50 PDF pages
    once("pages.zip/d2.png: not a readable image")
    once("pages.zip/d3/1.png: refused as a decompression bomb")
    once("pages.zip/d3.pdf: 1,000 pages; the first 50 are shown")
    once("images for 'nobody', which is no document of the ground truth")
    ws = at.session_state["workspace"]
    assert ws.images.n_pages("d1") == 1 and ws.images.n_pages("d3") == 50
    assert ws.model_names == ["model"]  # nothing else lost
    # the box with x1 < x0 is named with its file and document, the entity still scored
    assert any("model.jsonl: document 'd1': the box of 'name' was dropped: x1 < x0" in w
               for w in ws.result.all_warnings)
    at = open_page(at, "documents")
    view = live_charts(at)[0]  # d1: its page image behind both panels
    assert view["revision"] == "model/d1/1/None" and len(view["figure"]["layout"]["images"]) == 2
    outside = [unescape(w.value) for w in at.warning if "outside the page" in w.value]
    assert outside == ["1 box(es) of this document reach outside the page (400 x 300); they are drawn "
                       "where the file puts them."]


def test_a_corrupt_archive_is_refused_and_keeps_the_session():
    gt, pred = _records()
    at = upload(upload(started(), "gt", ("gt.jsonl", gt)), "pred", ("model.jsonl", pred))
    at = upload(at, "images", ("pages.zip", b"PK\x03\x04 not really"))
    errors = [unescape(e.value) for e in at.error]
    assert len(errors) == 1 and "pages.zip" in errors[0] and "not a readable zip" in errors[0]
    assert at.session_state["workspace"].model_names == ["model"]


def test_layout_view_without_images_and_image_beside_values_without_boxes():
    gt, pred = _records()
    at = upload(upload(started(), "gt", ("gt.jsonl", gt)), "pred", ("model.jsonl", pred))
    at = open_page(at, "documents")
    assert any("a layout drawn from the boxes" in m.value for m in at.markdown)
    gt, pred = _records(boxes=False)
    at = upload(upload(started(), "gt", ("gt.jsonl", gt)), "pred", ("model.jsonl", pred))
    at = open_page(upload(at, "images", ("d1.png", _png())), "documents")
    assert any("the page image beside the values" in m.value for m in at.markdown)
    assert len(at.get("image")) == 1


def test_the_view_figure_draws_every_box_once(tmp_path):
    gt, pred = _records()
    (tmp_path / "gt.jsonl").write_bytes(gt)
    (tmp_path / "m.jsonl").write_bytes(pred)
    counted = evaluate(tmp_path / "gt.jsonl", {"m": tmp_path / "m.jsonl"}).models["m"].detail()
    boxes = document_boxes(counted, "d1")
    figure = document_view.document_figure(boxes, 1, None, selected=1)
    drawn = {}
    for trace in figure.data:
        if trace.mode == "lines" and trace.name != "selected":
            drawn[trace.xaxis, trace.name] = sum(v != v for v in trace.x)  # NaN ends each box
    assert drawn == {("x", "correct"): 2, ("x", "substitution (wrong value)"): 1,
                     ("x2", "correct"): 2, ("x2", "substitution (wrong value)"): 1}
    selected = [t for t in figure.data if t.name == "selected"]
    assert len(selected) == 2  # the substituted date outlined on both sides
    # built without plotly's validation (for speed): validating it changes nothing
    image = Page(jpeg=b"\xff\xd8 a jpeg", width=400, height=300, shown_width=400, shown_height=300)
    for fig in (figure, document_view.document_figure(boxes, 1, image, selected=None)):
        assert json.loads(pio.to_json(go.Figure(fig.to_dict()))) == json.loads(pio.to_json(fig))
