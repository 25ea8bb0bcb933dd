"""KIEval Workbench core: exact KIEval metrics, corrections and automation curves."""

__version__ = "0.1.0"

from .errors import KievalInputError, UndefinedMetricWarning
from .evaluate import EvaluationResult, ModelResult, evaluate
from .loaders import FORMATS, LoadOptions, load, load_bytes
from .model import Dataset
from .normalize import Normalizer
from .peer_families import PeerOptions

__all__ = [
    "FORMATS",
    "Dataset",
    "EvaluationResult",
    "ModelResult",
    "evaluate",
    "KievalInputError",
    "LoadOptions",
    "Normalizer",
    "PeerOptions",
    "UndefinedMetricWarning",
    "load",
    "load_bytes",
]
