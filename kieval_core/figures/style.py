"""Colours and layout shared by every figure (Okabe-Ito palette: safe for colour blindness)."""

from __future__ import annotations

#: Entity status (on either side) -> colour. "added" = a GT value the prediction lacks.
STATUS_COLORS = {
    "correct": "#009E73",
    "substituted": "#E69F00",
    "added": "#0072B2",
    "deleted": "#D55E00",
}
#: Light backgrounds for table cells, same hues.
STATUS_BACKGROUNDS = {
    "correct": "#dff3ec",
    "substituted": "#fcefd2",
    "added": "#d9e8f5",
    "deleted": "#f8e0d3",
}
STATUS_LABELS = {
    "correct": "correct",
    "substituted": "substituted (wrong value)",
    "added": "added (missed, must be added)",
    "deleted": "deleted (spurious, must be deleted)",
}
#: The nearest of Streamlit's named markdown colours, for legends in text.
STATUS_MARKDOWN_COLORS = {
    "correct": "green",
    "substituted": "orange",
    "added": "blue",
    "deleted": "red",
}
#: Correction kind -> colour, matching the status that causes it.
KIND_COLORS = {
    "substitution": STATUS_COLORS["substituted"],
    "addition": STATUS_COLORS["added"],
    "deletion": STATUS_COLORS["deleted"],
}
KIND_LABELS = {"substitution": "substitutions", "addition": "additions", "deletion": "deletions"}
KINDS = ("substitution", "addition", "deletion")

ACCURACY_COLOR = "#0072B2"
AUTOMATION_COLOR = "#E69F00"
NEUTRAL_COLOR = "#7f7f7f"


#: A horizontal legend just above the plot, from its left edge (every chart with a legend).
LEGEND_ABOVE = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0}


def base_layout(height: int = 380, **extra) -> dict:
    """Common plotly layout: compact margins, readable font, white background."""
    layout = {
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "font": {"size": 13},
        "hoverlabel": {"namelength": -1},
    }
    layout.update(extra)
    return layout
