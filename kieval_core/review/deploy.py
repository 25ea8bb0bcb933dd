"""The decision as a file a pipeline applies (SPEC 4d).

A :class:`Decision` holds the thresholds chosen on the Automation page or by
``kieval evaluate --decision-out``, with what they were chosen for and on. It is saved as
JSON (``kieval_decision: 1``) and applied to new predictions, which need no ground truth:
:meth:`Decision.route` marks every prediction ``automate`` or ``review`` and every
document ``straight_through`` or ``open``, exactly as the review model does: a prediction
is reviewed when it has no confidence (policy ``review``) or one below its field's τ.
A decision that does not fit the predictions (a field it names is absent, another model's
name, another missing-confidence policy) is refused with one message naming the
difference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import KievalInputError, KievalOptionError
from ..read.dataset import Dataset
from .automation import MISSING_POLICIES

#: The version of the file format, its first key.
FORMAT_VERSION = 1
#: The thresholds key of one τ for every field.
EVERY_FIELD = "*"
#: What a person reviews under a decision.
REVIEWS = ("predictions", "documents")
#: The figures a decision expects on data like the data it was chosen on.
EXPECTED_KEYS = ("accuracy", "accuracy_lower", "auto_rate", "straight_through_rate",
                 "cost_per_1000_documents")
#: The columns of :attr:`Routing.predictions` and :attr:`Routing.documents`.
PREDICTION_COLUMNS = ["doc_id", "entity_type", "value", "confidence", "threshold", "below_threshold", "mark",
                      "document"]
DOCUMENT_COLUMNS = ["doc_id", "predictions", "below_threshold", "status"]


@dataclass(frozen=True)
class Routing:
    """The marks of one set of predictions under a decision, and their counts."""

    predictions: pd.DataFrame
    documents: pd.DataFrame

    @property
    def summary(self) -> dict:
        """Counts and rates: predictions automated and reviewed, documents straight through
        and opened."""
        n, docs = len(self.predictions), len(self.documents)
        automated = int((self.predictions["mark"] == "automate").sum())
        straight = int((self.documents["status"] == "straight_through").sum())
        return {"predictions": n, "automate": automated, "review": n - automated,
                "auto_rate": 1.0 - (n - automated) / n if n else 1.0, "documents": docs,  # as ReviewPoint
                "straight_through": straight, "open": docs - straight,
                "straight_through_rate": straight / docs if docs else 1.0}

    def write(self, path: str | Path) -> None:
        """The marked predictions as JSONL (one object per prediction) or CSV, by suffix;
        a CSV cell that a spreadsheet would run as a formula is escaped."""
        path = Path(path)
        frame = self.predictions
        if path.suffix.lower() == ".csv":
            from ..safe_text import csv_text

            csv_text(frame, path, "escape")
            return
        if path.suffix.lower() not in (".jsonl", ".ndjson"):
            msg = f"{path}: write the routing as .jsonl or .csv"
            raise KievalOptionError(msg)
        path.write_text(frame.to_json(orient="records", lines=True, force_ascii=False), encoding="utf-8")


@dataclass(frozen=True)
class Decision:
    """Thresholds a pipeline applies (SPEC 4d), and what they were chosen for and on.

    ``thresholds`` is ``{"*": τ}`` (one τ for every field) or ``{TYPE: τ}`` per field,
    None meaning the field is reviewed whole. ``expected`` holds the figures on the data it
    was chosen on (``accuracy_lower``: the assured bound, None without one).
    """

    model: str
    review: str
    missing_confidence: str
    thresholds: Mapping[str, float | None]
    target: float | None = None
    assurance: float | None = None
    floors: Mapping[str, float] = field(default_factory=dict)
    expected: Mapping[str, float | None] = field(default_factory=dict)
    chosen_on: Mapping[str, object] = field(default_factory=dict)
    created: str = ""

    def __post_init__(self) -> None:
        if self.review not in REVIEWS:
            msg = f"decision: review must be one of {', '.join(REVIEWS)}, got {self.review!r}"
            raise KievalOptionError(msg)
        if self.missing_confidence not in MISSING_POLICIES:
            msg = (f"decision: missing_confidence must be one of {', '.join(MISSING_POLICIES)}, got "
                   f"{self.missing_confidence!r}")
            raise KievalOptionError(msg)
        if not self.thresholds or (EVERY_FIELD in self.thresholds and len(self.thresholds) > 1):
            msg = 'decision: thresholds must be {"*": τ} or one τ per field'
            raise KievalOptionError(msg)
        for name, tau in self.thresholds.items():
            number = isinstance(tau, (int, float)) and not isinstance(tau, bool)
            if tau is not None and (not number or math.isnan(tau)):
                msg = f"decision: the threshold of {name!r} must be a number or null, got {tau!r}"
                raise KievalOptionError(msg)

    # --- the file ---------------------------------------------------------------------

    def as_dict(self) -> dict:
        out = {"kieval_decision": FORMAT_VERSION, **asdict(self)}
        out["thresholds"] = dict(self.thresholds)
        out["created"] = self.created or datetime.now(timezone.utc).isoformat(timespec="seconds")
        return out

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False, indent=2, allow_nan=False) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Mapping, source: str = "decision") -> Decision:
        if not isinstance(data, Mapping) or data.get("kieval_decision") != FORMAT_VERSION:
            msg = f"not a kieval decision file (kieval_decision: {FORMAT_VERSION})"
            raise KievalInputError(source, None, msg)
        known = {f for f in cls.__dataclass_fields__}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as error:
            raise KievalInputError(source, None, f"incomplete decision file: {error}") from None

    @classmethod
    def load(cls, path: str | Path) -> Decision:
        """A decision file written by :meth:`save` (``--decision-out``, the Automation
        page's download)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise KievalInputError(str(path), None, f"cannot read the decision: {error}") from None
        return cls.from_dict(data, str(path))

    # --- applying it ------------------------------------------------------------------

    def check(self, predictions: Dataset, missing_confidence: str | None = None) -> None:
        """Refuse predictions the decision does not fit, naming the difference."""
        if predictions.name != self.model:
            msg = (f"the decision was chosen for model {self.model!r}, the predictions are "
                   f"{predictions.name!r} (name them {self.model}=FILE if they are {self.model}'s)")
            raise KievalOptionError(msg)
        if missing_confidence is not None and missing_confidence != self.missing_confidence:
            msg = (f"the decision was chosen with --missing-confidence {self.missing_confidence}, not "
                   f"{missing_confidence}")
            raise KievalOptionError(msg)
        if EVERY_FIELD in self.thresholds:
            return
        present = set(predictions.entities["entity_type"].astype(str).unique())
        absent = sorted(set(self.thresholds) - present)
        unknown = sorted(present - set(self.thresholds))
        if absent or unknown:
            parts = [f"field(s) {', '.join(map(repr, absent))} of the decision are absent from the "
                     "predictions"] if absent else []
            parts += [f"the predictions have field(s) {', '.join(map(repr, unknown))} the decision has "
                      "no τ for"] if unknown else []
            raise KievalOptionError("; ".join(parts))

    def limits(self, entity_type: pd.Series) -> np.ndarray:
        """Each prediction's threshold (a field reviewed whole: +inf)."""
        if EVERY_FIELD in self.thresholds:
            tau = self.thresholds[EVERY_FIELD]
            return np.full(len(entity_type), np.inf if tau is None else float(tau))
        per_field = {k: np.inf if v is None else float(v) for k, v in self.thresholds.items()}
        return entity_type.astype(str).map(per_field).to_numpy(np.float64)

    def route(self, predictions: Dataset | str | Path, missing_confidence: str | None = None) -> Routing:
        """Mark every prediction and document (module docstring). Reviewing single
        predictions, a prediction is reviewed iff it has no confidence (under ``review``)
        or one below its τ; reviewing whole documents, every prediction of a document with
        one such prediction is reviewed. ``predictions``: a dataset, or a file any reader
        reads (named after it, as ``kieval evaluate`` names it)."""
        if not isinstance(predictions, Dataset):
            from ..read.load import load

            predictions = load(predictions, keep_structures=False)
        self.check(predictions, missing_confidence)
        entities = predictions.entities
        raw = entities["confidence"].to_numpy(np.float64)
        confidence = np.where(np.isnan(raw), MISSING_POLICIES[self.missing_confidence], raw)
        limits = self.limits(entities["entity_type"])
        below = confidence < limits
        doc_ids = pd.Index(list(predictions.doc_ids))
        doc = doc_ids.get_indexer(entities["doc_id"].astype(str))
        counts = np.bincount(doc, minlength=len(doc_ids))
        opened = np.bincount(doc, weights=below, minlength=len(doc_ids)) > 0
        reviewed = opened[doc] if self.review == "documents" else below
        status = np.where(opened, "open", "straight_through")
        marks = pd.DataFrame({
            "doc_id": entities["doc_id"].astype(str).to_numpy(object),
            "entity_type": entities["entity_type"].astype(str).to_numpy(object),
            "value": entities["value"].astype(str).to_numpy(object),
            "confidence": raw,
            "threshold": np.where(np.isinf(limits), np.nan, limits),
            "below_threshold": below,
            "mark": np.where(reviewed, "review", "automate"),
            "document": status[doc],
        })[PREDICTION_COLUMNS]
        documents = pd.DataFrame({"doc_id": doc_ids.to_numpy(object), "predictions": counts,
                                  "below_threshold": np.bincount(doc, weights=below,
                                                                 minlength=len(doc_ids)).astype(np.int64),
                                  "status": status})[DOCUMENT_COLUMNS]
        return Routing(marks, documents)
