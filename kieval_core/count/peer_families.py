"""The peer metrics of SPEC 5, computed from the same loaded datasets as KIEval.

Each family turns the two datasets into its metric's input, calls the pure functions
of :mod:`kieval_core.count.peer` and returns one :class:`PeerFigures`: flat figures (keyed by
their dotted JSON path), a per-document table and per-category tables. The registry
reads the figures; the report nests them.

Inputs per family:

* ``anls_star`` and ``nted`` score each document's nested structure: the structures
  the user uploaded when both sides are nested JSON, otherwise the entities re-nested
  as ``{group_type: [{entity: value}]}`` with non-group entities at the root;
* ``oi`` and ``bag`` treat a document's entities as named entities (category = entity
  type, text = value);
* ``lists`` treats every group type of a document as parallel lists: its groups are
  the rows, its entity types the fields;
* ``tokens`` compares the bags of value tokens.

Peer metrics see the raw values: each brings its own tolerance (ANLS*, CER, tree
edits), which is the point of reporting them beside KIEval's exact match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..choices import STRUCTURES as STRUCTURES
from ..exceptions import KievalOptionError
from ..read.dataset import Dataset
from .peer import anls_star_corpus, donut_field_f1, list_metrics, nted_corpus, oi_metrics, token_diagnostics


@dataclass(frozen=True)
class PeerFigures:
    """One family's results on one model."""

    figures: Mapping[str, float | int | None]
    documents: pd.DataFrame  # indexed by doc_id
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    def report(self) -> dict:
        """Figures nested by their dotted keys (``oi.oinerval.f1``)."""
        out: dict = {}
        for key, value in self.figures.items():
            *path, last = key.split(".")
            node = out
            for part in path:
                node = node.setdefault(part, {})
            node[last] = value
        return out


#: What ANLS* and nTED score (:class:`PeerOptions`).


@dataclass(frozen=True)
class PeerOptions:
    """Options of the peer metrics.

    Parameters
    ----------
    cer_threshold : float
        OINerval's CER threshold in [0, 1] (inclusive), ie-eval's default 0.30.
    structure : {"uploaded", "renested"}
        What ANLS* and nTED score. ``uploaded`` (default) scores the files' own nested
        structures, so the numbers equal the reference packages on the same files (SPEC 5).
        ``renested`` re-nests both sides' entities the same way, so only extraction
        counts: CORD's ``gt_parse`` writes a one-item menu as an object while most models
        write a list, and ANLS* scores that shape difference as a miss of the whole menu.
        The re-nested figures are reported under their own names (``anls_star_renested``,
        ``nted_renested``), never as plain ANLS* or nTED; when either side is not nested
        JSON, only the re-nested variant exists.
    """

    cer_threshold: float = 0.30
    structure: str = "uploaded"

    def __post_init__(self) -> None:
        if not 0.0 <= self.cer_threshold <= 1.0:
            msg = f"the CER threshold must lie in [0, 1], got {self.cer_threshold}"
            raise KievalOptionError(msg)
        if self.structure not in STRUCTURES:
            msg = f"structure must be one of {', '.join(STRUCTURES)}, got {self.structure!r}"
            raise KievalOptionError(msg)


# --- inputs -------------------------------------------------------------------------------


def _entities_by_doc(ds: Dataset, doc_ids: Sequence[str]) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {d: [] for d in doc_ids}
    e = ds.entities
    for row in zip(e["doc_id"].tolist(), e["group_type"].tolist(), e["group"].tolist(),
                   e["entity_type"].tolist(), e["value"].tolist(), strict=True):
        if row[0] in out:
            out[row[0]].append(row[1:])
    return out


def renest(entities: Sequence[tuple[str, int, str, str]]) -> dict:
    """A document's entities as ``{group_type: [{entity: value}]}`` plus root entities.

    >>> renest([("", -1, "total", "5"), ("menu", 0, "menu.nm", "Tea"), ("menu", 1, "menu.nm", "Pie")])
    {'total': '5', 'menu': [{'nm': 'Tea'}, {'nm': 'Pie'}]}
    """
    root: dict[str, Any] = {}
    groups: dict[str, dict[int, dict[str, Any]]] = {}
    for group_type, group, entity_type, value in entities:
        if group_type:
            prefix = group_type + "."
            key = entity_type[len(prefix):] if entity_type.startswith(prefix) else entity_type
            target = groups.setdefault(group_type, {}).setdefault(group, {})
        else:
            key, target = entity_type, root
        if key in target:
            old = target[key]
            target[key] = [*old, value] if isinstance(old, list) else [old, value]
        else:
            target[key] = value
    for group_type, members in groups.items():
        root[group_type] = [members[i] for i in sorted(members)]
    return root


