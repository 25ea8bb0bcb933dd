"""The metric registry: one place that lists every metric the tool reports.

The CLI's ``--metrics``, the JSON report, the summary table and the dashboard's metric
tables and guide all read :data:`METRICS`. A metric belongs to a **family**; families are
what ``--metrics`` selects (``kieval`` = KIEval, flat entity F1 and the automation curve).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..choices import FAMILIES as FAMILIES  # the families selectable with --metrics
from ..count.causes import CAUSES_OF_KIND
from ..count.peer_families import FAMILY_FUNCTIONS, PeerFigures, PeerOptions
from ..exceptions import KievalOptionError

if TYPE_CHECKING:
    from ..read.dataset import Dataset
    from .results import ModelResult

KIEVAL_CITATION = "Khang et al., KIEval, arXiv 2503.05488 (Upstage AI, 2025)"


@dataclass(frozen=True)
class Metric:
    """One reported figure.

    ``key`` is its dotted path in the JSON report under ``models.<name>``; ``get`` reads it
    from a :class:`~kieval_core.result.results.ModelResult` (None when undefined). ``column`` names
    where the metric sits in a table of :func:`kieval_core.result.tally.figures` (KIEval family)
    or in a model's per-document table (peer means over documents): resampled or sliced
    counts give the metric through the same formulas. ``count`` marks a number of things
    (corrections, their causes, FP + FN) rather than a fraction: tables show it as a whole
    number and differences of it in the same unit, never as a percentage.
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
    column: str | None = None
    count: bool = False

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"

    @property
    def operator(self) -> str:
        """The comparison a CI gate on this metric uses (``>=`` or ``<=``)."""
        return ">=" if self.higher_is_better else "<="

    def computed(self, model: ModelResult) -> bool:
        """Whether the model's results hold this metric (a peer family may not have run,
        or produced the other structure variant)."""
        if self.family == "kieval":
            return True
        figures = model.peer.get(self.family)
        return figures is not None and self.key in figures.figures


def _corpus(column: str) -> Callable[[ModelResult], Any]:
    return lambda m: m.corpus_value(column)


def _kieval(key: str, label: str, column: str, higher: bool, definition: str, how: str,
            headline: bool = False, citation: str = KIEVAL_CITATION, count: bool = False) -> Metric:
    return Metric(key, label, "kieval", higher, definition, how, citation, _corpus(column), headline, column,
                  count)


CAUSE_LABELS = {"substitution": "Subs", "deletion": "Dels", "addition": "Adds"}
#: (kind, cause) -> (definition, how to read), SPEC 2c.
CAUSE_DEFINITIONS = {
    ("substitution", "format"): (
        "Substitutions whose values are equal under a comparator: alnum (case, spaces, "
        "punctuation), number, or the same date read in the field's date order (declared, else "
        "the one the GT uses).",
        "Only the format differs: declare a comparator (--compare) or fix the output format."),
    ("substitution", "date_order"): (
        "Substitutions whose values are the same date only when one is read in another order "
        "(dmy, mdy, ymd) than the field's.",
        "Day and month (or year) read the wrong way round: a different day, a real error."),
    ("substitution", "near_miss"): (
        "Other substitutions whose normalised Levenshtein similarity is at least the near-miss "
        "threshold (default 0.8).", "Typos and OCR slips: a character or two."),
    ("substitution", "other_value"): (
        "The remaining substitutions.", "A different value altogether."),
    ("deletion", "misplaced"): (
        "Deletions of a value the GT document holds under another entity type or in another group.",
        "Right value, wrong field or wrong line."),
    ("deletion", "hallucinated"): (
        "Deletions of a value the GT document does not hold anywhere else.", "Invented or duplicated."),
    ("addition", "misplaced"): (
        "Additions of a value the prediction holds under another entity type or in another group.",
        "Found, but put in the wrong field or line."),
    ("addition", "missed"): (
        "Additions of a value the prediction does not hold anywhere.", "Not extracted at all."),
}

def _cause_metrics(kind: str) -> tuple[Metric, ...]:
    return tuple(_kieval(f"kieval.causes.{kind}.{cause}", f"{CAUSE_LABELS[kind]}: {cause.replace('_', ' ')}",
                         f"{kind}_{cause}", False, *CAUSE_DEFINITIONS[kind, cause], count=True)
                 for cause in CAUSES_OF_KIND[kind])


