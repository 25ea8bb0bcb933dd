"""What the user loaded (files as bytes) and the options they chose; no Streamlit here.

A :class:`Source` is one file's name and content with a SHA-256 digest: caches are keyed
by the digest, so the same content under another name is not read twice, and a changed
file under the same name is. :class:`Sources` is the ground truth plus the prediction
files; :class:`AppOptions` holds every option that changes how files are read and scored.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import PurePath

from kieval_core import LoadOptions, Normalizer
from kieval_core.count.peer_families import PeerOptions
from kieval_core.limits import Limits
from kieval_core.rules import FieldRules

from .paths import sample_dir

SAMPLE_DIR = sample_dir()


@dataclass(frozen=True)
class Sample:
    """A built-in dataset: a ground truth and prediction files, each real or simulated."""

    key: str
    title: str
    gt: str
    models: tuple[tuple[str, str], ...]  # (path under sample_data, model name)
    attribution: str
    images: str | None = None  # a directory of page images under sample_data


SAMPLES = {
    "simulated": Sample(
        "simulated",
        "CORD v2 validation, 3 simulated models",
        "cord_v2_gt.jsonl",
        (
            ("sim_strong.jsonl", "simulated-strong"),
            ("sim_llm.jsonl", "simulated-llm"),
            ("sim_weak.jsonl", "simulated-weak"),
        ),
        'Ground truth: the 100 receipts of the CORD v2 validation split (Park et al., "CORD: A '
        'Consolidated Receipt Dataset for Post-OCR Parsing", Document Intelligence Workshop at '
        "NeurIPS 2019; Clova AI / NAVER), licensed CC-BY-4.0. The three models are SIMULATED: "
        "a seeded script added typical extraction errors to the ground truth "
        "(sample_data/generate_simulated_models.py). They are not real systems. The pages are "
        "RENDERINGS of each receipt's annotation, not photos (sample_data/add_cord_locations.py).",
        images="cord_v2_renderings",
    ),
    "official": Sample(
        "official",
        "CORD test, a real model (Qwen-VL 72B): the official KIEval sample",
        "kieval_official_cord/gt_csv",
        (("kieval_official_cord/pred_csv", "qwen-vl-72b (real)"),),
        "The official KIEval tool's bundled sample (UpstageAI/KIEval, MIT licence): REAL outputs "
        "of Qwen-VL 72B on 100 receipts of the CORD test split (CORD: Park et al., Clova AI, "
        "CC-BY-4.0). The model gave no confidences, so there are no automation figures. The "
        "paper's published totals are reproduced here (KIEval_Aligned 69.86%).",
    ),
}
#: The sample a new session opens on.
DEFAULT_SAMPLE = "simulated"


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
    """The files of one evaluation: a ground truth and zero or more prediction files, or
    a saved run (``run``: its directory), whose figures are read, not computed."""

    gt: Source | None
    predictions: tuple[Source, ...] = ()
    sample: str | None = None  # the key of a built-in sample, None for uploads
    run: str | None = None  # the directory of a saved run opened read-only
    images: Source | None = None  # page images (a zip, an image or a PDF), never required

    def with_gt(self, gt: Source) -> Sources:
        """A new ground truth; the sample's predictions and pages do not fit it, so they go."""
        kept = None if self.sample else self.images
        return Sources(gt, () if self.sample else self.predictions, images=kept)

    def with_predictions(self, added: tuple[Source, ...]) -> Sources:
        """Add prediction files; a file of the same name replaces the older one."""
        kept = (
            () if self.sample else tuple(p for p in self.predictions if p.name not in {a.name for a in added})
        )
        return Sources(self.gt, kept + tuple(added), images=None if self.sample else self.images)

    def with_images(self, images: Source) -> Sources:
        """Page images for the loaded documents (they replace earlier ones)."""
        return replace(self, images=images)

    def without_prediction(self, name: str) -> Sources:
        return replace(self, predictions=tuple(p for p in self.predictions if p.name != name))

    def model_names(self) -> list[str]:
        return model_names(self.predictions)

    @property
    def size(self) -> int:
        """Bytes of the uploaded files (a built-in sample's are shared by every session: 0)."""
        if self.sample:
            return 0
        return sum(s.size for s in (self.gt, *self.predictions, self.images) if s is not None)


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


