"""What declaring comparators would bring: the comparator that fixes a field's format
errors, and the figures re-scored with it (the CLI's hint line, the app's one-click choice).

>>> from kieval_core import evaluate  # doctest: +SKIP
>>> result = evaluate("gt.jsonl", {"m": "pred.jsonl"})  # doctest: +SKIP
>>> suggested_comparators(result.models["m"], result.normalizer)  # doctest: +SKIP
  entity_type comparator  fixes  format
0        date   date:dmy    347     347
>>> rescored_aligned(result, "m", {"date": "date:dmy"})  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ..count.causes import fixing_comparators
from ..count.comparators import DATE_ORDERS, FORMAT_COMPARATORS, DateCounts, canonicalise, date_counts
from ..count.engine import Counted, corpus_counts
from ..count.normalize import Normalizer
from ..count.scores import Corrections, Counts, aligned_score
from ..read.dataset import ENTITY_COLUMNS, Dataset
from ..rules import FieldRules, Rule

if TYPE_CHECKING:  # results reads rule_figures from here: the types only, no cycle
    from .results import EvaluationResult, ModelResult

SUGGESTION_COLUMNS = ["entity_type", "comparator", "fixes", "format"]


def suggested_comparators(model: ModelResult, normalizer: Normalizer) -> pd.DataFrame:
    """Per entity type with ``format`` substitutions: the comparator that makes most of
    them equal (ties: the order of :data:`~kieval_core.count.comparators.FORMAT_COMPARATORS`,
    dates first), how many it fixes and how many there are; most format errors first."""
    if model.counted is None:
        types, fixing = _error_list_format_fixes(model, normalizer)
    else:
        fixes = substitution_fixes(model, normalizer)
        types, fixing = fixes.entity_type[fixes.format], fixes.fixing[fixes.format]
    if not len(types):
        return pd.DataFrame(columns=SUGGESTION_COLUMNS)
    per_type = pd.DataFrame(fixing.astype(np.int64), columns=list(FORMAT_COMPARATORS))
    per_type["entity_type"] = types
    sums = per_type.groupby("entity_type", sort=True).sum()
    best = sums.to_numpy().argmax(axis=1)
    out = pd.DataFrame({
        "entity_type": sums.index.astype(object),
        "comparator": np.asarray(FORMAT_COMPARATORS, dtype=object)[best],
        "fixes": sums.to_numpy()[np.arange(len(sums)), best],
        "format": per_type.groupby("entity_type", sort=True).size().to_numpy(),
    })
    out = out.sort_values(["format", "entity_type"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def _error_list_format_fixes(model: ModelResult, normalizer: Normalizer) -> tuple[np.ndarray, np.ndarray]:
    """The entity types of the ``format`` substitutions of a model without the engine's
    tables (from its error list), and which comparators make each pair equal."""
    errors = model.error_list
    if "cause" not in errors:
        return np.zeros(0, object), np.zeros((0, len(FORMAT_COMPARATORS)), bool)
    subs = errors[(errors["kind"] == "substitution") & (errors["cause"] == "format")]
    return (subs["entity_type"].to_numpy(object),
            _fixing(subs["gt_value"].to_numpy(object), subs["pred_value"].to_numpy(object), normalizer))


def _fixing(gt: np.ndarray, pred: np.ndarray, normalizer: Normalizer) -> np.ndarray:
    """:func:`~kieval_core.count.causes.fixing_comparators` of the pairs once normalised
    (each distinct value once)."""
    codes, distinct = pd.factorize(np.concatenate([gt, pred]))
    normalised = np.array([normalizer(v) for v in distinct], dtype=object)[codes]
    return fixing_comparators(normalised[: len(gt)], normalised[len(gt):])


@dataclass(frozen=True)
class SubstitutionFixes:
    """A model's substitutions (from the engine's tables), in their order: the entity
    type, which comparators of :data:`FORMAT_COMPARATORS` make each pair equal once
    normalised, and whether its cause is ``format``."""

    entity_type: np.ndarray
    fixing: np.ndarray
    format: np.ndarray


def substitution_fixes(model: ModelResult, normalizer: Normalizer) -> SubstitutionFixes:
    """The model's :class:`SubstitutionFixes` under ``normalizer``, kept in the model: the
    suggested rules read every substitution, the hint and the app the ``format`` ones."""
    kept = model.substitution_fixes
    if normalizer not in kept:
        pred = model.counted.pred_entities
        subs = (pred["status"] == "substituted").to_numpy()

        def of_subs(column: str) -> np.ndarray:
            return np.asarray(pred[column].array[subs], dtype=object)

        fixing = _fixing(of_subs("other_value"), of_subs("value"), normalizer)
        is_format = pred["cause"].array[subs] == "format" if "cause" in pred else np.zeros(len(fixing), bool)
        kept[normalizer] = SubstitutionFixes(of_subs("entity_type"), fixing, np.asarray(is_format, bool))
    return kept[normalizer]


def _dataset(frame: pd.DataFrame, rows: np.ndarray, name: str, doc_ids: tuple[str, ...]) -> Dataset:
    """The entities of ``frame`` at ``rows`` (a mask) as a dataset: its entity columns only
    are cut (the engine's tables hold as many others); names stay categorical, as the
    official CSV reader hands them (the engine reads them through their codes)."""
    entities = pd.DataFrame({c: frame[c][rows].reset_index(drop=True) for c in ENTITY_COLUMNS})
    return Dataset(name, name, entities, doc_ids)


def counts_under(result: EvaluationResult, name: str, comparators: Mapping[str, str]) -> dict[str, int]:
    """Corpus counts (``tp, fp, fn, substitution, addition, deletion``) of model ``name``
    with ``comparators`` ({entity type: comparator}; a type left out compares exact) in
    place of the evaluation's own, from the engine's tables (no file is read again).

    Only the blocks (the groups of one group type in one document, or a document's
    non-group entities) where the new comparators compare some values differently are
    counted again; the others keep their counts. That is exact: a block's counts follow
    from its own entities alone, and from them only through the values that are equal
    within each entity type (the matching's S and W optimum, SPEC 3.2; which of several
    tied pairings it takes does not change them). For the same reason the counts of
    disjoint sets of documents add up (a distributed run's partitions:
    :func:`model_counts_under`)."""
    return model_counts_under(result.models[name], result.normalizer, result.comparators, comparators)


def model_counts_under(model: ModelResult, normalizer: Normalizer, active: Mapping[str, str],
                       comparators: Mapping[str, str],
                       ahead: Mapping[str, str] | None = None) -> dict[str, int]:
    """:func:`counts_under` of one model scored under ``normalizer``, whose comparators
    are ``active`` (those of every entity type of the evaluation).

    ``ahead``: comparators of a re-count asked for next (the hint's after the suggested
    rules'). The blocks both change, and compare alike (every field whose comparators
    differ between the two leaves them as the active ones do), are counted apart and kept
    in the model: that re-count then counts only the others."""
    counted = model.detail()
    kept = model.changed_by_comparators
    if "blocks" not in kept:
        kept["blocks"] = Blocks.of(counted)
    blocks = kept["blocks"]
    after = dataclasses.replace(normalizer, comparators=tuple(sorted(comparators.items())))
    changed = _changed_blocks_kept(model, normalizer, after, sorted({*active, *comparators}), blocks)
    recount = blocks.flags(changed.values())
    unchanged = ~recount[blocks.cells]
    counts = {k: int(counted.cells[k].to_numpy()[unchanged].sum()) for k in COUNT_KEYS}
    shared = kept.get(("shared", normalizer, tuple(sorted(comparators.items()))))
    if shared is not None:  # counted by an earlier re-count that compares them alike
        recount[shared[0]] = False
        counts = _added(counts, shared[1])
    if ahead is not None:
        alike = recount & _alike(model, normalizer, active, (after, changed), ahead, blocks)
        if alike.any():
            part = _counted_blocks(model, blocks, alike, after)
            kept[("shared", normalizer, tuple(sorted(ahead.items())))] = (np.flatnonzero(alike), part)
            counts, recount = _added(counts, part), recount & ~alike
    return _added(counts, _counted_blocks(model, blocks, recount, after)) if recount.any() else counts


def _alike(model: ModelResult, normalizer: Normalizer, active: Mapping[str, str],
           first: tuple[Normalizer, dict[str, np.ndarray]], comparators: Mapping[str, str],
           blocks: Blocks) -> np.ndarray:
    """The blocks that ``comparators`` change and count as ``first`` (its normaliser and
    changed blocks per field) does: no field whose comparator differs between the two is
    compared otherwise than the active rules do in them (so each field's values split alike)."""
    after = dataclasses.replace(normalizer, comparators=tuple(sorted(comparators.items())))
    changed = _changed_blocks_kept(model, normalizer, after, sorted({*active, *comparators}), blocks)
    types = sorted({*changed, *first[1]})
    one, other = first[0].comparator_of(types), after.comparator_of(types)
    differing = [t for t in types if one.get(t, "exact") != other.get(t, "exact")]
    return blocks.flags(changed.values()) & ~blocks.flags(
        [codes.get(t, np.zeros(0, np.int64)) for t in differing for codes in (changed, first[1])])


def _counted_blocks(model: ModelResult, blocks: Blocks, chosen: np.ndarray,
                    after: Normalizer) -> dict[str, int]:
    """The counts of the ``chosen`` blocks (a mask) under ``after``, counted again."""
    counted = model.detail()
    doc_ids = tuple(sorted(blocks.doc_names[np.unique(np.flatnonzero(chosen) // blocks.n_group_types)]))
    missing = set(model.missing_documents)
    pred_ids = tuple(d for d in doc_ids if d not in missing)
    gt = _dataset(counted.gt_entities, chosen[blocks.gt], "ground truth", doc_ids)
    pred = _dataset(counted.pred_entities, chosen[blocks.pred], model.name, pred_ids)
    return {k: v for k, v in corpus_counts(gt, pred, after).items() if k in COUNT_KEYS}


def _added(counts: Mapping[str, int], more: Mapping[str, int]) -> dict[str, int]:
    return {k: counts[k] + more[k] for k in COUNT_KEYS}


COUNT_KEYS = ("tp", "fp", "fn", "substitution", "addition", "deletion")


def rescored_aligned(result: EvaluationResult, name: str, comparators: Mapping[str, str]) -> float:
    """KIEval_Aligned of model ``name`` with ``comparators`` declared on top of the
    evaluation's own (see :func:`counts_under`)."""
    counts = counts_under(result, name, {**result.comparators, **comparators})
    error = counts["substitution"] + counts["addition"] + counts["deletion"]
    return float(aligned_score(counts["tp"], error))


@dataclass(frozen=True)
class Blocks:
    """The block of every GT entity, predicted entity and cell of the engine's tables: a
    code ``document * n_group_types + group type`` (the non-group is a group type of its
    own), the same for one set of tables every time."""

    gt: np.ndarray
    pred: np.ndarray
    cells: np.ndarray
    doc_names: np.ndarray
    n_group_types: int

    @property
    def n_blocks(self) -> int:
        return len(self.doc_names) * self.n_group_types

    def flags(self, codes: Iterable[np.ndarray]) -> np.ndarray:
        """A mask over the blocks: those of any of ``codes``."""
        out = np.zeros(self.n_blocks, bool)
        for part in codes:
            out[part] = True
        return out

    @classmethod
    def of(cls, counted: Counted) -> Blocks:
        frames = [counted.gt_entities, counted.pred_entities, counted.cells]
        doc_codes, doc_names = _joint_codes(frames, "doc_id")
        gtype_codes, gtype_names = _joint_codes(frames, "group_type")
        codes = doc_codes * max(len(gtype_names), 1) + gtype_codes
        ends = np.cumsum([len(f) for f in frames])
        return cls(codes[: ends[0]], codes[ends[0]: ends[1]], codes[ends[1]:],
                   np.asarray(doc_names, dtype=object), max(len(gtype_names), 1))


def _changed_blocks_kept(model: ModelResult, before: Normalizer, after: Normalizer, types: list[str],
                         blocks: Blocks) -> dict[str, np.ndarray]:
    """:func:`changed_blocks` of ``types``, each entity type's answer kept in ``model`` for
    the next re-count that compares that type the same way (the strict, suggested and
    hinted re-counts of one run share most types): a type's changed blocks depend only on
    its own comparators before and after (none when they are the same)."""
    base = dataclasses.replace(before, comparators=())
    before_of, after_of = before.comparator_of(types), after.comparator_of(types)
    key = {t: (base, t, before_of.get(t, "exact"), after_of.get(t, "exact")) for t in types}
    kept = model.changed_by_comparators
    missing = [t for t in types if key[t] not in kept and key[t][2] != key[t][3]]
    if missing:
        kept.update({key[t]: codes for t, codes in
                     changed_blocks(model.detail(), before, after, missing, blocks).items()})
    return {t: kept[key[t]] for t in types if key[t][2] != key[t][3]}


def changed_blocks(counted: Counted, before: Normalizer, after: Normalizer, types: list[str],
                   blocks: Blocks) -> dict[str, np.ndarray]:
    """Per entity type of ``types``, the blocks (codes of ``blocks``, sorted) in which
    ``after`` splits its values into equal ones otherwise than ``before`` does (GT and
    predicted values together).

    Each raw value is normalised once (``after``'s pass); ``before`` reads only the distinct
    (normalised value, type) pairs, the normaliser being idempotent. Only the values whose
    class (the values of their type equal to them) differs before and after are looked at
    block by block: a value of the same class both ways compares with every other value the
    same both ways."""
    out = {t: np.zeros(0, np.int64) for t in types}
    frames = [counted.gt_entities, counted.pred_entities]
    all_type_codes, type_names = _joint_codes(frames, "entity_type")
    chosen = np.isin(np.asarray(type_names, dtype=object), types)[all_type_codes]
    if not chosen.any():
        return out
    block = np.concatenate([blocks.gt, blocks.pred])[chosen]
    type_codes = all_type_codes[chosen]
    values = np.concatenate([f["value"].to_numpy(object)[rows] for f, rows in
                             zip(frames, np.split(chosen, [len(frames[0])]), strict=True)])
    n_types = len(type_names)
    norm_codes, normalised, after_codes, _, _ = after.comparable_codes(values, type_names, type_codes)
    pair_of, pairs = pd.factorize(norm_codes * n_types + type_codes)  # (normalised value, type)
    pair_type = pairs % n_types
    before_of = before.comparable_codes(normalised[pairs // n_types], type_names, pair_type)[2]
    after_of = np.empty(len(pairs), np.int64)
    after_of[pair_of] = after_codes  # a function of the pair
    rows = ~_same_class(pair_type, before_of, after_of)[pair_of]
    if not rows.any():
        return out
    pair_of = pair_of[rows]
    before_codes, after_codes = before_of[pair_of], after_of[pair_of]
    part, part_keys = pd.factorize((block * n_types + type_codes)[rows])  # (block, type), dense
    meet = pd.factorize(before_codes * (int(after_codes.max()) + 1) + after_codes)[0].astype(np.int64)
    # two partitions of one set are equal when each has as many parts as their meet
    counts = [_distinct_per_part(part, codes, len(part_keys)) for codes in (before_codes, after_codes, meet)]
    changed = np.asarray(part_keys, np.int64)[(counts[0] != counts[2]) | (counts[1] != counts[2])]
    for code, rows in pd.Series(changed // n_types).groupby(changed % n_types).indices.items():
        out[type_names[code]] = np.unique((changed // n_types)[rows])
    return out


def _same_class(kind: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per distinct value of type ``kind``, whether the values of its type that share its
    ``before`` code are those that share its ``after`` code (the two classes and their meet
    are as large).

    >>> _same_class(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 0]), np.array([5, 5, 5, 6])).tolist()
    [False, False, False, True]
    """
    def class_size(*codes: np.ndarray) -> np.ndarray:
        key = np.zeros(len(kind), np.int64)
        for code in (kind, *codes):
            key = pd.factorize(key * (int(code.max(initial=0)) + 1) + code)[0].astype(np.int64)
        return np.bincount(key)[key]

    meet = class_size(before, after)
    return (class_size(before) == meet) & (class_size(after) == meet)


def _joint_codes(frames: list[pd.DataFrame], column: str) -> tuple[np.ndarray, list[str]]:
    """Integer codes of ``column`` over the frames one after the other, and the names they
    stand for (categoricals read by their codes, without comparing strings row by row)."""
    columns = [f[column] for f in frames]
    if all(isinstance(c.dtype, pd.CategoricalDtype) for c in columns):
        joint = union_categoricals([c.array for c in columns])
        return joint.codes.astype(np.int64), list(joint.categories)
    codes, names = pd.factorize(np.concatenate([c.to_numpy(object) for c in columns]))
    return codes.astype(np.int64), list(names)


def _distinct_per_part(part: np.ndarray, codes: np.ndarray, n_parts: int) -> np.ndarray:
    """How many distinct codes each part holds."""
    width = int(codes.max(initial=0)) + 1
    keys = pd.unique(part * width + codes)
    return np.bincount(keys // width, minlength=n_parts)


def option_name(comparator: str) -> str:
    """How a comparator is written on the command line (``date:dmy`` is ``date``)."""
    return "date" if comparator == "date:dmy" else comparator


#: Fields whose comparators the hint names, at most.
HINT_FIELDS = 3


def _hinted(model: ModelResult, normalizer: Normalizer, fields: int = HINT_FIELDS) -> pd.DataFrame:
    """The suggestions the hint names: those that fix some value, the ``fields`` with the
    most format errors."""
    suggestions = suggested_comparators(model, normalizer)
    return suggestions[suggestions["fixes"] > 0].head(fields)


def hint_lines(result: EvaluationResult, fields: int = HINT_FIELDS) -> list[str]:
    """Per model with format errors, or with a key on one side only still scored: the
    options to try and what they would change: ``--compare date=date would raise
    KIEval_Aligned from a to b``, the comparators for (at most) the ``fields`` fields with
    the most format errors, led by ``--meta KEY`` when that key's corrections outnumber
    what the comparators fix (models without the engine's tables, a distributed run, give
    none)."""
    lines = []
    for name, model in result.models.items():
        if model.counted is None:
            continue
        suggestions = _hinted(model, result.normalizer, fields)
        meta_key, meta_fixes = _meta_fix(result, model)
        leads = meta_fixes > int(suggestions["fixes"].sum())
        if suggestions.empty and not leads:
            continue
        chosen = dict(zip(suggestions["entity_type"], suggestions["comparator"], strict=True))
        counts = counts_under(result, name, {**result.comparators, **chosen})
        tp, error = counts["tp"], counts["substitution"] + counts["addition"] + counts["deletion"]
        options = [f"--compare {t}={option_name(c)}" for t, c in chosen.items()]
        if leads:
            options.insert(0, f"--meta {meta_key}")
            error -= meta_fixes
        after = float(aligned_score(tp, error))
        verb = "raise" if after >= model.aligned else "change"
        lines.append(f"{name}: {' '.join(options)} would {verb} KIEval_Aligned from {model.aligned:.4f} "
                     f"to {after:.4f}")
    return lines


# --- suggested rules and the figures under each set of rules (SPEC 2d) ------------------------

#: Share of a field's GT values that must read as dates (or numbers) for a suggestion.
TYPED_SHARE = 0.9
#: Share of a field's substitutions that must differ only in case (or punctuation).
FORMAT_SHARE = 0.5


@dataclass(frozen=True)
class Substitutions:
    """What the suggestions read from the substitutions, per entity type: how many there
    are and how many each comparator of :data:`FORMAT_COMPARATORS` makes equal. Counts
    that add up over disjoint sets of documents (a distributed run's partitions)."""

    counts: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, models: Iterable[ModelResult], normalizer: Normalizer) -> Substitutions:
        """The substitutions of ``models`` (from the engine's tables; models without them
        give none)."""
        fixes = [substitution_fixes(m, normalizer) for m in models if m.counted is not None]
        if not fixes:
            return cls({})
        types = np.concatenate([f.entity_type for f in fixes])
        fixing = np.concatenate([f.fixing for f in fixes]).astype(np.int64)
        codes, names = pd.factorize(types, sort=True)
        n = np.bincount(codes, minlength=len(names))
        fixed = np.zeros((len(names), fixing.shape[1]), np.int64)
        np.add.at(fixed, codes, fixing)
        return cls({t: (int(n[i]), *(int(k) for k in fixed[i])) for i, t in enumerate(names)})

    def __add__(self, other: Substitutions) -> Substitutions:
        merged = dict(self.counts)
        for entity_type, counts in other.counts.items():
            mine = merged.get(entity_type, (0,) * len(counts))
            merged[entity_type] = tuple(a + b for a, b in zip(mine, counts, strict=True))
        return Substitutions({t: merged[t] for t in sorted(merged)})

    def open_fields(self, rules: FieldRules) -> list[str]:
        """The fields with substitutions that ``rules`` leave exact (a field without
        substitutions has nothing to fix)."""
        return [t for t in self.counts
                if rules.comparator_rule(t).source == "default" and not rules.ignores(t)]

    def fixed(self, entity_type: str) -> np.ndarray:
        return np.asarray(self.counts[entity_type][1:], np.int64)

    def gt_reads(self, rules: FieldRules) -> tuple[list[str], list[str]]:
        """The open fields whose GT values must be read as dates, and as numbers: those with
        a substitution a date (a number) comparator makes equal."""
        column = {c: j for j, c in enumerate(FORMAT_COMPARATORS)}
        fields = [(t, self.fixed(t)) for t in self.open_fields(rules)]
        return ([t for t, fixed in fields if any(fixed[column[c]] for c in DATE_ORDERS)],
                [t for t, fixed in fields if fixed[column["number"]]])


@dataclass(frozen=True)
class GtReadings:
    """What the suggestions read from the GT values of some fields: per field, how many
    values, their :class:`~kieval_core.count.comparators.DateCounts` and how many read as
    numbers (for the fields asked); counts that add up over disjoint sets of documents."""

    values: Mapping[str, int] = dataclasses.field(default_factory=dict)
    dates: Mapping[str, DateCounts] = dataclasses.field(default_factory=dict)
    numbers: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, gt: pd.DataFrame, normalizer: Normalizer, date_fields: Sequence[str],
           number_fields: Sequence[str]) -> GtReadings:
        """The readings of the fields named, from GT entities (each value normalised once)."""
        fields = sorted({*date_fields, *number_fields})
        chosen = gt["entity_type"].isin(fields).to_numpy()
        codes, normalised = normalizer.sorted_codes(np.asarray(gt["value"].array[chosen], dtype=object))
        type_codes, type_names = pd.factorize(np.asarray(gt["entity_type"].array[chosen], dtype=object))
        code_of = {t: k for k, t in enumerate(type_names)}
        # per field its distinct normalised values and how many times each comes
        counts = {t: np.bincount(codes[type_codes == code_of.get(t, -2)], minlength=len(normalised))
                  for t in fields}
        distinct = {t: np.flatnonzero(n) for t, n in counts.items()}
        return cls({t: int(n.sum()) for t, n in counts.items()},
                   {t: date_counts(normalised[distinct[t]], counts[t][distinct[t]]) for t in date_fields},
                   {t: int(counts[t][distinct[t]][canonicalise("number", normalised[distinct[t]])[1]].sum())
                    for t in number_fields})

    def __add__(self, other: GtReadings) -> GtReadings:
        def add(mine: Mapping, theirs: Mapping) -> dict:
            return {t: mine[t] + theirs[t] if t in mine and t in theirs else mine.get(t, theirs.get(t))
                    for t in sorted({*mine, *theirs})}

        return GtReadings(add(self.values, other.values), add(self.dates, other.dates),
                          add(self.numbers, other.numbers))


def suggested_rules(result: EvaluationResult) -> FieldRules:
    """Rules inferred from the files (SPEC 2d, source ``suggested``), for the fields the user
    and the rules files leave exact: see :func:`rules_from` (read from the engine's tables:
    models without them, a distributed run, give none)."""
    gt = result.gt.entities
    if gt.empty:
        return FieldRules()
    substitutions = Substitutions.of(result.models.values(), result.normalizer)
    readings = GtReadings.of(gt, result.normalizer, *substitutions.gt_reads(result.rules))
    return rules_from(substitutions, readings, result.rules)


def rules_from(substitutions: Substitutions, readings: GtReadings, rules: FieldRules) -> FieldRules:
    """The suggested rules of the fields ``rules`` leave exact: a date comparator in the
    order the GT uses when at least 90% of its GT values are dates, ``number`` when 90% are
    numbers, each when it makes some substitution equal; else ``casefold`` (or ``alnum``)
    when most of the field's substitutions differ only in case (or also in spaces and
    punctuation). Each says why. ``readings`` covers :meth:`Substitutions.gt_reads`."""
    column = {c: j for j, c in enumerate(FORMAT_COMPARATORS)}
    suggested = []
    for entity_type in substitutions.open_fields(rules):
        fixed = substitutions.fixed(entity_type)
        typed = _typed_rule(entity_type, readings, fixed, column)
        loose = _format_rule(entity_type, substitutions.counts[entity_type][0], fixed, column)
        # a date or number rule, unless case and punctuation alone make more pairs equal
        # ("45.500" for "45,500" on an Indonesian receipt is one number to alnum, two to number)
        rule = typed if typed is not None and (loose is None or fixed[column[typed.comparator]]
                                                >= fixed[column[loose.comparator]]) else loose
        if rule is not None:
            suggested.append(rule)
    return FieldRules(tuple(suggested))


def _typed_rule(entity_type: str, readings: GtReadings, fixed: np.ndarray, column: dict) -> Rule | None:
    """A date or number comparator, from the field's GT readings (present only when some
    substitution of the field would be fixed by one)."""
    n = readings.values.get(entity_type, 0)
    counts = readings.dates.get(entity_type)
    dates = None if counts is None else counts.order()
    if (dates and dates.leading is not None and dates.dates >= TYPED_SHARE * n
            and fixed[column[dates.leading]]):
        why = f"{dates.why}; equal dates in {_substitutions(fixed[column[dates.leading]])}"
        return Rule(entity_type, dates.leading, source="suggested", declared_by="suggested", why=why)
    numbers = readings.numbers.get(entity_type, 0)
    if numbers >= TYPED_SHARE * n and fixed[column["number"]]:
        fixes = _substitutions(fixed[column["number"]])
        why = f"{numbers} of {n} GT values are numbers; equal numbers in {fixes}"
        return Rule(entity_type, "number", source="suggested", declared_by="suggested", why=why)
    return None


def _substitutions(n: int) -> str:
    return f"{n:,} substitution{'' if n == 1 else 's'}"


def _format_rule(entity_type: str, n_subs: int, fixed: np.ndarray, column: dict) -> Rule | None:
    for comparator, differ in (("casefold", "only in case"),
                               ("alnum", "only in case, spaces or punctuation")):
        if n_subs and fixed[column[comparator]] > FORMAT_SHARE * n_subs:
            why = f"{fixed[column[comparator]]} of {n_subs} substitutions differ {differ}"
            return Rule(entity_type, comparator, source="suggested", declared_by="suggested", why=why)
    return None


@dataclass(frozen=True)
class FigureSet:
    """One model's corpus figures under one set of rules (SPEC 2d): counts, P/R/F1,
    KIEval_Aligned and its rank among the models (1 = best; ties share a rank)."""

    counts: Mapping[str, int]
    rank: int

    @property
    def entity(self) -> Counts:
        return Counts(self.counts["tp"], self.counts["fp"], self.counts["fn"])

    @property
    def corrections(self) -> Corrections:
        return Corrections(self.counts["substitution"], self.counts["addition"], self.counts["deletion"])

    @property
    def aligned(self) -> float:
        return float(aligned_score(self.entity.tp, self.corrections.total))

    def report(self) -> dict:
        return {"entity": self.entity.as_dict(), "aligned": self.aligned,
                "corrections": self.corrections.as_dict(), "rank": self.rank}


@dataclass(frozen=True)
class RuleFigures:
    """The figures of every model under the three sets of rules of SPEC 2d: ``strict``
    (every field exact), ``active`` (the rules in force) and ``suggested`` (the active rules
    with the suggestions under them; None when the suggestions change nothing), the rules
    of each, and the sentence saying how the rankings differ (None when they agree)."""

    strict: Mapping[str, FigureSet]
    active: Mapping[str, FigureSet]
    suggested: Mapping[str, FigureSet] | None
    suggested_rules: FieldRules
    strict_comparators: Mapping[str, str]
    active_comparators: Mapping[str, str]
    suggested_comparators: Mapping[str, str]

    @property
    def sentence(self) -> str | None:
        """``Under the suggested rules (date as date:dmy, company as casefold) gpt4o ranks
        first; strictly it ranks last.``; None when the rankings are the same."""
        other, label, comparators = ((self.suggested, "the suggested rules", self.suggested_comparators)
                                     if self.suggested is not None else
                                     (self.active, "the rules in force", self.active_comparators))
        if not self.strict or ranking(other) == ranking(self.strict):
            return None
        named = ", ".join(f"{t} as {c}" for t, c in comparators.items()
                          if self.strict_comparators.get(t) != c)
        leader = ranking(other)[0]
        return (f"Under {label} ({named}) {leader} ranks {_place(other[leader].rank, len(other))}; "
                f"strictly it ranks {_place(self.strict[leader].rank, len(other))}.")


def _place(rank: int, n: int) -> str:
    if rank == 1:
        return "first"
    if rank == n:
        return "last"
    return {2: "second", 3: "third"}.get(rank, f"{rank}th")


def ranking(figures: Mapping[str, FigureSet]) -> list[str]:
    """Model names, best KIEval_Aligned first (ties: the models' order)."""
    return sorted(figures, key=lambda name: figures[name].rank)


def _ranked(counts: Mapping[str, Mapping[str, int]]) -> dict[str, FigureSet]:
    aligned = {n: float(aligned_score(c["tp"], c["substitution"] + c["addition"] + c["deletion"]))
               for n, c in counts.items()}
    return {n: FigureSet(c, 1 + sum(a > aligned[n] for a in aligned.values())) for n, c in counts.items()}


@dataclass(frozen=True)
class RuleCounts:
    """The counts behind :class:`RuleFigures`: every model's corpus counts strictly (empty
    when they cannot be counted), the suggested rules, and every model's counts under them
    (None when they change nothing). A local run counts them from the engine's tables
    (:func:`rule_counts`); a distributed run from its partitions
    (:func:`kieval_core.scale.partitions.with_rule_counts`)."""

    strict: Mapping[str, Mapping[str, int]]
    suggested_rules: FieldRules
    suggested: Mapping[str, Mapping[str, int]] | None


def own_counts(result: EvaluationResult) -> dict[str, dict[str, int]]:
    """Every model's corpus counts under the rules in force."""
    return {name: {k: int(m.tally.totals[k]) for k in COUNT_KEYS} for name, m in result.models.items()}


def rule_counts(result: EvaluationResult) -> RuleCounts:
    """The strict and suggested counts from the engine's tables: each counts again only the
    documents whose values its rules compare otherwise than the active rules do
    (:func:`counts_under`)."""
    active_comparators = result.comparators
    recountable = all(m.counted is not None for m in result.models.values())
    # without the engine's tables the strict figures of a run with comparators cannot be
    # counted here: none, rather than the active ones under their name
    strict = own_counts(result) if not active_comparators else {} if not recountable else {
        name: counts_under(result, name, {}) for name in result.models}
    suggestions = suggested_rules(result) if recountable else FieldRules()
    suggested_comparators = {**active_comparators, **suggestions.comparators(result.entity_types)}
    suggested = None
    if suggested_comparators != active_comparators:
        # the blocks the hint's comparators change alike are counted once, for both
        suggested = {name: model_counts_under(m, result.normalizer, active_comparators, suggested_comparators,
                                              ahead={**active_comparators, **_hint_comparators(m, result)})
                     for name, m in result.models.items()}
    return RuleCounts(strict, suggestions, suggested)


def _hint_comparators(model: ModelResult, result: EvaluationResult) -> dict[str, str]:
    hinted = _hinted(model, result.normalizer)
    return dict(zip(hinted["entity_type"], hinted["comparator"], strict=True))


def rule_figures(result: EvaluationResult) -> RuleFigures:
    """The three sets of figures (SPEC 2d), from the run's :class:`RuleCounts` (a distributed
    run's, or counted from the engine's tables)."""
    counts = result.rule_counts if result.rule_counts is not None else rule_counts(result)
    active_comparators = result.comparators
    suggested_comparators = {**active_comparators, **counts.suggested_rules.comparators(result.entity_types)}
    suggested = None if counts.suggested is None else _ranked(counts.suggested)
    return RuleFigures(_ranked(counts.strict), _ranked(own_counts(result)), suggested, counts.suggested_rules,
                       {}, active_comparators, suggested_comparators)


def _meta_fix(result: EvaluationResult, model: ModelResult) -> tuple[str | None, int]:
    """The record-level key on one side only and still scored (likely metadata) with the
    most corrections in ``model`` (every one of them an addition or a deletion that
    ``--meta`` removes), and how many; ``(None, 0)`` without one."""
    keys = [k.key for k in result.one_sided if k.record_level and not k.set_aside]
    if not keys:
        return None, 0
    corrections = model.by_entity_type.set_index("entity_type")["corrections"]
    counts = corrections.reindex(keys, fill_value=0)
    return (str(counts.idxmax()), int(counts.max())) if counts.max() > 0 else (None, 0)
