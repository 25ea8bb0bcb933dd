"""Page images (SPEC 6.7): every accepted layout, and one message per file that cannot be
used, the rest kept."""

from __future__ import annotations

import io
import zipfile

import pypdfium2 as pdfium
import pytest
from PIL import Image

from kieval_core import KievalInputError
from kieval_core.read.page_images import (
    DISPLAY_SIDE,
    ImageLimits,
    image_files,
    read_page_images,
    unknown_documents,
)


def _png(width=40, height=60, color="white", mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), color).save(out, "PNG")
    return out.getvalue()


def _pdf(pages: int) -> bytes:
    document = pdfium.PdfDocument.new()
    for _ in range(pages):
        document.new_page(144, 216)  # 2 x 3 inches
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_every_layout_gives_pages_in_order_with_their_original_size():
    jpeg = io.BytesIO()
    Image.new("RGB", (3200, 800), "gray").save(jpeg, "JPEG")
    files = {"a.png": _png(40, 60), "b/2.png": _png(10, 10), "b/1.png": _png(20, 30, mode="RGBA"),
             "c.jpg": jpeg.getvalue(), "d.pdf": _pdf(3), "notes.txt": b"not an image"}
    images = read_page_images(files, "pages.zip")
    assert images.problems == ()
    assert {d: images.n_pages(d) for d in images.pages} == {"a": 1, "b": 2, "c": 1, "d": 3}
    assert (images.page("b", 1).width, images.page("b", 2).width) == (20, 10)
    wide = images.page("c", 1)
    assert (wide.width, wide.height) == (3200, 800)  # boxes are in the original's pixels
    assert (wide.shown_width, wide.shown_height) == (DISPLAY_SIDE, DISPLAY_SIDE // 4)
    pdf_page = images.page("d", 1)
    assert (pdf_page.width, pdf_page.height) == (220, 330)  # 110 dpi
    assert images.page("d", 4) is None and images.page("x", 1) is None


def test_a_corrupt_image_is_named_and_the_others_are_kept():
    images = read_page_images({"a.png": _png(), "b.png": b"\x89PNG\r\n\x1a\n garbage"}, "pages.zip")
    assert images.n_pages("a") == 1 and images.n_pages("b") == 0
    (problem,) = images.problems
    assert problem.startswith("pages.zip/b.png: not a readable image")
    assert "document 'b' is shown without it" in problem


def test_a_decompression_bomb_is_refused_before_it_is_decoded():
    bomb = _png(20_000, 20_000, color=0, mode="1")  # 400 million pixels in a few kB
    assert len(bomb) < 200_000
    images = read_page_images({"bomb.png": bomb, "a.png": _png()}, "pages.zip")
    assert images.n_pages("a") == 1
    (problem,) = images.problems
    assert "bomb.png" in problem and "decompression bomb" in problem
    capped = read_page_images({"big.png": _png(400, 300)}, "p", ImageLimits(max_pixels=100_000))
    assert "400 x 300 pixels is above the limit of 100,000 pixels" in capped.problems[0]


def test_a_thousand_page_pdf_shows_its_first_pages_and_says_so():
    images = read_page_images({"long.pdf": _pdf(1000)}, "pages.zip", ImageLimits(max_pages=5))
    assert images.n_pages("long") == 5
    assert images.problems == ("pages.zip/long.pdf: 1,000 pages; the first 5 are shown "
                               "(raise the limit with --max-pdf-pages or KIEVAL_MAX_PDF_PAGES)",)


def test_images_of_unknown_documents_are_named():
    images = read_page_images({"a.png": _png(), "zzz.png": _png()}, "pages.zip")
    assert unknown_documents(images, ["a", "b"]) == [
        "pages.zip: images for 'zzz', which is no document of the ground truth; they are not used"]


def test_zip_sizes_are_capped_while_reading():
    data = _zip({"a.png": _png(), "b.png": _png()})
    assert set(image_files(data, "p.zip", ImageLimits())) == {"a.png", "b.png"}
    with pytest.raises(KievalInputError, match="above the limit"):
        image_files(data, "p.zip", ImageLimits(max_bytes=100))
    with pytest.raises(KievalInputError, match="not a readable zip"):
        image_files(b"PK\x03\x04 broken", "p.zip", ImageLimits())


def test_no_page_image_at_all_is_said():
    assert read_page_images({"readme.txt": b"x"}, "p.zip").problems[0].startswith("p.zip: no page image")
