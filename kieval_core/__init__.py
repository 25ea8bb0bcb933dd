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

from ._version import __version__ as __version__

#: Public name -> the module that defines it.
_EXPORTS = {
    "Accumulator": "accumulator",
    "Decision": "review.deploy",
    "DecisionOptions": "review.decisions",
    "KievalInputError": "exceptions",
    "KievalOptionError": "exceptions",
    "NoCommonDocuments": "exceptions",
    "UndefinedMetricWarning": "exceptions",
    "UnscoredKeyWarning": "exceptions",
    "FORMATS": "read.readers",
    "LoadOptions": "read.formats",
    "load": "read.load",
    "load_bytes": "read.formats",
    "Dataset": "read.dataset",
    "Normalizer": "count.normalize",
    "PeerOptions": "count.peer_families",
    "build_report": "output.render",
    "render_report": "output.render",
    "report_json": "output.render",
    "EvaluationResult": "result.results",
    "ModelResult": "result.results",
    "Costs": "review.automation",
}

__all__ = [
    "FORMATS", "Accumulator", "Costs", "Dataset", "Decision", "DecisionOptions", "EvaluationResult",
    "KievalInputError", "KievalOptionError", "LoadOptions", "ModelResult", "NoCommonDocuments", "Normalizer",
    "PeerOptions", "UndefinedMetricWarning", "UnscoredKeyWarning", "build_report", "evaluate", "load",
    "load_bytes", "render_report", "report_json",
]

if TYPE_CHECKING:
    from .accumulator import Accumulator
    from .count.normalize import Normalizer
    from .count.peer_families import PeerOptions
    from .exceptions import (
        KievalInputError,
        KievalOptionError,
        NoCommonDocuments,
        UndefinedMetricWarning,
        UnscoredKeyWarning,
    )
    from .output.render import build_report, render_report, report_json
    from .read.dataset import Dataset
    from .read.formats import LoadOptions, load_bytes
    from .read.load import load
    from .read.readers import FORMATS
    from .result.results import EvaluationResult, ModelResult
    from .review.automation import Costs
    from .review.decisions import DecisionOptions
    from .review.deploy import Decision


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
