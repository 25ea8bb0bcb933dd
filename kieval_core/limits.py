"""What one input, one session and one process may cost: the limits, stated once (SPEC 8b).

:class:`Limits` is read by the loaders, the CLI and the dashboard alike. Every limit has a
default for each context (the CLI: generous, for batch work on one's own machine; the
dashboard: a server shared by a team), an environment variable and a command-line
option (:data:`LIMITS`, which the README's "Limits" table follows). Sizes are checked on
what a file *will* cost, before it is read: the uncompressed bytes of a zip (members read
with an explicit byte cap, never trusting the sizes it declares), Parquet rows and
uncompressed bytes from the footer, and an estimate of the memory a load takes
(:func:`load_cost`) against the process budget. A refusal is a :class:`LimitExceeded`
naming the file, the limit and how to raise it.

>>> limits = Limits.defaults("cli")
>>> limits.file_mb, limits.zip_ratio
(1024.0, 200.0)
>>> Limits.from_env("app", {"KIEVAL_MAX_FILE_MB": "50"}).file_mb
50.0
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from .exceptions import KievalInputError, KievalOptionError

MIB = 2**20
#: Contexts with their own defaults: the command line and the dashboard server.
CONTEXTS = ("cli", "app")
#: Peak memory of reading text input, per byte of text (bench/bench_memory.py: 4-4.6x).
BYTES_PER_TEXT_BYTE = 5
#: Peak memory of reading one entity (row) of input (bench/bench_memory.py: ~250 bytes).
BYTES_PER_ENTITY = 250
#: Below this many bytes a zip member's compression ratio is not checked (a tiny file of
#: blanks compresses a thousandfold and costs nothing).
RATIO_FLOOR = MIB
#: A load or scoring estimated at this many bytes or more is heavy: at most
#: :attr:`Limits.heavy_loads` of them run at once in the dashboard (one 13 MB JSONL file).
HEAVY_BYTES = 64 * MIB
#: Peak memory of group matching per cell of a document's square matrix of groups of one
#: type (5,000 menu lines a side: 3.9 GiB; 2,000: 0.7 GiB).
BYTES_PER_MATCH_CELL = 160


@dataclass(frozen=True)
class LimitSpec:
    """One limit: its field, environment variable, command-line option and meaning."""

    field: str
    env: str
    option: str
    unit: str
    meaning: str


#: Every limit, in the order of the README's table.
LIMITS = (
    LimitSpec("file_mb", "KIEVAL_MAX_FILE_MB", "--max-file-size", "MiB",
              "bytes of one input file (an upload, or a file, directory or shard on the command line)"),
    LimitSpec("uncompressed_mb", "KIEVAL_MAX_UNCOMPRESSED_MB", "--max-uncompressed", "MiB",
              "uncompressed bytes of one input: a zip's members as they inflate, a Parquet file's "
              "columns from its footer"),
    LimitSpec("zip_ratio", "KIEVAL_MAX_ZIP_RATIO", "--max-zip-ratio", "x",
              "compression ratio of one zip member (members under 1 MiB are not checked)"),
    LimitSpec("rows", "KIEVAL_MAX_ROWS", "--max-rows", "rows",
              "entities (rows) of one input; a Parquet file's footer is checked before reading"),
    LimitSpec("session_mb", "KIEVAL_SESSION_MB", "--session-mb", "MiB",
              "dashboard: bytes one browser session may hold (its uploads and their results)"),
    LimitSpec("memory_mb", "KIEVAL_MEMORY_BUDGET_MB", "--memory-budget", "MiB",
              "the process's memory budget: a load or scoring whose estimated cost does not fit "
              "is refused (the dashboard answers 'busy')"),
    LimitSpec("image_pixels", "KIEVAL_MAX_IMAGE_PIXELS", "--max-image-pixels", "pixels",
              "pixels (width x height) of one page image, read from its header before it is "
              "decoded (a decompression bomb is refused)"),
    LimitSpec("images_pixels", "KIEVAL_MAX_IMAGES_PIXELS", "--max-images-pixels", "pixels",
              "pixels of one set of page images (an upload, or --images DIR), every page together, "
              "read from the headers before any is decoded"),
    LimitSpec("pdf_pages", "KIEVAL_MAX_PDF_PAGES", "--max-pdf-pages", "pages",
              "pages rendered of one PDF page image file (the first ones; the rest are named)"),
    LimitSpec("value_chars", "KIEVAL_MAX_VALUE_CHARS", "--max-value-chars", "characters",
              "characters of one value (comparing two values costs up to the product of their lengths)"),
    LimitSpec("groups_per_doc", "KIEVAL_MAX_GROUPS_PER_DOC", "--max-groups-per-doc", "groups",
              "groups of one type in one document (menu lines, line items): matching them costs the "
              "square of their number, about 160 bytes each (2,000 groups: 0.6 GiB)"),
    LimitSpec("values_per_group", "KIEVAL_MAX_VALUES_PER_GROUP", "--max-values-per-group", "values",
              "values of one type in one group (or in a document's non-group part): pairing the wrong "
              "ones costs the product of their numbers"),
    LimitSpec("heavy_loads", "KIEVAL_MAX_HEAVY_LOADS", "--max-heavy-loads", "loads",
              "dashboard: reads and scorings of large inputs (estimated at 64 MiB or more) that run at "
              "once; more wait their turn ('waiting for N other uploads to finish')"),
)
SPECS = {spec.field: spec for spec in LIMITS}
#: The limits that are counts (whole numbers); the others are sizes or a ratio.
WHOLE = ("rows", "image_pixels", "images_pixels", "pdf_pages", "value_chars", "groups_per_doc",
         "values_per_group", "heavy_loads")


def machine_memory_mb() -> float:
    """Memory of this machine (or of the container's cgroup, when it sets less), in MiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a small machine
        total = 8 * 2**30
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as file:
                text = file.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total / MIB


def session_default(memory_mb: float) -> float:
    """The dashboard's default session limit: a quarter of the memory budget, at least 256 MiB.

    >>> session_default(1500)
    375.0
    """
    return float(max(256, memory_mb // 4))


#: Share of the machine's memory a process may use by default, per context.
MEMORY_SHARE = {"cli": 0.8, "app": 0.5}


@dataclass(frozen=True)
class Limits:
    """The limits of one process (see the module docstring and :data:`LIMITS`).

    Sizes are in MiB (floats, so a test can set a few KiB); ``rows`` is a count;
    ``zip_ratio`` the largest uncompressed/compressed ratio of a zip member;
    ``heavy_loads`` how many heavy reads and scorings (:data:`HEAVY_BYTES`) a dashboard
    server runs at once: Python runs them on one core at a time (the GIL), so more in
    parallel finish no sooner and slow every other session's clicks.
    """

    file_mb: float
    uncompressed_mb: float
    zip_ratio: float
    rows: int
    session_mb: float
    memory_mb: float
    image_pixels: int = 50_000_000
    images_pixels: int = 400_000_000
    pdf_pages: int = 50
    value_chars: int = 100_000
    groups_per_doc: int = 2_000
    values_per_group: int = 2_000
    heavy_loads: int = 1

    def __post_init__(self) -> None:
        for spec in LIMITS:
            value = getattr(self, spec.field)
            if not value > 0:
                msg = f"{spec.option} ({spec.env}) must be positive, got {value!r}"
                raise KievalOptionError(msg)

    @classmethod
    def defaults(cls, context: str = "cli") -> Limits:
        """The defaults of ``context`` (``cli`` or ``app``); the memory budget is a share of
        the machine's memory (:data:`MEMORY_SHARE`)."""
        if context not in CONTEXTS:
            msg = f"unknown context {context!r}; choose one of {', '.join(CONTEXTS)}"
            raise KievalOptionError(msg)
        memory = round(machine_memory_mb() * MEMORY_SHARE[context])
        if context == "cli":
            return cls(file_mb=1024.0, uncompressed_mb=4096.0, zip_ratio=200.0, rows=10_000_000,
                       session_mb=float(memory), memory_mb=float(memory))
        return cls(file_mb=200.0, uncompressed_mb=512.0, zip_ratio=200.0, rows=5_000_000,
                   session_mb=session_default(memory), memory_mb=float(memory), value_chars=10_000,
                   groups_per_doc=1_000, values_per_group=1_000)

    @classmethod
    def from_env(cls, context: str = "cli", environ: Mapping[str, str] | None = None,
                 **overrides: float | None) -> Limits:
        """The defaults of ``context``, then the ``KIEVAL_...`` variables of ``environ``
        (default: the process's), then ``overrides`` that are not None (command-line options)."""
        environ = os.environ if environ is None else environ
        values = dataclasses.asdict(cls.defaults(context))
        for spec in LIMITS:
            text = environ.get(spec.env, "").strip()
            if text:
                values[spec.field] = _number(text, spec)
            if overrides.get(spec.field) is not None:
                values[spec.field] = overrides[spec.field]
        unknown = set(overrides) - set(SPECS)
        if unknown:
            msg = f"unknown limit(s) {', '.join(sorted(unknown))}"
            raise KievalOptionError(msg)
        session_given = environ.get(SPECS["session_mb"].env, "").strip() or overrides.get("session_mb")
        if context == "app" and not session_given:  # a share of the budget in force
            values["session_mb"] = session_default(values["memory_mb"])
        return cls(**{k: (int(v) if k in WHOLE else float(v)) for k, v in values.items()})

    def environ(self) -> dict[str, str]:
        """These limits as environment variables (for a server started with them)."""
        return {spec.env: f"{getattr(self, spec.field):g}" for spec in LIMITS}

    # --- bytes ---------------------------------------------------------------------

    @property
    def uncompressed_bytes(self) -> int:
        return int(self.uncompressed_mb * MIB)

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_mb * MIB)

    # --- checks ----------------------------------------------------------------------

    def check(self, field: str, amount: float, source: str, what: str, where: str | None = None) -> None:
        """Refuse ``amount`` (bytes, or rows for ``rows``, or a ratio) above the limit
        ``field``; ``what`` says what was measured ("uncompressed", "rows in the footer"),
        ``where`` the place in the file (a document), when there is one."""
        if self.above(field, amount):
            spec = SPECS[field]
            scale = MIB if spec.unit == "MiB" else 1
            raise LimitExceeded(source, spec, f"{_shown(amount / scale, spec)} {what}", getattr(self, field),
                                where)

    def above(self, field: str, amount: float) -> bool:
        """Whether ``amount`` is above the limit ``field`` (what :meth:`check` refuses)."""
        return amount > getattr(self, field) * (MIB if SPECS[field].unit == "MiB" else 1)

    def check_memory(self, cost: int, source: str) -> None:
        """Refuse a load whose estimated memory (:func:`load_cost`) exceeds the budget."""
        self.check("memory_mb", cost, source, "of memory estimated to read it")


class LimitExceeded(KievalInputError):
    """An input above a limit: names the file, the limit and how to raise it."""

    def __init__(self, source: str, spec: LimitSpec | str, measured: str, limit: float,
                 where: str | None = None) -> None:
        spec = SPECS[spec] if isinstance(spec, str) else spec
        self.spec, self.measured, self.limit = spec, measured, limit
        problem = (f"{measured} is above the limit of {_shown(limit, spec)} "
                   f"(raise it with {spec.option} or {spec.env})")
        super().__init__(source, where, problem)

    def __reduce__(self):
        return type(self), (self.source, self.spec.field, self.measured, self.limit, self.where)


def _shown(value: float, spec: LimitSpec) -> str:
    if spec.unit == "MiB":
        return f"{value:,.0f} MiB" if value >= 10 else f"{value:,.2f} MiB"
    if spec.unit == "x":
        return f"{value:,.0f}x"
    return f"{value:,.0f} {spec.unit}"


def _number(text: str, spec: LimitSpec) -> float:
    try:
        return float(text.replace("_", ""))
    except ValueError:
        msg = f"{spec.env}={text!r} is not a number"
        raise KievalOptionError(msg) from None


def load_cost(text_bytes: int, rows: int = 0) -> int:
    """Estimated peak memory of reading an input of ``text_bytes`` uncompressed bytes and
    ``rows`` entities (when known, e.g. from a Parquet footer), from the measured costs
    (:data:`BYTES_PER_TEXT_BYTE`, :data:`BYTES_PER_ENTITY`).

    >>> load_cost(100 * MIB) // MIB
    500
    """
    return max(text_bytes * BYTES_PER_TEXT_BYTE, rows * BYTES_PER_ENTITY)


def matching_cost(gt_groups: Mapping, pred_groups: Mapping) -> int:
    """Estimated peak memory of matching the groups of two inputs, from the number of
    groups of each (document, group type) on each side (:data:`BYTES_PER_MATCH_CELL` per
    cell of each square matrix, summed: an upper bound, blocks of one shape being solved
    together).

    >>> matching_cost({("d", "menu"): 1_000}, {("d", "menu"): 10, ("e", "menu"): 2}) // MIB
    152
    """
    keys = set(gt_groups) | set(pred_groups)
    return sum(max(gt_groups.get(k, 0), pred_groups.get(k, 0)) ** 2 for k in keys) * BYTES_PER_MATCH_CELL


__all__ = ["LIMITS", "LimitExceeded", "LimitSpec", "Limits", "load_cost", "machine_memory_mb",
           "matching_cost"]