#: Families that score each document's nested structure (:attr:`Dataset.structures`).
STRUCTURE_FAMILIES = ("anls_star", "nted")


def needs_structures(families: Sequence[str], options: PeerOptions) -> bool:
    """Whether the selected families score the uploaded structures, so the loaders must
    keep them (``keep_structures``).

    >>> needs_structures(("kieval", "nted"), PeerOptions()), needs_structures(("kieval",), PeerOptions())
    (True, False)
    """
    return options.structure == "uploaded" and any(f in STRUCTURE_FAMILIES for f in families)


def _structure_pairs(gt: Dataset, pred: Dataset, doc_ids: Sequence[str],
                     options: PeerOptions) -> tuple[list[tuple[Any, Any]], str]:
    """Per document (GT, prediction) structures, and the suffix of the figures' names:
    ``""`` for the uploaded structures, ``"_renested"`` for re-nested entities."""
    uploaded = gt.structures is not None and pred.structures is not None
    if options.structure == "uploaded" and uploaded:
        return [(gt.structures.get(d, {}), pred.structures.get(d, {})) for d in doc_ids], ""
    gt_docs, pred_docs = _entities_by_doc(gt, doc_ids), _entities_by_doc(pred, doc_ids)
    return [(renest(gt_docs[d]), renest(pred_docs[d])) for d in doc_ids], "_renested"


def _named_entities(gt: Dataset, pred: Dataset, doc_ids: Sequence[str]):
    gt_docs, pred_docs = _entities_by_doc(gt, doc_ids), _entities_by_doc(pred, doc_ids)
    return [([(e[2], e[3]) for e in gt_docs[d]], [(e[2], e[3]) for e in pred_docs[d]]) for d in doc_ids]


# --- families -----------------------------------------------------------------------------


def _anls(gt: Dataset, pred: Dataset, options: PeerOptions) -> PeerFigures:
    doc_ids = sorted(gt.doc_ids)
    pairs, suffix = _structure_pairs(gt, pred, doc_ids, options)
    result = anls_star_corpus(pairs)
    key = f"anls_star{suffix}"
    docs = pd.DataFrame({key: result.per_document}, index=pd.Index(doc_ids, name="doc_id"))
    return PeerFigures({key: result.mean if doc_ids else None}, docs)


def _nted(gt: Dataset, pred: Dataset, options: PeerOptions) -> PeerFigures:
    doc_ids = sorted(gt.doc_ids)
    pairs, suffix = _structure_pairs(gt, pred, doc_ids, options)
    result = nted_corpus(pairs)
    fields = donut_field_f1([g for g, _ in pairs], [p for _, p in pairs])
    key = f"nted{suffix}"
    docs = pd.DataFrame({key: result.per_document}, index=pd.Index(doc_ids, name="doc_id"))
    return PeerFigures({
        key: result.mean if doc_ids else None,
        f"donut_field_f1{suffix}.precision": fields.precision,
        f"donut_field_f1{suffix}.recall": fields.recall,
        f"donut_field_f1{suffix}.f1": fields.f1,
    }, docs)


def _oi_result(gt: Dataset, pred: Dataset, options: PeerOptions):
    return oi_metrics(_named_entities(gt, pred, sorted(gt.doc_ids)), cer_threshold=options.cer_threshold)


def _nan_to_none(value: float) -> float | None:
    return None if value != value else float(value)


def _oi(gt: Dataset, pred: Dataset, options: PeerOptions) -> PeerFigures:
    r = _oi_result(gt, pred, options)
    docs = r.documents[["oiecer", "oiewer", "nerval_precision", "nerval_recall", "nerval_f1"]]
    docs = docs.set_axis(pd.Index(sorted(gt.doc_ids), name="doc_id")).add_prefix("oi_")
    return PeerFigures({
        "oi.oiecer": _nan_to_none(r.oiecer.rate),
        "oi.oiewer": _nan_to_none(r.oiewer.rate),
        "oi.cer_threshold": r.cer_threshold,
        "oi.oinerval.tp": r.oinerval.tp, "oi.oinerval.fp": r.oinerval.fp, "oi.oinerval.fn": r.oinerval.fn,
        "oi.oinerval.precision": r.oinerval.precision,
        "oi.oinerval.recall": r.oinerval.recall,
        "oi.oinerval.f1": r.oinerval.f1,
    }, docs, {"oi_by_entity_type": r.categories})


