"""Page images (SPEC 6.7): every accepted layout, and one message per file that cannot be
used, the rest kept."""

from __future__ import annotations

import io
import sys
import zipfile

import pypdfium2 as pdfium
import pytest
from builders import large_pdf, tiff_frames
from PIL import Image

from kieval_core import KievalInputError
from kieval_core.limits import LimitExceeded
from kieval_core.read.page_images import (
    DISPLAY_SIDE,
    ImageLimits,
    directory_files,
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
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
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


# --- issue 33: what a set of page images costs, read from the headers (N1, N11, N6) ----------


def _timed_read(data: bytes, name: str):
    import time

    limits = ImageLimits()
    started = time.perf_counter()
    try:
        result = read_page_images(image_files(data, name, limits), name, limits)
    except KievalInputError as exc:
        result = exc
    return result, time.perf_counter() - started


def test_a_tiff_of_200000_frames_is_read_from_its_first_frame_within_20_s():
    data = _zip({"validation_0001.tif": tiff_frames(200_000)})
    assert len(data) < 2_000_000  # small on disk (the red team's was 578 KB)
    images, seconds = _timed_read(data, "frames.zip")
    assert seconds < 20  # before: every frame walked to count them (about 13 minutes)
    assert images.n_pages("validation_0001") == 1 and not images.problems
    assert images.page("validation_0001", 1).width == 1


def test_a_set_of_large_pages_is_refused_from_its_headers_within_20_s():
    pdf = large_pdf(50)
    png = _png(7_000, 7_000, mode="L")
    cases = {"pages.pdf": pdf, "pngs.zip": _zip({f"validation_{i:04d}.png": png for i in range(20)})}
    assert len(pdf) < 20_000 and len(cases["pngs.zip"]) < 2_000_000
    for name, data in cases.items():
        refused, seconds = _timed_read(data, name)
        assert seconds < 20, name  # before: 54 s and 25 s, every page decoded
        assert isinstance(refused, LimitExceeded), name
        assert str(refused).startswith(f"{name}: ")
        assert ("page image file(s) is above the limit of 400,000,000 pixels (raise it with "
                "--max-images-pixels or KIEVAL_MAX_IMAGES_PIXELS)") in str(refused)
    assert "2,363,281,250 pixels in 1 page image file(s)" in str(_timed_read(pdf, "pages.pdf")[0])
    few = _timed_read(_zip({"a.png": png, "b.png": png}), "two.zip")[0]
    assert few.n_pages("a") == few.n_pages("b") == 1  # 98 million pixels: read


def test_pages_that_come_from_several_files_are_named_and_one_is_used():
    files = {"DOC.png": _png(10, 10), "DOC.jpg": _png(20, 20), "B/1.png": _png(30, 30),
             "B/01.png": _png(40, 40), "C.pdf": _pdf(2), "C.png": _png(50, 50), "D.png": _png(60, 60)}
    images = read_page_images(files, "p.zip")
    assert list(images.problems) == [
        "p.zip: B page 1 comes from 2 files (B/01.png, B/1.png); using B/01.png",
        "p.zip: C page 1 comes from 2 files (C.pdf, C.png); using C.pdf",
        "p.zip: DOC page 1 comes from 2 files (DOC.jpg, DOC.png); using DOC.jpg",
    ]
    assert images.page("B", 1).width == 40 and images.page("DOC", 1).width == 20
    assert images.n_pages("C") == 2 and images.page("C", 1).width == 220  # 144 pt at 110 dpi


def test_names_that_climb_out_are_not_read():
    files = {"../evil.png": _png(), "/abs.png": _png(), "a/../../b.png": _png(), "ok.png": _png()}
    images = read_page_images(files, "p.zip")
    assert set(images.pages) == {"ok"}
    refused = ("../evil.png", "/abs.png", "a/../../b.png")
    said = "is not read (a name with '..' or an absolute path)"
    assert sorted(images.problems) == sorted(f"p.zip: {n!r} {said}" for n in refused)


def test_a_directory_gives_its_regular_files_only_and_names_what_it_does_not_read(tmp_path, monkeypatch):
    import builtins

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(_png())
    pages = tmp_path / "pages"
    (pages / "B").mkdir(parents=True)
    (pages / "A.png").write_bytes(_png())
    (pages / "B" / "1.png").write_bytes(_png())
    (pages / "C.png").symlink_to(outside / "secret.png")
    (pages / "D").symlink_to(outside)
    (pages / "B" / "2.png").symlink_to(outside / "secret.png")
    (pages / "E.png").write_bytes(_png())
    real_open = builtins.open

    def refusing(path, *args, **kwargs):  # the tests run as root: a permission error, simulated
        if str(path).endswith("E.png"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    files, problems = directory_files(pages, ImageLimits())
    assert sorted(files) == ["A.png", "B/1.png"]
    linked = [f"pages/{name}: a symbolic link, not followed" for name in ("B/2.png", "C.png", "D")]
    assert problems == [*linked, "pages/E.png: not read (Permission denied)"]
    with pytest.raises(KievalInputError, match="of images is above the limit"):
        directory_files(pages, ImageLimits(max_bytes=100))


# --- the dashboard extra: without it the core works, and what needs it says what to install -------


@pytest.mark.parametrize(("hidden", "kind", "named"), [("PIL.Image", "png", "Pillow"),
                                                      ("pypdfium2", "pdf", "pypdfium2")])
def test_page_images_without_the_dashboard_extra_name_it(monkeypatch, hidden, kind, named):
    from kieval_core import KievalOptionError
    from kieval_core.read.page_images import page_pixels, read_image, read_pdf

    monkeypatch.setitem(sys.modules, hidden, None)  # as if not installed
    read = read_pdf if kind == "pdf" else read_image
    for call in (lambda: page_pixels(b"", kind, ImageLimits()), lambda: read(b"", "p", ImageLimits())):
        with pytest.raises(KievalOptionError) as raised:
            call()
        assert str(raised.value) == (f"page images need {named} (the dashboard extra): "
                                     "pip install 'kieval-workbench[dashboard]'")


def test_kieval_dashboard_without_streamlit_says_what_to_install(monkeypatch, capsys):
    from kieval_core.cli import main

    monkeypatch.setitem(sys.modules, "streamlit", None)  # as if not installed
    assert main(["dashboard", "--port", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "error: the dashboard needs Streamlit: pip install 'kieval-workbench[dashboard]'\n"
