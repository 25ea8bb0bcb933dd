"""Evaluation on a Dask cluster (``kieval evaluate --engine dask``): the local engine's
figures, to the last bit, on inputs larger than one machine's memory.

Needs ``dask[distributed]`` (``pip install kieval-workbench[dask]``); the rest of
``kieval_core`` never imports this module unless the Dask engine is chosen.

How a run goes (every step but the last runs on the workers):

1. **read**: every shard of every input is read by its format's reader
   (:func:`~kieval_core.read.shards.read_shard`) and kept on the worker that read it; the
   client gathers only each shard's :class:`~kieval_core.read.shards.ShardInfo` (documents,
   notes, warnings) and checks the inputs as a whole: one format per input, no document
   twice, predictions sharing documents with the ground truth;
2. **partition**: when shard k of every input holds the same documents (aligned shards),
   partition k is shard k of every input. Otherwise each shard is split by a stable hash
   of the doc_id (:func:`~kieval_core.read.shards.partition_of`) and partition k gathers part
   k of every shard: a hash shuffle expressed as Dask tasks, so a document's GT rows and
   predicted rows meet whatever shards they sit in;
3. **score**: a first pass reads each partition's GT date statistics
   (:func:`~kieval_core.scale.partitions.gt_dates`), which the client adds up into
   each field's date order over the whole GT (the causes' order, SPEC 2c); then
   :func:`~kieval_core.scale.partitions.score_partition` per partition (the local
   engine's code on those documents, with those orders); with ``run_dir`` it writes the partition's detail
   and GT entities there, with ``collect_error_list`` it returns its error list;
4. **merge**: the client reduces the partitions' tallies as they arrive
   (:func:`~kieval_core.scale.partitions.merge_partitions`). It holds the merged tally: about
   30 bytes per prediction for the review model, plus the per-document table;
5. **rules** (SPEC 2d): each partition's tables stay on the worker that scored it until
   two more passes have read them (:func:`~kieval_core.scale.partitions.with_rule_counts`):
   the GT values of the fields a suggestion may concern, then the documents that the
   strict and suggested rules compare otherwise, counted again. The client adds up counts.

Only the ``kieval`` metric family runs on Dask (see :data:`UNSUPPORTED_FAMILIES`).
"""

from __future__ import annotations

import logging
import math
import operator
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..count.normalize import Normalizer
from ..exceptions import KievalInputError, KievalOptionError
from ..output.runs import clear_partitions
from ..read.dataset import Dataset
from ..read.formats import LoadOptions
from ..read.shards import (
    ShardInfo,
    ShardRows,
    aligned,
    input_name,
    is_sharded,
    read_shard,
    shard_paths,
    summarize,
)
from ..result.registry import resolve_families
from ..result.results import EvaluationResult
from ..result.scoring import DatasetLike, Progress, named_inputs, no_common_documents, unique_name
from ..rules import FieldRules
from .partitions import (
    GtDates,
    Input,
    Job,
    PartitionResult,
    Scored,
    gt_dates,
    merge_partitions,
    scored_partition,
    with_rule_counts,
)

#: Rows (GT and predicted entities together) per partition when the shards are shuffled.
ROWS_PER_PARTITION = 1_000_000
INSTALL_HINT = "pip install kieval-workbench[dask]"
#: The ground truth's key among the inputs (no prediction set can be named "").
_GT = ""
UNSUPPORTED_FAMILIES = (
    "the Dask engine computes the kieval family only (KIEval, flat entity F1, automation); the peer "
    "families read each document's nested structure and have corpus figures that are not yet "
    "mergeable from partitions: compute {families} with the local engine"
)


def _distributed():
    """The ``distributed`` package, or a clear error naming the extra to install."""
    try:
        import distributed
    except ImportError:
        msg = f"the Dask engine needs dask[distributed]: {INSTALL_HINT}"
        raise KievalOptionError(msg) from None
    return distributed


@contextmanager
def connect(scheduler: str | None = None, client: Any = None) -> Iterator[Any]:
    """A Dask client: ``client`` itself, one connected to ``scheduler`` (an address such
    as ``tcp://10.0.0.5:8786``), or one of a ``LocalCluster`` started for the run on this
    machine's cores (one single-threaded worker process per core)."""
    if client is not None:
        yield client
        return
    distributed = _distributed()
    if scheduler is not None:
        try:
            connected = distributed.Client(scheduler)
        except (OSError, TimeoutError) as exc:
            msg = f"cannot reach the Dask scheduler at {scheduler} ({exc})"
            raise KievalOptionError(msg) from None
        with connected:
            yield connected
        return
    cluster = distributed.LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    with cluster, distributed.Client(cluster) as local:
        yield local


