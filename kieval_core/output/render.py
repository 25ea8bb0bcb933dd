"""The JSON report (SPEC 7) and the summary table; both read the metric registry.

:func:`build_report` computes everything once; the summary (:func:`summary_frame`) and
the JSON text (:func:`report_json`) are read from it. Reports are deterministic: the same
data gives the same bytes, whatever the order of documents, groups or entities in the
files.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import pandas as pd

from .._version import __version__
from ..count.causes import CAUSE_COLUMNS, CAUSES_OF_KIND
from ..result.inputs import model_row
from ..result.registry import metrics_of
from ..result.results import EvaluationResult, ModelResult
from ..result.suggest import ranking
from ..result.tables import cell_text
from ..review.automation import threshold_text
from ..review.decisions import DecisionOptions, automation_section
from ..review.label_fixes import fix_records
from ..review.suspects import suspect_records


def _plain(value: Any) -> Any:
    """JSON-safe Python values: numpy scalars unwrapped, NaN and NA become null."""
    if isinstance(value, RawJSON):
        return json.loads(value)
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


def _json_column(column: pd.Series, before: str = "") -> list[str]:
    """JSON text of every value of a column, as ``json.dumps`` would write it, each after
    ``before``. Numbers of a numpy column are written once per distinct value (a table of
    figures repeats many)."""
    if column.dtype in (np.float64, np.int64):
        as_int = column.dtype == np.int64  # floats by their bit patterns: 0.0 and -0.0 apart
        distinct, inverse = np.unique(column.to_numpy().view(np.int64), return_inverse=True)
        numbers = distinct.tolist() if as_int else distinct.view(np.float64).tolist()
        texts = [before + (str(v) if as_int else _float_text(v)) for v in numbers]
        return np.asarray(texts, dtype=object)[inverse.ravel()].tolist()
    texts = _json_texts(column)
    return [before + text for text in texts] if before else texts


def _float_text(value: float) -> str:
    return repr(value) if value == value and abs(value) != math.inf else "null"


def _json_texts(column: pd.Series) -> list[str]:
    """:func:`_json_column` of a column that is not a numpy number column."""
    values = column.tolist()
    if values and isinstance(values[0], RawJSON):
        return values
    if set(map(type, values)) == {str}:  # texts (document ids): the encoder json.dumps calls for each
        return list(map(encode_basestring, values))
    if pd.api.types.is_bool_dtype(column.dtype):
        return ["true" if v else "false" for v in values]
    if pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans:
        return [str(v) for v in values]
    if pd.api.types.is_float_dtype(column.dtype):
        return [_float_text(v) for v in values]
    return [json.dumps(_plain(v), ensure_ascii=False) for v in values]


#: Rows of :func:`records_json` laid out in one list at a time (its pieces stay in cache).
RECORDS_CHUNK = 4096


def records_json(frame: pd.DataFrame) -> str:
    """A frame as a JSON array of records, one per line; equal to ``json.dumps(_records(f))``
    up to white space, and much faster for the per-document table of a big corpus: each
    column's texts (each after its key) are made at once, then laid out by slice
    assignment and joined, so no Python code runs per row and value."""
    if frame.empty:
        return "[]"
    keys = [json.dumps(str(c), ensure_ascii=False) for c in frame.columns]
    # before each value its key, and before the first key the end of the previous record
    between = ["},\n{" + keys[0] + ": ", *(f", {k}: " for k in keys[1:])]
    columns = [_json_column(frame[c], text) for c, text in zip(frame.columns, between, strict=True)]
    width = len(columns)
    chunks = []
    for start in range(0, len(frame), RECORDS_CHUNK):
        n = min(RECORDS_CHUNK, len(frame) - start)
        pieces: list[str] = [""] * (width * n)
        for j, column in enumerate(columns):
            pieces[j::width] = column[start:start + n]
        chunks.append("".join(pieces))
    chunks[0] = chunks[0][len("},\n"):]  # the first record ends nothing
    return "".join(["[\n", *chunks, "}\n]"])  # one copy of a text of tens of MB


def nested_causes(table: pd.DataFrame) -> pd.DataFrame:
    """A table of figures with its ``<kind>_<cause>`` columns gathered into one ``causes``
    column, ``{kind: {cause: n}}`` per row as in ``kieval.causes`` (SPEC 2c), kept as JSON
    text (:class:`RawJSON`) so a table of 100,000 documents renders fast."""
    if "substitution_format" not in table:
        return table
    template = "{" + ", ".join(f'"{kind}": {{' + ", ".join(f'"{cause}": %d' for cause in causes) + "}"
                               for kind, causes in CAUSES_OF_KIND.items()) + "}"
    columns = [f"{kind}_{cause}" for kind, causes in CAUSES_OF_KIND.items() for cause in causes]
    # each distinct row of counts written once (most documents share a few)
    counts = table[columns].to_numpy(np.int64)
    row_code, first = _row_codes(counts)
    texts = np.asarray([RawJSON(template % tuple(row)) for row in counts[first].tolist()], dtype=object)
    out = table.drop(columns=CAUSE_COLUMNS)
    out["causes"] = pd.Series(texts[row_code], index=out.index, dtype=object)
    return out


def _row_codes(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A code per row of ``matrix`` (equal rows, equal codes; codes dense) and the first row
    of each code: the columns' codes combined one by one, each step factorised again so
    the combined code stays below the row count (``np.unique(axis=0)`` sorts rows, 30x
    slower).

    >>> codes, first = _row_codes(np.array([[1, 2], [3, 4], [1, 2]]))
    >>> codes.tolist(), first.tolist()
    ([0, 1, 0], [0, 1])
    """
    codes = np.zeros(len(matrix), np.int64)
    for column in matrix.T:
        column_codes, distinct = pd.factorize(column)
        codes = pd.factorize(codes * len(distinct) + column_codes)[0]
    return codes, np.unique(codes, return_index=True)[1]


