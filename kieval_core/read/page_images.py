"""Page images of the documents (SPEC 6.7): read once, downscaled once, never required.

Accepted, in a directory or a ``.zip`` (or one file alone):

* ``DOC_ID.png|jpg|jpeg|webp|tif|tiff``: the one page of document ``DOC_ID``;
* ``DOC_ID/PAGE.png`` (any of those suffixes): page ``PAGE`` (1-based) of ``DOC_ID``;
* ``DOC_ID.pdf``: every page of ``DOC_ID``, rendered with ``pypdfium2`` (no system package).

Each page is kept as a JPEG of at most :data:`DISPLAY_SIDE` pixels on its longer side,
with the size of the original (boxes are in the original's pixels). What cannot be used
is named in one message per file and nothing else is lost: a file that is no readable
image, an image above :attr:`ImageLimits.max_pixels` (a decompression bomb: Pillow never
decodes it), a PDF with more pages than :attr:`ImageLimits.max_pages` (the first pages
are shown), a name that is no document of the ground truth (:func:`unknown_documents`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import warnings
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..exceptions import KievalInputError, KievalOptionError
from ..limits import LimitExceeded, Limits

#: The ``dashboard`` extra: Streamlit, and Pillow and pypdfium2 for the page images.
INSTALL_HINT = "pip install 'kieval-workbench[dashboard]'"
#: The modules of the ``dashboard`` extra, by the name of the package that brings each.
DASHBOARD_MODULES = {"Streamlit": "streamlit", "Pillow": "PIL", "pypdfium2": "pypdfium2"}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff")
PDF_SUFFIX = ".pdf"
#: Longer side of a page as the dashboard keeps it.
DISPLAY_SIDE = 1200
#: Resolution a PDF page is rendered at (points are 1/72 inch).
PDF_DPI = 110
#: Bytes a decoded pixel takes at most (RGBA) while its page is downscaled.
BYTES_PER_PIXEL = 4


def missing_dashboard_packages() -> list[str]:
    """The packages of the ``dashboard`` extra that are not installed (found without
    importing them)."""
    return [package for package, module in DASHBOARD_MODULES.items()
            if importlib.util.find_spec(module) is None]


def _imaging(module: str):
    """Pillow's ``PIL.Image`` or ``pypdfium2``, or a clear error naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        package = "pypdfium2" if module == "pypdfium2" else "Pillow"
        msg = f"page images need {package} (the dashboard extra): {INSTALL_HINT}"
        raise KievalOptionError(msg) from None


@dataclass(frozen=True)
class ImageLimits:
    """Caps on page images, from the process's :class:`~kieval_core.limits.Limits`.

    Parameters
    ----------
    max_pixels : int
        Largest page (width x height) decoded (``image_pixels``, default 50 million: a
        7,000 x 7,000 scan). A larger image is refused before it is decoded.
    max_pages : int
        Pages rendered of one PDF (``pdf_pages``, default 50).
    max_bytes : int
        All images together (a zip once uncompressed: ``uncompressed_mb``).
    max_total_pixels : int
        Every page of one set together (``images_pixels``, default 400 million), from the
        headers: a set above it is refused before any page is decoded.
    """

    max_pixels: int = 50_000_000
    max_pages: int = 50
    max_bytes: int = 1 << 30
    max_total_pixels: int = 400_000_000

    @classmethod
    def of(cls, limits: Limits) -> ImageLimits:
        return cls(int(limits.image_pixels), int(limits.pdf_pages), limits.uncompressed_bytes,
                   int(limits.images_pixels))


@dataclass(frozen=True)
class Page:
    """One page as shown: a JPEG, and the size of the original in pixels."""

    jpeg: bytes = field(repr=False)
    width: int
    height: int
    shown_width: int
    shown_height: int


@dataclass(frozen=True)
class PageImages:
    """The pages of every document that has images, and one message per file not used."""

    source: str
    pages: Mapping[str, tuple[Page, ...]]
    problems: tuple[str, ...] = ()

    def page(self, doc_id: str, number: int) -> Page | None:
        """Page ``number`` (1-based) of a document, None when there is none."""
        pages = self.pages.get(doc_id, ())
        return pages[number - 1] if 1 <= number <= len(pages) else None

    def n_pages(self, doc_id: str) -> int:
        return len(self.pages.get(doc_id, ()))

    @property
    def n_bytes(self) -> int:
        return sum(len(p.jpeg) for pages in self.pages.values() for p in pages)


