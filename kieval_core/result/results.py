"""The result objects of :func:`kieval_core.evaluate`: immutable, and free of decisions.

A :class:`ModelResult` holds one prediction set's :class:`~kieval_core.result.tally.Tally`
(mergeable counts and the review model) and derives every figure from it once, on first
use: corpus counts, the breakdowns (by document, entity type, group type or a metadata
slice) and the review curves; the engine's detailed tables give the error list. Targets,
costs and other decision parameters are arguments of the functions that need them
(:mod:`kieval_core.review.automation`), never stored here.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..count.causes import CAUSES_OF_KIND
from ..count.comparators import DateCounts, date_order
from ..count.engine import KIND_OF_STATUS, Counted
from ..count.normalize import Normalizer
from ..count.peer_families import PeerFigures
from ..count.scores import Corrections, Counts, aligned_score
from ..exceptions import KievalOptionError, UndefinedMetricWarning
from ..read.dataset import Dataset
from ..read.locations import LOCATION_COLUMNS, box_list, has_locations
from ..review.automation import ReviewModel, automation_curve, curves_by_entity_type, recommend
from ..review.suspects import rank_suspects
from ..rules import FieldRules
from .tally import Tally, figures

if TYPE_CHECKING:  # suggest reads this module: the type only, no cycle
    from .suggest import RuleCounts

NON_GROUP_LABEL = "(non-group)"
#: Figures that are fractions even when they happen to be whole numbers.
_SCORES = {"precision", "recall", "f1", "aligned", "group_precision", "group_recall", "group_f1",
           "group_aligned", "flat_precision", "flat_recall", "flat_f1", "aligned_if_format_right"}
ERROR_COLUMNS = ["doc_id", "group_type", "gt_group", "pred_group", "entity_type",
                 "gt_value", "pred_value", "kind", "cause", "confidence"]


@dataclass(frozen=True)
class ModelResult:
    """Every KIEval figure of one prediction set, derived from its :class:`Tally`.

    ``counted`` (the engine's tables of cells, pairs and entities) is there when the
    model was scored in this process; a distributed run keeps only the tally (the
    matchings are then written per partition, and ``partition_error_list`` holds the
    partitions' error lists when they were asked for). ``meta`` is the ground
    truth's metadata (one row per document that has any). ``format`` and ``notes`` say how
    the predictions were read (for the load report). ``missing_confidence`` is the policy
    for predictions without confidence (SPEC 4c) the review model follows;
    ``consensus_of`` > 0 when its confidences are the consensus of that many other models;
    ``consensus`` is the review model with consensus confidences on the predictions that
    carry their own, when consensus was derived beside them (for calibration), see
    :mod:`kieval_core.result.consensus`.
    """

    name: str
    source: str
    tally: Tally
    missing_documents: tuple[str, ...]
    unknown_documents: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    peer: Mapping[str, PeerFigures] = field(default_factory=dict)
    meta: pd.DataFrame | None = field(default=None, repr=False)
    counted: Counted | None = field(default=None, repr=False)
    format: str = ""
    notes: tuple[str, ...] = ()
    partition_error_list: pd.DataFrame | None = field(default=None, repr=False)
    missing_confidence: str = "review"
    consensus_of: int = 0
    consensus: ReviewModel | None = field(default=None, repr=False)

    @property
    def n_documents(self) -> int:
        return len(self.tally.documents)

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return tuple(self.tally.documents.index)

    # --- corpus figures (micro sums) ----------------------------------------------------

    @cached_property
    def _totals(self) -> pd.Series:
        return self.tally.totals

    @property
    def entity(self) -> Counts:
        t = self._totals
        return Counts(int(t["tp"]), int(t["fp"]), int(t["fn"]))

    @property
    def corrections(self) -> Corrections:
        t = self._totals
        return Corrections(int(t["substitution"]), int(t["addition"]), int(t["deletion"]))

    @property
    def aligned(self) -> float:
        return float(aligned_score(self.entity.tp, self.corrections.total))

    @property
    def causes(self) -> dict[str, dict[str, int]] | None:
        """The corrections by cause (SPEC 2c): ``{kind: {cause: n}}``; None when the causes
        were not counted (a run saved before they existed)."""
        return causes_of(self._totals)

    @property
    def aligned_if_format_right(self) -> float | None:
        """(TP + format substitutions) / (TP + Error): KIEval_Aligned if every substitution
        that differs only in format were right (what declaring comparators would bring)."""
        causes = self.causes
        if causes is None:
            return None
        fmt = causes["substitution"]["format"]
        return float(aligned_score(self.entity.tp + fmt, self.corrections.total - fmt))

    @cached_property
    def group(self) -> Counts | None:
        """Group TP/FP/FN; None when the ground truth has no groups at all."""
        t = self._totals
        if int(t["n_gt_groups"]) == 0:
            # about the ground truth, the same for every model: one line however many are loaded
            warnings.warn("the ground truth has no groups; group P/R/F1 are undefined (reported as n/a)",
                          UndefinedMetricWarning, stacklevel=2)
            return None
        tp = int(t["group_tp"])
        return Counts(tp, int(t["n_pred_groups"]) - tp, int(t["n_gt_groups"]) - tp)

    @property
    def group_aligned(self) -> float | None:
        """Group TP / (group TP + wrong matched pairs + unmatched GT + unmatched predicted)."""
        if self.group is None:
            return None
        return float(aligned_score(self.group.tp, int(self._totals["pairs"]) - self.group.tp))

    @property
    def entity_f1(self) -> Counts:
        """The conventional flat entity counts (groups ignored)."""
        t = self._totals
        tp = int(t["flat_tp"])
        return Counts(tp, int(t["flat_n_pred"]) - tp, int(t["flat_n_gt"]) - tp)

    @cached_property
    def corpus(self) -> pd.Series:
        """Corpus figures: :func:`~kieval_core.result.tally.figures` of the summed counts."""
        return figures(self._totals.to_frame().T).iloc[0]

    def corpus_value(self, column: str):
        """One corpus figure (a Python number); group figures are None without GT groups."""
        if column.startswith("group_") and self.group is None:
            return None
        if column not in self.corpus.index:  # causes of a run saved before they were counted
            return None
        value = self.corpus[column]
        return int(value) if float(value).is_integer() and column not in _SCORES else float(value)

    @property
    def n_predictions(self) -> int:
        return self.tally.review.n_predictions

    @cached_property
    def confidence_coverage(self) -> float:
        """Share of predictions that carry a confidence (1.0 without predictions)."""
        has = self.tally.review.has_confidence
        return float(has.mean()) if len(has) else 1.0

    @property
    def has_confidence(self) -> bool:
        return bool(self.tally.review.has_confidence.any())

    @property
    def confidence_source(self) -> str:
        """Where the review model's confidences come from: ``model``, ``consensus of N
        models`` or ``none``."""
        if self.consensus_of:
            return f"consensus of {self.consensus_of} models"
        return "model" if self.has_confidence else "none"

    # --- breakdowns ---------------------------------------------------------------------

    @cached_property
    def documents(self) -> pd.DataFrame:
        """One row per GT document (sorted by id): its own KIEval, group and flat figures,
        whether the predictions missed it, its metadata and its peer scores."""
        docs = figures(self.tally.documents).set_index("doc_id")
        docs["missing"] = docs.index.isin(self.missing_documents)
        if self.meta is not None:
            docs = docs.join(self.meta)
        for peer in self.peer.values():
            docs = docs.join(peer.documents)
        return docs.reset_index()

    @cached_property
    def by_entity_type(self) -> pd.DataFrame:
        return figures(self.tally.entity_types)

    @cached_property
    def by_group_type(self) -> pd.DataFrame:
        out = figures(self.tally.group_types)
        non_group = (out["group_type"] == "").to_numpy()
        out["group_type"] = out["group_type"].where(~non_group, NON_GROUP_LABEL)
        for column in [c for c in out.columns if c.startswith("group_") and c != "group_type"]:
            out[column] = out[column].astype(object).where(~non_group, None)
        return out

    def by_slice(self, key: str) -> pd.DataFrame:
        """Figures per value of a metadata key (documents without it: ``(none)``)."""
        labels = self.slice_labels(key)
        counts = self.tally.documents.groupby(labels.to_numpy(), sort=True).sum()
        counts.index.name = key
        return figures(counts)

    def slice_labels(self, key: str) -> pd.Series:
        """Each GT document's value of a metadata key (``(none)`` when it has none)."""
        ids = self.tally.documents.index
        if self.meta is None or key not in self.meta.columns:
            return pd.Series("(none)", index=ids, dtype=object)
        return self.meta[key].reindex(ids).fillna("(none)").astype(object)

    def detail(self) -> Counted:
        """The engine's tables (cells, pairs, entities) behind the figures."""
        if self.counted is None:
            msg = (f"{self.name}: the entity-level tables are not kept for a distributed run; the "
                   "errors and matchings were written per partition")
            raise KievalOptionError(msg)
        return self.counted

    @cached_property
    def changed_by_comparators(self) -> dict:
        """What the re-counts under other comparators keep (:mod:`kieval_core.result.suggest`,
        filled as they ask): the block of every entity and cell (``"blocks"``), and per field
        and comparators the blocks whose values a change of that field's comparator compares
        otherwise."""
        return {}

    @cached_property
    def substitution_fixes(self) -> dict:
        """The substitutions' fixing comparators per normaliser, kept by
        :func:`kieval_core.result.suggest.substitution_fixes` (the suggested rules, the hint
        and the app read them)."""
        return {}

    @cached_property
    def error_list(self) -> pd.DataFrame:
        """Every correction a person must make, one row each (SPEC 7): documents sorted,
        additions before the predictions' errors, each in reading order. A distributed run
        gives the error lists of its partitions, concatenated in the same order."""
        if self.counted is None and self.partition_error_list is not None:
            return self.partition_error_list
        return error_list_of(self.detail())

    @property
    def matching(self) -> pd.DataFrame:
        """Which predicted group went with which GT group (-1: unmatched), S, group TP."""
        return self.detail().pairs

    # --- automation -----------------------------------------------------------------------

    @property
    def review(self) -> ReviewModel:
        """What review can change (SPEC 4): the base of every automation figure."""
        return self.tally.review

    @cached_property
    def curve(self) -> pd.DataFrame:
        """The exact automation curve (entity and document level), see
        :func:`kieval_core.review.automation.automation_curve`."""
        return automation_curve(self.review)

    @cached_property
    def curves_by_entity_type(self) -> pd.DataFrame:
        return curves_by_entity_type(self.review)

    def recommend(self, target: float, level: str = "entity"):
        """The recommended threshold for ``target`` (None without confidences)."""
        if not self.has_confidence:
            return None
        return recommend(self.curve, target, self.n_documents, level)

    # --- notebooks ------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The per-document table (:attr:`documents`), a copy to change at will."""
        return self.documents.copy()

    def _repr_html_(self) -> str:
        from ..figures.notebook import model_html  # the notebook view reads this module

        return model_html(self)


@dataclass(frozen=True)
class OneSidedKey:
    """A top-level key present on one side only: in the ground truth and in no prediction
    file (set aside as metadata unless the user scores it), or in predictions and not in
    the ground truth (scored as a wrong field)."""

    key: str
    side: str  # "ground truth" or "predictions"
    values: int
    record_level: bool = False  # beside the doc_id in a record that is its own structure
    set_aside: bool = False  # a ground-truth key kept as metadata, not scored

    @property
    def message(self) -> str:
        """The warning, with the command line's options."""
        return self._said(f"--meta {self.key}", f"--score-key {self.key}")

    @property
    def python_message(self) -> str:
        """The warning, with :func:`~kieval_core.evaluate`'s arguments."""
        return self._said(f"load_options=LoadOptions(meta=({self.key!r},))", f"score_keys=[{self.key!r}]")

    def _said(self, as_meta: str, as_field: str) -> str:
        where = f"the key {self.key!r} is in the {self.side} ({self.values:,} values)"
        if self.set_aside:
            return (f"{where} but in no prediction file: it is set aside as metadata and not scored (as "
                    f"{as_meta} does). To score it as a field every model misses: {as_field}")
        if self.side == "ground truth":
            return (f"{where} but in no prediction file: it is scored as a field every model misses. If it "
                    f"is metadata, declare it with {as_meta}")
        return (f"{where} but not in the ground truth: it is scored as a wrong field. If it is metadata, "
                f"declare it with {as_meta}")


@dataclass(frozen=True)
class EvaluationResult:
    """The result of :func:`~kieval_core.evaluate`: one :class:`ModelResult` per prediction
    set, and how they were computed (the normaliser, the metric families)."""

    gt: Dataset
    models: Mapping[str, ModelResult]
    normalizer: Normalizer
    metrics: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    #: The field rules in force (SPEC 2d); the normaliser's comparators are theirs.
    rules: FieldRules = FieldRules()
    #: Values left out of scoring by an ``ignore`` rule, per entity type (GT and predictions).
    ignored: Mapping[str, int] = field(default_factory=dict)
    suspect_agreement: int | None = None
    before_fixes: EvaluationResult | None = field(default=None, repr=False)
    label_fixes: pd.DataFrame | None = field(default=None, repr=False)
    #: The suspects a distributed run's partitions ranked (it keeps no engine tables).
    partition_suspects: pd.DataFrame | None = field(default=None, repr=False)

    #: Top-level keys on one side only (SPEC 6.1), among them the ground-truth keys set aside.
    one_sided: tuple[OneSidedKey, ...] = ()

    @cached_property
    def suspects(self) -> pd.DataFrame:
        """Suspect ground-truth values and gaps (SPEC 2f), strongest evidence first: see
        :func:`kieval_core.review.suspects.rank_suspects` (``k`` = :attr:`suspect_agreement`, or
        more than half of the models and at least 2)."""
        if self.partition_suspects is not None:
            return self.partition_suspects
        counted = {name: model.detail() for name, model in self.models.items()}
        return rank_suspects(self.gt.entities["value"], counted, self.normalizer, self.rules,
                             self.suspect_agreement)

    @property
    def has_suspects(self) -> bool:
        """Whether the suspects can be given: every model kept the engine's tables, or a
        distributed run's partitions ranked them."""
        return self.partition_suspects is not None or self.has_detail

    @property
    def has_detail(self) -> bool:
        """Whether every model kept the engine's tables (not so in a distributed run)."""
        return all(model.counted is not None for model in self.models.values())
    #: The strict and suggested counts when the run counted them itself (a distributed run,
    #: whose engine's tables stay on the workers); None: counted from the tables.
    rule_counts: RuleCounts | None = None
    #: Per field, the date statistics of a distributed run's GT values (its entities stay on
    #: the workers), which :attr:`date_order_warnings` reads; None: read from ``gt.entities``.
    gt_date_counts: Mapping[str, DateCounts] | None = field(default=None, repr=False)

    @property
    def set_aside(self) -> list[str]:
        """The ground-truth keys no prediction file has, kept as metadata and not scored
        (``evaluate(..., score_keys=[...])`` scores them)."""
        return [k.key for k in self.one_sided if k.set_aside]

    @property
    def all_warnings(self) -> list[str]:
        """The ground truth's warnings, the models' (prefixed by the models they concern,
        a warning common to several models once), then the evaluation's own and the
        comparators' (a declared type that matches nothing)."""
        by_text: dict[str, list[str]] = {}
        for model in self.models.values():
            for warning in model.warnings:
                by_text.setdefault(warning, []).append(model.name)
        merged = [f"{', '.join(names)}: {text}" for text, names in by_text.items()]
        return [*self.gt.warnings, *merged, *self.warnings, *self.comparator_warnings,
                *self.date_order_warnings]

    @property
    def entity_types(self) -> list[str]:
        """Every entity type scored, in the ground truth or any model, sorted."""
        types = set()
        for model in self.models.values():
            types.update(map(str, model.tally.entity_types.index))
        return sorted(types)

    @property
    def comparators(self) -> dict[str, str]:
        """The active comparator of every entity type that has one (SPEC 2b: the report's
        ``options.comparators``)."""
        return self.normalizer.comparator_of(self.entity_types)

    @property
    def comparators_unparsed(self) -> dict[str, int]:
        """Per entity type with a comparator: values its comparator could not parse, in the
        ground truth and every model's predictions (``options.comparators_unparsed``)."""
        chosen = self.comparators
        if not chosen or not self.models:
            return {}
        tables = [m.tally.entity_types for m in self.models.values()]
        if "unparsed_gt" not in tables[0]:
            return {}
        gt = tables[0]["unparsed_gt"]
        pred = sum(t["unparsed_pred"].reindex(gt.index.union(t.index), fill_value=0) for t in tables)
        total = gt.reindex(pred.index, fill_value=0) + pred
        return {t: int(total.get(t, 0)) for t in chosen}

    @property
    def comparison(self) -> str:
        """How values are compared, in words: the normaliser, then the fields' comparators
        (shown under every headline table)."""
        compared = "; ".join(f"{t} compared as {n}" for t, n in self.comparators.items())
        return self.normalizer.description + (f"; {compared}" if compared else "")

    @property
    def comparator_warnings(self) -> list[str]:
        """The rules files' settings without an equivalent, then one warning per declared rule
        whose entity type (or glob) matches none."""
        types = sorted({*self.entity_types, *self.ignored})
        return [*self.rules.warnings, *(
            f"the rule declared for {rule.pattern!r} ({rule.declared_by}) matches no entity type; "
            f"entity types: {', '.join(types) if types else '(none)'}"
            for rule in self.rules.unmatched(types))]

    @cached_property
    def rule_figures(self):
        """Every model's figures strictly, under the rules in force and under the suggested
        rules, each with its ranking (SPEC 2d; :func:`kieval_core.result.suggest.rule_figures`)."""
        from .suggest import rule_figures  # it reads this module

        return rule_figures(self)

    def rules_table(self) -> list[dict]:
        """``options.rules[]``: every field, its comparator, whether it is ignored, where that
        comes from, and (for a suggestion) why."""
        return self.rules.table({*self.entity_types, *self.ignored})

    @cached_property
    def date_order_warnings(self) -> list[str]:
        """One warning per field whose ground truth does not settle a date order (SPEC 2c:
        its ambiguous date pairs are never ``format``) when some model has ``date_order``
        substitutions there."""
        gt = self.gt.entities
        counted = [m.by_entity_type.set_index("entity_type") for m in self.models.values()]
        affected = sorted({str(t) for table in counted if "substitution_date_order" in table
                           for t in table.index[table["substitution_date_order"].to_numpy() > 0]})
        out = []
        for etype in affected:
            if self.gt_date_counts is None:
                order = date_order(gt.loc[(gt["entity_type"] == etype).to_numpy(), "value"].to_numpy(object))
            else:
                order = self.gt_date_counts.get(etype, DateCounts()).order()
            if order.order is not None or self.comparators.get(etype, "").startswith("date:"):
                continue
            out.append(f"{etype}: the ground truth does not settle a date order ({order.why}), so a date "
                       "that is the same day only in another order is counted as date_order, never format; "
                       f"declare the order if you know it (--compare {etype}=date:dmy, date:mdy or date:ymd)")
        return out

    def to_frame(self) -> pd.DataFrame:
        """Every model's per-document table, one after the other, with a ``model`` column first."""
        frames = [m.documents.assign(model=name) for name, m in self.models.items()]
        if not frames:
            return pd.DataFrame(columns=["model", "doc_id"])
        out = pd.concat(frames, ignore_index=True)
        return out[["model", *[c for c in out.columns if c != "model"]]]

    def _repr_html_(self) -> str:
        from ..figures.notebook import result_html  # the notebook view reads this module

        return result_html(self)


def causes_of(counts: pd.Series) -> dict[str, dict[str, int]] | None:
    """``{kind: {cause: n}}`` from a row of counts with the ``<kind>_<cause>`` columns (None
    without them)."""
    if "substitution_format" not in counts.index:
        return None
    return {kind: {cause: int(counts.get(f"{kind}_{cause}", 0)) for cause in causes}  # a run saved before
            for kind, causes in CAUSES_OF_KIND.items()}  # date_order was counted has none


def all_error_lists(result: EvaluationResult) -> pd.DataFrame:
    """Every model's error list (:attr:`ModelResult.error_list`), one after the other, with
    a ``model`` column first: the CLI's ``--errors-csv``."""
    frames = [m.error_list.assign(model=name) for name, m in result.models.items()]
    if not frames:
        return pd.DataFrame(columns=["model", *ERROR_COLUMNS])
    error_list = pd.concat(frames, ignore_index=True)
    return error_list[["model", *error_list.columns[:-1]]]


def error_list_of(counted: Counted) -> pd.DataFrame:
    """The error list (:attr:`ModelResult.error_list`) of the engine's tables: documents in
    the order of ``counted.doc_ids``, additions before the predictions' errors, each in
    reading order."""
    pred, gt = counted.pred_entities, counted.gt_entities
    wrong_p = pred[pred["status"] != "correct"]
    added = gt[gt["status"] == "added"]
    rows_p = pd.DataFrame({
        "doc_id": wrong_p["doc_id"], "group_type": wrong_p["group_type"],
        "gt_group": wrong_p["paired_group"], "pred_group": wrong_p["group"],
        "entity_type": wrong_p["entity_type"],
        "gt_value": wrong_p["other_value"].where(wrong_p["status"] == "substituted", None),
        "pred_value": wrong_p["value"],
        "kind": wrong_p["status"].astype(object).map(KIND_OF_STATUS),
        "cause": wrong_p["cause"].astype(object) if "cause" in pred else None,
        "confidence": wrong_p["confidence"], "_order": wrong_p["position"], "_side": 1,
    })
    rows_g = pd.DataFrame({
        "doc_id": added["doc_id"], "group_type": added["group_type"],
        "gt_group": added["group"], "pred_group": added["paired_group"],
        "entity_type": added["entity_type"], "gt_value": added["value"], "pred_value": None,
        "kind": "addition", "cause": added["cause"].astype(object) if "cause" in gt else None,
        "confidence": np.nan, "_order": added["position"], "_side": 0,
    })
    located = has_locations(gt) or has_locations(pred)
    if located:
        rows_p = rows_p.assign(**_error_locations(wrong_p, gt, own="pred"))
        rows_g = rows_g.assign(**_error_locations(added, pred, own="gt"))
    rows = pd.concat([rows_g, rows_p], ignore_index=True)
    rows["_doc"] = pd.Index(counted.doc_ids).get_indexer(rows["doc_id"].astype(object))
    rows = rows.sort_values(["_doc", "_side", "_order"], kind="stable")
    for column in ("gt_group", "pred_group"):
        rows[column] = rows[column].astype("Int64").where(rows[column] >= 0, pd.NA)
    columns = [*ERROR_COLUMNS, *LOCATED_ERROR_COLUMNS] if located else ERROR_COLUMNS
    return rows[[c for c in columns if c in rows]].reset_index(drop=True)


#: Columns the error list gains when an input carries locations (SPEC 6.7, 7).
LOCATED_ERROR_COLUMNS = ["page", "gt_box", "pred_box"]


def _error_locations(rows: pd.DataFrame, other: pd.DataFrame, *, own: str) -> dict[str, object]:
    """``page, gt_box, pred_box`` of error rows of one side: its own box, and the box of
    the partner on the other side (the GT value a substitution replaces)."""
    n = len(rows)
    empty = np.full((n, len(LOCATION_COLUMNS)), np.nan)
    mine = rows[list(LOCATION_COLUMNS)].to_numpy(np.float64) if has_locations(rows) else empty
    partner = rows["partner"].to_numpy()
    theirs = empty.copy()
    if has_locations(other) and n:
        table = other[list(LOCATION_COLUMNS)].to_numpy(np.float64)
        has = partner >= 0
        theirs[has] = table[partner[has]]
    page = np.where(np.isnan(mine[:, 0]), theirs[:, 0], mine[:, 0])
    boxes = {own: box_list(mine[:, 1:]), ("gt" if own == "pred" else "pred"): box_list(theirs[:, 1:])}
    return {"page": pd.array(np.where(np.isnan(page), None, page), dtype="Int64"),
            "gt_box": boxes["gt"], "pred_box": boxes["pred"]}


def top_confusions(error_list: pd.DataFrame, n: int = 20) -> pd.DataFrame:
    """The most frequent substitutions (GT value -> predicted value), with how often and in
    how many documents they occur (ties: field, then values)."""
    columns = ["entity_type", "gt_value", "pred_value", "count", "documents"]
    subs = error_list[error_list["kind"] == "substitution"]
    if subs.empty:
        return pd.DataFrame(columns=columns)
    grouped = (subs.groupby(["entity_type", "gt_value", "pred_value"], sort=True, observed=True)
               .agg(count=("doc_id", "size"), documents=("doc_id", "nunique")).reset_index())
    ordered = grouped.sort_values(["count", "documents"], ascending=[False, False], kind="stable")
    return ordered.head(n).reset_index(drop=True)[columns]
