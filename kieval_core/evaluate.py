"""``evaluate``: the one entry point of the Python API (SPEC 1, 7).

>>> from kieval_core import evaluate  # doctest: +SKIP
>>> result = evaluate("gt.jsonl", ["model_a.jsonl", "model_b.jsonl"])  # doctest: +SKIP
>>> result.models["model_a"].aligned  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .automation import Recommendation, automation_curve, curves_by_entity_type, recommend, review_effects
from .engine import Counted, count
from .errors import KievalInputError, UndefinedMetricWarning
from .loaders import LoadOptions, load
from .model import Dataset
from .normalize import Normalizer
from .peer_families import PeerFigures, PeerOptions
from .registry import compute_peer, resolve_families
from .scores import Corrections, Counts, add_scores, aligned_score

NON_GROUP_LABEL = "(non-group)"
ERROR_COLUMNS = ["doc_id", "group_type", "gt_group", "pred_group", "entity_type",
                 "gt_value", "pred_value", "kind", "confidence"]

DatasetLike = Dataset | str | Path
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ModelResult:
    """Every KIEval figure of one prediction set; all derived from one :class:`Counted`."""

    name: str
    source: str
    counted: Counted
    missing_documents: tuple[str, ...]
    unknown_documents: tuple[str, ...]
    has_confidence: bool
    target_accuracy: float
    warnings: tuple[str, ...] = ()
    peer: Mapping[str, PeerFigures] = field(default_factory=dict)

    @property
    def n_documents(self) -> int:
        return len(self.counted.doc_ids)

    # --- corpus figures (micro sums) ----------------------------------------------------

    @cached_property
    def entity(self) -> Counts:
        c = self.counted.cells
        return Counts(int(c["tp"].sum()), int(c["fp"].sum()), int(c["fn"].sum()))

    @cached_property
    def corrections(self) -> Corrections:
        c = self.counted.cells
        return Corrections(int(c["substitution"].sum()), int(c["addition"].sum()), int(c["deletion"].sum()))

    @property
    def aligned(self) -> float:
        return float(aligned_score(self.entity.tp, self.corrections.total))

    @cached_property
    def group(self) -> Counts | None:
        """Group TP/FP/FN; None when the ground truth has no groups at all."""
        pairs = self.counted.pairs
        n_gt = int((pairs["gt_group"] >= 0).sum())
        if n_gt == 0:
            warnings.warn(f"{self.name}: the ground truth has no groups; group P/R/F1 are "
                          "undefined (reported as n/a)", UndefinedMetricWarning, stacklevel=2)
            return None
        tp = int(pairs["exact"].sum())
        return Counts(tp, int((pairs["pred_group"] >= 0).sum()) - tp, n_gt - tp)

    @property
    def group_aligned(self) -> float | None:
        """Group TP / (group TP + wrong matched pairs + unmatched GT + unmatched predicted)."""
        if self.group is None:
            return None
        pairs = self.counted.pairs
        return float(aligned_score(self.group.tp, len(pairs) - self.group.tp))

    @cached_property
    def entity_f1(self) -> Counts:
        """The conventional flat entity counts (groups ignored)."""
        f = self.counted.flat
        tp = int(f["tp"].sum())
        return Counts(tp, int(f["n_pred"].sum()) - tp, int(f["n_gt"].sum()) - tp)

    # --- breakdowns ---------------------------------------------------------------------

    @cached_property
    def documents(self) -> pd.DataFrame:
        """One row per GT document with its own KIEval, group and flat figures."""
        ids = pd.Index(self.counted.doc_ids, name="doc_id")
        cells = self.counted.cells.groupby("doc_id")[
            ["n_gt", "n_pred", "tp", "fp", "fn", "substitution", "addition", "deletion"]].sum()
        docs = cells.reindex(ids, fill_value=0)
        docs["errors"] = docs["substitution"] + docs["addition"] + docs["deletion"]
        docs = add_scores(docs)
        docs["aligned"] = aligned_score(docs["tp"], docs["errors"])
        pairs = self.counted.pairs
        groups = pd.DataFrame({
            "doc_id": pairs["doc_id"],
            "group_tp": pairs["exact"].astype(np.int64),
            "n_pred_groups": (pairs["pred_group"] >= 0).astype(np.int64),
            "n_gt_groups": (pairs["gt_group"] >= 0).astype(np.int64),
        }).groupby("doc_id").sum().reindex(ids, fill_value=0)
        docs["group_tp"] = groups["group_tp"]
        docs["group_fp"] = groups["n_pred_groups"] - groups["group_tp"]
        docs["group_fn"] = groups["n_gt_groups"] - groups["group_tp"]
        docs = add_scores(docs, "group_")
        flat = self.counted.flat.groupby("doc_id")[["tp", "n_gt", "n_pred"]].sum().reindex(ids, fill_value=0)
        docs["flat_tp"] = flat["tp"]
        docs["flat_fp"] = flat["n_pred"] - flat["tp"]
        docs["flat_fn"] = flat["n_gt"] - flat["tp"]
        docs = add_scores(docs, "flat_")
        docs["missing"] = ids.isin(self.missing_documents)
        for figures in self.peer.values():
            docs = docs.join(figures.documents)
        return docs.reset_index()

    @cached_property
    def by_entity_type(self) -> pd.DataFrame:
        cells = self.counted.cells.groupby("entity_type")[
            ["n_gt", "n_pred", "tp", "fp", "fn", "substitution", "addition", "deletion"]].sum()
        cells = add_scores(cells)
        cells["errors"] = cells["substitution"] + cells["addition"] + cells["deletion"]
        cells["aligned"] = aligned_score(cells["tp"], cells["errors"])
        flat = self.counted.flat.groupby("entity_type")[["tp", "n_gt", "n_pred"]].sum()
        cells["flat_tp"] = flat["tp"]
        cells["flat_fp"] = flat["n_pred"] - flat["tp"]
        cells["flat_fn"] = flat["n_gt"] - flat["tp"]
        return add_scores(cells, "flat_").reset_index()

    @cached_property
    def by_group_type(self) -> pd.DataFrame:
        cells = self.counted.cells
        out = cells.groupby("group_type", observed=True)[
            ["tp", "fp", "fn", "substitution", "addition", "deletion"]].sum()
        out.index = pd.Index([NON_GROUP_LABEL if t == "" else t for t in out.index], name="group_type")
        out = add_scores(out)
        pairs = self.counted.pairs
        g = pd.DataFrame({
            "group_type": pairs["group_type"],
            "group_tp": pairs["exact"].astype(np.int64),
            "n_pred_groups": (pairs["pred_group"] >= 0).astype(np.int64),
            "n_gt_groups": (pairs["gt_group"] >= 0).astype(np.int64),
        }).groupby("group_type", observed=True).sum()
        g.index = pd.Index(list(g.index), name="group_type")
        g = g.reindex(out.index, fill_value=0)
        out["group_tp"] = g["group_tp"]
        out["group_fp"] = g["n_pred_groups"] - g["group_tp"]
        out["group_fn"] = g["n_gt_groups"] - g["group_tp"]
        out = add_scores(out, "group_")
        non_group = out.index == NON_GROUP_LABEL
        for column in ("group_tp", "group_fp", "group_fn", "group_precision", "group_recall", "group_f1"):
            out[column] = out[column].astype(object).where(~non_group, None)
        return out.reset_index()

    @cached_property
    def errors(self) -> pd.DataFrame:
        """Every correction a person must make, one row each (SPEC 7)."""
        pred, gt = self.counted.pred_entities, self.counted.gt_entities
        wrong_p = pred[pred["status"] != "correct"]
        added = gt[gt["status"] == "added"]
        rows_p = pd.DataFrame({
            "doc_id": wrong_p["doc_id"], "group_type": wrong_p["group_type"],
            "gt_group": wrong_p["paired_group"], "pred_group": wrong_p["group"],
            "entity_type": wrong_p["entity_type"],
            "gt_value": wrong_p["other_value"].where(wrong_p["status"] == "substituted", None),
            "pred_value": wrong_p["value"],
            "kind": wrong_p["status"].map({"substituted": "substitution", "deleted": "deletion"}),
            "confidence": wrong_p["confidence"], "_order": wrong_p["position"], "_side": 1,
        })
        rows_g = pd.DataFrame({
            "doc_id": added["doc_id"], "group_type": added["group_type"],
            "gt_group": added["group"], "pred_group": added["paired_group"],
            "entity_type": added["entity_type"], "gt_value": added["value"], "pred_value": None,
            "kind": "addition", "confidence": np.nan, "_order": added["position"], "_side": 0,
        })
        rows = pd.concat([rows_g, rows_p], ignore_index=True)
        doc_rank = pd.Index(self.counted.doc_ids).get_indexer(rows["doc_id"])
        rows = rows.assign(_doc=doc_rank).sort_values(["_doc", "_side", "_order"], kind="stable")
        for column in ("gt_group", "pred_group"):
            rows[column] = rows[column].astype("Int64").where(rows[column] >= 0, pd.NA)
        return rows[ERROR_COLUMNS].reset_index(drop=True)

    @property
    def matching(self) -> pd.DataFrame:
        """Which predicted group went with which GT group (-1: unmatched), S, group TP."""
        return self.counted.pairs

    # --- automation ---------------------------------------------------------------------

    @cached_property
    def review_effects(self) -> pd.DataFrame:
        return review_effects(self.counted.pred_entities, self.counted.cells)

    @cached_property
    def curve(self) -> pd.DataFrame:
        return automation_curve(self.review_effects, self.entity.tp, self.corrections.addition)

    @cached_property
    def curves_by_entity_type(self) -> pd.DataFrame:
        return curves_by_entity_type(self.review_effects, self.counted.cells)

    def recommend(self, target: float | None = None) -> Recommendation:
        return recommend(self.curve, self.target_accuracy if target is None else target, self.n_documents)


@dataclass(frozen=True)
class EvaluationResult:
    """The result of :func:`evaluate`: one :class:`ModelResult` per prediction set."""

    gt: Dataset
    models: Mapping[str, ModelResult]
    normalizer: Normalizer
    metrics: tuple[str, ...]
    target_accuracy: float

    @property
    def warnings(self) -> list[str]:
        out = list(self.gt.warnings)
        for model in self.models.values():
            out += [f"{model.name}: {w}" for w in model.warnings]
        return out

    def summary(self) -> pd.DataFrame:
        """One row per model with the headline figures (the paper's Tables 1 and 3)."""
        from .report import summary_frame

        return summary_frame(self)

    def to_report(self) -> dict:
        from .report import build_report

        return build_report(self)


def _as_dataset(item: DatasetLike, options: LoadOptions, name: str | None = None) -> Dataset:
    if isinstance(item, Dataset):
        return item
    return load(item, options, name=name)


def _named(predictions) -> list[tuple[str | None, DatasetLike]]:
    if isinstance(predictions, (Dataset, str, Path)):
        return [(None, predictions)]
    if isinstance(predictions, Mapping):
        return list(predictions.items())
    return [(None, p) for p in predictions]


def evaluate(
    gt: DatasetLike,
    predictions: DatasetLike | Sequence[DatasetLike] | Mapping[str, DatasetLike],
    *,
    normalizer: Normalizer | None = None,
    metrics: Sequence[str] = ("kieval",),
    target_accuracy: float = 0.95,
    load_options: LoadOptions = LoadOptions(),
    peer_options: PeerOptions = PeerOptions(),
    progress: Progress | None = None,
) -> EvaluationResult:
    """Evaluate one or more prediction sets against a ground truth.

    Parameters
    ----------
    gt, predictions
        Datasets or paths (predictions: one, a list, or a ``{name: dataset}`` mapping).
    normalizer
        Value comparison (default: NFC + strip + collapse spaces).
    metrics
        Metric families to compute (see :mod:`kieval_core.registry`).
    target_accuracy
        Accuracy after review used for the recommended threshold.
    load_options, peer_options
        How to read files; options of the peer metrics (CER threshold, structure).
    progress
        Called as ``progress(done, total, label)`` after reading each file and scoring
        each model.
    """
    normalizer = normalizer or Normalizer()
    families = resolve_families(metrics)
    named = _named(predictions)
    steps = 1 + 2 * len(named)
    report = progress or (lambda done, total, label: None)
    gt_set = _as_dataset(gt, load_options, name="ground truth")
    report(1, steps, "read ground truth")
    models: dict[str, ModelResult] = {}
    for i, (name, item) in enumerate(named):
        pred = _as_dataset(item, load_options, name=name)
        name = name or pred.name
        report(2 + 2 * i, steps, f"read {name}")
        if name in models:
            msg = f"two prediction sets are named {name!r}; name them explicitly (NAME=PATH)"
            raise ValueError(msg)
        models[name] = evaluate_model(gt_set, pred, name=name, normalizer=normalizer,
                                      families=families, target_accuracy=target_accuracy,
                                      peer_options=peer_options)
        report(3 + 2 * i, steps, f"scored {name}")
    return EvaluationResult(gt_set, models, normalizer, families, target_accuracy)


def evaluate_model(gt: Dataset, pred: Dataset, *, name: str, normalizer: Normalizer,
                   families: tuple[str, ...], target_accuracy: float,
                   peer_options: PeerOptions = PeerOptions()) -> ModelResult:
    """Score one prediction set: restrict it to the GT documents and count."""
    gt_ids = set(gt.doc_ids)
    pred_ids = set(pred.doc_ids)
    check_overlap(gt, pred)
    missing = tuple(d for d in gt.doc_ids if d not in pred_ids)
    unknown = tuple(d for d in pred.doc_ids if d not in gt_ids)
    warnings = list(pred.warnings)
    if missing:
        warnings.append(f"{len(missing)} GT document(s) absent from the predictions, scored as "
                        f"fully missed: {_preview(missing)}")
    if unknown:
        warnings.append(f"{len(unknown)} predicted document(s) not in the ground truth, left out "
                        f"of the scores: {_preview(unknown)}")
    entities = pred.entities
    if unknown:
        entities = entities[entities["doc_id"].isin(gt_ids)]
    has_conf = bool(entities["confidence"].notna().any())
    n_no_conf = int(entities["confidence"].isna().sum())
    if n_no_conf and len(entities):
        warnings.append(f"{n_no_conf} of {len(entities)} predictions have no confidence; the "
                        "automation curve treats them as 1.0 (never reviewed)")
    restricted = Dataset(pred.name, pred.source, entities.reset_index(drop=True),
                         tuple(d for d in pred.doc_ids if d in gt_ids), pred.structures, pred.warnings)
    return ModelResult(
        name=name, source=pred.source, counted=count(gt, restricted, normalizer),
        missing_documents=missing, unknown_documents=unknown, has_confidence=has_conf,
        target_accuracy=target_accuracy, warnings=tuple(warnings),
        peer=compute_peer(families, gt, restricted, peer_options),
    )


def check_overlap(gt: Dataset, pred: Dataset) -> None:
    """Refuse a prediction set that shares no document with the ground truth.

    Such a file is almost always the wrong file (or ids written differently), and
    scoring it would report every document as missed.
    """
    gt_ids = set(gt.doc_ids)
    if pred.doc_ids and not any(d in gt_ids for d in pred.doc_ids):
        msg = (f"no document in common with the ground truth {gt.source} (predicted ids such "
               f"as {_preview(pred.doc_ids, 3)}; ground-truth ids such as {_preview(gt.doc_ids, 3)})")
        raise KievalInputError(pred.source, None, msg)


def _preview(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