def _shown(image, limits: ImageLimits) -> Page:
    pil = _imaging("PIL.Image")
    width, height = image.size
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGBA")
        flat = pil.new("RGB", image.size, "white")
        flat.paste(image, mask=image.getchannel("A"))
        image = flat
    scale = min(1.0, DISPLAY_SIDE / max(width, height))
    if scale < 1.0:
        image = image.resize((max(1, round(width * scale)), max(1, round(height * scale))),
                             pil.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return Page(out.getvalue(), width, height, image.size[0], image.size[1])


def read_image(data: bytes, source: str, limits: ImageLimits) -> Page:
    """One image file as a page; refuses what is no image and what is above the pixel cap
    (the size is read from the header, before anything is decoded)."""
    pil = _imaging("PIL.Image")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pil.DecompressionBombWarning)
            image = pil.open(io.BytesIO(data))
            width, height = image.size
            if width * height > limits.max_pixels:
                raise KievalInputError(source, None, _too_large(width, height, limits))
            image.load()  # the first frame of a multi-frame TIFF: never count its frames
            return _shown(image, limits)
    except (pil.DecompressionBombError, pil.DecompressionBombWarning):
        msg = f"refused as a decompression bomb (above Pillow's pixel limit of {pil.MAX_IMAGE_PIXELS:,})"
        raise KievalInputError(source, None, msg) from None
    except (pil.UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise KievalInputError(source, None, f"not a readable image ({exc})") from None


def page_pixels(data: bytes, kind: str, limits: ImageLimits) -> int:
    """Pixels a file will decode, from its header alone (an image's first frame, the
    pages of a PDF that are rendered); 0 for a file that cannot be read (reading it says why)."""
    reader = _imaging("pypdfium2" if kind == "pdf" else "PIL.Image")
    try:
        if kind == "pdf":
            document = reader.PdfDocument(data)
            try:
                scale = PDF_DPI / 72
                sizes = (document.get_page_size(i) for i in range(min(len(document), limits.max_pages)))
                return sum(round(w * scale) * round(h * scale) for w, h in sizes)
            finally:
                document.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            width, height = reader.open(io.BytesIO(data)).size
        return width * height
    except Exception:  # noqa: BLE001 - any unreadable file: read_image/read_pdf name it
        return 0


def _too_large(width: int, height: int, limits: ImageLimits) -> str:
    return (f"{width:,} x {height:,} pixels is above the limit of {limits.max_pixels:,} pixels "
            "(raise it with --max-image-pixels or KIEVAL_MAX_IMAGE_PIXELS)")


def read_pdf(data: bytes, source: str, limits: ImageLimits) -> tuple[tuple[Page, ...], str | None]:
    """The pages of a PDF (at most ``max_pages``), and a message when pages were left out."""
    pdfium = _imaging("pypdfium2")

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise KievalInputError(source, None, f"not a readable PDF ({exc})") from None
    try:
        n = len(document)
        if n == 0:
            raise KievalInputError(source, None, "the PDF has no pages")
        pages = []
        for i in range(min(n, limits.max_pages)):
            page = document[i]
            width, height = page.get_size()
            scale = PDF_DPI / 72
            if width * height * scale * scale > limits.max_pixels:
                raise KievalInputError(source, f"page {i + 1}", _too_large(round(width * scale),
                                                                        round(height * scale), limits))
            pages.append(_shown(page.render(scale=scale).to_pil(), limits))
        note = None
        if n > limits.max_pages:
            note = (f"{source}: {n:,} pages; the first {limits.max_pages} are shown "
                    "(raise the limit with --max-pdf-pages or KIEVAL_MAX_PDF_PAGES)")
        return tuple(pages), note
    finally:
        document.close()


def _document_and_page(name: str) -> tuple[str, int | None, str] | None:
    """``(doc_id, page or None, kind)`` of a file name, None for a file that is no page."""
    path = PurePosixPath(name)
    suffix = path.suffix.lower()
    if suffix not in (*IMAGE_SUFFIXES, PDF_SUFFIX) or path.name.startswith("."):
        return None
    kind = "pdf" if suffix == PDF_SUFFIX else "image"
    parent = path.parent.name
    if kind == "image" and parent and path.stem.isdigit():
        return parent, int(path.stem), kind
    return path.stem, None, kind


def read_page_images(files: Mapping[str, bytes], source: str, limits: ImageLimits = ImageLimits()
                     ) -> PageImages:
    """Pages of every document from ``{relative path: bytes}``; one message per file not used.

    Every page's pixels are read from the headers first: a set above
    :attr:`ImageLimits.max_total_pixels` is refused (:class:`LimitExceeded`) before any
    page is decoded. A name with a ``..`` or absolute part is not read; two files standing
    for the same page are named, the first by name is used.
    """
    problems: list[str] = []
    pages_of = _pages_of(files, source, problems)
    chosen = [named[0] for named in pages_of.values()]
    total = sum(page_pixels(files[name], kind, limits) for name, kind in chosen)
    if total > limits.max_total_pixels:
        measured = f"{total:,} pixels in {len(chosen):,} page image file(s)"
        raise LimitExceeded(source, "images_pixels", measured, limits.max_total_pixels)
    found: dict[str, dict[int, Page]] = {}
    taken: dict[tuple[str, int], str] = {}  # the file each page is shown from
    given: dict[str, tuple[int, ...]] = {}  # the pages each file read gave
    for name, kind in sorted(chosen):
        doc_id = _document_and_page(name)[0]
        read = _read_file(files[name], name, kind, source, limits, problems)
        if read is None:
            continue
        given[name] = tuple(read)
        for page, image in read.items():
            if taken.setdefault((doc_id, page), name) == name:
                found.setdefault(doc_id, {})[page] = image
    problems += _collisions(pages_of, given, taken, source)
    pages = {doc_id: _in_order(doc_id, by_number, source, problems) for doc_id, by_number in found.items()}
    if not pages and not problems:
        problems.append(f"{source}: no page image (expected DOC_ID.png, .jpg, .jpeg, .webp, .tif, "
                        "DOC_ID/PAGE.png or DOC_ID.pdf)")
    return PageImages(source, {d: p for d, p in pages.items() if p}, tuple(problems))


def _pages_of(files: Mapping[str, bytes], source: str, problems: list[str]
              ) -> dict[tuple[str, int | None], list[tuple[str, str]]]:
    """The files standing for each page, ``(doc_id, page)`` (page None: a PDF's pages), in
    name order, as ``(name, kind)``; names that climb out are said in ``problems``."""
    pages_of: dict[tuple[str, int | None], list[tuple[str, str]]] = {}
    for name in sorted(files):
        parsed = _document_and_page(name)
        if parsed is None:
            continue
        if _escapes(name):
            problems.append(f"{source}: {name!r} is not read (a name with '..' or an absolute path)")
            continue
        doc_id, number, kind = parsed
        pages_of.setdefault((doc_id, number or (None if kind == "pdf" else 1)), []).append((name, kind))
    return pages_of


def _read_file(data: bytes, name: str, kind: str, source: str, limits: ImageLimits,
               problems: list[str]) -> dict[int, Page] | None:
    """The pages one file gives by number, or None (said in ``problems``) when it cannot be used."""
    doc_id = _document_and_page(name)[0]
    where = f"{source}/{name}" if source else name
    try:
        if kind == "pdf":
            pdf_pages, note = read_pdf(data, where, limits)
            if note:
                problems.append(note)
            return {i + 1: p for i, p in enumerate(pdf_pages)}
        return {_document_and_page(name)[1] or 1: read_image(data, where, limits)}
    except KievalInputError as exc:
        problems.append(f"{exc}; document {doc_id!r} is shown without it")
        return None


def _escapes(name: str) -> bool:
    """Whether a member name climbs out of its archive or directory (``..``, ``/x``, ``C:``)."""
    path = PurePosixPath(name.replace("\\", "/"))
    return path.is_absolute() or ".." in path.parts or (len(name) > 1 and name[1] == ":")


def _collisions(pages_of: Mapping[tuple[str, int | None], list[tuple[str, str]]],
                given: Mapping[str, tuple[int, ...]], taken: Mapping[tuple[str, int], str],
                source: str) -> list[str]:
    """One message per page that more than one file stands for: the files and the one used.
    A file not read because another had its name gives the pages that other one gave."""
    by_page: dict[tuple[str, int], list[str]] = {}
    for (doc_id, _), named in pages_of.items():
        pages = given.get(named[0][0], ())
        for name, _ in named:
            for page in pages:
                by_page.setdefault((doc_id, page), []).append(name)
    return [f"{source}: {doc_id} page {n} comes from {len(names)} files ({', '.join(sorted(names))}); "
            f"using {taken[doc_id, n]}" for (doc_id, n), names in sorted(by_page.items()) if len(names) > 1]


def _in_order(doc_id: str, by_number: Mapping[int, Page], source: str,
              problems: list[str]) -> tuple[Page, ...]:
    numbers = sorted(by_number)
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"{source}: document {doc_id!r} has pages {', '.join(map(str, numbers))}; they "
                        f"are shown as pages 1 to {len(numbers)}")
    return tuple(by_number[n] for n in numbers)


