"""The JSON report (SPEC 7) and the summary table; both read the metric registry.

Reports are deterministic: the same inputs give the same bytes (:func:`report_json`).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import __version__
from .registry import metrics_of

if TYPE_CHECKING:
    from .evaluate import EvaluationResult, ModelResult


def _plain(value: Any) -> Any:
    """JSON-safe Python values: numpy scalars unwrapped, NaN and NA become null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if value is pd.NA or value is None:
        return None
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [_plain(r) for r in frame.to_dict(orient="records")]


def model_report(model: ModelResult) -> dict:
    group = model.group
    recommendation = model.recommend()
    curves = model.curves_by_entity_type
    report = {
        "source": model.source,
        "n_documents": model.n_documents,
        "kieval": {
            "entity": model.entity.as_dict(),
            "group": None if group is None else group.as_dict(),
            "aligned": model.aligned,
            "group_aligned": model.group_aligned,
            "corrections": model.corrections.as_dict(),
            "fp_plus_fn": model.entity.fp + model.entity.fn,
        },
        "entity_f1": model.entity_f1.as_dict(),
        "automation": {
            "has_confidence": model.has_confidence,
            "curve": _records(model.curve[["threshold", "auto_rate", "kieval_aligned"]]),
            "recommended": recommendation.as_dict(),
            "by_entity_type": {
                etype: _records(part[["threshold", "auto_rate", "kieval_aligned"]])
                for etype, part in curves.groupby("entity_type", sort=True)
            },
        },
        "by_entity_type": _records(model.by_entity_type),
        "by_group_type": _records(model.by_group_type),
        "documents": _records(model.documents),
        "missing_documents": list(model.missing_documents),
        "unknown_documents": list(model.unknown_documents),
        "warnings": list(model.warnings),
    }
    for family, figures in model.peer.items():
        report.update(_plain(figures.report() if hasattr(figures, "report") else {family: figures}))
    return _plain(report)


def build_report(result: EvaluationResult) -> dict:
    return {
        "tool": {"name": "kieval-workbench", "version": __version__},
        "ground_truth": {
            "source": result.gt.source,
            "n_documents": len(result.gt.doc_ids),
            "n_entities": result.gt.n_entities,
        },
        "normalizer": result.normalizer.description,
        "metrics": list(result.metrics),
        "target_accuracy": result.target_accuracy,
        "models": {name: model_report(m) for name, m in result.models.items()},
        "warnings": result.warnings,
    }


def report_json(result: EvaluationResult) -> str:
    """The report as JSON text; byte-identical for identical inputs."""
    return json.dumps(build_report(result), ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def summary_frame(result: EvaluationResult) -> pd.DataFrame:
    """One row per model, one column per registered metric of the selected families."""
    metrics = metrics_of(result.metrics)
    rows = []
    for name, model in result.models.items():
        row = {"model": name, "documents": model.n_documents}
        row.update({m.label: m.get(model) for m in metrics})
        rows.append(row)
    return pd.DataFrame(rows)
