"""Scoring a corpus partition by partition, and merging the partitions exactly.

A **partition** is a set of documents with all their rows: the ground truth's and every
prediction set's. Every figure of a document depends on that document alone (groups are
matched within a document, ties are settled by content, the review model is kept in a
canonical order), so:

* :func:`gt_dates` reads, before scoring, each partition's GT date statistics; added up
  (:class:`GtDates`), they give every partition the date order of each field over the
  whole ground truth (:attr:`Job.gt_orders`), which the causes use (SPEC 2c);
* :func:`score_partition` runs the local engine's code on one partition (the rows of its
  documents, as :class:`~kieval_core.read.shards.ShardRows`): :func:`~kieval_core.read.shards.assemble`,
  :func:`~kieval_core.result.scoring.score_model`, as a local run scores;
* :func:`merge_partitions` reduces the partitions' results into the
  :class:`~kieval_core.result.results.EvaluationResult` of the whole corpus:
  :meth:`~kieval_core.result.tally.Tally.merge` of their tallies (integer counts summed, per-document
  tables concatenated, the review models concatenated and put in canonical order), so
  every automation figure, curve, bootstrap and per-field threshold comes from the same
  code and the same arrays as in a local run;
* :func:`with_rule_counts` gives the figures of SPEC 2d that a local run counts
  from the engine's tables (strictly and under the suggested rules): two more passes over
  the partitions as scored (:class:`Scored`, kept where they were scored), one reading the
  GT values the suggestions need (:func:`gt_readings`), one counting again the documents
  those rules change (:func:`counts_under_rules`); every pass returns counts that add up.

All are plain functions of plain values and know nothing of Dask:
:mod:`kieval_core.scale.distributed` runs them on a Dask cluster; Spark (``groupBy`` on the
partition key, then ``mapPartitions``) or Ray (``map_batches`` over batches grouped by
the key) would run the same two functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain

import numpy as np
import pandas as pd

from ..count.alternatives import resolve_alternatives
from ..count.causes import order_code
from ..count.comparators import DateCounts, date_counts
from ..count.engine import gt_date_counts
from ..count.normalize import Normalizer
from ..keys import KeyCounts, one_sided_keys
from ..output.runs import save_partition
from ..read.dataset import Dataset, DatasetSummary
from ..read.formats.builder import ALTERNATIVE_SET
from ..read.shards import ShardRows, assemble
from ..result.results import EvaluationResult, ModelResult, error_list_of
from ..result.scoring import finish, model_result, restrict, score_model
from ..result.suggest import (
    COUNT_KEYS,
    GtReadings,
    RuleCounts,
    Substitutions,
    model_counts_under,
    own_counts,
    rules_from,
)
from ..result.tally import Tally
from ..review.suspects import no_suspects, rank_suspects, sorted_suspects
from ..rules import FieldRules


@dataclass(frozen=True)
class Input:
    """One input of a run, as every partition needs to know it."""

    name: str
    source: str
    format: str


@dataclass(frozen=True)
class Job:
    """What every partition of a run is given besides its rows.

    Parameters
    ----------
    gt, models : Input
        The ground truth and the prediction sets (in report order).
    normalizer : Normalizer
        Value comparison.
    meta_keys : tuple of str
        Declared metadata keys (``--meta``).
    run_dir : str or None
        A saved run's directory on storage every worker can write (``--save-run``): each
        partition writes its ground-truth entities and each model's detail there.
    collect_error_list : bool
        Whether each partition returns its error list (``--errors-csv``).
    gt_orders : mapping or None
        Per prediction set, the date order of each field over the whole ground truth
        (:meth:`GtDates.orders` of the pass before scoring, :func:`gt_dates`), which its
        causes use (SPEC 2c); None: each partition's own GT.
    """

    gt: Input
    models: tuple[Input, ...]
    normalizer: Normalizer = Normalizer()
    meta_keys: tuple[str, ...] = ()
    run_dir: str | None = None
    collect_error_list: bool = False
    gt_orders: Mapping[str, Mapping[str, int]] | None = None


@dataclass(frozen=True)
class ModelPart:
    """One prediction set on one partition. ``tally`` is None when the partition has no
    GT document (it may still hold predicted documents unknown to the ground truth)."""

    tally: Tally | None
    missing: tuple[str, ...]
    unknown: tuple[str, ...]
    keys: KeyCounts
    error_list: pd.DataFrame | None = None


@dataclass(frozen=True)
class PartitionResult:
    """What a partition sends back: counts of its ground truth and each model's part."""

    index: int
    gt_entities: int
    gt_groups: int
    gt_keys: KeyCounts
    models: Mapping[str, ModelPart]
    suspects: pd.DataFrame | None = None
    #: Every model's substitutions as the suggested rules read them (SPEC 2d).
    substitutions: Substitutions = Substitutions()


