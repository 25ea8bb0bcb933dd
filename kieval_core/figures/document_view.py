"""The document view: one page with the ground truth's boxes (left) and the prediction's
(right), coloured by status, matched group pairs numbered alike on both sides.

The core decides what each box is (:func:`kieval_core.count.alignment.document_boxes`); this
module only draws. A page image, when there is one, is the background of both panels;
without one, each value is written at its box on a white page (a layout view drawn from
the boxes). Boxes are drawn as a few traces (outline per status, one hover and click
layer per side), not one shape per box: a figure with 200 boxes is built in milliseconds
and travels as a few arrays. The axes of both panels are linked, so zoom and pan follow.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kieval_core.read.page_images import Page

from ..result.tables import confidence_text
from .style import STATUS_COLORS, base_layout
from .text import plain

#: Outline per status: colour (Okabe-Ito) and dash, so no status is told by colour alone.
STATUS_STYLE = {
    "correct": (STATUS_COLORS["correct"], "solid", "correct"),
    "substituted": (STATUS_COLORS["substituted"], "dash", "substitution (wrong value)"),
    "added": (STATUS_COLORS["added"], "dot", "addition (missed: the GT box)"),
    "deleted": (STATUS_COLORS["deleted"], "dashdot", "deletion (spurious: the predicted box)"),
}
PAIR_COLOR = "#555555"
SELECTED_COLOR = "#000000"
SIDES = (("gt", "Ground truth"), ("pred", "Prediction"))
#: Width of the page drawn when the boxes are fractions of the page and there is no image.
FRACTION_PAGE = (1000.0, 1294.0)


@dataclass(frozen=True)
class PageFrame:
    """The drawing space of one page: its size, and whether the boxes are fractions of it
    (every coordinate of the document <= 1) rather than pixels."""

    width: float
    height: float
    fractions: bool = False


def page_frame(boxes: pd.DataFrame, image: Page | None) -> PageFrame:
    """The page's size: the image's original (boxes in its pixels, or fractions of it),
    else the extent of the boxes (a layout view)."""
    coords = boxes[["x0", "y0", "x1", "y1"]].to_numpy(np.float64)
    fractions = len(coords) > 0 and float(np.nanmax(np.abs(coords))) <= 1.0
    if image is not None:
        return PageFrame(image.width, image.height, fractions)
    if fractions or not len(coords):
        return PageFrame(*FRACTION_PAGE, fractions)
    return PageFrame(float(np.nanmax(coords[:, 2])) * 1.04 + 10, float(np.nanmax(coords[:, 3])) * 1.03 + 10)


def outside(boxes: pd.DataFrame, frame: PageFrame) -> int:
    """How many boxes reach outside the page (they are drawn where they are)."""
    c = _scaled(boxes, frame)
    return int(((c[:, 0] < 0) | (c[:, 1] < 0) | (c[:, 2] > frame.width) | (c[:, 3] > frame.height)).sum())


def _scaled(boxes: pd.DataFrame, frame: PageFrame) -> np.ndarray:
    c = boxes[["x0", "y0", "x1", "y1"]].to_numpy(np.float64)
    return c * np.array([frame.width, frame.height, frame.width, frame.height]) if frame.fractions else c


def _outlines(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed rectangles as one polyline, boxes separated by NaN (plotly breaks there)."""
    n = len(c)
    xs = np.column_stack([c[:, 0], c[:, 2], c[:, 2], c[:, 0], c[:, 0], np.full(n, np.nan)]).ravel()
    ys = np.column_stack([c[:, 1], c[:, 1], c[:, 3], c[:, 3], c[:, 1], np.full(n, np.nan)]).ravel()
    return xs, ys


def _hover(boxes: pd.DataFrame) -> list[str]:
    out = []
    for side, status, etype, value, conf, pair in zip(
        boxes["side"], boxes["status"], boxes["entity_type"], boxes["value"], boxes["confidence"],
        boxes["pair"], strict=True,
    ):
        confidence = "" if side == "gt" or conf != conf else f"<br>confidence {confidence_text(conf)}"
        line = f"<br>group pair {pair}" if pair else ""
        label = STATUS_STYLE[status][2]
        out.append(f"<b>{plain(etype, 40)}</b>: {plain(value, 80)}<br>{label}{confidence}{line}")
    return out


