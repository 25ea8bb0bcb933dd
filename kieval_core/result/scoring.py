"""The orchestration of an evaluation: :func:`score_model` scores one prediction set against
the ground truth (restricted to the GT documents, counted, tallied, its peer families and
warnings), :func:`finish` makes the evaluation of the scored models (with the warnings about
keys present on one side only). :func:`kieval_core.evaluate.evaluate`,
the dashboard, the partitions of a distributed run and the Accumulator all go through these
two functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..count.alternatives import resolve_alternatives
from ..count.engine import Counted, count
from ..count.normalize import Normalizer
from ..count.peer_families import PeerFigures, PeerOptions
from ..exceptions import KievalOptionError, NoCommonDocuments
from ..keys import KeyCounts, one_sided_keys
from ..read.dataset import Dataset, DatasetSummary
from ..read.doc_ids import id_mismatch
from ..read.memory import TAKES, is_records
from ..review.automation import DEFAULT_MISSING, ReviewModel
from ..rules import Applied, FieldRules
from .consensus import missing_confidence_warning
from .registry import PeerStep, compute_peer
from .results import EvaluationResult, ModelResult, OneSidedKey
from .suggest import suggested_rules
from .tally import Tally

DatasetLike = Dataset | str | Path
Progress = Callable[[int, int, str], None]


def named_inputs(predictions) -> list[tuple[str | None, DatasetLike]]:
    """Prediction sets as ``(name or None, input)``: one input (a path, a dataset, a
    DataFrame, a list of records), a list of inputs, or a ``{name: input}`` mapping."""
    if isinstance(predictions, (Dataset, str, Path, pd.DataFrame)) or is_records(predictions):
        return [(None, predictions)]
    if isinstance(predictions, Mapping):
        return list(predictions.items())
    if not isinstance(predictions, (list, tuple)):
        msg = f"cannot read a {type(predictions).__name__} as predictions; evaluate() takes {TAKES}"
        raise TypeError(msg)
    return [(None, p) for p in predictions]


def finish(gt: Dataset | DatasetSummary, models: Mapping[str, ModelResult], keys: Mapping[str, KeyCounts],
           normalizer: Normalizer, families: tuple[str, ...], *,
           one_sided: Sequence[OneSidedKey] | None = None, rules: FieldRules | None = None,
           ignored: Mapping[str, int] | None = None) -> EvaluationResult:
    """The evaluation of the scored models: the one last step of :func:`~kieval_core.evaluate`,
    a distributed run's merge, the app and the :class:`~kieval_core.Accumulator`.

    ``one_sided`` are the keys present on one side only, named in the warnings (by
    :func:`~kieval_core.keys.one_sided_keys` over the inputs as read, before any key was set
    aside); None: from ``gt`` (a dataset) and ``keys`` (each model's
    :class:`~kieval_core.keys.KeyCounts`), every key scored. ``rules`` are the field rules
    they were scored under (``ignored``: the values those left out, per entity type).
    """
    if rules is None:  # an empty FieldRules is kept: it may carry a rules file's warnings
        rules = FieldRules()
    if one_sided is None:
        one_sided = one_sided_keys(KeyCounts.of(gt), keys, None, rules)
    one_sided = tuple(one_sided)
    warnings = tuple(k.message for k in one_sided)
    return EvaluationResult(gt, dict(models), normalizer, families, warnings, rules,
                            dict(ignored or {}), one_sided=one_sided)


def score_models(applied: Applied, keys: Mapping[str, KeyCounts], families: tuple[str, ...],
                 peer_options: PeerOptions = PeerOptions(), progress: Progress | None = None, *,
                 one_sided: Sequence[OneSidedKey] | None = None) -> EvaluationResult:
    """Every prediction set of ``applied`` (field rules applied to the inputs) scored by
    :func:`score_model`, then :func:`finish` (``one_sided``: see there): the
    evaluation of :func:`~kieval_core.evaluate`. Rules that apply the suggested ones are
    counted first under the others (KIEval only), for the suggestions. ``progress`` is
    called after each model as step ``3 + 2 * i`` of ``1 + 2 * models`` (reading took the
    others)."""
    if not applied.rules.apply_suggested:
        return _score_models(applied, keys, families, peer_options, progress, one_sided)
    first = _score_models(applied, keys, ("kieval",), peer_options, None, one_sided)
    suggested = applied.under(suggested_rules(first).over(applied.rules))
    return _score_models(suggested, keys, families, peer_options, progress, one_sided)


def _score_models(applied: Applied, keys: Mapping[str, KeyCounts], families: tuple[str, ...],
                  peer_options: PeerOptions, progress: Progress | None,
                  one_sided: Sequence[OneSidedKey] | None) -> EvaluationResult:
    models: dict[str, ModelResult] = {}
    steps = 1 + 2 * len(applied.predictions)
    for i, (name, pred) in enumerate(applied.predictions.items()):
        models[name] = score_model(applied.gt, pred, name=name, normalizer=applied.normalizer,
                                   families=families, peer_options=peer_options)
        if progress is not None:
            progress(3 + 2 * i, steps, f"scored {name}")
    return finish(applied.gt, models, keys, applied.normalizer, families, rules=applied.rules,
                  ignored=applied.ignored, one_sided=one_sided)


def unique_name(name: str, taken: Mapping[str, object]) -> None:
    """Refuse a second prediction set of the same name."""
    if name in taken:
        msg = f"two prediction sets are named {name!r}; name them explicitly (NAME=PATH)"
        raise KievalOptionError(msg)


def score_model(gt: Dataset, pred: Dataset, *, name: str, normalizer: Normalizer,
                families: tuple[str, ...] = ("kieval",), peer_options: PeerOptions = PeerOptions(),
                partition: bool = False, gt_orders: Mapping[str, int] | None = None) -> ModelResult:
    """One prediction set scored against the ground truth: restricted to the GT documents,
    counted, tallied, its peer families and its warnings. The one per-model step of
    :func:`~kieval_core.evaluate`, the partitions of a distributed run, the app and the
    :class:`~kieval_core.Accumulator`.

    A prediction set that shares no document with the ground truth is refused
    (:class:`~kieval_core.NoCommonDocuments`), except on one ``partition`` of a corpus
    (the whole corpus was checked before it was partitioned), whose causes then read
    ``gt_orders``, the date orders of the whole ground truth (:func:`~kieval_core.count.engine.count`).
    """
    if not partition:
        check_overlap(gt, pred)
    # predicted documents absent from the GT are left out of every figure (and named in the
    # warnings); every figure of a document depends on that document alone, so scoring
    # disjoint sets of documents apart and merging the tallies gives the figures of the whole
    restricted = restrict(gt, pred)
    gt_ids, pred_ids = set(gt.doc_ids), set(pred.doc_ids)
    missing = tuple(sorted(d for d in gt.doc_ids if d not in pred_ids))
    unknown = tuple(sorted(d for d in pred.doc_ids if d not in gt_ids))
    gt = resolve_alternatives(gt, restricted, normalizer)  # each set of alternatives: one value
    counted = count(gt, restricted, normalizer, gt_orders=gt_orders)
    tally = Tally.from_counted(counted, ReviewModel.from_counted(counted))
    return model_result(name, pred, tally, missing, unknown, meta=gt.meta, counted=counted,
                        peer=compute_peer(families, gt, restricted, peer_options))


def model_result(name: str, pred: Dataset | DatasetSummary, tally: Tally, missing: tuple[str, ...],
                 unknown: tuple[str, ...], *, meta: pd.DataFrame | None, counted: Counted | None = None,
                 peer: Mapping[str, PeerFigures] | None = None,
                 partition_error_list: pd.DataFrame | None = None) -> ModelResult:
    """A :class:`ModelResult` from its tally (this process's scoring, or a merge of
    partitions'): how the predictions were read, and the warnings about missing and
    unknown documents and predictions without confidence."""
    return ModelResult(
        name=name, source=pred.source, tally=tally, counted=counted, missing_documents=missing,
        unknown_documents=unknown, warnings=model_warnings(pred.warnings, missing, unknown, tally.review),
        peer={} if peer is None else peer, meta=meta, format=pred.format, notes=pred.notes,
        partition_error_list=partition_error_list,
    )


def restrict(gt: Dataset, pred: Dataset) -> Dataset:
    """The predictions of the GT documents only: a predicted document absent from the
    ground truth is left out of every figure (and named in the warnings)."""
    gt_ids = set(gt.doc_ids)
    entities = pred.entities
    if not gt_ids.issuperset(pred.doc_ids):
        entities = entities[entities["doc_id"].isin(gt_ids)]
    return Dataset(pred.name, pred.source, entities.reset_index(drop=True),
                   tuple(d for d in pred.doc_ids if d in gt_ids), pred.structures, pred.warnings)


def peer_metrics(gt: Dataset, pred: Dataset, families: Sequence[str], peer_options: PeerOptions,
                 step: PeerStep | None = None, normalizer: Normalizer = Normalizer()
                 ) -> dict[str, PeerFigures]:
    """The peer-metric families of one prediction set, restricted to the GT documents, as
    :func:`score_model` computes them (alternatives resolved with ``normalizer``); apart
    from the KIEval counts, so a caller can compute them later (the app does, in the
    background; ``step`` reports each family and may stop the work by raising)."""
    restricted = restrict(gt, pred)
    return compute_peer(families, resolve_alternatives(gt, restricted, normalizer), restricted, peer_options,
                        step)


def model_warnings(loaded: Sequence[str], missing: Sequence[str], unknown: Sequence[str],
                   review: ReviewModel) -> tuple[str, ...]:
    """A model's warnings: the loader's, then missing and unknown documents, then
    predictions without confidence (counted from the review model, one entry per scored
    prediction)."""
    warnings = list(loaded)
    if missing:
        warnings.append(f"{len(missing)} GT document(s) absent from the predictions, scored as "
                        f"fully missed: {preview(missing)}")
    if unknown:
        warnings.append(f"{len(unknown)} predicted document(s) not in the ground truth, left out "
                        f"of the scores: {preview(unknown)}")
    partial = missing_confidence_warning(review, DEFAULT_MISSING)
    return tuple(warnings + ([partial] if partial else []))


def check_overlap(gt: Dataset, pred: Dataset) -> None:
    """Refuse a prediction set that shares no document with the ground truth.

    Such a file is almost always the wrong file (or ids written differently), and
    scoring it would report every document as missed.
    """
    gt_ids = set(gt.doc_ids)
    if pred.doc_ids and not any(d in gt_ids for d in pred.doc_ids):
        raise no_common_documents(gt.source, gt.doc_ids, pred.source, pred.doc_ids)


def no_common_documents(gt_source: str, gt_ids: Sequence[str], pred_source: str,
                        pred_ids: Sequence[str]) -> NoCommonDocuments:
    """The error of a prediction set sharing no document with the ground truth; when the
    ids would match written another way (leading zeros, a file extension, case), it says so."""
    msg = (f"no document in common with the ground truth {gt_source} (predicted ids such "
           f"as {preview(sorted(pred_ids), 3)}; ground-truth ids such as "
           f"{preview(sorted(gt_ids), 3)})")
    hint = id_mismatch(gt_ids, pred_ids)
    return NoCommonDocuments(pred_source, None, msg if hint is None else f"{msg}: {hint}")


def preview(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