@dataclass(frozen=True)
class Scored:
    """A partition scored: what it sends back (``result``), and what the passes after the
    merge read where it was scored: its ground truth and each model scored on it (the
    models of a partition without GT documents are not)."""

    result: PartitionResult
    gt: Dataset
    models: Mapping[str, ModelResult]


def score_partition(index: int, gt_rows: Sequence[ShardRows], pred_rows: Mapping[str, Sequence[ShardRows]],
                    job: Job) -> PartitionResult:
    """Score the documents of one partition (``index`` numbers it; rows of any shards)."""
    return scored_partition(index, gt_rows, pred_rows, job).result


def scored_partition(index: int, gt_rows: Sequence[ShardRows], pred_rows: Mapping[str, Sequence[ShardRows]],
                     job: Job) -> Scored:
    """:func:`score_partition`, keeping the partition's tables for the passes after the merge."""
    gt = assemble(gt_rows, job.gt.source, job.gt.name, job.gt.format, job.meta_keys)
    models: dict[str, ModelPart] = {}
    scored: dict[str, ModelResult] = {}
    detail = []
    for spec in job.models:
        pred = assemble(pred_rows.get(spec.name, ()), spec.source, spec.name, spec.format, job.meta_keys)
        if not gt.doc_ids:
            models[spec.name] = ModelPart(None, (), tuple(sorted(pred.doc_ids)), KeyCounts.of(pred))
            detail.append(None)
            continue
        model = score_model(gt, pred, name=spec.name, normalizer=job.normalizer, partition=True,
                            gt_orders=None if job.gt_orders is None else job.gt_orders[spec.name])
        error_list = error_list_of(model.counted) if job.collect_error_list else None
        models[spec.name] = ModelPart(model.tally, model.missing_documents, model.unknown_documents,
                                      KeyCounts.of(pred), error_list)
        scored[spec.name] = model
        detail.append(model.counted)
    if job.run_dir is not None:
        save_partition(job.run_dir, index, gt, detail)
    suspects = None
    if gt.doc_ids and job.models:  # every document's suspects depend on that document alone
        counted = {spec.name: c for spec, c in zip(job.models, detail, strict=True)}
        suspects = rank_suspects(gt.entities["value"], counted, job.normalizer)
    substitutions = Substitutions.of(scored.values(), job.normalizer)
    result = PartitionResult(index, gt.n_entities, gt.n_groups, KeyCounts.of(gt), models, suspects,
                             substitutions)
    return Scored(result, gt, scored)


def _added(a: Mapping[str, DateCounts], b: Mapping[str, DateCounts]) -> dict[str, DateCounts]:
    return {name: a.get(name, DateCounts()) + b.get(name, DateCounts()) for name in sorted({*a, *b})}