class RawJSON(str):
    """JSON text that goes into a report as it is (an object, not a string)."""


def model_report(model: ModelResult, decisions: DecisionOptions, records=_records) -> dict:
    group = model.group
    report = {
        "source": model.source,
        "n_documents": model.n_documents,
        "inputs": {k.replace(" ", "_"): v for k, v in model_row(model).items()
                   if k not in ("role", "model", "source")} | {"notes": list(model.notes)},
        "kieval": {
            "entity": model.entity.as_dict(),
            "group": None if group is None else group.as_dict(),
            "aligned": model.aligned,
            "group_aligned": model.group_aligned,
            "corrections": model.corrections.as_dict(),
            "fp_plus_fn": model.entity.fp + model.entity.fn,
            "causes": model.causes,
            "aligned_if_format_right": model.aligned_if_format_right,
        },
        "entity_f1": model.entity_f1.as_dict(),
        "automation": automation_section(model, decisions, records),
        "by_entity_type": records(nested_causes(model.by_entity_type)),
        "by_group_type": records(model.by_group_type),
        "by_slice": {key: records(model.by_slice(key)) for key in decisions.slices},
        "documents": records(nested_causes(model.documents)),
        "missing_documents": list(model.missing_documents),
        "unknown_documents": list(model.unknown_documents),
        "warnings": list(model.warnings),
    }
    for figures in model.peer.values():
        report.update(_plain(figures.report()))
        for name, table in figures.tables.items():
            report.setdefault("peer_tables", {})[name] = records(table.reset_index())
    return _plain(report)


def build_report(result: EvaluationResult, decisions: DecisionOptions = DecisionOptions(),
                 records=_records) -> dict:
    """The whole report as a dict (tables as lists of records, or whatever ``records``
    makes of them)."""
    gt = result.gt
    return {
        "tool": {"name": "kieval-workbench", "version": __version__},
        "ground_truth": {
            "source": gt.source,
            "format": gt.format,
            "n_documents": len(gt.doc_ids),
            "n_entities": gt.n_entities,
            "meta": [] if gt.meta is None else list(gt.meta.columns),
            "notes": list(gt.notes),
        },
        "normalizer": result.normalizer.description,
        "options": {
            "rules": result.rules_table(),
            "comparators": result.comparators,
            "comparators_unparsed": result.comparators_unparsed,
            "ignored": dict(result.ignored),
            "suggested_rules": suggested_rules_section(result),
            "near_miss": result.normalizer.near_miss,
        },
        "rankings": rankings_section(result),
        "metrics": list(result.metrics),
        "decisions": {"target_accuracy": decisions.target,
                      "document_target": decisions.documents_target, "review": decisions.review,
                      "bootstrap_resamples": decisions.resamples, "seed": decisions.seed},
        "models": _models_report(result, decisions, records),
        **_label_sections(result),
        "warnings": result.all_warnings,
    }


