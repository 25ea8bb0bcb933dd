"""Assembling what the pages read: one evaluation of every loaded model (pure).

Each model is evaluated (and cached) on its own, so adding a prediction file does not
re-evaluate the others; :func:`combine` joins the model results into one
:class:`~kieval_core.EvaluationResult`. The target accuracy only moves the recommended
threshold, so :func:`retarget` applies it without evaluating again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kieval_core import EvaluationResult, ModelResult
from kieval_core.model import Dataset

from .sources import AppOptions, Sources

#: Derived tables computed once after evaluation, so cached copies carry them along.
WARM_PROPERTIES = (
    "entity",
    "group",
    "corrections",
    "entity_f1",
    "documents",
    "errors",
    "by_entity_type",
    "by_group_type",
    "review_effects",
    "curve",
    "curves_by_entity_type",
)


def warm(model: ModelResult) -> ModelResult:
    """Compute the lazily derived tables now (they are cached on the object)."""
    for name in WARM_PROPERTIES:
        getattr(model, name)
    return model


def retarget(model: ModelResult, target: float) -> ModelResult:
    """The same result with another target accuracy, keeping every computed table.

    ``functools.cached_property`` keeps its values in the instance ``__dict__``; they do
    not depend on the target, so they are carried over.
    """
    if model.target_accuracy == target:
        return model
    fields = {f.name for f in dataclasses.fields(model)}
    moved = dataclasses.replace(model, target_accuracy=target)
    moved.__dict__.update({k: v for k, v in model.__dict__.items() if k not in fields})
    return moved


def combine(
    gt: Dataset, models: list[ModelResult], options: AppOptions, families: tuple[str, ...]
) -> EvaluationResult:
    """One evaluation holding models that were evaluated (and cached) one by one."""
    retargeted = {model.name: retarget(model, options.target_accuracy) for model in models}
    return EvaluationResult(gt, retargeted, options.normalizer, families, options.target_accuracy)


@dataclass(frozen=True)
class Workspace:
    """What every page reads: the evaluation of the loaded files, and what was loaded.

    ``result`` is None when the ground truth cannot be read with the current options
    (``problems`` says why); ``files`` lists ``(role, file name, size)`` of the files in
    ``result``, ground truth first.
    """

    sources: Sources
    options: AppOptions
    result: EvaluationResult | None
    files: tuple[tuple[str, str, int], ...] = ()
    problems: tuple[str, ...] = ()
    key: str = ""

    @property
    def model_names(self) -> list[str]:
        return list(self.result.models) if self.result is not None else []

    @property
    def has_models(self) -> bool:
        return bool(self.model_names)
