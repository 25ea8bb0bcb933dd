"""The dashboard's charts from Python (a notebook, an experiment tracker), without Streamlit.

Each function computes what the chart needs from a result (the recommended threshold, the
cost curve) and hands it to the drawing module the dashboard uses
(:mod:`~kieval_core.figures.overview`, :mod:`~kieval_core.figures.automation`,
:mod:`~kieval_core.figures.error_analysis`, :mod:`~kieval_core.figures.documents`, beside
this one; none of them imports Streamlit), so a chart here is the dashboard's chart.
plotly is imported when a chart is asked for: ``import kieval_core`` never loads it.

>>> from kieval_core import evaluate  # doctest: +SKIP
>>> from kieval_core.figures import charts  # doctest: +SKIP
>>> result = evaluate("gt.jsonl", {"m": "pred.jsonl"})  # doctest: +SKIP
>>> charts.automation_figure(result.models["m"], target=0.9).show()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exceptions import KievalOptionError
from ..result.results import EvaluationResult, ModelResult
from ..review.automation import Costs, minimum_cost, with_costs
from ..review.decisions import DecisionOptions

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: The target accuracy of the charts' recommended threshold (the report's default).
TARGET = DecisionOptions().target


def corrections_figure(result: EvaluationResult) -> go.Figure:
    """Per model, the corrections (substitutions, additions, deletions) beside FP + FN: the
    Overview's headline chart."""
    from .overview import corrections_figure as draw

    return draw(result)


def _needs_confidence(model: ModelResult) -> None:
    if not model.has_confidence:
        msg = f"{model.name}: no prediction has a confidence, so there is no automation curve to draw"
        raise KievalOptionError(msg)


def automation_figure(model: ModelResult, target: float | None = TARGET,
                      tau: float | None = None) -> go.Figure:
    """Accuracy after review and automation rate at every operating point (the paper's
    Fig. 7), marked at ``tau`` (default: the threshold recommended for ``target``)."""
    from .automation import threshold_figure

    _needs_confidence(model)
    if tau is None and target is not None:
        tau = model.recommend(target).threshold
    return threshold_figure(model.curve, tau, target)


def tradeoff_figure(model: ModelResult, target: float | None = TARGET,
                    tau: float | None = None) -> go.Figure:
    """Accuracy after review against automation, over the real operating points."""
    from .automation import tradeoff_figure as draw

    _needs_confidence(model)
    if tau is None and target is not None:
        tau = model.recommend(target).threshold
    return draw(model.curve, tau, target)


def cost_figure(model: ModelResult, costs: Costs | None = None, tau: float | None = None) -> go.Figure:
    """Cost per 1,000 documents at every operating point, the cheapest threshold marked."""
    from .automation import cost_figure as draw

    _needs_confidence(model)
    curve = with_costs(model.curve, costs or Costs(), model.n_documents)
    return draw(curve, tau, minimum_cost(curve).threshold)


def corrections_by_type_figure(model: ModelResult, top: int = 25) -> go.Figure:
    """Corrections per entity type, by kind (the Errors page)."""
    from .error_analysis import corrections_by_type_figure as draw

    return draw(model, top)


def f1_by_type_figure(model: ModelResult, top: int = 30) -> go.Figure:
    """Flat against KIEval entity F1 per entity type (the Errors page)."""
    from .error_analysis import f1_by_type_figure as draw

    return draw(model, top)


def matching_figure(model: ModelResult, doc_id: str) -> go.Figure:
    """One document's group matching (the Documents page)."""
    from .documents import matching_figure as draw

    return draw(model, doc_id)
