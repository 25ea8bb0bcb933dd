"""What the user loaded (files as bytes) and the options they chose; no Streamlit here.

A :class:`Source` is one file's name and content with a SHA-256 digest: caches are keyed
by the digest, so the same content under another name is not read twice, and a changed
file under the same name is. :class:`Sources` is the ground truth plus the prediction
files; :class:`AppOptions` holds every option that changes how files are read and scored.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePath

from kieval_core import LoadOptions, Normalizer
from kieval_core.peer_families import PeerOptions

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_data"
SAMPLE_GT = "cord_v2_gt.jsonl"
#: Sample prediction files and the model names the app gives them: they are SIMULATED.
SAMPLE_MODELS = (
    ("sim_strong.jsonl", "simulated-strong"),
    ("sim_llm.jsonl", "simulated-llm"),
    ("sim_weak.jsonl", "simulated-weak"),
)
SAMPLE_ATTRIBUTION = (
    'Ground truth: the 100 receipts of the CORD v2 validation split (Park et al., "CORD: A '
    'Consolidated Receipt Dataset for Post-OCR Parsing", Document Intelligence Workshop at '
    "NeurIPS 2019; Clova AI / NAVER), licensed CC-BY-4.0. The three models are SIMULATED: "
    "a seeded script added typical extraction errors to the ground truth "
    "(sample_data/generate_simulated_models.py). They are not real systems."
)


@dataclass(frozen=True)
class Source:
    """One input file: its name as given, its bytes and their SHA-256 digest."""

    name: str
    data: bytes = field(repr=False)
    digest: str
    model_name: str | None = None

    @classmethod
    def of(cls, name: str, data: bytes, model_name: str | None = None) -> Source:
        """Read a file's bytes into a source.

        >>> Source.of("a.jsonl", b"{}").digest[:12]
        '44136fa355b3'
        """
        return cls(name, data, hashlib.sha256(data).hexdigest(), model_name)

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def stem(self) -> str:
        return PurePath(self.name).stem or self.name


@dataclass(frozen=True)
class Sources:
    """The files of one evaluation: a ground truth and zero or more prediction files."""

    gt: Source | None
    predictions: tuple[Source, ...] = ()
    sample: bool = False

    def with_gt(self, gt: Source) -> Sources:
        """A new ground truth; the sample's simulated predictions do not fit it, so go."""
        return Sources(gt, () if self.sample else self.predictions, sample=False)

    def with_predictions(self, added: tuple[Source, ...]) -> Sources:
        """Add prediction files; a file of the same name replaces the older one."""
        kept = (
            ()
            if self.sample
            else tuple(p for p in self.predictions if p.name not in {a.name for a in added})
        )
        return Sources(self.gt, kept + tuple(added), sample=False)

    def without_prediction(self, name: str) -> Sources:
        return replace(self, predictions=tuple(p for p in self.predictions if p.name != name))

    def model_names(self) -> list[str]:
        return model_names(self.predictions)


def model_names(predictions: tuple[Source, ...] | list[Source]) -> list[str]:
    """Model name per prediction file: its stem, made unique by a counter.

    >>> model_names([Source.of("a/x.jsonl", b"1"), Source.of("b/x.jsonl", b"2")])
    ['x', 'x (2)']
    """
    names: list[str] = []
    for source in predictions:
        base = source.model_name or source.stem
        name, k = base, 2
        while name in names:
            name, k = f"{base} ({k})", k + 1
        names.append(name)
    return names


@lru_cache(maxsize=1)
def sample_sources() -> Sources:
    """The embedded default: CORD v2 validation ground truth and three simulated models."""
    gt = Source.of(SAMPLE_GT, (SAMPLE_DIR / SAMPLE_GT).read_bytes())
    predictions = tuple(
        Source.of(file, (SAMPLE_DIR / file).read_bytes(), model_name=name)
        for file, name in SAMPLE_MODELS
    )
    return Sources(gt, predictions, sample=True)


@dataclass(frozen=True)
class AppOptions:
    """Every choice that changes how files are read or scored (the sidebar's options)."""

    gt_format: str = "auto"
    pred_format: str = "auto"
    key: str | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    ignore_keys: tuple[str, ...] = ()
    related_fields: tuple[str, ...] = ()
    casefold: bool = False
    number_punctuation: bool = False
    families: tuple[str, ...] = ("kieval",)
    target_accuracy: float = 0.95
    cer_threshold: float = 0.30
    structure: str = "canonical"

    def load_options(self, role: str) -> LoadOptions:
        """Load options of the ground truth (``role="gt"``) or of a prediction file."""
        fmt = self.gt_format if role == "gt" else self.pred_format
        return LoadOptions(
            format=fmt, key=self.key or None, aliases=self.aliases, ignore_keys=self.ignore_keys,
            related_fields=self.related_fields,
        )

    @property
    def normalizer(self) -> Normalizer:
        return Normalizer(casefold=self.casefold, number_punctuation=self.number_punctuation)

    @property
    def peer_options(self) -> PeerOptions:
        return PeerOptions(cer_threshold=self.cer_threshold, structure=self.structure)


def parse_aliases(text: str) -> tuple[tuple[str, str], ...]:
    """Key renames, one ``old=new`` (or ``old -> new``) per line or comma-separated.

    >>> parse_aliases("subtotal=sub_total, menu.name -> menu.nm")
    (('subtotal', 'sub_total'), ('menu.name', 'menu.nm'))
    >>> parse_aliases("oops")
    Traceback (most recent call last):
    ...
    ValueError: alias 'oops' is not of the form old=new
    """
    pairs = []
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item:
            continue
        old, sep, new = item.partition("->") if "->" in item else item.partition("=")
        if not sep or not old.strip() or not new.strip():
            msg = f"alias {item!r} is not of the form old=new"
            raise ValueError(msg)
        pairs.append((old.strip(), new.strip()))
    return tuple(pairs)


def parse_keys(text: str) -> tuple[str, ...]:
    """Comma- or space-separated key names.

    >>> parse_keys("split, source  page")
    ('split', 'source', 'page')
    """
    return tuple(k for k in text.replace(",", " ").split() if k)