def _bag(gt: Dataset, pred: Dataset, options: PeerOptions) -> PeerFigures:
    r = _oi_result(gt, pred, options)
    figures: dict[str, float | int | None] = {}
    for name, score, rate in (("words", r.bag_of_tagged_words, "wer"), ("entities", r.bag_of_entities, "er")):
        figures.update({
            f"bag.{name}.{rate}": _nan_to_none(score.error_rate),
            f"bag.{name}.precision": score.precision,
            f"bag.{name}.recall": score.recall,
            f"bag.{name}.f1": score.f1,
        })
    docs = r.documents[["botw_wer", "botw_f1", "boe_er", "boe_f1"]]
    docs = docs.set_axis(pd.Index(sorted(gt.doc_ids), name="doc_id")).add_prefix("bag_")
    return PeerFigures(figures, docs, {"bag_by_entity_type": r.categories})


def _list_documents(gt: Dataset, pred: Dataset, doc_ids: Sequence[str]):
    """One list document per (document, group type): groups are rows, entity types fields."""
    gt_docs, pred_docs = _entities_by_doc(gt, doc_ids), _entities_by_doc(pred, doc_ids)

    def lists(entities, group_type, n_rows):
        fields: dict[str, list] = {}
        for gtype, group, entity_type, value in entities:
            if gtype == group_type:
                column = fields.setdefault(entity_type, [None] * n_rows)
                column[group] = value if column[group] is None else f"{column[group]} | {value}"
        return fields

    pairs, owners = [], []
    for d in doc_ids:
        for group_type in sorted({e[0] for e in gt_docs[d] + pred_docs[d] if e[0]}):
            n = 1 + max(e[1] for e in gt_docs[d] + pred_docs[d] if e[0] == group_type)
            pairs.append((lists(gt_docs[d], group_type, n), lists(pred_docs[d], group_type, n)))
            owners.append(d)
    return pairs, owners


def _lists(gt: Dataset, pred: Dataset, options: PeerOptions) -> PeerFigures:
    doc_ids = sorted(gt.doc_ids)
    pairs, owners = _list_documents(gt, pred, doc_ids)
    index = pd.Index(doc_ids, name="doc_id")
    if not pairs:
        return PeerFigures({"lists.items.f1": None, "lists.positional.f1": None,
                            "lists.rows.strict": None, "lists.rows.partial": None},
                           pd.DataFrame(index=index))
    r = list_metrics(pairs)
    per_doc = r.documents.assign(doc_id=owners).groupby("doc_id", sort=False)[
        ["row_tp", "row_fn", "matched_cells", "gt_cells"]].sum().reindex(index, fill_value=0)
    gt_rows = per_doc["row_tp"] + per_doc["row_fn"]
    docs = pd.DataFrame({
        "lists_strict": np.where(gt_rows > 0, per_doc["row_tp"] / gt_rows.clip(lower=1), 1.0),
        "lists_partial": np.where(per_doc["gt_cells"] > 0,
                                  per_doc["matched_cells"] / per_doc["gt_cells"].clip(lower=1), 1.0),
    }, index=index)
    figures = {}
    for name, det in (("items", r.items), ("positional", r.positional)):
        figures.update({f"lists.{name}.precision": det.precision, f"lists.{name}.recall": det.recall,
                        f"lists.{name}.f1": det.f1})
    figures.update({"lists.rows.strict": r.rows.strict, "lists.rows.partial": r.rows.partial})
    return PeerFigures(figures, docs, {"lists_by_field": r.fields})


def _tokens(gt: Dataset, pred: Dataset, options: PeerOptions) -> PeerFigures:
    doc_ids = sorted(gt.doc_ids)
    gt_docs, pred_docs = _entities_by_doc(gt, doc_ids), _entities_by_doc(pred, doc_ids)
    r = token_diagnostics([([e[3] for e in gt_docs[d]], [e[3] for e in pred_docs[d]]) for d in doc_ids])
    docs = r.documents[["found", "added"]].set_axis(pd.Index(doc_ids, name="doc_id")).add_prefix("tokens_")
    return PeerFigures({"tokens.found": _nan_to_none(r.corpus.found),
                        "tokens.added": _nan_to_none(r.corpus.added)}, docs)


FAMILY_FUNCTIONS: dict[str, Callable[[Dataset, Dataset, PeerOptions], PeerFigures]] = {
    "anls_star": _anls,
    "nted": _nted,
    "oi": _oi,
    "bag": _bag,
    "lists": _lists,
    "tokens": _tokens,
}
