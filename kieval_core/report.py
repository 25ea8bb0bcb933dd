"""The JSON report (SPEC 7) and the summary table; both read the metric registry.

Reports are deterministic: the same inputs give the same bytes (:func:`report_json`).
"""

from __future__ import annotations

import json
import math
import re
import uuid
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


def _json_column(column: pd.Series) -> list[str]:
    """JSON text of every value of a column, as ``json.dumps`` would write it."""
    values = column.tolist()
    if pd.api.types.is_bool_dtype(column.dtype):
        return ["true" if v else "false" for v in values]
    if pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans:
        return [str(v) for v in values]
    if pd.api.types.is_float_dtype(column.dtype):
        return [repr(v) if v == v and abs(v) != math.inf else "null" for v in values]
    return [json.dumps(_plain(v), ensure_ascii=False) for v in values]


def records_json(frame: pd.DataFrame) -> str:
    """A frame as a JSON array of records, one per line; equal to ``json.dumps(_records(f))``
    up to white space, and much faster for the per-document table of a big corpus."""
    if frame.empty:
        return "[]"
    keys = [json.dumps(str(c), ensure_ascii=False).replace("%", "%%") for c in frame.columns]
    template = "{" + ", ".join(f"{k}: %s" for k in keys) + "}"
    columns = [_json_column(frame[c]) for c in frame.columns]
    return "[\n" + ",\n".join(template % row for row in zip(*columns, strict=True)) + "\n]"


def model_report(model: ModelResult, records=_records) -> dict:
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
            "curve": records(model.curve[["threshold", "auto_rate", "kieval_aligned"]]),
            "recommended": recommendation.as_dict(),
            "by_entity_type": {
                etype: records(part[["threshold", "auto_rate", "kieval_aligned"]])
                for etype, part in curves.groupby("entity_type", sort=True, observed=True)
            },
        },
        "by_entity_type": records(model.by_entity_type),
        "by_group_type": records(model.by_group_type),
        "documents": records(model.documents),
        "missing_documents": list(model.missing_documents),
        "unknown_documents": list(model.unknown_documents),
        "warnings": list(model.warnings),
    }
    for figures in model.peer.values():
        report.update(_plain(figures.report()))
        for name, table in figures.tables.items():
            report.setdefault("peer_tables", {})[name] = records(table.reset_index())
    return _plain(report)


def build_report(result: EvaluationResult, records=_records) -> dict:
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
        "models": {name: model_report(m, records) for name, m in result.models.items()},
        "warnings": result.warnings,
    }


def report_json(result: EvaluationResult) -> str:
    """The report as JSON text; byte-identical for identical inputs.

    Tables are rendered column-wise by :func:`records_json` and spliced in, so a report
    over 100,000 documents takes a fraction of a second instead of the standard
    encoder's tens of seconds.
    """
    token = f"__kieval_table_{uuid.uuid4().hex}_"
    tables: list[str] = []

    def placeholder(frame: pd.DataFrame) -> str:
        tables.append(records_json(frame))
        return f"{token}{len(tables) - 1}__"

    text = json.dumps(build_report(result, placeholder), ensure_ascii=False, indent=2,
                      allow_nan=False)
    pattern = re.compile(f'"{token}(\\d+)__"')
    return pattern.sub(lambda m: tables[int(m.group(1))], text) + "\n"


def summary_frame(result: EvaluationResult) -> pd.DataFrame:
    """One row per model, one column per registered metric of the selected families."""
    metrics = metrics_of(result.metrics)
    rows = []
    for name, model in result.models.items():
        row = {"model": name, "documents": model.n_documents}
        row.update({m.label: m.get(model) for m in metrics})
        rows.append(row)
    return pd.DataFrame(rows)