def suggested_rules_section(result: EvaluationResult) -> list[dict]:
    """The rules inferred from the files (SPEC 2d), each with why; applied only on request."""
    suggestions = result.rule_figures.suggested_rules
    return [row for row in suggestions.table(result.entity_types) if row["source"] == "suggested"]


def rankings_section(result: EvaluationResult) -> dict:
    """The models ranked by KIEval_Aligned strictly, under the rules in force and under the
    suggested rules (None when they change nothing), and the sentence naming the rules
    that change the ranking (None when the rankings agree), SPEC 2d."""
    figures = result.rule_figures
    return {"strict": ranking(figures.strict), "rules": ranking(figures.active),
            "suggested": None if figures.suggested is None else ranking(figures.suggested),
            "sentence": figures.sentence}


def with_rule_figures(report: dict, result: EvaluationResult, name: str) -> dict:
    """One model's report with ``kieval_strict`` (every field exact) and ``kieval_suggested``
    (when the suggested rules differ from the active ones) after ``kieval``, each with its
    rank, and the rank under the active rules in ``kieval``."""
    figures = result.rule_figures
    out = {}
    for key, value in report.items():
        out[key] = value
        if key == "kieval":
            value["rank"] = figures.active[name].rank
            out["kieval_strict"] = figures.strict[name].report() if name in figures.strict else None
            if figures.suggested is not None:
                out["kieval_suggested"] = figures.suggested[name].report()
    return out


#: The figure families of a model's report that label fixes change (SPEC 2f): each is also
#: reported against the ground truth as given, as ``<family>_before_fixes``.
FIXED_FAMILIES = ("kieval", "kieval_strict", "kieval_suggested", "entity_f1", "automation", "by_entity_type",
                  "anls_star", "anls_star_renested", "nted", "nted_renested", "oi", "bag")


def _models_report(result: EvaluationResult, decisions: DecisionOptions, records) -> dict:
    """Every model's report (with its figures under the other field rules) and, with label
    fixes, its families as given (``<family>_before_fixes``)."""
    reports = {name: with_rule_figures(model_report(m, decisions, records), result, name)
               for name, m in result.models.items()}
    if result.before_fixes is None:
        return reports
    for name, model in result.before_fixes.models.items():
        before = with_rule_figures(model_report(model, decisions, records), result.before_fixes, name)
        reports[name].update({f"{key}_before_fixes": before[key] for key in FIXED_FAMILIES if key in before})
    return reports


def _label_sections(result: EvaluationResult) -> dict:
    """``suspects[]`` (SPEC 2f) when the engine's tables were kept, and ``label_fixes``
    (the fixes applied, their source) when the GT was fixed."""
    sections = {}
    if result.has_suspects:
        sections["suspects"] = suspect_records(result.suspects)
    if result.label_fixes is not None:
        sections["label_fixes"] = fix_records(result.label_fixes)
        sections["rankings_before_fixes"] = rankings_section(result.before_fixes)
    return sections


@dataclass(frozen=True)
class Report:
    """The report as JSON text, and as a dict whose tables are placeholders (for the
    summary and the gates, which read only scalar figures)."""

    text: str
    figures: dict


def report_json(result: EvaluationResult, decisions: DecisionOptions = DecisionOptions()) -> str:
    """The report as JSON text, byte-identical for identical data."""
    return render_report(result, decisions).text


