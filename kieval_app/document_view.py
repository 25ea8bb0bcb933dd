"""The document view: one page with the ground truth's boxes (left) and the prediction's
(right), coloured by status, matched group pairs numbered alike on both sides.

The core decides what each box is (:func:`kieval_core.alignment.document_boxes`); this
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
from plotly.subplots import make_subplots

from kieval_core.alignment import document_alignment, group_pairs, pair_numbers
from kieval_core.page_images import Page

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
        confidence = "" if side == "gt" or conf != conf else f"<br>confidence {conf:.3f}"
        line = f"<br>group pair {pair}" if pair else ""
        label = STATUS_STYLE[status][2]
        out.append(f"<b>{plain(etype, 40)}</b>: {plain(value, 80)}<br>{label}{confidence}{line}")
    return out


def document_figure(boxes: pd.DataFrame, page: int, image: Page | None, selected: int | None,
                    height: int = 760) -> go.Figure:
    """Both panels of one page; ``selected`` is the row (of the pairs table) drawn bold.

    Every point of the click layer carries its row in ``customdata``: a click on a box
    selects the row of the pairs table.
    """
    on_page = boxes[boxes["page"].fillna(1) == page]
    frame = page_frame(boxes, image)
    fig = make_subplots(rows=1, cols=2, subplot_titles=[t for _, t in SIDES], horizontal_spacing=0.02)
    source = None
    if image is not None:
        source = "data:image/jpeg;base64," + base64.b64encode(image.jpeg).decode()
    for col, (side, _) in enumerate(SIDES, start=1):
        axis = "" if col == 1 else str(col)
        if source is not None:
            fig.add_layout_image(source=source, xref=f"x{axis}", yref=f"y{axis}", x=0, y=0, sizex=frame.width,
                                 sizey=frame.height, xanchor="left", yanchor="top", sizing="stretch",
                                 layer="below")
        else:
            fig.add_shape(type="rect", x0=0, y0=0, x1=frame.width, y1=frame.height, line={"color": "#bbbbbb"},
                          fillcolor="white", layer="below", row=1, col=col)
        mine = on_page[on_page["side"] == side]
        c = _scaled(mine, frame)
        if image is None and len(mine):  # the layout view: each value written at its box
            fig.add_trace(go.Scatter(
                x=c[:, 0], y=(c[:, 1] + c[:, 3]) / 2, mode="text", text=[plain(v, 40) for v in mine["value"]],
                textposition="middle right", textfont={"size": 10, "color": "#333333"}, hoverinfo="skip",
                showlegend=False), row=1, col=col)
        for status, (color, dash, label) in STATUS_STYLE.items():
            these = (mine["status"] == status).to_numpy()
            if not these.any():
                continue
            xs, ys = _outlines(c[these])
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", line={"color": color, "width": 2, "dash": dash}, name=label,
                legendgroup=status, showlegend=not any(t.legendgroup == status for t in fig.data),
                hoverinfo="skip"), row=1, col=col)
        _pairs(fig, mine, c, col)
        if selected is not None and (mine["row"] == selected).any():
            xs, ys = _outlines(c[(mine["row"] == selected).to_numpy()])
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": SELECTED_COLOR, "width": 4},
                                     name="selected", hoverinfo="skip", showlegend=False), row=1, col=col)
        fig.add_trace(go.Scatter(  # the hover and click layer: one point per box, at its centre
            x=(c[:, 0] + c[:, 2]) / 2, y=(c[:, 1] + c[:, 3]) / 2, mode="markers",
            marker={"size": 14, "symbol": "square", "opacity": 0.25,
                    "color": [STATUS_STYLE[s][0] for s in mine["status"]]},
            customdata=mine["row"].to_numpy(np.int64), hovertext=_hover(mine), hoverinfo="text",
            name=f"{side} boxes", showlegend=False), row=1, col=col)
    (x0, x1), (y0, y1) = _extent(_scaled(on_page, frame), frame)
    for axis in ("xaxis", "xaxis2"):
        fig.layout[axis].update(range=[x0, x1], showgrid=False, zeroline=False, showticklabels=False,
                                constrain="domain")
    for axis, x in (("yaxis", "x"), ("yaxis2", "x2")):
        fig.layout[axis].update(range=[y1, y0], showgrid=False, zeroline=False, showticklabels=False,
                                scaleanchor=x, scaleratio=1, constrain="domain")
    fig.layout.xaxis2.matches = "x"
    fig.layout.yaxis2.matches = "y"
    fig.update_layout(**base_layout(height, margin={"l": 0, "r": 0, "t": 30, "b": 0}),
                      dragmode="pan", clickmode="event+select", plot_bgcolor="#f4f4f4",
                      legend={"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0},
                      uirevision=f"page-{page}")
    return fig


def _extent(c: np.ndarray, frame: PageFrame) -> tuple[tuple[float, float], tuple[float, float]]:
    """What the view opens on: the boxes with a margin (the page where it has none); zoom
    out, or double-click, to see the whole page."""
    if not len(c):
        return (0.0, frame.width), (0.0, frame.height)
    pad = 0.06 * max(frame.width, frame.height)
    return ((max(min(0.0, np.nanmin(c[:, 0])), np.nanmin(c[:, 0]) - pad), np.nanmax(c[:, 2]) + pad),
            (max(min(0.0, np.nanmin(c[:, 1])), np.nanmin(c[:, 1]) - pad), np.nanmax(c[:, 3]) + pad))


def _pairs(fig: go.Figure, boxes: pd.DataFrame, c: np.ndarray, col: int) -> None:
    """Each matched group pair outlined (the union of its boxes) and numbered."""
    numbered = boxes["pair"].to_numpy(np.int64) > 0
    if not numbered.any():
        return
    frame = pd.DataFrame(c[numbered], columns=["x0", "y0", "x1", "y1"])
    frame["pair"] = boxes["pair"].to_numpy(np.int64)[numbered]
    groups = frame.groupby("pair").agg(x0=("x0", "min"), y0=("y0", "min"), x1=("x1", "max"), y1=("y1", "max"))
    pad = 4.0
    g = groups.to_numpy(np.float64) + np.array([-pad, -pad, pad, pad])
    xs, ys = _outlines(g)
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": PAIR_COLOR, "width": 1},
                             name="matched group pair (same number on both sides)", legendgroup="pair",
                             showlegend=col == 1, hoverinfo="skip"), row=1, col=col)
    fig.add_trace(go.Scatter(x=g[:, 0], y=(g[:, 1] + g[:, 3]) / 2, mode="text",
                             text=[str(n) for n in groups.index], textposition="middle left",
                             textfont={"size": 12, "color": PAIR_COLOR}, hoverinfo="skip", showlegend=False),
                  row=1, col=col)


def n_pages(boxes: pd.DataFrame, images_pages: int) -> int:
    """Pages of a document: those with an image or a box."""
    boxed = int(boxes["page"].fillna(1).max()) if len(boxes) else 0
    return max(boxed, images_pages, 1)


def values_table(counted, doc_id: str) -> pd.DataFrame:
    """The document's values pair by pair, one row per row of the alignment (the rows the
    boxes point at), with the group pair's number as drawn on the page."""
    alignment = document_alignment(counted, doc_id)
    numbers = pair_numbers(group_pairs(counted, doc_id))
    pair = [numbers.get((t, int(g), int(p)), 0) for t, g, p in
            zip(alignment["group_type"], alignment["gt_group"], alignment["pred_group"], strict=True)]
    return pd.DataFrame({
        "pair": [str(n) if n else "" for n in pair],
        "field": alignment["entity_type"].astype(str),
        "ground truth": alignment["gt_value"].astype(object).where(alignment["gt_value"].notna(), ""),
        "prediction": alignment["pred_value"].astype(object).where(alignment["pred_value"].notna(), ""),
        "confidence": alignment["confidence"],
        "status": alignment["status"].astype(str),
    })
