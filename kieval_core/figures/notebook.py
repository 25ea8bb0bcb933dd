"""What a notebook shows for a result: a compact HTML summary (Jupyter's ``_repr_html_``).

:func:`result_html` (an :class:`~kieval_core.result.results.EvaluationResult`) and
:func:`model_html` (one :class:`~kieval_core.result.results.ModelResult`) give the headline
figures (:func:`~kieval_core.result.tables.metric_table`), the corrections beside FP + FN
(:func:`~kieval_core.result.tables.corrections_table`) and the recommended review threshold for
the default target accuracy. Every text that comes from a file (model names, sources,
warnings) is escaped: it is shown as text, never read as markup.

>>> from kieval_core.accumulator import Accumulator
>>> acc = Accumulator("<b>m</b>")
>>> acc.update({"total": "5"}, {"total": {"value": "6", "confidence": 0.4}})
>>> html = acc.compute()._repr_html_()
>>> "&lt;b&gt;m&lt;/b&gt;" in html and "<b>m</b>" not in html
True
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from ..result.tables import cell_text, corrections_table, metric_table, rankings_table
from ..review.decisions import DecisionOptions

if TYPE_CHECKING:  # types only: the result objects draw themselves with this module
    from ..result.results import EvaluationResult, ModelResult

#: The target accuracy of the recommended threshold shown (the report's default).
TARGET = DecisionOptions().target
_STYLE = "border-collapse:collapse;margin:0.3em 0 0.8em 0;font-size:0.9em"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd"


@dataclass(frozen=True)
class _Models:
    """Models and their metric families: what the tables need of an evaluation."""

    models: Mapping[str, ModelResult]
    metrics: tuple[str, ...]


def _shown(value, percent: bool) -> str:
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()  # numpy numbers as Python numbers (thousands separators)
    if percent and isinstance(value, float) and value == value:
        return f"{value:.1%}"
    return cell_text(value)


def table_html(frame: pd.DataFrame, percent: tuple[str, ...] = ()) -> str:
    """A small table as escaped HTML (index as the first column)."""
    head = "".join(f'<th style="{_CELL};text-align:right">{html.escape(str(c))}</th>'
                   for c in [frame.index.name or "", *frame.columns])
    rows = []
    for index, row in frame.astype(object).iterrows():  # each cell keeps its own type
        cells = [f'<th style="{_CELL};text-align:left">{html.escape(str(index))}</th>']
        for column, value in row.items():
            shown = html.escape(_shown(value, column in percent))
            cells.append(f'<td style="{_CELL};text-align:right">{shown}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table style="{_STYLE}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def recommended_table(models: Mapping[str, ModelResult], target: float = TARGET) -> pd.DataFrame:
    """Per model, the smallest threshold reaching ``target`` accuracy after review, with its
    automation and reviews per 1,000 documents; a note when no threshold does."""
    rows = {}
    for name, model in models.items():
        rec = model.recommend(target)
        if rec is None:
            rows[name] = {"τ": None, "automation": None, "reviews / 1,000 docs": None,
                          "note": "no confidences: no automation figures"}
        elif not rec.reachable:
            rows[name] = {"τ": None, "automation": None, "reviews / 1,000 docs": None,
                          "note": f"not reachable with automation (best {cell_text(rec.best_reachable)})"}
        else:
            rows[name] = {"τ": rec.threshold, "automation": rec.auto_rate,
                          "reviews / 1,000 docs": round(rec.reviews_per_1000_documents), "note": ""}
    table = pd.DataFrame(list(rows.values()), index=list(rows), dtype=object)  # whole numbers stay whole
    table.index.name = "model"
    return table


def _sections(view: _Models, target: float) -> str:
    headline = metric_table(view, headline=True)  # type: ignore[arg-type]
    headline.insert(0, "documents", [m.n_documents for m in view.models.values()])
    corrections = corrections_table(view)  # type: ignore[arg-type]
    return (
        "<b>Headline figures</b>" + table_html(headline)
        + "<b>Corrections a person must make, beside FP + FN</b>"
        + table_html(corrections, percent=("FP + FN overstates work by",))
        + f"<b>Recommended review threshold τ for {target:.0%} accuracy after review</b>"
        + table_html(recommended_table(view.models, target))
    )


def result_html(result: EvaluationResult, target: float = TARGET) -> str:
    """The summary of an evaluation: every model's headline figures, corrections and
    recommended threshold."""
    n_models = len(result.models)
    warnings = result.all_warnings
    title = (f"KIEval evaluation: {len(result.gt.doc_ids):,} ground-truth documents, {n_models} "
             f"model{'' if n_models == 1 else 's'}; values compared after: {result.normalizer.description}; "
             f"metrics: {', '.join(result.metrics)}")
    footer = (f"{len(warnings)} warning{'' if len(warnings) == 1 else 's'} (result.all_warnings); "
              "per-document figures: result.to_frame()")
    body = _sections(_Models(result.models, result.metrics), target) if result.models else ""
    return (f'<div class="kieval-result"><p>{html.escape(title)}</p>{_rankings(result)}{body}'
            f"<p><small>{html.escape(footer)}</small></p></div>")


def _rankings(result: EvaluationResult) -> str:
    """KIEval_Aligned and each model's rank strictly and under the rules (SPEC 2d), and the
    sentence when the rankings differ; nothing without models or a recount (a distributed
    run's strict figures need the engine's tables when rules are active)."""
    if not result.models or not all(m.counted is not None for m in result.models.values()):
        return ""
    table = rankings_table(result)
    if len(table.columns) == 2:  # strict only: the headline table says it all
        return ""
    sentence = result.rule_figures.sentence
    said = f"<p><b>{html.escape(sentence)}</b></p>" if sentence else ""
    named = ", ".join(f"{t} as {c}" for t, c in result.rule_figures.suggested_comparators.items())
    rules = f"<p><small>{html.escape(f'Suggested rules: {named}. result.rule_figures')}</small></p>"
    return said + "<b>KIEval_Aligned (rank), strictly and under the rules</b>" + table_html(
        table, percent=tuple(c for c in table.columns if c.startswith("KIEval_Aligned"))) + rules


def model_html(model: ModelResult, target: float = TARGET) -> str:
    """The summary of one model: its headline figures, corrections and recommended threshold."""
    title = f"KIEval: model {model.name} ({model.source}), {model.n_documents:,} documents"
    footer = (f"{len(model.warnings)} warning{'' if len(model.warnings) == 1 else 's'} (model.warnings); "
              "per-document figures: model.to_frame(); every error: model.error_list")
    body = _sections(_Models({model.name: model}, ("kieval", *model.peer)), target)
    return (f'<div class="kieval-model"><p>{html.escape(title)}</p>{body}'
            f"<p><small>{html.escape(footer)}</small></p></div>")