def evaluate_dask(
    gt: DatasetLike,
    predictions: DatasetLike | Sequence[DatasetLike] | Mapping[str, DatasetLike],
    *,
    normalizer: Normalizer | None = None,
    metrics: Sequence[str] | str = ("kieval",),
    load_options: LoadOptions = LoadOptions(),
    progress: Progress | None = None,
    scheduler: str | None = None,
    client: Any = None,
    partitions: int | None = None,
    run_dir: str | Path | None = None,
    collect_error_list: bool = False,
    rules: FieldRules | None = None,
) -> EvaluationResult:
    """Evaluate on a Dask cluster; the result equals :func:`kieval_core.evaluate`'s on the
    same files (byte-identical reports), without ``counted``: the engine's tables stay on
    the workers.

    Parameters
    ----------
    gt, predictions
        Paths: a file, a directory of shards or a glob (long tables or JSONL records, see
        :mod:`kieval_core.read.shards`), on storage that the client and every worker see.
    normalizer, metrics, load_options, progress
        As for :func:`kieval_core.evaluate`; ``metrics`` must be ``kieval``.
    scheduler, client
        Where to run: an existing ``distributed.Client``, a scheduler address, or neither
        (a ``LocalCluster`` on this machine's cores, closed after the run).
    partitions
        Shuffle the documents into this many partitions. Default: aligned shards as they
        are, otherwise one partition per :data:`ROWS_PER_PARTITION` rows (at least one per
        worker thread).
    run_dir
        Where the partitions of a saved run go: every partition writes its detail
        (``models/<i>/detail/part-<k>/``) and GT entities there. Pass a
        :class:`kieval_core.output.runs.RunStage`'s ``path`` and complete it with its ``write``
        and ``commit`` (as ``--save-run`` does), or a directory that
        :func:`kieval_core.output.runs.save_run` then completes.
    collect_error_list
        Keep every error (``ModelResult.error_list``): the partitions' error lists,
        concatenated in the local engine's order on the client.
    rules
        The field rules ``normalizer``'s comparators come from (for the report's
        ``options.rules`` and the suggestions, which leave the fields they set alone).
    """
    families = resolve_families(metrics)
    if families != ("kieval",):
        others = ", ".join(f for f in families if f != "kieval")
        raise KievalOptionError(UNSUPPORTED_FAMILIES.format(families=others))
    _distributed()
    normalizer = normalizer or Normalizer()
    inputs = {_GT: _spec(gt, load_options)}
    for name, item in named_inputs(predictions):
        spec = _spec(item, load_options)
        name = name or input_name(spec)
        unique_name(name, inputs)
        inputs[name] = spec
    report = progress or (lambda done, total, label: None)
    with connect(scheduler, client) as dask_client:
        return _run(dask_client, inputs, normalizer, load_options, report, partitions,
                    None if run_dir is None else str(run_dir), collect_error_list, rules)


def _spec(item: DatasetLike, options: LoadOptions) -> str:
    """The path of an input the Dask engine can read: one file, or shards."""
    if isinstance(item, Dataset):
        msg = "the Dask engine reads files: give paths (files, directories or globs of shards), not datasets"
        raise KievalOptionError(msg)
    if Path(item).is_dir() and not is_sharded(item, options):
        msg = ("a directory of per-document files (JSON, KIEval CSV, IOB2) is read by the local engine only; "
               "the Dask engine reads long tables or JSONL records, one file or a directory/glob of shards")
        raise KievalInputError(str(item), None, msg)
    return str(item)


def _info(rows: ShardRows) -> ShardInfo:
    return rows.info


def _split(rows: ShardRows, n: int) -> tuple[ShardRows, ...]:
    return rows.split(n)


def _result(scored: Scored) -> PartitionResult:
    return scored.result