METRICS: tuple[Metric, ...] = (
    _kieval("kieval.entity.f1", "KIEval entity F1", "f1", True,
            "Micro F1 of entities after one-to-one group matching: a value counts only in the "
            "group it belongs to.",
            "Share of fields right in the right line item; below flat F1 when values land in "
            "the wrong line.", headline=True),
    _kieval("kieval.entity.precision", "KIEval entity precision", "precision", True,
            "TP / (TP + FP) after group matching.", "Of the predicted fields, how many are right."),
    _kieval("kieval.entity.recall", "KIEval entity recall", "recall", True,
            "TP / (TP + FN) after group matching.", "Of the true fields, how many were found."),
    _kieval("kieval.group.f1", "KIEval group F1", "group_f1", True,
            "F1 over groups: a matched group pair is a TP only if every entity in it is right.",
            "Share of line items (menu lines, transactions) extracted perfectly; n/a without "
            "groups.", headline=True),
    _kieval("kieval.aligned", "KIEval_Aligned", "aligned", True,
            "TP / (TP + Subs + Add + Del): correct entities over correct entities plus the "
            "corrections a person must make.",
            "Accuracy a reviewer experiences: 0.9 means one fix for every nine right fields.",
            headline=True),
    _kieval("kieval.aligned_if_format_right", "KIEval_Aligned if formats were right",
            "aligned_if_format_right", True,
            "(TP + format substitutions) / (TP + Subs + Add + Del): KIEval_Aligned if every substitution "
            " that differs only in format were right.",
            "About what declaring comparators (--compare date=date) would bring; equal to "
            "KIEval_Aligned when no error is a format error."),
    _kieval("kieval.corrections.total", "Corrections", "corrections", False,
            "Substitutions + additions + deletions a person needs to turn the prediction into "
            "the ground truth.", "Manual work; compare with FP + FN, which counts a wrong "
            "value twice.", count=True),
    _kieval("kieval.corrections.substitution", "Substitutions", "substitution", False,
            "Wrong values in a matched cell: min(FP, FN) per group pair and entity type.",
            "Values to retype.", count=True),
    *_cause_metrics("substitution"),
    _kieval("kieval.corrections.addition", "Additions", "addition", False,
            "Missing values that must be added (unmatched FN).", "Values to add; review of "
            "predictions never fixes these.", count=True),
    *_cause_metrics("addition"),
    _kieval("kieval.corrections.deletion", "Deletions", "deletion", False,
            "Spurious values that must be deleted (unmatched FP).", "Values to delete.", count=True),
    *_cause_metrics("deletion"),
    _kieval("kieval.fp_plus_fn", "FP + FN", "fp_plus_fn", False,
            "Conventional error count, for comparison with corrections (the paper's Table 3).",
            "Overstates work: a substitution is one FP and one FN.", count=True),
    _kieval("kieval.group_aligned", "Group-level aligned", "group_aligned", True,
            "Group TP / (group TP + wrong matched pairs + unmatched GT + unmatched predicted "
            "groups).", "Share of line items needing no fix at all."),
    _kieval("entity_f1.f1", "Flat entity F1", "flat_f1", True,
            "Micro F1 of (type, value) multisets per document, groups ignored: the conventional "
            "baseline.", "Ignores which line a value is on; the gap to KIEval entity F1 shows "
            "grouping errors.", headline=True, citation="Conventional KIE practice (e.g. CORD, SROIE)"),
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
           ANLS_CITATION, _peer("anls_star", "anls_star"), headline=True, column="anls_star"),
    Metric("anls_star_renested", "ANLS* (re-nested)", "anls_star", True,
           "ANLS* on both sides' entities re-nested the same way ({group_type: [{entity: value}]}), "
           "not on the uploaded structures; reported when chosen or when a side is not nested JSON.",
           "Ignores differences of JSON shape (one-item lists written as objects); not comparable "
           "with published ANLS*.", ANLS_CITATION, _peer("anls_star", "anls_star_renested"),
           column="anls_star_renested"),
    Metric("nted", "nTED accuracy", "nted", True,
           "Mean over documents of max(0, 1 - TED(pred, gt) / TED(empty, gt)) on Donut's "
           "ordered trees with value-level edit costs.",
           "Donut's accuracy: tolerant of typos, sensitive to structure and list order.",
           DONUT_CITATION, _peer("nted", "nted"), headline=True, column="nted"),
    Metric("donut_field_f1.f1", "Donut field F1", "nted", True,
           "Donut's cal_f1: micro F1 of (key path, value) fields, lists flattened.",
           "Equals flat entity F1 on clean values.", DONUT_CITATION,
           _peer("nted", "donut_field_f1.f1")),
    Metric("nted_renested", "nTED accuracy (re-nested)", "nted", True,
           "nTED on both sides' entities re-nested the same way, not on the uploaded structures.",
           "Not comparable with published nTED.", DONUT_CITATION, _peer("nted", "nted_renested"),
           column="nted_renested"),
    Metric("donut_field_f1_renested.f1", "Donut field F1 (re-nested)", "nted", True,
           "Donut's field F1 on the re-nested structures.", "Equals flat entity F1 on clean values.",
           DONUT_CITATION, _peer("nted", "donut_field_f1_renested.f1")),
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
        raise KievalOptionError(msg)
    chosen = tuple(dict.fromkeys(names))
    return chosen if "kieval" in chosen else ("kieval", *chosen)


#: Called as ``step(done, total)`` before each peer family and once at the end.
PeerStep = Callable[[int, int], None]


def compute_peer(families: Sequence[str], gt: Dataset, pred: Dataset, options: PeerOptions,
                 step: PeerStep | None = None) -> dict[str, PeerFigures]:
    """Peer-metric results of the selected families, keyed by family (``pred`` holds the
    predictions of GT documents only)."""
    chosen = [f for f in families if f in FAMILY_FUNCTIONS]
    figures = {}
    for i, family in enumerate(chosen):
        if step is not None:
            step(i, len(chosen))
        figures[family] = FAMILY_FUNCTIONS[family](gt, pred, options)
    if step is not None:
        step(len(chosen), len(chosen))
    return figures
