"""Tables people read, built from result objects: every model's figures by metric, the
corrections beside FP + FN (the paper's Table 3), and how one figure is written in a cell.
The dashboard, the command line's summary and the notebook view share them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from .registry import Metric, metrics_of

if TYPE_CHECKING:
    from .results import EvaluationResult


def reported_metrics(result: EvaluationResult, headline: bool = False) -> list[Metric]:
    """The registry metrics at least one model holds, in registry order (only the headline
    ones with ``headline``)."""
    return [
        m
        for m in metrics_of(result.metrics)
        if (m.headline or not headline)
        and any(m.computed(model) and m.get(model) is not None for model in result.models.values())
    ]



def metric_table(result: EvaluationResult, headline: bool = False) -> pd.DataFrame:
    """One row per model (index ``model``), one column per metric label: fractions for
    scores, integers for counts, NaN where a metric is not defined for that model."""
    metrics = reported_metrics(result, headline)
    rows = {
        name: {m.label: m.get(model) if m.computed(model) else None for m in metrics}
        for name, model in result.models.items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index", columns=[m.label for m in metrics])
    table.index.name = "model"
    return table.apply(pd.to_numeric)



def corrections_table(result: EvaluationResult) -> pd.DataFrame:
    """Per model: substitutions, additions, deletions and their total beside FP + FN, and how
    much FP + FN overstates the work, (FP + FN - corrections) / corrections (the paper's
    Table 3: a wrong value is one correction but one FP and one FN; 0 without corrections)."""
    rows = []
    for name, model in result.models.items():
        c, e = model.corrections, model.entity
        fp_fn = e.fp + e.fn
        rows.append(
            {
                "model": name,
                "substitution": c.substitution,
                "addition": c.addition,
                "deletion": c.deletion,
                "corrections": c.total,
                "FP + FN": fp_fn,
                "FP + FN overstates work by": (fp_fn - c.total) / c.total if c.total else 0.0,
            }
        )
    return pd.DataFrame(rows).set_index("model")



def cell_text(value, whole: bool = False) -> str:
    """A figure for a table people read: n/a when undefined, fractions and thresholds with
    four decimals, counts (and ``whole`` figures) with thousands separators.

    >>> cell_text(0.90654), cell_text(12345), cell_text(360.4, whole=True), cell_text(None)
    ('0.9065', '12,345', '360', 'n/a')
    """
    if value is None or (isinstance(value, float) and value != value):
        return "n/a"
    if isinstance(value, float) and not whole:
        return f"{value:.4f}"
    return f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


def confidence_text(confidence: float | None) -> str:
    """A confidence for people, with the four decimals of
    :func:`~kieval_core.review.automation.threshold_text`; one below 1 that four decimals
    would round up reads "> 0.9999", not "1.0000", so a reader never takes a prediction
    that would be reviewed at τ 1 for a certain one. No confidence is "".

    >>> confidence_text(0.66754), confidence_text(0.99996), confidence_text(1.0), confidence_text(None)
    ('0.6675', '> 0.9999', '1.0000', '')
    """
    if confidence is None or confidence != confidence:
        return ""
    text = f"{confidence:.4f}"
    return "> 0.9999" if text == "1.0000" and confidence < 1.0 else text