def unknown_documents(images: PageImages, doc_ids: Iterable[str]) -> list[str]:
    """One message per document with images that the ground truth does not have."""
    known = set(doc_ids)
    return [f"{images.source}: images for {doc_id!r}, which is no document of the ground truth; "
            "they are not used" for doc_id in images.pages if doc_id not in known]


def image_files(data: bytes, name: str, limits: ImageLimits) -> dict[str, bytes]:
    """The files of an upload: a zip's members (paths kept, sizes capped while reading,
    never trusting the declared sizes), or the one file itself."""
    if not name.lower().endswith(".zip"):
        _check_total(len(data), name, limits)
        return {PurePosixPath(name).name: data}
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir() and "__MACOSX" not in m.filename]
        _check_total(sum(m.file_size for m in members), f"{name} (uncompressed)", limits)
        files, left = {}, limits.max_bytes
        for member in members:
            with archive.open(member) as handle:
                content = handle.read(left + 1)
            left -= len(content)
            if left < 0:  # the declared sizes were wrong
                _check_total(limits.max_bytes + 1, f"{name} (uncompressed)", limits)
            files[member.filename] = content
        return files
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
        raise KievalInputError(name, None, f"not a readable zip archive ({exc})") from None


def images_cost(data: bytes, name: str, limits: ImageLimits) -> int:
    """Estimated peak memory of reading an upload of page images (:func:`image_files`, then
    :func:`read_page_images`) from its size alone, before anything is opened: the upload,
    its files (a zip's declared sizes, never more than :attr:`ImageLimits.max_bytes`) and
    the largest page the caps let through decoded (pages are decoded one at a time). A few
    KB can hold pages of millions of pixels: the cost is the pixels', not the bytes'.

    >>> images_cost(b"x" * 1000, "a.png", ImageLimits(max_pixels=1000)) == 2000 + 4000
    True
    """
    size = len(data)  # also for a zip that cannot be opened (reading it says why)
    if name.lower().endswith(".zip"):
        with (contextlib.suppress(zipfile.BadZipFile, OSError, RuntimeError, EOFError),
              zipfile.ZipFile(io.BytesIO(data)) as archive):
            size = sum(m.file_size for m in archive.infolist())
    page = min(limits.max_pixels, limits.max_total_pixels) * BYTES_PER_PIXEL
    return len(data) + min(size, limits.max_bytes) + page


