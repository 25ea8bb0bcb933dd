"""``evaluate``: the one entry point of the Python API (SPEC 1, 7).

>>> from kieval_core import evaluate  # doctest: +SKIP
>>> result = evaluate("gt.jsonl", ["model_a.jsonl", "model_b.jsonl"])  # doctest: +SKIP
>>> result.models["model_a"].aligned  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from pathlib import Path

import pandas as pd

from .choices import ENGINES as ENGINES  # this process, or a Dask cluster (kieval_core.scale.distributed)
from .count.normalize import Normalizer
from .count.peer_families import PeerOptions, needs_structures
from .exceptions import KievalOptionError, UnscoredKeyWarning
from .keys import KeyCounts, one_sided_keys, set_aside
from .read.dataset import Dataset
from .read.formats import LoadOptions, check_scoring_cost
from .read.load import read_bytes
from .read.memory import load_object
from .result.consensus import with_confidence_sources
from .result.registry import resolve_families
from .result.results import EvaluationResult
from .result.scoring import DatasetLike, Progress, named_inputs, score_model, score_models, unique_name
from .review.automation import DEFAULT_MISSING
from .review.label_fixes import apply_fixes, read_fixes
from .rules import GT_ORDER_DATE, FieldRules


def _as_dataset(item: DatasetLike, options: LoadOptions, name: str | None = None,
                keep_structures: bool = False) -> Callable[[], Dataset]:
    """The input's bytes read now (a path), and the function that makes it a dataset."""
    if isinstance(item, Dataset):  # built in Python: the scoring limits hold for it too
        return lambda: check_scoring_cost(item, options.limits)
    if isinstance(item, (str, PathLike)):
        return read_bytes(item, options, name=name, keep_structures=keep_structures)
    return lambda: load_object(item, options, name=name, keep_structures=keep_structures)


