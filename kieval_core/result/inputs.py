"""The load report: what each input held and how much of it was scored.

One row for the ground truth and one per prediction set; every prediction set is scored
on every GT document (documents it lacks count as fully missed), so ``documents scored``
is the ground truth's count for every model.
"""

from __future__ import annotations

import pandas as pd

from ..read.dataset import Dataset
from .results import EvaluationResult, ModelResult

COLUMNS = ["role", "model", "source", "format", "documents read", "documents scored", "predicted",
           "missing", "unknown", "entities", "groups", "confidence coverage"]


def ground_truth_row(gt: Dataset) -> dict:
    return {"role": "ground truth", "model": None, "source": gt.source, "format": gt.format,
            "documents read": len(gt.doc_ids), "documents scored": len(gt.doc_ids), "predicted": None,
            "missing": None, "unknown": None, "entities": gt.n_entities, "groups": gt.n_groups,
            "confidence coverage": None}


def model_row(model: ModelResult) -> dict:
    totals = model.tally.totals
    present = model.n_documents - len(model.missing_documents)
    return {"role": "predictions", "model": model.name, "source": model.source, "format": model.format,
            "documents read": present + len(model.unknown_documents),
            "documents scored": model.n_documents,
            "predicted": present, "missing": len(model.missing_documents),
            "unknown": len(model.unknown_documents), "entities": int(totals["n_pred"]),
            "groups": int(totals["n_pred_groups"]),
            "confidence coverage": model.confidence_coverage if model.n_predictions else None}


def load_report(result: EvaluationResult) -> pd.DataFrame:
    """One row per input: the ground truth, then each model."""
    rows = [ground_truth_row(result.gt), *(model_row(model) for model in result.models.values())]
    return pd.DataFrame(rows, columns=COLUMNS)
