"""Field rules (SPEC 2d): how each field is judged, in one object.

Per entity-type glob, a :class:`Rule` says the field's **comparator** (SPEC 2b, a name of
:data:`~kieval_core.count.comparators.REGISTRY`) and whether it is **ignored** (not scored
on either side, counted and named in the report). A :class:`FieldRules` holds the rules of
every source; for each entity type each setting comes from the highest source that sets it
(:data:`SOURCES`, highest first), and among rules of one source from the last one that
matches. The Python API (``evaluate(..., rules=...)``), the CLI (``--compare``,
``--ignore``, ``--rules``), the app's rules panel, saved runs and the JSON report
(``options.rules[]``) all use it.

Rules files are JSON Schemas of the extracted document (:func:`read_rules_file`), read as
their users write them: ``x-kieval-comparator`` / ``x-kieval-ignore``, stickler's
``x-aws-stickler-comparator``, ContextualAI extract-bench's ``evaluation_config``
presets, and plain ``"format": "date"`` / ``"type": "number"``.

>>> rules = FieldRules.from_options(compare=["date=date"], ignore=["split"])
>>> rules.comparator_for("date"), rules.comparator_for("total"), rules.ignores("split")
('date:dmy', 'exact', True)
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .count.comparators import comparator_name, date_order, parse_rule
from .count.normalize import Normalizer
from .exceptions import KievalInputError, KievalOptionError
from .read.dataset import Dataset

#: Where a rule comes from, highest first (SPEC 2d).
SOURCES = ("user", "file", "schema", "suggested", "default")
#: The comparator of a field declared a date without an order (``"format": "date"``,
#: stickler's ``DateComparator``): the order its ground truth uses (SPEC 2c), day first
#: when the ground truth does not decide.
GT_ORDER_DATE = "date:gt"


@dataclass(frozen=True)
class Rule:
    """One rule: for the entity types ``pattern`` matches (a glob such as ``*.price``), a
    comparator and/or whether they are ignored (None: this rule does not say), where it
    comes from (:data:`SOURCES`), who declared it (``--compare date=date``, ``rules.json:
    properties.date x-aws-stickler-comparator``) and, for a suggestion, why."""

    pattern: str
    comparator: str | None = None
    ignore: bool | None = None
    source: str = "user"
    declared_by: str = ""
    why: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            msg = f"unknown rule source {self.source!r}; one of {', '.join(SOURCES)}"
            raise KievalOptionError(msg)
        if self.comparator is not None and self.comparator != GT_ORDER_DATE:
            object.__setattr__(self, "comparator", comparator_name(self.comparator))
        if self.ignore is not None:
            object.__setattr__(self, "ignore", bool(self.ignore))

    def matches(self, entity_type: str) -> bool:
        return fnmatch.fnmatchcase(entity_type, self.pattern)


@dataclass(frozen=True)
class FieldRules:
    """Every field rule in force, and the warnings met while reading them (a rules-file
    setting without an equivalent here). Immutable; :meth:`comparator_for` and
    :meth:`ignores` are what other modules ask (e.g. whether models agree "under the
    field rules in force")."""

    rules: tuple[Rule, ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)
    #: Apply the suggested rules (source ``suggested``, inferred from the files) under these.
    apply_suggested: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(self.rules))
        object.__setattr__(self, "warnings", tuple(self.warnings))

    # --- building ----------------------------------------------------------------------------

    @classmethod
    def from_options(cls, compare: Iterable[str] = (), ignore: Iterable[str] = (),
                     source: str = "user") -> FieldRules:
        """Rules from ``TYPE=NAME`` texts (``--compare``) and ignored types (``--ignore``)."""
        rules = [Rule(p, n, source=source, declared_by=f"--compare {text.strip()}")
                 for text in compare for p, n in [parse_rule(text)]]
        rules += [Rule(t.strip(), ignore=True, source=source, declared_by=f"--ignore {t.strip()}")
                  for t in ignore if t.strip()]
        return cls(tuple(rules))

    @classmethod
    def from_mapping(cls, comparators: Mapping[str, str], source: str = "user",
                     declared_by: str = "rules=") -> FieldRules:
        """Rules from ``{type or glob: comparator}``; the comparator ``ignore`` ignores."""
        return cls(tuple(Rule(p, ignore=True, source=source, declared_by=declared_by) if n == "ignore"
                         else Rule(p, n, source=source, declared_by=declared_by)
                         for p, n in comparators.items()))

    def over(self, lower: FieldRules) -> FieldRules:
        """These rules and ``lower``'s (what decides is each rule's source, then its order)."""
        return FieldRules((*lower.rules, *self.rules), (*lower.warnings, *self.warnings),
                          self.apply_suggested or lower.apply_suggested)

    @classmethod
    def of(cls, spec: FieldRules | Mapping[str, str] | str | Path | Sequence | None) -> FieldRules:
        """Rules from what ``evaluate(..., rules=...)`` takes: a :class:`FieldRules`, a mapping
        ``{type or glob: comparator or "ignore"}``, a rules file's path, ``"suggested"``, or
        a list of these (the later ones above the earlier ones of the same source)."""
        if spec is None:
            return cls()
        if isinstance(spec, FieldRules):
            return spec
        if isinstance(spec, Mapping):
            return cls.from_mapping(spec)
        if isinstance(spec, str) and spec.strip().lower() == "suggested":
            return cls(apply_suggested=True)
        if isinstance(spec, (str, Path)):
            return read_rules_file(spec)
        out = cls()
        for item in spec:
            out = cls.of(item).over(out)
        return out

    # --- asking ------------------------------------------------------------------------------

    def _winner(self, entity_type: str, setting: str) -> Rule | None:
        best: Rule | None = None
        for rule in self.rules:  # a handful of rules: no hot path
            if getattr(rule, setting) is None or not rule.matches(entity_type):
                continue
            if best is None or SOURCES.index(rule.source) <= SOURCES.index(best.source):
                best = rule
        return best

    def comparator_rule(self, entity_type: str) -> Rule:
        """The rule that gives ``entity_type`` its comparator (``exact`` by default)."""
        return self._winner(entity_type, "comparator") or Rule(entity_type, "exact", source="default")

    def comparator_for(self, entity_type: str) -> str:
        """The comparator of ``entity_type`` under these rules (``exact`` by default)."""
        return self.comparator_rule(entity_type).comparator or "exact"

    def ignores(self, entity_type: str) -> bool:
        """Whether ``entity_type`` is left out of scoring."""
        rule = self._winner(entity_type, "ignore")
        return bool(rule and rule.ignore)

    def comparators(self, entity_types: Iterable[str]) -> dict[str, str]:
        """``{entity type: comparator}`` for the types of ``entity_types`` that are not exact."""
        chosen = {t: self.comparator_for(t) for t in sorted(set(entity_types))}
        return {t: c for t, c in chosen.items() if c != "exact"}

    def ignored(self, entity_types: Iterable[str]) -> list[str]:
        return [t for t in sorted(set(entity_types)) if self.ignores(t)]

    def unmatched(self, entity_types: Iterable[str]) -> list[Rule]:
        """The user's and files' rules that match no entity type (a typo, or a field absent)."""
        types = sorted(set(entity_types))
        return [r for r in self.rules if r.source in ("user", "file")
                and not any(r.matches(t) for t in types)]

    def with_gt_date_orders(self, gt_values: Mapping[str, Sequence[str]]) -> FieldRules:
        """``date:gt`` rules turned into the order each field's ground truth uses (``gt_values``:
        the normalised GT values per entity type), one rule per matching type: the order
        most of its unambiguous dates read in (:attr:`DateOrder.leading`), day first when
        none decides."""
        out: list[Rule] = []
        for rule in self.rules:
            if rule.comparator != GT_ORDER_DATE:
                out.append(rule)
                continue
            for entity_type in sorted(t for t in gt_values if rule.matches(t)):
                order = date_order(gt_values[entity_type])
                why = order.why if order.leading else f"{order.why}; day first by default"
                out.append(replace(rule, pattern=entity_type, comparator=order.leading or "date:dmy",
                                   why=f"the ground truth's order: {why}"))
        return FieldRules(tuple(out), self.warnings)

    def comparator_pairs(self) -> tuple[tuple[str, str], ...]:
        """``(glob, comparator)`` pairs in which the last one matching a type gives its
        comparator (the :class:`~kieval_core.count.normalize.Normalizer`'s form): lowest
        source first, each source's rules in their order."""
        ordered = sorted(self.rules, key=lambda r: -SOURCES.index(r.source))  # stable within a source
        return tuple((r.pattern, r.comparator) for r in ordered if r.comparator)

    def bound_to(self, gt: Dataset, normalizer: Normalizer) -> FieldRules:
        """These rules with dates declared without an order (``date:gt``) read in the order
        ``gt``'s values of each field use (:meth:`with_gt_date_orders`)."""
        if not any(r.comparator == GT_ORDER_DATE for r in self.rules):
            return self
        entities = gt.entities
        codes, normalised = normalizer.sorted_codes(entities["value"].to_numpy(object))
        types = entities["entity_type"].astype(object).to_numpy()
        return self.with_gt_date_orders(pd.Series(normalised[codes]).groupby(types).agg(list).to_dict())

    def applied(self, gt: Dataset, predictions: Mapping[str, Dataset], normalizer: Normalizer) -> Applied:
        """These rules applied to the inputs, the one step between reading and counting:
        bound to ``gt`` (:meth:`bound_to`), the ignored fields left out of every dataset
        (counted per type in :attr:`Applied.ignored`), and the normaliser comparing with
        their comparators."""
        rules = self.bound_to(gt, normalizer)
        ignored: dict[str, int] = {}
        gt = rules.without_ignored(gt, ignored)
        predictions = {name: rules.without_ignored(pred, ignored) for name, pred in predictions.items()}
        return Applied(rules, gt, predictions, normalizer, ignored).under(rules)

    def without_ignored(self, dataset: Dataset, counts: dict[str, int]) -> Dataset:
        """``dataset`` without the entities of ignored types; adds how many it had per type
        to ``counts``."""
        if not any(r.ignore for r in self.rules):
            return dataset
        types = dataset.entities["entity_type"].astype(object)
        ignored = self.ignored(types.unique())
        drop = types.isin(ignored).to_numpy()
        if not drop.any():
            return dataset
        for entity_type, n in types[drop].value_counts().sort_index().items():
            counts[entity_type] = counts.get(entity_type, 0) + int(n)
        return replace(dataset, entities=dataset.entities.loc[~drop].reset_index(drop=True))

    def table(self, entity_types: Iterable[str]) -> list[dict[str, Any]]:
        """``options.rules[]``: per entity type, its comparator, whether it is ignored, and
        where that comes from (the comparator's rule, or the ignoring rule)."""
        rows = []
        for entity_type in sorted(set(entity_types)):
            ignoring = self._winner(entity_type, "ignore")
            rule = ignoring if ignoring is not None and ignoring.ignore else self.comparator_rule(entity_type)
            rows.append({"type": entity_type, "comparator": self.comparator_for(entity_type),
                         "ignore": self.ignores(entity_type), "source": rule.source,
                         "declared_by": rule.declared_by, "why": rule.why})
        return rows

    def __bool__(self) -> bool:
        return bool(self.rules) or self.apply_suggested

    # --- saving --------------------------------------------------------------------------------

    def to_json(self) -> list[dict[str, Any]]:
        """The rules as plain records (a saved run keeps them)."""
        return [{"pattern": r.pattern, "comparator": r.comparator, "ignore": r.ignore, "source": r.source,
                 "declared_by": r.declared_by, "why": r.why} for r in self.rules]

    @classmethod
    def from_json(cls, records: Sequence[Mapping[str, Any]]) -> FieldRules:
        return cls(tuple(Rule(**record) for record in records))

    def to_schema(self, entity_types: Iterable[str]) -> dict[str, Any]:
        """A rules file (JSON Schema with ``x-kieval-*``) that gives these rules' comparator
        and ignore for every one of ``entity_types`` (dotted types nest as objects)."""
        schema: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                  "type": "object", "properties": {}}
        for row in self.table(entity_types):
            node = schema
            for part in row["type"].split("."):
                node = node.setdefault("properties", {}).setdefault(part, {})
            node["x-kieval-comparator"] = row["comparator"]
            if row["ignore"]:
                node["x-kieval-ignore"] = True
        return schema