@dataclass(frozen=True)
class GtDates:
    """A ground truth's date statistics per field
    (:class:`~kieval_core.count.comparators.DateCounts`), which add up over partitions: of
    its values as read (``values``: what the "does not settle a date order" warning
    reads) and, per prediction set, of the values its count reads (``counted``: normalised,
    each set of alternatives resolved against its predictions)."""

    values: Mapping[str, DateCounts] = field(default_factory=dict)
    counted: Mapping[str, Mapping[str, DateCounts]] = field(default_factory=dict)

    def __add__(self, other: GtDates) -> GtDates:
        counted = {name: _added(self.counted.get(name, {}), other.counted.get(name, {}))
                   for name in {**self.counted, **other.counted}}
        return GtDates(_added(self.values, other.values), counted)

    def orders(self) -> dict[str, dict[str, int]]:
        """Per prediction set, each field's date order for its causes (SPEC 2c), as
        :func:`~kieval_core.count.causes.order_code` numbers it."""
        return {name: {f: order_code(counts.order().order) for f, counts in fields.items()}
                for name, fields in self.counted.items()}


def gt_dates(gt_rows: Sequence[ShardRows], pred_rows: Mapping[str, Sequence[ShardRows]], job: Job) -> GtDates:
    """The :class:`GtDates` of one partition's ground truth: the pass before scoring, whose
    sum gives every partition the date orders of the whole ground truth (:attr:`Job.gt_orders`)."""
    gt = assemble(gt_rows, job.gt.source, job.gt.name, job.gt.format, job.meta_keys)
    if not gt.doc_ids:
        return GtDates(counted={spec.name: {} for spec in job.models})
    values = gt.entities.groupby("entity_type", sort=True)["value"]
    own = {str(etype): date_counts(rows.to_numpy(object)) for etype, rows in values}
    if ALTERNATIVE_SET not in gt.entities:
        counted = gt_date_counts(gt, job.normalizer)
        return GtDates(own, {spec.name: counted for spec in job.models})
    counted = {}
    for spec in job.models:
        pred = assemble(pred_rows.get(spec.name, ()), spec.source, spec.name, spec.format, job.meta_keys)
        counted[spec.name] = gt_date_counts(resolve_alternatives(gt, restrict(gt, pred), job.normalizer),
                                            job.normalizer)
    return GtDates(own, counted)


def merge_partitions(parts: Sequence[PartitionResult], gt: DatasetSummary,
                     predictions: Mapping[str, DatasetSummary], normalizer: Normalizer,
                     rules: FieldRules | None = None, dates: GtDates | None = None) -> EvaluationResult:
    """The result of the whole corpus from its partitions' results.

    ``gt`` and ``predictions`` describe the inputs as a whole (documents, metadata, notes,
    loader warnings: :func:`~kieval_core.read.shards.summarize`); the counts come from the
    partitions; ``rules`` are the field rules the normaliser's comparators come from;
    ``dates`` the ground truth's date statistics (:func:`gt_dates`, added up).
    Until :func:`with_rule_counts` the result has no suggested rules and, when
    comparators are active, no strict figures.
    """
    parts = sorted(parts, key=lambda p: p.index)
    gt = replace(gt, entity_count=sum(p.gt_entities for p in parts),
                 group_count=sum(p.gt_groups for p in parts))
    models: dict[str, ModelResult] = {}
    for name, pred in predictions.items():
        own = [p.models[name] for p in parts]
        tally = Tally.merge([m.tally for m in own if m.tally is not None])
        missing = tuple(sorted(chain.from_iterable(m.missing for m in own)))
        unknown = tuple(sorted(chain.from_iterable(m.unknown for m in own)))
        error_lists = [m.error_list for m in own if m.error_list is not None]
        merged = merge_error_lists(error_lists) if error_lists else None
        models[name] = model_result(name, pred, tally, missing, unknown, meta=gt.meta,
                                    partition_error_list=merged)
    keys = {name: KeyCounts.merge([p.models[name].keys for p in parts]) for name in predictions}
    gt_keys = KeyCounts.merge([p.gt_keys for p in parts])  # partitions score every key: none set aside
    one_sided = one_sided_keys(gt_keys, keys, None, rules)
    result = finish(gt, models, keys, normalizer, ("kieval",), one_sided=one_sided, rules=rules)
    return replace(result, partition_suspects=merge_suspects(parts),
                   gt_date_counts=None if dates is None else dict(dates.values))


