"""The metric registry: one place that lists every metric the tool reports.

The CLI's ``--metrics``, the JSON report, the summary table and the dashboard's metric
tables and guide all read :data:`METRICS`. A metric belongs to a **family**; families are
what ``--metrics`` selects (``kieval`` = KIEval, flat entity F1 and the automation curve).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .evaluate import ModelResult
    from .model import Dataset
    from .normalize import Normalizer

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

#: Families selectable with ``--metrics`` (peer families register themselves here).
FAMILIES: dict[str, str] = {"kieval": "KIEval, flat entity F1 and the automation curve"}
_PEER: dict[str, Callable[[Dataset, Dataset, Normalizer], Mapping[str, Any]]] = {}


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
                 normalizer: Normalizer) -> dict[str, Any]:
    """Peer-metric results of the selected families, keyed by family."""
    return {f: _PEER[f](gt, pred, normalizer) for f in families if f in _PEER}