# --- rules files ---------------------------------------------------------------------------------

#: stickler's comparators with an equivalent here (SPEC 2d).
STICKLER = {"ExactComparator": "exact", "NormalizedComparator": "alnum", "NumericComparator": "number",
            "DateComparator": GT_ORDER_DATE, "PhoneComparator": "phone"}
#: extract-bench's presets with an equivalent here; ``skip`` ignores (SPEC 2d).
EXTRACT_BENCH = {"string_exact": "exact", "string_case_insensitive": "casefold", "number_exact": "number",
                 "integer_exact": "number", "number_tolerance": "number", "boolean_exact": "exact",
                 "skip": "ignore"}
_STICKLER_PREFIX = "x-aws-stickler-"


@dataclass(frozen=True)
class Applied:
    """Field rules applied to a ground truth and its prediction sets (:meth:`FieldRules.applied`):
    the datasets without the ignored fields, how many values each ignored field had, and
    the normaliser comparing under ``rules``."""

    rules: FieldRules
    gt: Dataset
    predictions: Mapping[str, Dataset]
    normalizer: Normalizer
    ignored: Mapping[str, int]

    def under(self, rules: FieldRules) -> Applied:
        """The same datasets compared under ``rules`` (the suggestions over the rules applied)."""
        return replace(self, rules=rules,
                       normalizer=replace(self.normalizer, comparators=rules.comparator_pairs()))


