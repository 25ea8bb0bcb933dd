"""The overview: one row per model with every registry metric, corrections vs FP + FN,
headline cards and the load report. Metrics are read from the registry at call time,
so metrics registered later (peer metrics) appear without changes here."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from kieval_core import EvaluationResult, ModelResult
from kieval_core import registry as metric_registry

from .style import KIND_COLORS, KIND_LABELS, base_layout
from .text import is_missing, metric_value, plain

FP_FN_COLOR = "#7f7f7f"


def reported_metrics(result: EvaluationResult) -> tuple[metric_registry.Metric, ...]:
    """The registry metrics of the families this evaluation computed, in registry order."""
    return metric_registry.metrics_of(result.metrics)


def overview_table(result: EvaluationResult) -> pd.DataFrame:
    """One row per model (index), one column per registry metric label (the paper's Table 1).

    Values are the registry's own: fractions for scores, integers for counts, None for
    "not defined" (e.g. group F1 without groups).
    """
    metrics = reported_metrics(result)
    rows = {
        name: {"documents": model.n_documents, **{m.label: m.get(model) for m in metrics}}
        for name, model in result.models.items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "model"
    return table


def metric_rows(result: EvaluationResult) -> pd.DataFrame:
    """The overview transposed for reading: one row per metric, one text column per model
    (scores as percentages, counts as integers), its direction and the best model."""
    table = overview_table(result)
    rows = []
    for metric in reported_metrics(result):
        values = table[metric.label]
        known = {name: float(v) for name, v in values.items() if not is_missing(v)}
        best = ""
        if len(known) > 1 and len(set(known.values())) > 1:
            pick = max if metric.higher_is_better else min
            best = pick(known, key=known.get)
        rows.append(
            {
                "metric": metric.label,
                "family": metric.family,
                "better": "↑ higher" if metric.higher_is_better else "↓ lower",
                **{name: metric_value(v) for name, v in values.items()},
                "best model": best,
            }
        )
    return pd.DataFrame(rows)


def metric_kinds(table: pd.DataFrame) -> dict[str, str]:
    """``count`` for columns holding only integers (and n/a), else ``score``."""
    kinds = {}
    for column in table.columns:
        values = [v for v in table[column].tolist() if not is_missing(v)]
        integral = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values)
        kinds[column] = "count" if values and integral else "score"
    return kinds


def how_to_read(result: EvaluationResult) -> pd.DataFrame:
    """Metric, direction and the registry's one-line reading guide."""
    return pd.DataFrame(
        [(m.label, m.family, m.direction, m.how_to_read) for m in reported_metrics(result)],
        columns=["metric", "family", "direction", "how to read it"],
    )


def headline(
    result: EvaluationResult, model: ModelResult
) -> list[tuple[metric_registry.Metric, object]]:
    """The registry's headline metrics with this model's values (the cards)."""
    return [(m, m.get(model)) for m in reported_metrics(result) if m.headline]


def corrections_table(result: EvaluationResult) -> pd.DataFrame:
    """Subs / Add / Del / corrections beside FP + FN per model (the paper's Table 3)."""
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


def corrections_figure(result: EvaluationResult) -> go.Figure:
    """Per model: a stacked bar of corrections next to a bar of FP + FN."""
    table = corrections_table(result)
    models = [plain(m, 40) for m in table.index]
    fig = go.Figure()
    base = pd.Series(0, index=table.index)
    for kind in ("substitution", "addition", "deletion"):
        fig.add_bar(
            y=models,
            x=table[kind],
            base=base.tolist(),
            orientation="h",
            offsetgroup="corr",
            name=KIND_LABELS[kind],
            marker_color=KIND_COLORS[kind],
            hovertemplate="%{y}<br>" + KIND_LABELS[kind] + ": %{x}<extra></extra>",
        )
        base = base + table[kind]
    fig.add_bar(
        y=models,
        x=table["FP + FN"],
        orientation="h",
        offsetgroup="fpfn",
        name="FP + FN",
        marker_color=FP_FN_COLOR,
        opacity=0.55,
        hovertemplate="%{y}<br>FP + FN: %{x}<extra></extra>",
    )
    fig.update_layout(
        **base_layout(height=110 + 55 * len(models)),
        barmode="group",
        xaxis_title="count",
        yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "traceorder": "normal"},
    )
    return fig


def load_report(result: EvaluationResult, files: Sequence[tuple[str, str, int]]) -> pd.DataFrame:
    """One row per file read: what it held and how much of it was scored.

    ``files`` gives ``(role, file name, size in bytes)`` in the order ground truth, then the
    prediction files in the order of ``result.models``.
    """
    gt = result.gt
    ent = gt.entities
    n_groups = int(
        ent.loc[ent["group"] >= 0, ["doc_id", "group_type", "group"]].drop_duplicates().shape[0]
    )
    rows = [
        {
            "role": "ground truth",
            "file": files[0][1],
            "model": "",
            "size (bytes)": files[0][2],
            "documents read": len(gt.doc_ids),
            "documents scored": len(gt.doc_ids),
            "missing": 0,
            "unknown": 0,
            "entities": gt.n_entities,
            "groups": n_groups,
            "confidences": "",
        }
    ]
    for (role, file, size), (name, model) in zip(files[1:], result.models.items(), strict=True):
        present = model.n_documents - len(model.missing_documents)
        pred = model.counted.pred_entities
        rows.append(
            {
                "role": role,
                "file": file,
                "model": name,
                "size (bytes)": size,
                "documents read": present + len(model.unknown_documents),
                "documents scored": present,
                "missing": len(model.missing_documents),
                "unknown": len(model.unknown_documents),
                "entities": len(pred),
                "groups": int(
                    pred.loc[pred["group"] >= 0, ["doc_id", "group_type", "group"]]
                    .drop_duplicates()
                    .shape[0]
                ),
                "confidences": _confidence_note(model),
            }
        )
    return pd.DataFrame(rows)


def _confidence_note(model: ModelResult) -> str:
    conf = model.counted.pred_entities["confidence"]
    if not len(conf):
        return "no predictions"
    share = float(conf.notna().mean())
    if share == 0:
        return "none"
    return "all" if share == 1 else f"{share:.0%} of predictions"


def document_lists(model: ModelResult) -> pd.DataFrame:
    """Missing (in GT, not predicted) and unknown (predicted, not in GT) document ids."""
    rows = [("missing: scored as fully missed", d) for d in model.missing_documents]
    rows += [("unknown: not in the ground truth, not scored", d) for d in model.unknown_documents]
    return pd.DataFrame(rows, columns=["status", "doc_id"])
