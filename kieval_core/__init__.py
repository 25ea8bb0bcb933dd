"""KIEval Workbench core: exact KIEval metrics, corrections and automation curves."""

__version__ = "0.1.0"

from .accumulator import Accumulator
from .decisions import DecisionOptions
from .errors import KievalInputError, KievalOptionError, NoCommonDocuments, UndefinedMetricWarning
from .evaluate import evaluate
from .loaders import FORMATS, LoadOptions, load, load_bytes
from .model import Dataset
from .normalize import Normalizer
from .peer_families import PeerOptions
from .report import build_report, render_report, report_json
from .results import EvaluationResult, ModelResult
from .review import Costs

__all__ = [
    "FORMATS",
    "Accumulator",
    "Costs",
    "Dataset",
    "DecisionOptions",
    "EvaluationResult",
    "ModelResult",
    "evaluate",
    "KievalInputError",
    "KievalOptionError",
    "LoadOptions",
    "NoCommonDocuments",
    "Normalizer",
    "PeerOptions",
    "UndefinedMetricWarning",
    "build_report",
    "render_report",
    "load",
    "load_bytes",
    "report_json",
]
