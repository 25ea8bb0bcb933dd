"""The metric registry: one place that lists every metric the tool reports.

The CLI's ``--metrics``, the JSON report, the summary table and the dashboard's metric
tables and guide all read :data:`METRICS`. A metric belongs to a **family**; families are
what ``--metrics`` selects (``kieval`` = KIEval, flat entity F1 and the automation curve).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .peer_families import FAMILY_FUNCTIONS, PeerFigures, PeerOptions

if TYPE_CHECKING:
    from .evaluate import ModelResult
    from .model import Dataset

KIEVAL_CITATION = "Khang et al., KIEval, arXiv 2503.05488 (Upstage AI, 2025)"


@dataclass(frozen=True)
class Metric:
    """One reported figure.

    ``key`` is its dotted path in the JSON report under ``models.<name>``; ``get`` reads it
    from a :class:`~kieval_core.evaluate.ModelResult` (None when undefined).
    """

    key: str
    label: str
    family: str
    higher_is_better: bool
    definition: str
    how_to_read: str
    citation: str
    get: Callable[[ModelResult], Any]
    headline: bool = False

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


def _group(attr: str) -> Callable[[ModelResult], Any]:
    return lambda m: None if m.group is None else getattr(m.group, attr)


METRICS: tuple[Metric, ...] = (
    Metric("kieval.entity.f1", "KIEval entity F1", "kieval", True,
           "Micro F1 of entities after one-to-one group matching: a value counts only in the "
           "group it belongs to.",
           "Share of fields right in the right line item; below flat F1 when values land in "
           "the wrong line.", KIEVAL_CITATION, lambda m: m.entity.f1, headline=True),
    Metric("kieval.entity.precision", "KIEval entity precision", "kieval", True,
           "TP / (TP + FP) after group matching.", "Of the predicted fields, how many are right.",
           KIEVAL_CITATION, lambda m: m.entity.precision),
    Metric("kieval.entity.recall", "KIEval entity recall", "kieval", True,
           "TP / (TP + FN) after group matching.", "Of the true fields, how many were found.",
           KIEVAL_CITATION, lambda m: m.entity.recall),
    Metric("kieval.group.f1", "KIEval group F1", "kieval", True,
           "F1 over groups: a matched group pair is a TP only if every entity in it is right.",
           "Share of line items (menu lines, transactions) extracted perfectly; n/a without "
           "groups.", KIEVAL_CITATION, _group("f1"), headline=True),
    Metric("kieval.aligned", "KIEval_Aligned", "kieval", True,
           "TP / (TP + Subs + Add + Del): correct entities over correct entities plus the "
           "corrections a person must make.",
           "Accuracy a reviewer experiences: 0.9 means one fix for every nine right fields.",
           KIEVAL_CITATION, lambda m: m.aligned, headline=True),
    Metric("kieval.corrections.total", "Corrections", "kieval", False,
           "Substitutions + additions + deletions a person needs to turn the prediction into "
           "the ground truth.", "Manual work; compare with FP + FN, which counts a wrong "
           "value twice.", KIEVAL_CITATION, lambda m: m.corrections.total),
    Metric("kieval.corrections.substitution", "Substitutions", "kieval", False,
           "Wrong values in a matched cell: min(FP, FN) per group pair and entity type.",
           "Values to retype.", KIEVAL_CITATION, lambda m: m.corrections.substitution),
    Metric("kieval.corrections.addition", "Additions", "kieval", False,
           "Missing values that must be added (unmatched FN).", "Values to add; review of "
           "predictions never fixes these.", KIEVAL_CITATION, lambda m: m.corrections.addition),
    Metric("kieval.corrections.deletion", "Deletions", "kieval", False,
           "Spurious values that must be deleted (unmatched FP).", "Values to delete.",
           KIEVAL_CITATION, lambda m: m.corrections.deletion),
    Metric("kieval.fp_plus_fn", "FP + FN", "kieval", False,
           "Conventional error count, for comparison with corrections (the paper's Table 3).",
           "Overstates work: a substitution is one FP and one FN.", KIEVAL_CITATION,
           lambda m: m.entity.fp + m.entity.fn),
    Metric("kieval.group_aligned", "Group-level aligned", "kieval", True,
           "Group TP / (group TP + wrong matched pairs + unmatched GT + unmatched predicted "
           "groups).", "Share of line items needing no fix at all.", KIEVAL_CITATION,
           lambda m: m.group_aligned),
    Metric("entity_f1.f1", "Flat entity F1", "kieval", True,
           "Micro F1 of (type, value) multisets per document, groups ignored: the conventional "
           "baseline.", "Ignores which line a value is on; the gap to KIEval entity F1 shows "
           "grouping errors.", "Conventional KIE practice (e.g. CORD, SROIE)",
           lambda m: m.entity_f1.f1, headline=True),
    Metric("automation.recommended.auto_rate", "Automation at target", "kieval", True,
           "Share of predictions above the recommended confidence threshold (automated) when "
           "the accuracy after review must reach the target.",
           "How much of the flow runs without review at the target accuracy; n/a if the "
           "target cannot be reached.", KIEVAL_CITATION + ", Appendix C",
           lambda m: m.recommend().auto_rate),
)


def _peer(family: str, key: str) -> Callable[[ModelResult], Any]:
    return lambda m: m.peer[family].figures.get(key) if family in m.peer else None


ANLS_CITATION = "Peer et al., ANLS*, arXiv 2402.03848; anls-star 1.0.1"
DONUT_CITATION = "Kim et al., Donut, ECCV 2022; donut-python 1.0.9 JSONParseEvaluator"
OI_CITATION = "Villanova-Aparisi, Tarride et al., 2024; ie-eval 0.2.0"
LISTS_CITATION = "List-extraction practice (TP/FP/FN, order-aware F1, row alignment)"
SCORE_CITATION = "SCORE, Unstructured, arXiv 2509.19345"

PEER_METRICS: tuple[Metric, ...] = (
    Metric("anls_star", "ANLS*", "anls_star", True,
           "Mean over documents of ANLS* on the nested structure: per leaf 1 - normalised "
           "Levenshtein distance (0 below 0.5 similarity), lists by Hungarian matching.",
           "Tolerant of small typos; counts wrong keys and missing list items.",
           ANLS_CITATION, _peer("anls_star", "anls_star"), headline=True),
    Metric("nted", "nTED accuracy", "nted", True,
           "Mean over documents of max(0, 1 - TED(pred, gt) / TED(empty, gt)) on Donut's "
           "ordered trees with value-level edit costs.",
           "Donut's accuracy: tolerant of typos, sensitive to structure and list order.",
           DONUT_CITATION, _peer("nted", "nted"), headline=True),
    Metric("donut_field_f1.f1", "Donut field F1", "nted", True,
           "Donut's cal_f1: micro F1 of (key path, value) fields, lists flattened.",
           "Equals flat entity F1 on clean values.", DONUT_CITATION,
           _peer("nted", "donut_field_f1.f1")),
    Metric("oi.oiecer", "OIECER", "oi", False,
           "Sum over optimally assigned entity pairs of min(1, CER) (1 for a category "
           "mismatch or a missing/extra entity) over GT entities; not capped at 1.",
           "Character-level cost of errors, reading order ignored; 0 is perfect.",
           OI_CITATION, _peer("oi", "oi.oiecer")),
    Metric("oi.oiewer", "OIEWER", "oi", False,
           "As OIECER with word error rate per pair.", "Word-level cost of errors; 0 is perfect.",
           OI_CITATION, _peer("oi", "oi.oiewer")),
    Metric("oi.oinerval.f1", "OINerval F1", "oi", True,
           "F1 of entities matched one to one with equal category and CER at most the "
           "threshold (default 0.30).", "Entity F1 that forgives small OCR errors.",
           OI_CITATION, _peer("oi", "oi.oinerval.f1")),
    Metric("bag.words.f1", "Bag-of-tagged-words F1", "bag", True,
           "F1 of the multisets of (category, word) pairs.", "Word-level recall and precision, "
           "order ignored.", OI_CITATION, _peer("bag", "bag.words.f1")),
    Metric("bag.words.wer", "Bag-of-tagged-words WER", "bag", False,
           "Sum of max(FP, FN) over (category, word) bags / GT words.", "0 is perfect.",
           OI_CITATION, _peer("bag", "bag.words.wer")),
    Metric("bag.entities.f1", "Bag-of-entities F1", "bag", True,
           "F1 of the multisets of (category, text) entities.", "Exact entity F1 without groups.",
           OI_CITATION, _peer("bag", "bag.entities.f1")),
    Metric("bag.entities.er", "Bag-of-entities ER", "bag", False,
           "Sum of max(FP, FN) over entity bags / GT entities.", "0 is perfect.",
           OI_CITATION, _peer("bag", "bag.entities.er")),
    Metric("lists.items.f1", "List items F1", "lists", True,
           "Per group type, each entity type's values over the groups as one list: multiset F1.",
           "Values found, whatever their row.", LISTS_CITATION, _peer("lists", "lists.items.f1")),
    Metric("lists.positional.f1", "List positional F1", "lists", True,
           "A value counts only at the same position (group index) in its list.",
           "Punishes order errors and shifted rows.", LISTS_CITATION,
           _peer("lists", "lists.positional.f1")),
    Metric("lists.rows.strict", "Row alignment (strict)", "lists", True,
           "Share of GT rows (groups) reproduced whole by a one-to-one pairing.",
           "Like group recall.", LISTS_CITATION, _peer("lists", "lists.rows.strict")),
    Metric("lists.rows.partial", "Row alignment (partial)", "lists", True,
           "Share of GT cells reproduced by the best one-to-one row pairing.",
           "Credit for partly right rows.", LISTS_CITATION, _peer("lists", "lists.rows.partial")),
    Metric("tokens.found", "Tokens found", "tokens", True,
           "Share of GT value tokens present in the prediction (multiset, order-free).",
           "Omissions: 1 - tokens found.", SCORE_CITATION, _peer("tokens", "tokens.found")),
    Metric("tokens.added", "Tokens added", "tokens", False,
           "Share of predicted tokens absent from the GT.", "Hallucinations: 0 is best.",
           SCORE_CITATION, _peer("tokens", "tokens.added")),
)
METRICS = METRICS + PEER_METRICS

#: Families selectable with ``--metrics``.
FAMILIES: dict[str, str] = {
    "kieval": "KIEval, flat entity F1 and the automation curve",
    "anls_star": "ANLS* on the nested structure",
    "nted": "Donut's nTED accuracy and field F1",
    "oi": "reading-order-independent OIECER, OIEWER, OINerval",
    "bag": "bag-of-tagged-words and bag-of-entities",
    "lists": "list metrics over groups (items, positional, row alignment)",
    "tokens": "SCORE tokens found / tokens added",
}


def metrics_of(families: Sequence[str]) -> tuple[Metric, ...]:
    return tuple(m for m in METRICS if m.family in families)


def resolve_families(names: Sequence[str] | str) -> tuple[str, ...]:
    """Validate ``--metrics`` names (``all`` selects every family).

    >>> resolve_families("kieval")
    ('kieval',)
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if "all" in names:
        return tuple(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        msg = f"unknown metric family {', '.join(unknown)}; choose from {', '.join(FAMILIES)}, all"
        raise ValueError(msg)
    chosen = tuple(dict.fromkeys(names))
    return chosen if "kieval" in chosen else ("kieval", *chosen)


def compute_peer(families: Sequence[str], gt: Dataset, pred: Dataset,
                 options: PeerOptions) -> dict[str, PeerFigures]:
    """Peer-metric results of the selected families, keyed by family."""
    return {f: FAMILY_FUNCTIONS[f](gt, pred, options) for f in families if f in FAMILY_FUNCTIONS}
