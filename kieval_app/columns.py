"""Tables for people: one percent format (two decimals), thousands separators, and names
for people, never a raw column name beside a friendly one.

Streamlit's ``percent`` preset drops trailing zeros ("68.2%" beside "72.73%"), so
fractions are shown as numbers scaled by 100 with ``%.2f%%``: every percentage reads the
same, and the columns still sort as numbers.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from pandas.api.types import is_numeric_dtype

from kieval_core import EvaluationResult
from kieval_core.figures.overview import reported_metrics
from kieval_core.figures.text import md

PERCENT_FORMAT = "%.2f%%"

#: Friendly names of the core's table columns.
LABELS = {
    "doc_id": "document",
    "entity_type": "field",
    "group_type": "group type",
    "gt_group": "GT line",
    "pred_group": "predicted line",
    "gt_value": "ground truth",
    "pred_value": "prediction",
    "kind": "correction",
    "confidence": "confidence",
    "corrections": "corrections",
    "errors_left": "errors left",
    "n_gt": "GT values",
    "n_pred": "predicted values",
    "tp": "correct",
    "fp": "FP",
    "fn": "FN",
    "substitution": "substitutions",
    "addition": "additions",
    "deletion": "deletions",
    "aligned": "KIEval_Aligned",
    "f1": "KIEval F1",
    "group_f1": "group F1",
    "flat_f1": "flat F1",
    "missing": "missing",
    "predictions": "predictions",
    "reviewed": "reviewed",
    "fixed": "fixed by review",
    "auto_rate": "automation",
    "kieval_aligned": "accuracy after review",
    "threshold": "τ",
    "count": "times",
    "documents": "documents",
    "coverage": "confidences",
    "accuracy": "share right",
    "mean_confidence": "mean confidence",
    "ece": "ECE",
    "brier": "Brier score",
    "auroc": "AUROC",
    "with_confidence": "with confidence",
    "tp_after": "correct after review",
    "n_documents": "documents",
    "value": "value",
    "matching corrections": "matching corrections",
    "precision": "precision",
    "recall": "recall",
}
#: Columns holding fractions.
PERCENT = {
    "aligned",
    "f1",
    "group_f1",
    "flat_f1",
    "precision",
    "recall",
    "auto_rate",
    "kieval_aligned",
    "coverage",
    "accuracy",
    "ece",
    "straight_through_rate",
    "document_accuracy",
    "group_aligned",
    "flat_precision",
    "flat_recall",
    "group_precision",
    "group_recall",
    "confidence coverage",
}
#: Columns holding counts.
COUNTS = {
    "corrections",
    "errors_left",
    "n_gt",
    "n_pred",
    "tp",
    "fp",
    "fn",
    "substitution",
    "addition",
    "deletion",
    "predictions",
    "reviewed",
    "fixed",
    "count",
    "documents",
    "with_confidence",
    "tp_after",
    "n_documents",
    "matching corrections",
}
#: Line numbers: the core counts groups from 0, people from 1.
LINES = {"gt_group", "pred_group"}


def shown(
    frame: pd.DataFrame,
    percent: set[str] = frozenset(),
    counts: set[str] = frozenset(),
    labels: dict[str, str] | None = None,
    **extra,
) -> tuple[pd.DataFrame, dict]:
    """A core table ready for ``st.dataframe``: the frame (fractions scaled to percent,
    lines counted from 1) and its column configs (friendly names, formats)."""
    labels = {**LABELS, **(labels or {})}
    percent = PERCENT | set(percent)
    counts = COUNTS | set(counts)
    out = frame.copy()
    config = {}
    for column in frame.columns:
        label = labels.get(column, str(column).replace("_", " "))
        if column in percent:
            out[column] = pd.to_numeric(out[column], errors="coerce") * 100
            config[column] = st.column_config.NumberColumn(label, format=PERCENT_FORMAT)
        elif column in LINES:
            out[column] = out[column] + 1
            config[column] = st.column_config.NumberColumn(label, format="%d")
        elif column in counts:
            config[column] = st.column_config.NumberColumn(label, format="localized")
        elif column in ("confidence", "mean_confidence"):  # as thresholds are written
            config[column] = st.column_config.NumberColumn(label, format="%.4f")
        elif column in ("brier", "auroc"):
            config[column] = st.column_config.NumberColumn(label, format="%.3f")
        elif column == "threshold":
            config[column] = st.column_config.NumberColumn(label, format="%.4f")
        else:
            config[column] = st.column_config.Column(label)
    config.update(extra)
    return out, config


def metric_table(result: EvaluationResult, table: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """A metric table (one column per registry metric label, index ``model``) for people."""
    metrics = [m for m in reported_metrics(result) if m.label in table.columns]
    scores = {m.label for m in metrics if not m.count}
    counts = {m.label for m in metrics if m.count}
    frame, config = shown(
        table.reset_index(), percent=scores, counts=counts, labels={m.label: m.label for m in metrics}
    )
    config["model"] = st.column_config.TextColumn("model", pinned=True)
    for metric in metrics:
        config[metric.label]["help"] = f"{metric.definition} ({metric.direction})"
    return frame, config


def metric_styler(result: EvaluationResult, table: pd.DataFrame):
    """A small metric table as a static HTML table (``st.table``): percentages with two
    decimals, counts with separators, blank where a metric is not defined. ``st.table``
    renders its cells as markdown, so text cells (the model names) are escaped."""
    metrics = [m for m in reported_metrics(result) if m.label in table.columns]
    formats = {m.label: ("{:,.0f}" if m.count else (lambda v: f"{100 * v:.2f}%")) for m in metrics}
    frame = table.reset_index()
    formats.update({c: md for c in frame.columns if c not in formats and not is_numeric_dtype(frame[c])})
    return frame.style.format(formats, na_rep="").hide(axis="index")