def read_rules_file(source: str | Path | Mapping[str, Any], name: str | None = None) -> FieldRules:
    """The rules a JSON Schema declares (a path, or the parsed schema with ``name`` for the
    report). Nested properties give dotted entity types (an array of objects is a group
    type: ``menu.nm``). Per field: ``x-kieval-comparator`` / ``x-kieval-ignore``, else
    stickler's ``x-aws-stickler-comparator``, else extract-bench's ``evaluation_config``
    (source ``file``); ``"format": "date"`` and ``"type": "number"`` / ``"integer"`` below
    them (source ``schema``). A setting without an equivalent is named in one warning per
    field, and the field stays exact."""
    if isinstance(source, Mapping):
        schema, name = source, name or "rules"
    else:
        path = Path(source)
        try:
            schema = json.loads(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise KievalInputError(path.name, None, f"not a readable JSON rules file ({e})") from None
        name = name or path.name
    if not isinstance(schema, Mapping):
        found = type(schema).__name__
        raise KievalInputError(name, None, f"a rules file is a JSON Schema object, got {found}")
    if isinstance(schema.get("schema_definition"), Mapping):  # extract-bench's wrapper
        schema = schema["schema_definition"]
    rules: list[Rule] = []
    warnings: list[str] = []
    _walk(schema, "", "", name, rules, warnings)
    return FieldRules(tuple(rules), tuple(warnings))


def _branches(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The node and the non-null branches of its ``anyOf`` / ``oneOf`` (``{"type": "null"}``
    makes a field optional, nothing more)."""
    out = [node]
    for key in ("anyOf", "oneOf"):
        out += [b for b in node.get(key, ()) if isinstance(b, Mapping) and b.get("type") != "null"]
    return out


def _walk(node: Mapping[str, Any], entity_type: str, where: str, name: str, rules: list[Rule],
          warnings: list[str]) -> None:
    for branch in _branches(node):
        properties = branch.get("properties")
        if isinstance(properties, Mapping):
            for key, child in properties.items():
                if isinstance(child, Mapping):
                    path = f"{entity_type}.{key}" if entity_type else str(key)
                    _field(child, path, f"{where}properties.{key}", name, rules, warnings)
        items = branch.get("items")
        if isinstance(items, Mapping) and entity_type:
            _walk(items, entity_type, f"{where}items.", name, rules, warnings)


def _field(node: Mapping[str, Any], entity_type: str, where: str, name: str, rules: list[Rule],
           warnings: list[str]) -> None:
    settings: list[tuple[str, str | None, bool | None]] = []  # (key, comparator, ignore), highest first
    unsupported: list[str] = []
    for leaf, prefix in _leaves(node, where):
        _declared(leaf, prefix, settings, unsupported)
    group = _is_group(node)
    if unsupported:
        warnings.append(_unsupported_warning(name, entity_type, unsupported, settings))
    for key, comparator, ignore in settings[:1]:  # on a group: every field of it
        rules.append(Rule(f"{entity_type}.*" if group else entity_type, comparator, ignore,
                          source="file", declared_by=f"{name}: {key}"))
    plain = None if group or any(c for _, c, _ in settings) else _plain_type(node)
    if plain is not None:
        rules.append(Rule(entity_type, plain[1], source="schema", declared_by=f"{name}: {where} {plain[0]}"))
    if group:
        _walk(node, entity_type, f"{where}.", name, rules, warnings)


def _leaves(node: Mapping[str, Any], where: str) -> list[tuple[Mapping[str, Any], str]]:
    """The node, and the items of a list of scalars (judged as its items), with where they sit."""
    items = [b["items"] for b in _branches(node)
             if isinstance(b.get("items"), Mapping) and "properties" not in b["items"]]
    return [(node, where), *((item, f"{where}.items") for item in items)]


def _is_group(node: Mapping[str, Any]) -> bool:
    """An object, or a list of objects: its properties are fields of a group."""
    return any("properties" in b or (isinstance(b.get("items"), Mapping) and "properties" in b["items"])
               for b in _branches(node))


def _unsupported_warning(name: str, entity_type: str, unsupported: list[str], settings: list) -> str:
    chosen = next((c for _, c, _ in settings if c), None)
    stays = "ignored" if any(i for _, _, i in settings) else f"compared as {chosen or 'exact'}"
    verb = "has" if len(unsupported) == 1 else "have"
    named = "; ".join(unsupported)
    return f"{name}: {entity_type}: {named} {verb} no equivalent here; {entity_type} is {stays}"


def _declared(node: Mapping[str, Any], where: str, settings: list, unsupported: list[str]) -> None:
    """The comparator settings of one schema node, highest first, and the settings without
    an equivalent."""
    if "x-kieval-ignore" in node:
        settings.append((f"{where} x-kieval-ignore", None, bool(node["x-kieval-ignore"])))
    if "x-kieval-comparator" in node:
        settings.append((f"{where} x-kieval-comparator", str(node["x-kieval-comparator"]), None))
    stickler = node.get(f"{_STICKLER_PREFIX}comparator")
    if stickler is not None:
        mapped = STICKLER.get(str(stickler))
        if mapped is None:
            unsupported.append(f"x-aws-stickler-comparator {stickler}")
        else:
            settings.append((f"{where} x-aws-stickler-comparator {stickler}", mapped, None))
    for key, value in node.items():
        if not key.startswith(_STICKLER_PREFIX) or key == f"{_STICKLER_PREFIX}comparator":
            continue
        full_match = value == 1.0 and (stickler is None or stickler in STICKLER)
        if key == f"{_STICKLER_PREFIX}threshold" and full_match:
            continue  # a full match under the comparator: what it does here
        unsupported.append(f"{key} {json.dumps(value)}")
    config = node.get("evaluation_config")
    if config is not None:
        for metric_id, params in _presets(config):
            mapped = EXTRACT_BENCH.get(metric_id)
            if mapped is None:
                unsupported.append(f"evaluation_config {metric_id}")
                continue
            if metric_id == "number_tolerance":
                tolerance = (params or {}).get("tolerance", 0.001)
                unsupported.append(f"evaluation_config number_tolerance's tolerance {tolerance} "
                                   f"(equal numbers only)")
            key = f"{where} evaluation_config {metric_id}"
            settings.append((key, None, True) if mapped == "ignore" else (key, mapped, None))


def _presets(config: Any) -> list[tuple[str, Mapping[str, Any] | None]]:
    """extract-bench's ``evaluation_config``: a preset name, or ``{"metrics": [{"metric_id",
    "params"}]}``."""
    if isinstance(config, str):
        return [(config, None)]
    if isinstance(config, Mapping):
        return [(str(m.get("metric_id")), m.get("params")) for m in config.get("metrics", ())
                if isinstance(m, Mapping)]
    return [(json.dumps(config), None)]


def _plain_type(node: Mapping[str, Any]) -> tuple[str, str] | None:
    for branch in _branches(node):
        if branch.get("format") == "date":
            return '"format": "date"', GT_ORDER_DATE
        if branch.get("type") in ("number", "integer"):
            return f'"type": "{branch["type"]}"', "number"
    return None