def directory_files(directory: str | Path, limits: ImageLimits) -> tuple[dict[str, bytes], list[str]]:
    """The files of a directory of page images (one level of ``DOC_ID/`` folders) and one
    message per entry not read. Only regular files inside the directory are read: a
    symbolic link (to a file or a folder, inside or out) is named and not followed, and
    each file is read with a cap (what is left of :attr:`ImageLimits.max_bytes`), whatever
    size it says it has. A file that cannot be read is one message; the others are kept."""
    root = Path(directory)
    if not root.is_dir():
        raise KievalInputError(str(root), None, "no such directory")
    files: dict[str, bytes] = {}
    problems: list[str] = []
    left = limits.max_bytes
    for path, name in _regular_files(root, problems):
        try:
            with open(path, "rb", buffering=0) as handle:
                content = handle.read(left + 1)
        except OSError as exc:
            problems.append(f"{root.name}/{name}: not read ({exc.strerror or type(exc).__name__})")
            continue
        left -= len(content)
        if left < 0:
            _check_total(limits.max_bytes + 1, str(root), limits)
        files[name] = content
    return files, problems


def _regular_files(root: Path, problems: list[str]) -> list[tuple[Path, str]]:
    """``(path, name relative to root)`` of the regular files of ``root`` and of its
    folders (one level), in name order; symbolic links named in ``problems``."""
    found = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.is_symlink():
            problems.append(f"{root.name}/{entry.name}: a symbolic link, not followed")
        elif entry.is_dir(follow_symlinks=False):
            try:
                inner = sorted(os.scandir(entry.path), key=lambda e: e.name)
            except OSError as exc:
                problems.append(f"{root.name}/{entry.name}: not read ({exc.strerror or type(exc).__name__})")
                continue
            for child in inner:
                if child.is_symlink():
                    problems.append(f"{root.name}/{entry.name}/{child.name}: a symbolic link, not followed")
                elif child.is_file(follow_symlinks=False):
                    found.append((Path(child.path), f"{entry.name}/{child.name}"))
        elif entry.is_file(follow_symlinks=False):
            found.append((Path(entry.path), entry.name))
    return found


def _check_total(size: int, source: str, limits: ImageLimits) -> None:
    if size > limits.max_bytes:
        msg = (f"{size / 2**20:,.0f} MiB of images is above the limit of {limits.max_bytes / 2**20:,.0f} MiB "
               "(raise it with --max-uncompressed or KIEVAL_MAX_UNCOMPRESSED_MB)")
        raise KievalInputError(source, None, msg)
