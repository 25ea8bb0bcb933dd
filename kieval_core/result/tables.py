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



def rankings_table(result: EvaluationResult) -> pd.DataFrame:
    """The first screen's table (SPEC 2d): per model (index ``model``), KIEval_Aligned and its
    rank strictly (every field exact), under the rules in force (when some comparator is
    active) and under the suggested rules (when they differ from the active ones); rows in
    the order of the last of these rankings."""
    figures = result.rule_figures
    sets = {"strict": figures.strict} if figures.strict else {}  # none without the engine's tables
    if figures.active_comparators:
        sets["by the rules in force"] = figures.active
    if figures.suggested is not None:
        sets["suggested rules"] = figures.suggested
    last = list(sets.values())[-1]
    rows = {name: {column: value for label, figure in sets.items()
                   for column, value in ((f"KIEval_Aligned, {label}", figure[name].aligned),
                                         (f"rank, {label}", figure[name].rank))}
            for name in sorted(result.models, key=lambda n: last[n].rank)}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "model"
    return table


def causes_table(result: EvaluationResult) -> pd.DataFrame:
    """Every model's corrections by cause side by side (SPEC 2c): one row per (kind, cause),
    one column per model; empty when the causes were not counted."""
    causes = {name: m.causes for name, m in result.models.items() if m.causes is not None}
    rows = [{"correction": kind, "cause": cause.replace("_", " "),
             **{name: by_kind[kind][cause] for name, by_kind in causes.items()}}
            for kind, inner in next(iter(causes.values()), {}).items() for cause in inner]
    return pd.DataFrame(rows, columns=["correction", "cause", *causes])


def rules_panel_table(result: EvaluationResult) -> pd.DataFrame:
    """The rules panel (SPEC 2d): every field, its comparator (``ignore`` when it is not
    scored), where that comes from, who declared it, why (a suggestion), the values its
    comparator could not read and the values ignored; then the suggested comparator of the
    fields that have one."""
    unparsed = result.comparators_unparsed
    suggested = {r.pattern: r for r in result.rule_figures.suggested_rules.rules}
    rows = []
    for row in result.rules_table():
        entity_type = row["type"]
        suggestion = suggested.get(entity_type)
        rows.append({
            "field": entity_type,
            "comparator": "ignore" if row["ignore"] else row["comparator"],
            "source": row["source"],
            "declared by": row["declared_by"],
            "unparsed": unparsed.get(entity_type, 0),
            "ignored values": result.ignored.get(entity_type, 0),
            "suggested": suggestion.comparator if suggestion else "",
            "why": row["why"] or (suggestion.why if suggestion else ""),
        })
    return pd.DataFrame(rows, columns=["field", "comparator", "source", "declared by", "unparsed",
                                       "ignored values", "suggested", "why"])


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