def _datasets(items: Sequence[tuple[str | None, DatasetLike]], options: LoadOptions,
              keep_structures: bool) -> Iterator[Dataset]:
    """The datasets of ``items`` (name, input), in order. When the next input is a
    directory, an input's parse runs in a thread while this one reads that directory's
    files (the per-file reads hold the interpreter, the Arrow and numpy parse mostly
    releases it: the second core parses while the first reads); otherwise in turn, so that
    a signal never waits for a parse it did not overlap. An error is raised where reading
    the inputs one after the other would have raised it first."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        parsing = None
        for k, (name, item) in enumerate(items):
            try:
                parse = _as_dataset(item, options, name=name, keep_structures=keep_structures)
            except BaseException:
                if parsing is not None:
                    parsing.result()  # the input before, read whole first, raises first
                raise
            if parsing is not None:
                yield parsing.result()
            following = items[k + 1][1] if k + 1 < len(items) else None
            if isinstance(following, (str, PathLike)) and os.path.isdir(following):
                parsing = pool.submit(parse)
            else:
                parsing = None
                yield parse()


def evaluate(
    gt: DatasetLike,
    predictions: DatasetLike | Sequence[DatasetLike] | Mapping[str, DatasetLike],
    *,
    normalizer: Normalizer | None = None,
    metrics: Sequence[str] | str = ("kieval",),
    load_options: LoadOptions = LoadOptions(),
    peer_options: PeerOptions = PeerOptions(),
    progress: Progress | None = None,
    engine: str = "local",
    scheduler: str | None = None,
    missing_confidence: str = "review",
    confidence_from: str = "model",
    rules: FieldRules | Mapping[str, str] | str | Path | Sequence | None = None,
    score_keys: Sequence[str] = (),
    gt_fixes: str | Path | pd.DataFrame | None = None,
    suspect_agreement: int | None = None,
    **dask_options,
) -> EvaluationResult:
    """Evaluate one or more prediction sets against a ground truth.

    Parameters
    ----------
    gt, predictions
        Each input is a path (file or directory), a :class:`~kieval_core.Dataset`, a
        ``{doc_id: document}`` dict, a list of records (dicts with a ``doc_id``: nested JSON
        records or long-table rows) or a pandas DataFrame (a long or wide table), read as
        the file with the same content. Predictions: one input, a list of inputs, or a
        ``{name: input}`` mapping (a dict of predictions is always read as names to inputs).
    normalizer
        Value comparison (default: NFC + strip + collapse spaces).
    metrics
        Metric families to compute (see :mod:`kieval_core.result.registry`).
    load_options, peer_options
        How to read files; options of the peer metrics (CER threshold, structure).
    progress
        Called as ``progress(done, total, label)`` after reading each file and scoring
        each model.
    engine
        ``local`` (this process) or ``dask``: the inputs are read and scored partition by
        partition on a Dask cluster, with the same figures to the last bit (see
        :func:`kieval_core.scale.distributed.evaluate_dask`, which also takes ``dask_options``:
        ``client``, ``partitions``, ``run_dir``, ``collect_error_list``).
    scheduler
        With ``engine="dask"``: the address of a running Dask scheduler; None starts a
        ``LocalCluster`` on this machine's cores.
    rules
        Field rules (SPEC 2d, :mod:`kieval_core.rules`): a :class:`~kieval_core.rules.FieldRules`,
        ``{type or glob: comparator or "ignore"}``, a rules file (JSON Schema), ``"suggested"``
        (apply the rules inferred from the files), or a list of these. The normaliser's
        ``comparators`` count as rules the user gives. ``result.rule_figures`` holds the
        figures strictly, under these rules and under the suggested ones.
    missing_confidence, confidence_from
        What review does with predictions without confidence (``review``, the default:
        never automated, at every threshold; ``automate``: they count as 1.0), and where
        confidences come from (``model``, or
        ``consensus`` of the other models for models without any); see
        :func:`kieval_core.result.consensus.with_confidence_sources`.
    score_keys
        Top-level ground-truth keys to score even though no prediction file has them. Such
        a key (``split``) is otherwise set aside as metadata, never scored, and named in an
        :class:`~kieval_core.exceptions.UnscoredKeyWarning` (SPEC 6.1).
    gt_fixes
        A label-fix file (SPEC 2f; a path, or a frame of
        :func:`kieval_core.review.label_fixes.parse_fixes`): the models are scored against the
        fixed ground truth, and ``result.before_fixes`` holds the evaluation against the
        ground truth as given.
    suspect_agreement
        How many models must agree for ``result.suspects`` (default: more than half, at least 2).
    """
    normalizer = normalizer or Normalizer()
    field_rules = FieldRules.of(rules).over(FieldRules.from_mapping(
        dict(normalizer.comparators), declared_by="Normalizer(comparators=...)"))
    fixes = read_fixes(gt_fixes) if isinstance(gt_fixes, (str, Path)) else gt_fixes
    if (fixes is not None or suspect_agreement is not None) and engine != "local":
        raise KievalOptionError("label fixes and --suspect-agreement: engine='local' only")
    result = _evaluate(gt, predictions, normalizer=dataclasses.replace(normalizer, comparators=()),
                       rules=field_rules, metrics=metrics, load_options=load_options,
                       peer_options=peer_options, progress=progress, engine=engine, scheduler=scheduler,
                       score_keys=tuple(score_keys), fixes=fixes, fixes_source=str(gt_fixes), **dask_options)
    result = dataclasses.replace(result, suspect_agreement=suspect_agreement)
    if (missing_confidence, confidence_from) == ("review", "model"):
        return result
    result = with_confidence_sources(result, missing_confidence, confidence_from)
    if result.before_fixes is None:
        return result
    before = with_confidence_sources(result.before_fixes, missing_confidence, confidence_from)
    return dataclasses.replace(result, before_fixes=before)


def _evaluate(gt, predictions, *, normalizer, rules, metrics, load_options, peer_options, progress, engine,
              scheduler, score_keys=(), fixes=None, fixes_source="", **dask_options) -> EvaluationResult:
    if engine not in ENGINES:
        msg = f"unknown engine {engine!r}; choose {' or '.join(ENGINES)}"
        raise KievalOptionError(msg)
    if engine == "dask":
        from .scale.distributed import evaluate_dask

        if rules.apply_suggested or any(r.ignore or r.comparator == GT_ORDER_DATE for r in rules.rules):
            msg = ("ignored fields, dates in the ground truth's order and suggested rules: "
                   "only with engine='local'")
            raise KievalOptionError(msg)
        normalizer = dataclasses.replace(normalizer, comparators=rules.comparator_pairs())
        options = {"normalizer": normalizer, "metrics": metrics, "load_options": load_options,
                   "progress": progress, "scheduler": scheduler, "rules": rules}
        return evaluate_dask(gt, predictions, **options, **dask_options)
    if scheduler is not None or dask_options:
        named = ", ".join(["scheduler"] * (scheduler is not None) + sorted(dask_options))
        msg = f"{named}: only with engine='dask'"
        raise KievalOptionError(msg)
    families = resolve_families(metrics)
    named = named_inputs(predictions)
    steps = 1 + 2 * len(named)
    report = progress or (lambda done, total, label: None)
    keep = needs_structures(families, peer_options)
    datasets = _datasets([("ground truth", gt), *named], load_options, keep)
    gt_set = next(datasets)
    report(1, steps, "read ground truth")
    preds: dict[str, Dataset] = {}
    for i, ((name, _), pred) in enumerate(zip(named, datasets, strict=True)):
        name = name or pred.name
        unique_name(name, preds)
        preds[name] = pred
        report(2 + 2 * i, steps, f"read {name}")
    keys = {name: KeyCounts.of(pred) for name, pred in preds.items()}
    # the keys as read: the keys set aside are named in the warnings
    one_sided = one_sided_keys(KeyCounts.of(gt_set), keys, score_keys, rules)
    for key in one_sided:
        warnings.warn(key.python_message, UnscoredKeyWarning, stacklevel=3)
    gt_set = set_aside(gt_set, [k.key for k in one_sided if k.set_aside])
    applied = rules.applied(gt_set, preds, normalizer)  # dates in the order of the GT as given, fixed or not
    before = score_models(applied, keys, families, peer_options, report, one_sided=one_sided)
    if fixes is None:
        return before
    fixed_gt = apply_fixes(gt_set, fixes, normalizer, fixes_source)
    fixed = score_models(applied.rules.applied(fixed_gt, preds, normalizer), keys, families, peer_options,
                         report, one_sided=one_sided)
    return dataclasses.replace(fixed, before_fixes=before, label_fixes=fixes)


def with_label_fixes(result: EvaluationResult, fixes: pd.DataFrame, source: str = "label fixes"
                     ) -> EvaluationResult:
    """An evaluation scored again against its ground truth with label fixes applied (SPEC
    2f), ``result`` kept as :attr:`~EvaluationResult.before_fixes`: what the app shows
    beside the original figures. The predictions come from the engine's tables (the
    predictions of GT documents, as scored), so a saved run can be fixed too. The fixed
    figures are the KIEval family's (peer metrics are left out of them), under the review
    policy of the figures as given (missing confidences, consensus; SPEC 4c).

    Raises :class:`~kieval_core.exceptions.KievalInputError` naming a fix that does not
    match the ground truth.
    """
    original = result.before_fixes or result
    fixed = apply_fixes(original.gt, fixes, original.normalizer, source)
    models = {}
    for name, model in original.models.items():
        pred = model.detail().pred_entities
        columns = pred[["doc_id", "group_type", "group", "entity_type", "value", "confidence"]]
        entities = columns.astype({"doc_id": object, "group_type": object, "entity_type": object})
        missing = set(model.missing_documents)
        doc_ids = tuple(d for d in original.gt.doc_ids if d not in missing)
        dataset = Dataset(name, model.source, entities.reset_index(drop=True), doc_ids)
        scored = score_model(fixed, dataset, name=name, normalizer=original.normalizer)
        models[name] = dataclasses.replace(scored, unknown_documents=model.unknown_documents,
                                           format=model.format, notes=model.notes)
    out = dataclasses.replace(original, gt=fixed, models=models, before_fixes=original, label_fixes=fixes)
    policy = next(iter(original.models.values())).missing_confidence if original.models else DEFAULT_MISSING
    consensus = any(m.consensus_of for m in original.models.values())
    if (policy, consensus) != (DEFAULT_MISSING, False):  # the review policy of the figures as given
        out = with_confidence_sources(out, policy, "consensus" if consensus else "model")
    return out