def _read_sample_file(relative: str) -> tuple[str, bytes]:
    """A sample file's name and bytes; a directory is zipped in memory (as an upload)."""
    path = SAMPLE_DIR / relative
    if not path.is_dir():
        return path.name, path.read_bytes()
    return zipped(path.name, {member.name: member.read_bytes() for member in sorted(path.iterdir())})


def zipped(name: str, files: dict[str, bytes]) -> tuple[str, bytes]:
    """Files as one uncompressed zip in memory, as the upload of a directory; the same files
    give the same bytes (a fixed date in every member), so the same digest in every process.

    >>> zipped("d", {"a.txt": b"1"}) == zipped("d", {"a.txt": b"1"})
    True
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in files.items():
            archive.writestr(zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return f"{name}.zip", buffer.getvalue()


@lru_cache(maxsize=len(SAMPLES))
def sample_sources(key: str = DEFAULT_SAMPLE) -> Sources:
    """A built-in sample (:data:`SAMPLES`) as sources."""
    sample = SAMPLES[key]
    gt = Source.of(*_read_sample_file(sample.gt))
    predictions = tuple(Source.of(*_read_sample_file(path), model_name=name) for path, name in sample.models)
    images = Source.of(*_read_sample_file(sample.images)) if sample.images else None
    return Sources(gt, predictions, sample=key, images=images)


@dataclass(frozen=True)
class AppOptions:
    """Every choice that changes how files are read or scored (the sidebar's options).

    Decision parameters (target accuracy, costs) are not here: they change no figure of
    the evaluation, only the decisions drawn from it, so they never re-score.
    """

    gt_format: str = "auto"
    pred_format: str = "auto"
    key: str | None = None
    aliases: tuple[tuple[str, str], ...] = ()
    meta: tuple[str, ...] = ()
    #: Ground-truth keys no prediction file has: set aside as metadata of the ground truth
    #: (found by the workspace), unless the user scores them (``score_keys``).
    gt_meta: tuple[str, ...] = ()
    score_keys: tuple[str, ...] = ()
    related_fields: tuple[str, ...] = ()
    casefold: bool = False
    number_punctuation: bool = False
    #: The user's field rules (SPEC 2d: the rules panel, the Errors page's one-click choice),
    #: ``(entity type or glob, comparator or "ignore")``.
    comparators: tuple[tuple[str, str], ...] = ()
    #: The rules of an uploaded rules file (below the user's).
    rules_file: FieldRules = FieldRules()
    #: Apply the suggested rules (inferred from the files) below the others.
    apply_suggested: bool = False
    families: tuple[str, ...] = ("kieval",)
    cer_threshold: float = 0.30
    structure: str = "uploaded"
    #: The server's limits (``KIEVAL_...`` variables, read when the options are made).
    limits: Limits = field(default_factory=lambda: Limits.from_env("app"))

    def load_options(self, role: str) -> LoadOptions:
        """Load options of the ground truth (``role="gt"``) or of a prediction file."""
        fmt = self.gt_format if role == "gt" else self.pred_format
        return LoadOptions(
            format=fmt,
            key=self.key or None,
            aliases=self.aliases,
            meta=self.meta + (self.gt_meta if role == "gt" else ()),
            related_fields=self.related_fields,
            limits=self.limits,
        )

    @property
    def normalizer(self) -> Normalizer:
        """The normaliser; each field's comparator comes from :attr:`rules`."""
        return Normalizer(casefold=self.casefold, number_punctuation=self.number_punctuation)

    @property
    def rules(self) -> FieldRules:
        """The field rules in force: the user's over the rules file's, and whether the
        suggested ones apply below them."""
        user = FieldRules.from_mapping(dict(self.comparators), declared_by="the rules panel")
        return FieldRules(apply_suggested=self.apply_suggested).over(user.over(self.rules_file))

    @property
    def peer_options(self) -> PeerOptions:
        return PeerOptions(cer_threshold=self.cer_threshold, structure=self.structure)

    @property
    def peer_families(self) -> tuple[str, ...]:
        return tuple(f for f in self.families if f != "kieval")


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
