"""Evaluation inside a training loop: gather documents as a model emits them, score once.

:class:`Accumulator` takes the nested JSON dicts of a ground truth and of a model's
predictions, one document or a batch per :meth:`~Accumulator.update`. It holds the dicts
only until ``block`` documents have come (1,000 by default): the block is then read as
the JSON reader reads a ``{doc_id: document}`` file (the text :func:`json.dumps` writes)
into the reader's compact tables (:class:`~kieval_core.read.formats.builder.DatasetBuilder`:
codes and Arrow text), and the dicts are let go. :meth:`~Accumulator.compute` joins the
blocks' tables into those one reader would have built from the whole file
(:meth:`~kieval_core.read.formats.builder.DatasetBuilder.extend`) and scores them once through
the steps of :func:`~kieval_core.evaluate` (:func:`~kieval_core.result.scoring.score_model`
and :func:`~kieval_core.result.scoring.finish`), so it gives the figures ``evaluate()``
gives on that file to the last bit. :meth:`~Accumulator.merge` joins the accumulators of
data-parallel workers (they pickle, so ``torch.distributed.all_gather_object`` can carry
them); no deep-learning framework is needed, and a scalar tensor or a numpy number inside
a document is read through its ``.item()``.

>>> acc = Accumulator()
>>> acc.update({"total": "5.00", "menu": [{"nm": "Tea", "price": "5.00"}]},
...            {"total": {"value": "5.00", "confidence": 0.9},
...             "menu": [{"nm": {"value": "Tea", "confidence": 0.8}, "price": "4.00"}]})
>>> model = acc.compute().models["model"]
>>> model.entity.tp, model.corrections.substitution, round(model.aligned, 4)
(2, 1, 0.6667)

A document is read when its block is (by the update that fills it, or by
:meth:`~Accumulator.compute`): do not change a dict before then; a document that cannot be
read is named then. Documents that each consist of one structure key alone (``gt_parse``,
``prediction``, ...) are kept as dicts until a document without it settles that the key
is content, not a wrapper (a file's reader decides over every document, see
:func:`~kieval_core.read.formats.nested.common_wrapper`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .count.normalize import Normalizer
from .count.peer_families import PeerOptions, needs_structures
from .exceptions import KievalInputError, KievalOptionError
from .gcpause import cycle_collector_paused
from .keys import KeyCounts
from .read.dataset import Dataset
from .read.formats import LoadOptions, check_scoring_cost, load_estimate, read_json
from .read.formats.builder import DatasetBuilder
from .read.formats.nested import common_wrapper
from .result.registry import resolve_families
from .result.results import EvaluationResult
from .result.scoring import finish, score_model

GT_SOURCE = "ground truth (accumulated)"
#: Documents held as dicts before they are read (see the module docstring).
BLOCK = 1_000
#: The wrapper state of a side before its first document.
_NO_DOCUMENT = ""


@dataclass
class _Side:
    """The ground truth's or the model's documents: blocks read, documents not yet read
    (``(doc_id, position, document)``), and the structure key every document so far
    consists of alone (:data:`_NO_DOCUMENT` before any, None once one does not)."""

    source: str
    name: str
    blocks: list[DatasetBuilder] = field(default_factory=list)
    pending: list[tuple[str, int, Any]] = field(default_factory=list)
    wrapper: str | None = _NO_DOCUMENT

    def add(self, ids: Sequence[str], start: int, documents: Sequence[Any]) -> None:
        self.pending += zip(ids, range(start, start + len(ids)), documents, strict=True)
        if self.wrapper is not None and documents:
            found = common_wrapper(list(documents))
            self.wrapper = found if self.wrapper in (_NO_DOCUMENT, found) else None


class Accumulator:
    """Documents gathered for one evaluation of one model; see the module docstring.

    Parameters
    ----------
    name : str
        The model's name in the result (``result.models[name]``).
    normalizer, metrics, load_options, peer_options
        As for :func:`~kieval_core.evaluate` (``load_options`` applies its ``aliases``
        and ``meta`` keys to the documents; its format is always nested JSON).
    block : int
        Documents held as dicts before they are read into compact tables.
    """

    def __init__(self, name: str = "model", *, normalizer: Normalizer | None = None,
                 metrics: Sequence[str] | str = ("kieval",), load_options: LoadOptions = LoadOptions(),
                 peer_options: PeerOptions = PeerOptions(), block: int = BLOCK) -> None:
        if not isinstance(block, int) or block < 1:
            raise KievalOptionError(f"block must be a whole number of documents >= 1, got {block!r}")
        self.name = name
        self.normalizer = normalizer or Normalizer()
        self.metrics = resolve_families(metrics)
        self.load_options = replace(load_options, format="json")  # what the blocks are read as
        self.peer_options = peer_options
        self.block = block
        self.reset()

    def reset(self) -> None:
        """Forget every document (start of an epoch)."""
        self._ids: list[str] = []
        self._named: set[str] = set()  # ids given explicitly
        self._auto: set[str] = set()  # positions of documents added without an id
        self._gt = _Side(GT_SOURCE, "ground truth")
        self._pred = _Side(f"{self.name} (accumulated)", self.name)

    def __len__(self) -> int:
        return len(self._ids)

    def update(self, gt: dict | Sequence[dict], pred: dict | Sequence[dict],
               doc_ids: str | Sequence[str] | None = None) -> None:
        """Add one document (two dicts) or a batch (two lists of dicts of equal length).

        ``doc_ids`` names the document(s); without it a document is named by its position
        in the accumulator (``"0"``, ``"1"``, ... over every update and merge).
        """
        start = len(self._ids)
        if type(gt) is dict and type(pred) is dict:  # the usual case, kept cheap
            ids = [self._auto_id(start) if doc_ids is None else self._given_id(doc_ids, start)]
            gt, pred = [gt], [pred]
        else:
            self._check_batch(gt, pred, doc_ids, start)
            ids = self._batch_ids(doc_ids, len(gt), start)
        self._ids += ids
        self._gt.add(ids, start, gt)
        self._pred.add(ids, start, pred)
        for side in (self._gt, self._pred):
            if len(side.pending) >= self.block and self._settled(side):
                self._read_pending(side)

    def _auto_id(self, position: int) -> str:
        doc_id = str(position)
        if doc_id in self._named:
            raise _clash(doc_id)
        self._auto.add(doc_id)
        return doc_id

    def _given_id(self, doc_id: Any, position: int) -> str:
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            msg = f"update(): the document id of one document must be a string, got {_kind(doc_id)}"
            raise KievalOptionError(msg)
        doc_id = str(doc_id)
        self._check_new(doc_id, position)
        self._named.add(doc_id)
        return doc_id

    def _check_new(self, doc_id: str, position: int) -> None:
        if doc_id in self._named:
            raise _duplicate(doc_id, position)
        if doc_id in self._auto:
            raise _clash(doc_id)

    def _batch_ids(self, doc_ids: Any, n: int, start: int) -> list[str]:
        if doc_ids is None:
            clash = next((str(i) for i in range(start, start + n) if str(i) in self._named), None)
            if clash is not None:
                raise _clash(clash)
            ids = [str(i) for i in range(start, start + n)]
            self._auto.update(ids)
            return ids
        ids = [str(d) for d in doc_ids]
        if len(set(ids)) < len(ids):
            raise KievalInputError(self._where(start), None, "the batch names a document id twice")
        for i, d in enumerate(ids):
            self._check_new(d, start + i)
        self._named.update(ids)
        return ids

    def _check_batch(self, gt: Any, pred: Any, doc_ids: Any, start: int) -> None:
        """Refuse a batch that is not two lists of dicts of one length (and as many ids)."""
        for side, value in (("ground truth", gt), ("prediction", pred)):
            if isinstance(value, (str, bytes, dict)) or not isinstance(value, Sequence):
                if isinstance(value, dict):
                    continue
                msg = (f"update(): the {side} must be a dict (one document) or a list of dicts (a batch), "
                       f"got {_kind(value)}")
                raise KievalInputError(self._where(start), None, msg)
        if isinstance(gt, dict) or isinstance(pred, dict):
            msg = "update(): give one document as two dicts, or a batch as two lists of dicts"
            raise KievalInputError(self._where(start), None, msg)
        if len(gt) != len(pred):
            msg = f"update(): a batch of {len(gt)} ground-truth documents and {len(pred)} predictions"
            raise KievalInputError(self._where(start), None, msg)
        if doc_ids is not None and (isinstance(doc_ids, str) or len(doc_ids) != len(gt)):
            n = 1 if isinstance(doc_ids, str) else len(doc_ids)
            msg = f"update(): {n} document id(s) for a batch of {len(gt)} documents"
            raise KievalOptionError(msg)
        for i, (g, p) in enumerate(zip(gt, pred, strict=True)):
            for side, value in (("ground truth", g), ("prediction", p)):
                if type(value) is not dict:
                    msg = f"the {side} must be a JSON object (a dict), got {_kind(value)}"
                    raise KievalInputError(self._where(start), f"item {i} of the batch", msg)

    def _where(self, position: int) -> str:
        return f"{self.name} (accumulated), document {position}"

    # --- reading blocks ---------------------------------------------------------------------

    def _settled(self, side: _Side) -> bool:
        """Whether the side's documents can be read now: a structure key is named, or the
        documents are known not to share one."""
        return self.load_options.key is not None or side.wrapper is None

    def _read(self, side: _Side, documents: list[tuple[str, int, Any]]) -> DatasetBuilder:
        """A block of documents read as the JSON reader reads them from a file."""
        text = _container(documents, side.source)
        limits = self.load_options.limits
        load_estimate(text, side.source, limits)
        builder = DatasetBuilder(side.source, side.name, "json", self._keep_structures, max_rows=limits.rows)
        with cycle_collector_paused():
            read_json(text, side.source, self.load_options, builder, unwrap=side.wrapper is not None)
        builder.pack()
        return builder

    def _read_pending(self, side: _Side) -> None:
        side.blocks.append(self._read(side, side.pending))
        side.pending = []

    @property
    def _keep_structures(self) -> bool:
        return needs_structures(self.metrics, self.peer_options)

    def _dataset(self, side: _Side) -> Dataset:
        """Every document of a side as one dataset: what the reader gives on the whole file."""
        if side.pending and self._settled(side):
            self._read_pending(side)
        blocks = [*side.blocks, *([self._read(side, side.pending)] if side.pending else [])]
        limits = self.load_options.limits
        builder = DatasetBuilder(side.source, side.name, "json", self._keep_structures, max_rows=limits.rows)
        for block in blocks:
            builder.extend(block)
        return check_scoring_cost(builder.build(), limits)

    # --- workers, ids, scores -----------------------------------------------------------------

    def merge(self, other: Accumulator) -> Accumulator:
        """Add another accumulator's documents after this one's (a data-parallel worker's);
        returns self. Both must evaluate the same way."""
        if not isinstance(other, Accumulator):
            msg = f"merge(): expected an Accumulator, got {_kind(other)}"
            raise KievalOptionError(msg)
        mine = (self.name, self.normalizer, self.metrics, self.load_options, self.peer_options)
        theirs = (other.name, other.normalizer, other.metrics, other.load_options, other.peer_options)
        if mine != theirs:
            msg = "merge(): the accumulators evaluate differently (name, normaliser, metrics or options)"
            raise KievalOptionError(msg)
        offset = len(self._ids)
        moved = {d: str(int(d) + offset) for d in other._auto}  # positions after this one's documents
        for i, d in enumerate(other._ids):
            if d in other._named:
                self._check_new(d, offset + i)
            elif moved[d] in self._named or moved[d] in other._named:
                raise _clash(moved[d])
        for mine_side, their_side in ((self._gt, other._gt), (self._pred, other._pred)):
            self._join(mine_side, their_side, moved, offset)
        self._ids += [moved.get(d, d) for d in other._ids]
        self._named |= other._named
        self._auto |= set(moved.values())
        return self

    def _join(self, side: _Side, other: _Side, moved: dict[str, str], offset: int) -> None:
        """One side of :meth:`merge`: the other's blocks and documents after this side's."""
        if other.wrapper == _NO_DOCUMENT:  # no document
            return
        side.wrapper = other.wrapper if side.wrapper in (_NO_DOCUMENT, other.wrapper) else None
        if other.blocks and side.pending:  # the other's were read: read these before them
            self._read_pending(side)
        side.blocks += [block.renamed(moved) for block in other.blocks]
        side.pending += [(moved.get(d, d), offset + i, doc) for d, i, doc in other.pending]

    def doc_ids(self) -> list[str]:
        """Every document's id, in the order of the updates (auto ids are positions)."""
        return list(self._ids)

    def compute(self) -> EvaluationResult:
        """Score every document gathered so far: the result of :func:`~kieval_core.evaluate`
        on the same documents."""
        if not self._ids:
            raise KievalInputError(f"{self.name} (accumulated)", None, "no documents: call update() first")
        gt, pred = self._dataset(self._gt), self._dataset(self._pred)
        model = score_model(gt, pred, name=self.name, normalizer=self.normalizer, families=self.metrics,
                            peer_options=self.peer_options)
        return finish(gt, {self.name: model}, {self.name: KeyCounts.of(pred)}, self.normalizer, self.metrics)


def _kind(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _duplicate(doc_id: str, position: int) -> KievalInputError:
    return KievalInputError(f"accumulated document {position}", None,
                            f"the document id {doc_id!r} was already given")


def _clash(doc_id: str) -> KievalInputError:
    msg = (f"the document id {doc_id!r} was given explicitly and is also the position of a "
           "document added without an id; give every document an id, or none")
    return KievalInputError(f"accumulated document {doc_id}", None, msg)


def _scalar(value: Any) -> Any:
    """A numpy number or a scalar tensor as the Python number its ``.item()`` gives."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            out = item()
        except (TypeError, ValueError):  # an array of several values
            out = value
        if isinstance(out, (str, int, float, bool)) or out is None:
            return out
    msg = f"a {type(value).__name__} is not JSON (only dicts, lists, text, numbers, booleans and None)"
    raise TypeError(msg)


def _container(documents: list[tuple[str, int, Any]], source: str) -> bytes:
    """Documents as ``{doc_id: document}`` JSON text, as :func:`json.dumps` writes them."""
    parts = []
    for doc_id, position, document in documents:
        try:
            text = json.dumps(document, allow_nan=False, default=_scalar)
        except (TypeError, ValueError) as exc:
            raise KievalInputError(source, f"document {doc_id!r} (update {position})", str(exc)) from None
        parts.append(f"{json.dumps(doc_id)}: {text}")
    return ("{" + ",\n".join(parts) + "}").encode("ascii")
