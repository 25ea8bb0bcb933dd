"""List-extraction metrics for parallel lists (e.g. bank-statement transactions).

A document maps each field to an ordered list of values; the lists of the *related*
fields are parallel, so their i-th values form row i (one transaction: date,
description, amount). ``None`` (or ``""``) keeps a row's slot when a cell is absent.
Values are compared exactly: normalise them before calling.

* Items (per field): multiset P/R/F1 of the non-empty values, order ignored.
* Positional (per field): a value counts only when the prediction holds the same
  value at the same index.
* Strict row alignment: GT and predicted rows (tuples over the related fields, empty
  rows dropped) are paired one to one; a GT row is reproduced when an identical row is
  paired with it. With identity as the pairing criterion the best pairing is the
  multiset intersection of the rows. Score = reproduced GT rows / GT rows.
* Partial row alignment: rows are paired one to one (Hungarian algorithm) to maximise
  the number of GT cells whose value the paired predicted row has in the same field.
  Score = those cells / non-empty GT cells.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .oi import Detection, prf_columns

__all__ = [
    "ListResult",
    "RowAlignment",
    "list_metrics",
]

Cell = str | None
ListDocument = Mapping[str, Sequence[Cell]]

_COUNTS = ["tp", "fp", "fn", "pos_tp", "pos_fp", "pos_fn"]
_ROW_COUNTS = ["row_tp", "row_fp", "row_fn", "matched_cells", "gt_cells"]


@dataclass(frozen=True)
class RowAlignment:
    """Row-level agreement of parallel lists.

    ``rows`` counts GT rows reproduced whole (TP), predicted rows left over (FP) and
    GT rows not reproduced (FN); ``matched_cells`` of the ``gt_cells`` non-empty GT
    cells are reproduced by the best one-to-one row pairing.
    """

    rows: Detection
    matched_cells: int
    gt_cells: int

    @property
    def strict(self) -> float:
        """Share of GT rows reproduced whole (1.0 without GT rows)."""
        return self.rows.recall

    @property
    def partial(self) -> float:
        """Share of non-empty GT cells reproduced in the paired row (1.0 without any)."""
        return self.matched_cells / self.gt_cells if self.gt_cells else 1.0


@dataclass(frozen=True, eq=False)
class ListResult:
    """Corpus figures of :func:`list_metrics` plus per-field and per-document tables.

    ``fields`` (index: field) and ``documents`` (index: input position) hold the counts
    ``tp, fp, fn`` (items), ``pos_tp, pos_fp, pos_fn`` (positional) with their
    ``precision, recall, f1`` and ``pos_precision, pos_recall, pos_f1``; ``documents``
    adds ``row_tp, row_fp, row_fn, matched_cells, gt_cells``, ``strict`` and ``partial``.
    """

    items: Detection
    positional: Detection
    rows: RowAlignment
    fields: pd.DataFrame
    documents: pd.DataFrame


def list_metrics(
    docs: Iterable[tuple[ListDocument, ListDocument]],
    related_fields: Sequence[str] | None = None,
) -> ListResult:
    """Item, positional and row-alignment scores of parallel-list extraction.

    Parameters
    ----------
    docs : iterable of (gt, pred)
        Per document, the GT and predicted ``field -> list of values`` mappings
        (as returned by :func:`kieval_core.read.formats.lists.split_parallel_lists`).
    related_fields : sequence of str, optional
        Fields whose lists form the rows; by default every field of the document.

    Returns
    -------
    ListResult

    Examples
    --------
    >>> gt = {"desc": ["EFTPOS", "ATM", "Purchase"], "amount": ["$50", "$100", "$75"]}
    >>> pred = {"desc": ["ATM", "EFTPOS", "Purchase"], "amount": ["$50", "$100", "$75"]}
    >>> result = list_metrics([(gt, pred)])
    >>> result.items.f1, round(result.positional.recall, 4)
    (1.0, 0.6667)
    >>> round(result.rows.strict, 4), round(result.rows.partial, 4)
    (0.3333, 0.6667)
    """
    by_field: dict[str, np.ndarray] = {}
    per_doc: list[np.ndarray] = []
    for index, (gt, pred) in enumerate(docs):
        gt, pred = _document(gt, index, "ground truth"), _document(pred, index, "prediction")
        fields = sorted(gt.keys() | pred.keys())
        doc_counts = np.zeros(len(_COUNTS), np.int64)
        for field in fields:
            counts = _field_counts(gt.get(field, []), pred.get(field, []))
            by_field[field] = by_field.get(field, 0) + counts
            doc_counts += counts
        related = fields if related_fields is None else list(related_fields)
        rows = _row_counts(_rows(gt, related), _rows(pred, related))
        per_doc.append(np.concatenate((doc_counts, rows)))
    names = sorted(by_field)
    fields_frame = _with_scores(
        pd.DataFrame(
            np.array([by_field[f] for f in names], dtype=np.int64).reshape(-1, len(_COUNTS)),
            index=pd.Index(names, name="field", dtype=object),
            columns=_COUNTS,
        )
    )
    documents = _with_scores(
        pd.DataFrame(
            np.array(per_doc, dtype=np.int64).reshape(-1, len(_COUNTS) + len(_ROW_COUNTS)),
            index=pd.RangeIndex(len(per_doc), name="doc"),
            columns=_COUNTS + _ROW_COUNTS,
        )
    )
    documents["strict"] = prf_columns(documents.row_tp, documents.row_fp, documents.row_fn)[1]
    documents["partial"] = np.where(
        documents.gt_cells > 0, documents.matched_cells / documents.gt_cells.clip(lower=1), 1.0
    )
    totals = documents[_COUNTS + _ROW_COUNTS].sum()
    return ListResult(
        items=Detection(*(int(totals[c]) for c in ("tp", "fp", "fn"))),
        positional=Detection(*(int(totals[c]) for c in ("pos_tp", "pos_fp", "pos_fn"))),
        rows=RowAlignment(
            Detection(*(int(totals[c]) for c in ("row_tp", "row_fp", "row_fn"))),
            int(totals.matched_cells),
            int(totals.gt_cells),
        ),
        fields=fields_frame,
        documents=documents,
    )


def _document(doc: ListDocument, index: int, side: str) -> dict[str, list[Cell]]:
    if not isinstance(doc, Mapping):
        msg = f"document {index}: the {side} must map fields to lists, got {doc!r}"
        raise ValueError(msg)
    out = {}
    for field, values in doc.items():
        if isinstance(values, str) or not isinstance(values, Sequence):
            msg = f"document {index}: {side} field {field!r} must be a list, got {values!r}"
            raise ValueError(msg)
        out[field] = [None if v == "" else v for v in values]
    return out


def _field_counts(gt: list[Cell], pred: list[Cell]) -> np.ndarray:
    gt_items = Counter(v for v in gt if v is not None)
    pred_items = Counter(v for v in pred if v is not None)
    tp = (gt_items & pred_items).total()
    width = min(len(gt), len(pred))
    left = np.array(gt[:width], dtype=object)
    right = np.array(pred[:width], dtype=object)
    pos_tp = int(((left == right) & pd.notna(left)).sum()) if width else 0
    n_gt, n_pred = gt_items.total(), pred_items.total()
    return np.array([tp, n_pred - tp, n_gt - tp, pos_tp, n_pred - pos_tp, n_gt - pos_tp])


def _rows(doc: dict[str, list[Cell]], related: list[str]) -> np.ndarray:
    """Non-empty rows over the related fields, as an object array (rows x fields)."""
    columns = [doc.get(field, []) for field in related]
    table = np.empty((max(map(len, columns), default=0), len(related)), dtype=object)
    for k, column in enumerate(columns):
        table[: len(column), k] = column
    return table[~pd.isna(table).all(axis=1)]


def _row_counts(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    whole = (Counter(map(tuple, gt)) & Counter(map(tuple, pred))).total()
    filled = ~pd.isna(gt)
    gt_cells = int(filled.sum())
    matched_cells = 0
    if gt.shape[0] and pred.shape[0]:
        from scipy.optimize import linear_sum_assignment  # on demand: slow to import

        same = ((gt[:, None, :] == pred[None, :, :]) & filled[:, None, :]).sum(axis=2)
        rows, cols = linear_sum_assignment(same, maximize=True)
        matched_cells = int(same[rows, cols].sum())
    return np.array([whole, pred.shape[0] - whole, gt.shape[0] - whole, matched_cells, gt_cells])


def _with_scores(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for prefix in ("", "pos_"):
        p, r, f = prf_columns(*(frame[f"{prefix}{c}"] for c in ("tp", "fp", "fn")))
        frame[f"{prefix}precision"], frame[f"{prefix}recall"], frame[f"{prefix}f1"] = p, r, f
    return frame