def merge_suspects(parts: Sequence[PartitionResult]) -> pd.DataFrame | None:
    """The partitions' suspects as one table, sorted (None when no partition ranked any)."""
    ranked = [p.suspects for p in parts if p.suspects is not None]
    if not ranked:
        return None
    found = [s for s in ranked if len(s)]
    return sorted_suspects(pd.concat(found, ignore_index=True)) if found else no_suspects()


def merge_error_lists(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Error lists of disjoint partitions as one, in the local engine's order: documents
    sorted, each document's rows in its partition's order (a document never straddles
    partitions, so a stable sort on the doc_id is enough)."""
    rows = pd.concat(frames, ignore_index=True)
    doc = rows["doc_id"].astype(object)
    rank = pd.Index(sorted(doc.unique()), dtype=object).get_indexer(doc)
    return rows.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)


#: Runs a function on every scored partition where it sits: ``on_partitions(fn, *args)`` is
#: ``[fn(scored, *args) for scored in partitions]``, in any order.
OnPartitions = Callable[..., list]


def gt_readings(scored: Scored, normalizer: Normalizer, date_fields: Sequence[str],
                number_fields: Sequence[str]) -> GtReadings:
    """The GT readings of one partition's fields named (second pass)."""
    return GtReadings.of(scored.gt.entities, normalizer, date_fields, number_fields)


def counts_under_rules(scored: Scored, normalizer: Normalizer, active: Mapping[str, str],
                       comparator_sets: Sequence[Mapping[str, str]]) -> list[dict[str, dict[str, int]]]:
    """Per set of comparators, each model's counts on one partition under it (third pass)."""
    return [{name: model_counts_under(model, normalizer, active, comparators)
             for name, model in scored.models.items()} for comparators in comparator_sets]


def with_rule_counts(result: EvaluationResult, parts: Sequence[PartitionResult],
                     on_partitions: OnPartitions) -> EvaluationResult:
    """``result``, merged from ``parts``, with the counts of SPEC 2d's figures (strictly,
    and the suggested rules with the counts under them) as a local run gets them from the
    engine's tables (:func:`~kieval_core.result.suggest.rule_counts`): the same functions
    on each partition's share, the integer counts added up."""
    active = result.comparators
    normalizer = result.normalizer
    suggestions = FieldRules()
    if result.gt.entity_count:  # no GT value, nothing to suggest (as locally)
        substitutions = sum((p.substitutions for p in parts), Substitutions())
        date_fields, number_fields = substitutions.gt_reads(result.rules)
        readings = GtReadings()
        if date_fields or number_fields:
            readings = sum(on_partitions(gt_readings, normalizer, date_fields, number_fields), GtReadings())
        suggestions = rules_from(substitutions, readings, result.rules)
    suggested_comparators = {**active, **suggestions.comparators(result.entity_types)}
    sets = [*([{}] if active else []), *([suggested_comparators] if suggested_comparators != active else [])]
    totals = [{name: dict.fromkeys(COUNT_KEYS, 0) for name in result.models} for _ in sets]
    for per_set in (on_partitions(counts_under_rules, normalizer, active, sets) if sets else []):
        for total, counts in zip(totals, per_set, strict=True):
            for name, own in counts.items():
                total[name] = {k: total[name][k] + own[k] for k in COUNT_KEYS}
    strict = totals.pop(0) if active else own_counts(result)
    return replace(result, rule_counts=RuleCounts(strict, suggestions, totals[0] if totals else None))
