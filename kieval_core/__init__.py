"""KIEval Workbench core: exact KIEval metrics, corrections and automation curves.

The names below are imported on first use (PEP 562), so ``import kieval_core`` and the
command line's ``--help`` do not pay for pandas, scipy and pyarrow until something is
computed.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "Accumulator": "accumulator",
    "DecisionOptions": "decisions",
    "KievalInputError": "errors",
    "KievalOptionError": "errors",
    "NoCommonDocuments": "errors",
    "UndefinedMetricWarning": "errors",
    "FORMATS": "loaders",
    "LoadOptions": "loaders",
    "load": "loaders",
    "load_bytes": "loaders",
    "Dataset": "model",
    "Normalizer": "normalize",
    "PeerOptions": "peer_families",
    "build_report": "report",
    "render_report": "report",
    "report_json": "report",
    "EvaluationResult": "results",
    "ModelResult": "results",
    "Costs": "review",
}

__all__ = [
    "FORMATS", "Accumulator", "Costs", "Dataset", "DecisionOptions", "EvaluationResult", "KievalInputError",
    "KievalOptionError", "LoadOptions", "ModelResult", "NoCommonDocuments", "Normalizer", "PeerOptions",
    "UndefinedMetricWarning", "build_report", "evaluate", "load", "load_bytes", "render_report",
    "report_json",
]

if TYPE_CHECKING:
    from .accumulator import Accumulator
    from .decisions import DecisionOptions
    from .errors import KievalInputError, KievalOptionError, NoCommonDocuments, UndefinedMetricWarning
    from .loaders import FORMATS, LoadOptions, load, load_bytes
    from .model import Dataset
    from .normalize import Normalizer
    from .peer_families import PeerOptions
    from .report import build_report, render_report, report_json
    from .results import EvaluationResult, ModelResult
    from .review import Costs


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, "evaluate"})


class _Package(types.ModuleType):
    """``kieval_core.evaluate`` is the function, also once its module (of the same name) is
    imported: the import system then sets the package attribute to the module, which this
    setter ignores, as the eager ``from .evaluate import evaluate`` used to overwrite it."""

    @property
    def evaluate(self):
        return importlib.import_module(".evaluate", __name__).evaluate

    @evaluate.setter
    def evaluate(self, value) -> None:
        pass


sys.modules[__name__].__class__ = _Package