def render_report(result: EvaluationResult, decisions: DecisionOptions = DecisionOptions()) -> Report:
    """Build the report once: its JSON text and its figures.

    Tables are rendered column-wise by :func:`records_json` and spliced in, so a report
    over 100,000 documents takes a fraction of a second instead of the standard
    encoder's tens of seconds.
    """
    token = f"__kieval_table_{uuid.uuid4().hex}_"
    tables: list[str] = []

    def placeholder(frame: pd.DataFrame) -> str:
        tables.append(records_json(frame))
        return f"{token}{len(tables) - 1}__"

    report = build_report(result, decisions, placeholder)
    text = json.dumps(report, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    pattern = re.compile(f'"{token}(\\d+)__"')
    return Report(pattern.sub(lambda m: tables[int(m.group(1))], text), report)


def value_at(report_model: dict, key: str) -> Any:
    """The value of a dotted key in one model's report (None when absent)."""
    node: Any = report_model
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


#: Decision figures of the summary, reviewing single predictions: label -> dotted key in a
#: model's report.
PREDICTION_ROWS = {
    "Recommended τ": "automation.recommended.threshold",
    "Assured τ": "automation.assured.threshold",
    "Lower bound at assured τ": "automation.assured.lower_bound",
    "Automation at τ": "automation.recommended.auto_rate",
    "Reviews / 1,000 docs at τ": "automation.recommended.reviews_per_1000_documents",
    "Straight-through at τ": "automation.recommended.straight_through_rate",
    "Minimum-cost τ": "automation.min_cost.threshold",
    "Cost / 1,000 docs at min": "automation.min_cost.cost_per_1000_documents",
}
#: The same, reviewing whole documents (SPEC 4c).
DOCUMENT_REVIEW_ROWS = {
    "Whole-doc τ": "automation.document_review.recommended.threshold",
    "Whole-doc straight-through": "automation.document_review.recommended.straight_through_rate",
    "Whole-doc min-cost τ": "automation.document_review.min_cost.threshold",
    "Whole-doc cost/1,000 at min": "automation.document_review.min_cost.cost_per_1000_documents",
}
DECISION_ROWS = {**PREDICTION_ROWS, **DOCUMENT_REVIEW_ROWS}
#: Summary rows shown as whole numbers (per 1,000 documents).
WHOLE_ROWS = frozenset({"Reviews / 1,000 docs at τ", "Cost / 1,000 docs at min",
                        "Whole-doc cost/1,000 at min"})
#: Summary rows that hold a threshold (written by :func:`~kieval_core.review.automation.threshold_text`).
THRESHOLD_ROWS = frozenset({"Recommended τ", "Assured τ", "Minimum-cost τ", "Whole-doc τ",
                            "Whole-doc min-cost τ"})


def summary_frame(result: EvaluationResult, report: dict) -> pd.DataFrame:
    """One row per model: every computed registry metric, then the decision figures (read
    from the report; a target reachable only by full review reads "not reachable", a
    model without confidences "no confidences")."""
    metrics = [m for m in metrics_of(result.metrics)
               if any(m.computed(model) for model in result.models.values())]
    review = report["decisions"]["review"]
    shown = {**(PREDICTION_ROWS if review != "documents" else {}),
             **(DOCUMENT_REVIEW_ROWS if review != "predictions" else {})}
    rows = []
    figures_of_rules = result.rule_figures
    for name, model in result.models.items():
        row = {"model": name, "documents": model.n_documents}
        for m in metrics:
            row[m.label] = m.get(model)
            if m.key == "kieval.aligned":
                row.update(ranked_rows(figures_of_rules, name))
        figures = report["models"][name]
        automation = figures["automation"]
        row["Confidences"] = automation["confidence_source"]
        for label, key in shown.items():
            row[label] = _decision_cell(figures, key)
        rows.append(row)
    return pd.DataFrame(rows)


def _decision_cell(figures: dict, key: str) -> Any:
    """A decision row's value in one model's report, or why it has none."""
    if figures["automation"]["reason"]:
        return "no confidences"
    section, _, _ = key.rpartition(".")
    if section == "automation.assured":
        if figures["automation"]["assured"] is None:
            return "n/a (--bootstrap 0)"
        if value_at(figures, f"{section}.point_threshold") is None:
            return "not reachable"
        return value_at(figures, key) if value_at(figures, f"{section}.reachable") else "not assured"
    recommended = key.rpartition(".recommended.")[0]
    if recommended and not value_at(figures, f"{recommended}.recommended.reachable"):
        return "not reachable"
    return value_at(figures, key)
def ranked_rows(figures, name: str) -> dict[str, str]:
    """The summary's KIEval_Aligned strictly, under the rules in force (when they are not
    strict) and under the suggested rules (when they differ), each with the model's rank."""
    def text(figure) -> str:
        return f"{figure.aligned:.4f} (#{figure.rank})"

    rows = {"KIEval_Aligned strict (rank)": text(figures.strict[name]) if name in figures.strict else "n/a"}
    if figures.active_comparators:
        rows["KIEval_Aligned by the rules (rank)"] = text(figures.active[name])
    if figures.suggested is not None:
        rows["KIEval_Aligned suggested rules (rank)"] = text(figures.suggested[name])
    return rows


def rules_lines(result: EvaluationResult) -> list[str]:
    """The CLI's lines about field rules (SPEC 2d): the rules in force with where they come
    from and how many values each comparator could not read, the ignored fields, the
    suggested rules with why, and the sentence when the rankings differ."""
    lines = []
    unparsed = result.comparators_unparsed
    active = [r for r in result.rules_table() if r["comparator"] != "exact" and not r["ignore"]]
    def unread(entity_type: str) -> str:
        n = unparsed.get(entity_type, 0)
        return f", {n:,} value{'' if n == 1 else 's'} unparsed" if n else ""

    if active:
        lines.append("rules: " + "; ".join(f"{r['type']}={r['comparator']} ({r['declared_by'] or r['source']}"
                                           f"{unread(r['type'])})" for r in active))
    if result.ignored:
        ignored = ", ".join(f"{t} ({n:,} values)" for t, n in result.ignored.items())
        lines.append(f"ignored (not scored): {ignored}")
    figures = result.rule_figures
    suggested = suggested_rules_section(result)
    if suggested and figures.suggested is not None:
        lines.append("suggested rules (--rules suggested applies them): " + "; ".join(
            f"{r['type']}={r['comparator']} ({r['why']})" for r in suggested))
    if figures.sentence:
        lines.append(figures.sentence)
    return lines


def decision_notes(report: dict) -> list[str]:
    """What the summary's decision rows were asked (the target, the costs) and, for each
    model whose target is not reachable with automation, the best accuracy that is (SPEC 4);
    nothing when no model carries confidences."""
    decisions = report["decisions"]
    sections = {name: m["automation"] for name, m in report["models"].items()
                if not m["automation"]["reason"]}
    if not sections:
        return []
    cost = next(iter(sections.values()))["cost"]
    escaped = [cost["per_escaped"][k] for k in ("substitution", "addition", "deletion")]
    escaped_text = (f"{escaped[0]:g} per error left" if len(set(escaped)) == 1 else
                    "per error left: substitution {:g}, addition {:g}, deletion {:g}".format(*escaped))
    lines = [f"decisions: target accuracy after review {decisions['target_accuracy']:g} "
             f"(--target-accuracy); cost {cost['per_review']:g} per review, {cost['per_document']:g} per "
             f"opened document, {escaped_text} (--cost)"]
    policies = {"recommended": "single predictions", "document_review.recommended": "whole documents"}
    lines.extend(missing_confidence_lines(report))
    lines.extend(assurance_lines(report))
    for name, automation in sections.items():
        for key, policy in policies.items():
            recommended = value_at(automation, key)
            if recommended is None or recommended["reachable"]:
                continue
            best = recommended["best_reachable"]
            lines.append(f"{name}: {recommended['target']:g} is not reachable with automation, reviewing "
                         f"{policy} (best {cell_text(best)}: only reviewing everything gets there)")
    return lines


#: What a prediction without confidence becomes, per policy, in the summary's words.
_MISSING_TEXT = {"review": "never automated, reviewed at every τ", "automate": "automated (count as 1.0)"}


def missing_confidence_lines(report: dict) -> list[str]:
    """Per model some of whose predictions carry no confidence: the policy applied to them
    and, per field, how many they are (SPEC 4c)."""
    lines = []
    for name, figures in report["models"].items():
        automation = figures["automation"]
        fields = [f for f in automation["confidence_by_field"] or [] if f["without_confidence"]]
        if not fields or automation["reason"]:
            continue
        shares = ", ".join(f"{f['entity_type']} {f['share_without_confidence']:.0%} "
                           f"({f['without_confidence']:,} of {f['predictions']:,})" for f in fields)
        lines.append(f"{name}: predictions without a confidence are "
                     f"{_MISSING_TEXT[automation['missing_confidence']]} (--missing-confidence): {shares}")
    return lines


def assurance_lines(report: dict) -> list[str]:
    """Per model whose target is reachable on the point estimate but not on the lower
    bound: how many documents like these would assure it (SPEC 4d)."""
    lines = []
    for name, figures in report["models"].items():
        assured = figures["automation"]["assured"]
        if not assured or assured["reachable"] or assured["point_threshold"] is None:
            continue
        said = (f"{name}: τ {threshold_text(assured['point_threshold'])} reaches {assured['target']:g} on "
                f"these {assured['documents']:,} documents, but no τ with automation has its "
                f"{assured['assurance']:.0%} lower bound there (--assurance)")
        needed = assured["documents_needed"]
        lines.append(said + (f"; about {needed:,} documents like these would assure "
                             f"τ {threshold_text(assured['best_threshold'])}" if needed else ""))
    return lines


def per_field_lines(report: dict) -> list[str]:
    """The per-field plan of each model with confidences (``--per-field-thresholds``): per
    field its τ (or "reviewed whole"), its accuracy after review against its floor, and the
    straight-through rate it costs; the fields that cannot reach their floor are named."""
    lines = []
    for name, figures in report["models"].items():
        plan = figures["automation"]["per_field"]
        if plan is None:
            continue
        reach = "reaches" if plan["reachable"] else "does not reach"
        lines.append(f"{name}: one τ per field {reach} {plan['target']:g} overall ({plan['reviews'] or 0:,} "
                     "reviews); per field, accuracy after review against its floor (--field-floor):")
        for row in plan["table"]:
            tau = ("reviewed whole" if row["review"] == "all" else f"τ {threshold_text(row['threshold'])}")
            mark = "" if row["meets_floor"] else " BELOW FLOOR"
            lines.append(f"  {row['entity_type']}: {tau}, {cell_text(row['kieval_aligned'])} (floor "
                         f"{row['floor']:g}){mark}, {row['share_without_confidence'] or 0:.0%} without a "
                         f"confidence, +{row['straight_through_gain']:.1%} straight through if always "
                         "automated")
        if plan["floor_unreachable"]:
            lines.append(f"  cannot reach their floor with any automation, reviewed whole: "
                         f"{', '.join(plan['floor_unreachable'])}")
    return lines


def document_target_line(report: dict) -> str:
    """What ``--document-target`` chose, in one line: per model, the smallest τ (reviewing
    single predictions) at which that share of documents is right after review with some
    documents straight through (``automation.documents.recommended``), or why there is none;
    the target is not used when single predictions are not reviewed."""
    target = report["decisions"]["document_target"]
    said = f"document target {target:g} (--document-target)"
    if report["decisions"]["review"] == "documents":
        return (f"{said}: not used, it applies to reviewing single predictions "
                "(--review predictions or both)")
    parts = []
    for name, figures in report["models"].items():
        recommended = value_at(figures, "automation.documents.recommended")
        if recommended is None:
            parts.append(f"{name} no confidences")
        elif not recommended["reachable"]:
            best = cell_text(recommended["best_reachable"])
            parts.append(f"{name} not reachable (best {best} of documents right with some straight through)")
        else:
            parts.append(f"{name} τ {threshold_text(recommended['threshold'])}: "
                         f"{cell_text(recommended['accuracy'])} of documents right after review, "
                         f"{cell_text(recommended['straight_through_rate'])} straight through")
    return f"{said}, reviewing single predictions: " + "; ".join(parts)