def _run(client: Any, inputs: dict[str, str], normalizer: Normalizer, options: LoadOptions, report: Progress,
         partitions: int | None, run_dir: str | None, collect_error_list: bool,
         rules: FieldRules | None) -> EvaluationResult:
    distributed = _distributed()
    paths = {name: shard_paths(spec) for name, spec in inputs.items()}
    total = sum(len(p) for p in paths.values())
    reads, infos = _read(client, distributed, paths, options, report)
    summaries = {name: summarize(infos[name], spec, name or "ground truth", options.meta)
                 for name, spec in inputs.items()}
    gt = summaries.pop(_GT)
    gt_ids = set(gt.doc_ids)
    for pred in summaries.values():
        if pred.doc_ids and gt_ids.isdisjoint(pred.doc_ids):
            raise no_common_documents(gt.source, gt.doc_ids, pred.source, pred.doc_ids)
    names = list(inputs)
    n_parts, rows = _partitioned(client, reads, infos, partitions)
    # each shard is dropped once its partitions have taken their rows; the client keeps the summaries
    del reads, infos
    if run_dir is not None:
        clear_partitions(run_dir)
    job = Job(Input(gt.name, gt.source, gt.format),
              tuple(Input(p.name, p.source, p.format) for p in summaries.values()),
              normalizer, options.meta, run_dir, collect_error_list)
    # the causes' date orders are the whole GT's (SPEC 2c): a pass over the partitions first
    dates = sum(client.gather([client.submit(gt_dates, rows[_GT][k], {n: rows[n][k] for n in names[1:]},
                                             job, pure=False) for k in range(n_parts)]), GtDates())
    job = replace(job, gt_orders=dates.orders())
    # the scored partitions stay on their workers for the passes of the rules; only their results travel
    scored = [client.submit(scored_partition, k, rows[_GT][k], {n: rows[n][k] for n in names[1:]},
                            job, pure=False) for k in range(n_parts)]
    del rows
    sent = [client.submit(_result, future, pure=False) for future in scored]
    results: list[PartitionResult] = []
    for done, future in enumerate(distributed.as_completed(sent), start=1):
        results.append(future.result())
        future.release()
        report(total + done, total + n_parts, "scored partitions")
    merged = merge_partitions(results, gt, summaries, normalizer, rules, dates)

    def on_partitions(function, *args) -> list:
        return client.gather([client.submit(function, future, *args, pure=False) for future in scored])

    return with_rule_counts(merged, results, on_partitions)


def _partitioned(client: Any, reads: dict[str, list], infos: dict[str, list[ShardInfo]],
                 partitions: int | None) -> tuple[int, dict[str, list[list]]]:
    """The number of partitions and each input's rows per partition: the shards as they are
    when they are aligned (and no number was asked for), else shuffled by the doc_id's hash."""
    names = list(reads)
    if partitions is None and aligned(infos[_GT], [infos[n] for n in names[1:]]):
        n_parts = len(reads[_GT])
        return n_parts, {name: [[futures[k]] for k in range(n_parts)] for name, futures in reads.items()}
    n_rows = sum(info.n_rows for shard_infos in infos.values() for info in shard_infos)
    threads = sum(client.nthreads().values()) or 1
    n_parts = partitions or max(math.ceil(n_rows / ROWS_PER_PARTITION), threads)
    return n_parts, _shuffle(client, reads, n_parts)


def _read(client: Any, distributed: Any, paths: Mapping[str, list[Path]], options: LoadOptions,
          report: Progress) -> tuple[dict[str, list], dict[str, list[ShardInfo]]]:
    """Read every shard on the workers (futures of :class:`ShardRows`, per input) and gather
    the shards' infos (in shard order, per input)."""
    total = sum(len(p) for p in paths.values())
    reads = {name: [client.submit(read_shard, str(p), i, options, pure=False) for i, p in enumerate(files)]
             for name, files in paths.items()}
    owner = {client.submit(_info, future, pure=False): name
             for name, futures in reads.items() for future in futures}
    infos: dict[str, list[ShardInfo]] = {name: [] for name in paths}
    for done, future in enumerate(distributed.as_completed(list(owner)), start=1):
        infos[owner[future]].append(future.result())
        report(done, total, "read shards")
    return reads, {name: sorted(found, key=lambda info: info.index) for name, found in infos.items()}


def _shuffle(client: Any, reads: Mapping[str, list], n_parts: int) -> dict[str, list[list]]:
    """Split every shard into ``n_parts`` by the doc_id's hash: futures of the rows of
    partition k, per input and per shard."""
    rows: dict[str, list[list]] = {name: [[] for _ in range(n_parts)] for name in reads}
    for name, futures in reads.items():
        for future in futures:
            split = client.submit(_split, future, n_parts, pure=False)
            for k in range(n_parts):
                rows[name][k].append(client.submit(operator.getitem, split, k, pure=False))
    return rows