def document_figure(boxes: pd.DataFrame, page: int, image: Page | None, selected: int | None,
                    height: int | None = None, doc: str = "") -> go.Figure:
    """Both panels of one page; ``selected`` is the row (of the values table) drawn bold.

    Zoom and pan stay while the same page of the same ``doc`` is redrawn (a row selected)
    and start again at the boxes' extent on another page or document.

    Every point of the click layer carries its row in ``customdata``: a click on a box
    selects the row of the values table. The traces are built as plain dicts and the
    figure is not validated when it is built (``make_subplots`` and ``add_trace`` per trace
    cost ~10x more, validation alone ~2x the rest; the next document waits for it): the
    tests validate it (``tests/app/test_document_view_pages.py``).
    """
    on_page = boxes[boxes["page"].fillna(1).to_numpy() == page]
    frame = page_frame(boxes, image)
    source = None
    if image is not None:
        source = "data:image/jpeg;base64," + base64.b64encode(image.jpeg).decode()
    traces: list[dict] = []
    images, shapes, shown_legend = [], [], set()
    for col, (side, _) in enumerate(SIDES, start=1):
        axes = {"xaxis": "x" if col == 1 else f"x{col}", "yaxis": "y" if col == 1 else f"y{col}"}
        if source is not None:
            images.append({"source": source, "xref": axes["xaxis"], "yref": axes["yaxis"], "x": 0, "y": 0,
                           "sizex": frame.width, "sizey": frame.height, "xanchor": "left", "yanchor": "top",
                           "sizing": "stretch", "layer": "below"})
        else:
            shapes.append({"type": "rect", "x0": 0, "y0": 0, "x1": frame.width, "y1": frame.height,
                           "xref": axes["xaxis"], "yref": axes["yaxis"], "line": {"color": "#bbbbbb"},
                           "fillcolor": "white", "layer": "below"})
        mine = on_page[on_page["side"].to_numpy() == side]
        c = _scaled(mine, frame)
        status = mine["status"].to_numpy(object)
        if image is None and len(mine):  # the layout view: each value written at its box
            traces.append({"type": "scatter", **axes, "x": c[:, 0], "y": (c[:, 1] + c[:, 3]) / 2,
                           "mode": "text", "text": [plain(v, 24) for v in mine["value"]],
                           "textposition": "middle right",
                           "textfont": {"size": 9, "color": "#333333"}, "hoverinfo": "skip",
                           "showlegend": False})
        for name, (color, dash, label) in STATUS_STYLE.items():
            these = status == name
            if not these.any():
                continue
            xs, ys = _outlines(c[these])
            traces.append({"type": "scatter", **axes, "x": xs, "y": ys, "mode": "lines", "name": label,
                           "line": {"color": color, "width": 2, "dash": dash}, "legendgroup": name,
                           "showlegend": name not in shown_legend, "hoverinfo": "skip"})
            shown_legend.add(name)
        traces += _pairs(mine, c, col, axes)
        rows = mine["row"].to_numpy(np.int64)
        if selected is not None and (rows == selected).any():
            xs, ys = _outlines(c[rows == selected])
            traces.append({"type": "scatter", **axes, "x": xs, "y": ys, "mode": "lines", "name": "selected",
                           "line": {"color": SELECTED_COLOR, "width": 4}, "hoverinfo": "skip",
                           "showlegend": False})
        traces.append({  # the hover and click layer: one point per box, at its centre
            "type": "scatter", **axes, "x": (c[:, 0] + c[:, 2]) / 2, "y": (c[:, 1] + c[:, 3]) / 2,
            "mode": "markers", "name": f"{side} boxes", "showlegend": False, "customdata": rows,
            "marker": {"size": 12, "symbol": "square", "opacity": 0.18,
                       "color": [STATUS_STYLE[s][0] for s in status]},
            "hovertext": _hover(mine), "hoverinfo": "text"})
    (x0, x1), (y0, y1) = _extent(_scaled(on_page, frame), frame)
    if height is None:  # as tall as the opened region at a panel's width (~480 px at 1,440, ~270 at 1,024)
        height = int(min(max(420 * (y1 - y0) / max(x1 - x0, 1e-9) + 70, 400), 900))
    axis = {"showgrid": False, "zeroline": False, "showticklabels": False, "constrain": "domain"}
    layout = base_layout(height, margin={"l": 0, "r": 0, "t": 30, "b": 0})
    layout.update(
        xaxis={**axis, "domain": [0, 0.49], "range": [x0, x1]},
        xaxis2={**axis, "domain": [0.51, 1], "range": [x0, x1], "matches": "x"},
        yaxis={**axis, "range": [y1, y0], "scaleanchor": "x", "scaleratio": 1},
        yaxis2={**axis, "range": [y1, y0], "scaleanchor": "x2", "scaleratio": 1, "matches": "y"},
        dragmode="pan", clickmode="event+select", plot_bgcolor="#f4f4f4",
        legend={"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0}, uirevision=f"{doc}/page-{page}",
        annotations=[{"text": title, "x": x, "y": 1.0, "xref": "paper", "yref": "paper", "xanchor": "center",
                      "yanchor": "bottom", "showarrow": False, "font": {"size": 14}}
                     for (_, title), x in zip(SIDES, (0.245, 0.755), strict=True)],
    )
    for name, items in (("images", images), ("shapes", shapes)):  # as validation would: none, not []
        if items:
            layout[name] = items
    return go.Figure(data=traces, layout=layout, _validate=False)


def _extent(c: np.ndarray, frame: PageFrame) -> tuple[tuple[float, float], tuple[float, float]]:
    """What the view opens on: the boxes with a margin (the page where it has none); zoom
    out, or double-click, to see the whole page."""
    if not len(c):
        return (0.0, frame.width), (0.0, frame.height)
    pad = 0.06 * max(frame.width, frame.height)
    return ((max(min(0.0, np.nanmin(c[:, 0])), np.nanmin(c[:, 0]) - pad), np.nanmax(c[:, 2]) + pad),
            (max(min(0.0, np.nanmin(c[:, 1])), np.nanmin(c[:, 1]) - pad), np.nanmax(c[:, 3]) + pad))


def _pairs(boxes: pd.DataFrame, c: np.ndarray, col: int, axes: dict) -> list[dict]:
    """Each matched group pair outlined (the union of its boxes) and numbered."""
    pair = boxes["pair"].to_numpy(np.int64)
    numbered = pair > 0
    if not numbered.any():
        return []
    numbers, index = np.unique(pair[numbered], return_inverse=True)
    inner = c[numbered]
    g = np.empty((len(numbers), 4))
    for k, reduce in ((0, np.minimum), (1, np.minimum), (2, np.maximum), (3, np.maximum)):
        g[:, k] = np.inf if reduce is np.minimum else -np.inf
        reduce.at(g[:, k], index, inner[:, k])
    g += np.array([-4.0, -4.0, 4.0, 4.0])
    xs, ys = _outlines(g)
    return [
        {"type": "scatter", **axes, "x": xs, "y": ys, "mode": "lines",
         "line": {"color": PAIR_COLOR, "width": 1},
         "name": "matched group pair (same number on both sides)", "legendgroup": "pair",
         "showlegend": col == 1, "hoverinfo": "skip"},
        {"type": "scatter", **axes, "x": g[:, 0], "y": (g[:, 1] + g[:, 3]) / 2, "mode": "text",
         "text": [str(n) for n in numbers], "textposition": "middle left",
         "textfont": {"size": 12, "color": PAIR_COLOR}, "hoverinfo": "skip", "showlegend": False},
    ]


def n_pages(boxes: pd.DataFrame, images_pages: int) -> int:
    """Pages of a document: those with an image or a box."""
    boxed = int(boxes["page"].fillna(1).max()) if len(boxes) else 0
    return max(boxed, images_pages, 1)


def values_table(alignment: pd.DataFrame) -> pd.DataFrame:
    """The document's values pair by pair (:func:`kieval_core.count.alignment.document_view_tables`),
    one row per row the boxes point at, with the group pair's number as drawn on the page."""
    return pd.DataFrame({
        "pair": np.where(alignment["pair"].to_numpy() > 0, alignment["pair"].astype(str), ""),
        "field": alignment["entity_type"].astype(str),
        "ground truth": alignment["gt_value"].astype(object).where(alignment["gt_value"].notna(), ""),
        "prediction": alignment["pred_value"].astype(object).where(alignment["pred_value"].notna(), ""),
        "confidence": alignment["confidence"],
        "status": alignment["status"].astype(str),
    })
