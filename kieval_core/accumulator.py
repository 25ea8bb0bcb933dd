"""Evaluation inside a training loop: gather documents as a model emits them, score once.

:class:`Accumulator` takes the nested JSON dicts of a ground truth and of a model's
predictions, one document or a batch per :meth:`~Accumulator.update`, and keeps only
references to them: an update is bookkeeping (a type check and a few appends, about a
microsecond), never scoring. :meth:`~Accumulator.compute` then scores everything at once
through the steps of :func:`~kieval_core.evaluate` (:func:`~kieval_core.result.scoring.score_model`
and :func:`~kieval_core.result.scoring.finish`), on exactly what a ``{doc_id: document}`` JSON file
written by :func:`json.dumps` holds, so it gives the figures ``evaluate()`` gives on that
file to the last bit. :meth:`~Accumulator.merge` joins the accumulators of data-parallel
workers (they pickle, so ``torch.distributed.all_gather_object`` can carry them); no
deep-learning framework is needed, and a scalar tensor or a numpy number inside a document
is read through its ``.item()``.

>>> acc = Accumulator()
>>> acc.update({"total": "5.00", "menu": [{"nm": "Tea", "price": "5.00"}]},
...            {"total": {"value": "5.00", "confidence": 0.9},
...             "menu": [{"nm": {"value": "Tea", "confidence": 0.8}, "price": "4.00"}]})
>>> model = acc.compute().models["model"]
>>> model.entity.tp, model.corrections.substitution, round(model.aligned, 4)
(2, 1, 0.6667)

Documents are read when :meth:`~Accumulator.compute` runs: do not change a dict after
handing it to :meth:`~Accumulator.update`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .count.normalize import Normalizer
from .count.peer_families import PeerOptions, needs_structures
from .exceptions import KievalInputError, KievalOptionError
from .keys import KeyCounts
from .read.formats import LoadOptions, load_bytes
from .result.registry import resolve_families
from .result.results import EvaluationResult
from .result.scoring import finish, score_model

GT_SOURCE = "ground truth (accumulated)"


class Accumulator:
    """Documents gathered for one evaluation of one model; see the module docstring.

    Parameters
    ----------
    name : str
        The model's name in the result (``result.models[name]``).
    normalizer, metrics, load_options, peer_options
        As for :func:`~kieval_core.evaluate` (``load_options`` applies its ``aliases``
        and ``meta`` keys to the documents; its format is always nested JSON).
    """

    def __init__(self, name: str = "model", *, normalizer: Normalizer | None = None,
                 metrics: Sequence[str] | str = ("kieval",), load_options: LoadOptions = LoadOptions(),
                 peer_options: PeerOptions = PeerOptions()) -> None:
        self.name = name
        self.normalizer = normalizer or Normalizer()
        self.metrics = resolve_families(metrics)
        self.load_options = replace(load_options, format="json")  # what compute() reads
        self.peer_options = peer_options
        self.reset()

    def reset(self) -> None:
        """Forget every document (start of an epoch)."""
        self._gt: list[Any] = []
        self._pred: list[Any] = []
        self._ids: list[str | None] = []  # None: an id given at compute() (the document's position)
        self._named: set[str] = set()

    def __len__(self) -> int:
        return len(self._gt)

    def update(self, gt: dict | Sequence[dict], pred: dict | Sequence[dict],
               doc_ids: str | Sequence[str] | None = None) -> None:
        """Add one document (two dicts) or a batch (two lists of dicts of equal length).

        ``doc_ids`` names the document(s); without it a document is named by its position
        in the accumulator (``"0"``, ``"1"``, ... over every update and merge).
        """
        if type(gt) is dict and type(pred) is dict:  # the usual case, kept cheap
            if doc_ids is None:
                self._ids.append(None)
            else:
                self._add_id(doc_ids, len(self._gt))
            self._gt.append(gt)
            self._pred.append(pred)
            return
        self._update_batch(gt, pred, doc_ids)

    def _update_batch(self, gt: Any, pred: Any, doc_ids: Any) -> None:
        start = len(self._gt)
        self._check_batch(gt, pred, doc_ids, start)
        ids = [None] * len(gt) if doc_ids is None else [str(d) for d in doc_ids]
        if len(set(d for d in ids if d is not None)) < len([d for d in ids if d is not None]):
            raise KievalInputError(self._where(start), None, "the batch names a document id twice")
        for i, d in enumerate(ids):
            if d is not None and d in self._named:
                raise _duplicate(d, start + i)
        self._named.update(d for d in ids if d is not None)
        self._ids += ids
        self._gt += gt
        self._pred += pred

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

    def _add_id(self, doc_id: Any, position: int) -> None:
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            msg = f"update(): the document id of one document must be a string, got {_kind(doc_id)}"
            raise KievalOptionError(msg)
        doc_id = str(doc_id)
        if doc_id in self._named:
            raise _duplicate(doc_id, position)
        self._named.add(doc_id)
        self._ids.append(doc_id)

    def _where(self, position: int) -> str:
        return f"{self.name} (accumulated), document {position}"

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
        for i, d in enumerate(other._ids):
            if d is not None and d in self._named:
                raise _duplicate(d, len(self._gt) + i)
        self._named |= other._named
        self._ids += other._ids
        self._gt += other._gt
        self._pred += other._pred
        return self

    def doc_ids(self) -> list[str]:
        """Every document's id, in the order of the updates (auto ids are positions)."""
        ids = [str(i) if d is None else d for i, d in enumerate(self._ids)]
        auto = {ids[i] for i, d in enumerate(self._ids) if d is None}
        clash = sorted(auto & self._named, key=int)
        if clash:
            msg = (f"the document id {clash[0]!r} was given explicitly and is also the position of a "
                   "document added without an id; give every document an id, or none")
            raise KievalInputError(self._where(int(clash[0])), None, msg)
        return ids

    def json_bytes(self) -> tuple[bytes, bytes]:
        """The ground truth and the predictions as ``{doc_id: document}`` JSON text, as
        :func:`json.dumps` writes them (what :meth:`compute` reads)."""
        ids = self.doc_ids()
        return (_container(ids, self._gt, GT_SOURCE),
                _container(ids, self._pred, f"{self.name} (accumulated)"))

    def compute(self) -> EvaluationResult:
        """Score every document gathered so far: the result of :func:`~kieval_core.evaluate`
        on the same documents."""
        if not self._gt:
            raise KievalInputError(f"{self.name} (accumulated)", None, "no documents: call update() first")
        gt_text, pred_text = self.json_bytes()
        keep = needs_structures(self.metrics, self.peer_options)
        gt = load_bytes(gt_text, GT_SOURCE, self.load_options, name="ground truth", keep_structures=keep)
        pred = load_bytes(pred_text, f"{self.name} (accumulated)", self.load_options, name=self.name,
                          keep_structures=keep)
        model = score_model(gt, pred, name=self.name, normalizer=self.normalizer, families=self.metrics,
                            peer_options=self.peer_options)
        return finish(gt, {self.name: model}, {self.name: KeyCounts.of(pred)}, self.normalizer, self.metrics)


def _kind(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _duplicate(doc_id: str, position: int) -> KievalInputError:
    return KievalInputError(f"accumulated document {position}", None,
                            f"the document id {doc_id!r} was already given")


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


def _container(ids: list[str], documents: list[Any], source: str) -> bytes:
    parts = []
    for i, (doc_id, document) in enumerate(zip(ids, documents, strict=True)):
        try:
            text = json.dumps(document, allow_nan=False, default=_scalar)
        except (TypeError, ValueError) as exc:
            raise KievalInputError(source, f"document {doc_id!r} (update {i})", str(exc)) from None
        parts.append(f"{json.dumps(doc_id)}: {text}")
    return ("{" + ",\n".join(parts) + "}").encode("ascii")
