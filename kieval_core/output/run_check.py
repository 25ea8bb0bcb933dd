"""A saved run is checked against its manifest before anything of it is read (SPEC 8b):
the manifest's shape, and for every Parquet file the manifest lists, that it is there
with the size and the row count the manifest says (read from its footer, so a file
swapped for a much larger one is refused before it is read). Anything wrong is one
:class:`~kieval_core.exceptions.KievalInputError` naming the file and the problem.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..exceptions import KievalInputError
from ..review.automation import MISSING_POLICIES

_TEXTS = [str]
_GT = {"name": str, "source": str, "format": str, "doc_ids": _TEXTS, "warnings": _TEXTS, "notes": _TEXTS}
_PEER = {"figures": dict, "documents": _TEXTS, "tables": _TEXTS}
_MODEL = {"name": str, "source": str, "format": str, "notes": _TEXTS, "warnings": _TEXTS,
          "missing_documents": _TEXTS, "unknown_documents": _TEXTS, "peer": {str: _PEER}, "doc_ids": _TEXTS,
          "entity_types": _TEXTS, "missing_confidence": str, "consensus_of": int}
#: The manifest's shape: a type, a list of one shape (every item), a dict of keys (all
#: required), or ``{str: shape}`` (any keys, every value of that shape).
MANIFEST = {"kieval_run": int, "inputs": dict, "options": dict, "normalizer": dict, "metrics": _TEXTS,
            "warnings": _TEXTS, "ground_truth": _GT, "models": [_MODEL]}
_INT64 = 2**63
#: The normaliser's options that are not switches (a run saved before they existed has none).
_NORMALIZER = {"comparators": [[str]], "near_miss": float}


def _first(problems) -> str | None:
    return next((p for p in problems if p is not None), None)


def _shape_error(value: Any, shape: Any, where: str) -> str | None:
    """Where ``value`` departs from ``shape`` and how, or None."""
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where}: expected a list, found {type(value).__name__}"
        return _first(_shape_error(item, shape[0], f"{where}[{i}]") for i, item in enumerate(value))
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where}: expected an object, found {type(value).__name__}"
        if str in shape:
            return _first(_shape_error(v, shape[str], f"{where}.{k}") for k, v in value.items())
        missing = [k for k in shape if k not in value]
        if missing:
            return f"{where}: missing {', '.join(missing)}"
        return _first(_shape_error(value[k], s, f"{where}.{k}") for k, s in shape.items())
    if shape is int and isinstance(value, bool) or not isinstance(value, shape):
        return f"{where}: expected {shape.__name__}, found {type(value).__name__}"
    return None


def _numbers_error(value: Any, where: str) -> str | None:
    """An integer beyond 64 bits or a number that is not finite, anywhere in ``value``."""
    if isinstance(value, dict):
        return _first(_numbers_error(v, f"{where}.{k}") for k, v in value.items())
    if isinstance(value, list):
        return _first(_numbers_error(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return f"{where}: the integer {str(value)[:20]}... does not fit in 64 bits"
    if isinstance(value, float) and not math.isfinite(value) and not math.isnan(value):
        return f"{where}: {value} is not a finite number"
    return None


def read_manifest(directory: Path) -> dict:
    """The manifest of the run in ``directory``, its shape checked."""
    path = directory / "manifest.json"
    if not path.is_file():
        raise KievalInputError(str(directory), None, "not a saved run (no manifest.json)")
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise KievalInputError(str(path), None, f"not a readable manifest ({exc})") from None
    if not isinstance(manifest, dict):
        raise KievalInputError(str(path), None, "not a saved run's manifest (not an object)")
    return manifest


def check_manifest(manifest: dict, directory: Path, normalizer_fields: tuple[str, ...]) -> None:
    """Refuse a manifest whose shape, numbers or normaliser options are not a run's."""
    path = str(directory / "manifest.json")
    problem = _shape_error(manifest, MANIFEST, "manifest") or _numbers_error(manifest, "manifest")
    if problem is None:
        unknown = sorted(set(manifest["normalizer"]) - set(normalizer_fields))
        if unknown:
            problem = f"manifest.normalizer: unknown option {', '.join(unknown)}"
        else:
            problem = _first(_shape_error(v, _NORMALIZER.get(k, bool), f"manifest.normalizer.{k}")
                             for k, v in manifest["normalizer"].items())
    if problem is None:
        for i, model in enumerate(manifest["models"]):
            if model["missing_confidence"] not in MISSING_POLICIES or model["consensus_of"] < 0:
                problem = f"manifest.models[{i}]: unknown missing-confidence policy or consensus size"
                break
            for family, peer in model["peer"].items():
                bad = [k for k, v in peer["figures"].items()
                       if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)))]
                if bad:
                    problem = f"manifest.models[{i}].peer.{family}.figures.{bad[0]}: not a number"
                    break
    if problem is not None:
        raise KievalInputError(path, None, problem)
    if "files" in manifest:
        problem = _shape_error(manifest["files"], {str: {"rows": int, "bytes": int}}, "manifest.files")
        if problem is not None:
            raise KievalInputError(path, None, problem)


def parquet_files(directory: Path) -> dict[str, dict[str, int]]:
    """Every Parquet file of a run (relative path: rows, bytes), for its manifest."""
    return {p.relative_to(directory).as_posix(): {"rows": pq.ParquetFile(p).metadata.num_rows,
                                                   "bytes": p.stat().st_size}
            for p in sorted(directory.rglob("*.parquet"))}


def check_files(directory: Path, manifest: dict) -> None:
    """Every Parquet file the manifest lists is there with its size and rows, and no
    other Parquet file is (it would be read with the run's own)."""
    files = manifest.get("files")
    if files is None:  # a run saved before runs listed their files
        return
    present = {p.relative_to(directory).as_posix() for p in directory.rglob("*.parquet")}
    extra = sorted(present - set(files))
    if extra:
        msg = "is not part of the saved run (not in its manifest)"
        raise KievalInputError(str(directory / extra[0]), None, msg)
    changed = "the run was changed after it was saved"
    for name, expected in files.items():
        path = directory / name
        if name not in present:
            raise KievalInputError(str(path), None, "is missing from the saved run")
        size = path.stat().st_size
        if size != expected["bytes"]:
            msg = f"has {size:,} bytes, the manifest says {expected['bytes']:,}: {changed}"
            raise KievalInputError(str(path), None, msg)
        try:
            rows = pq.ParquetFile(path).metadata.num_rows
        except (OSError, pa.ArrowException) as exc:
            raise KievalInputError(str(path), None, f"not a readable Parquet file ({exc})") from None
        if rows != expected["rows"]:
            msg = f"has {rows:,} rows, the manifest says {expected['rows']:,}: {changed}"
            raise KievalInputError(str(path), None, msg)


def check_indices(path: Path, values: np.ndarray, bound: int, what: str) -> None:
    """Row references of a saved table (``doc``, ``entity_type``) must point into their
    lists: an index out of range would fail later, on a page."""
    outside = values[(values < 0) | (values >= bound)]
    if len(outside):
        msg = f"{what} refers to entry {int(outside[0])} of a list of {bound}"
        raise KievalInputError(str(path), None, msg)
