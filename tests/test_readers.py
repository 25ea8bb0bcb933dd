"""Every reader of the registry (``READERS``) with a fixture of its own: read from a path
and as an upload (a file by its name, a directory as a ``.zip``), found by auto-detection
when the reader has a sniffer, and named in what an upload may be. Adding a reader without
a fixture here fails :func:`test_every_reader_has_a_fixture`."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from kieval_core import LoadOptions, load, load_bytes
from kieval_core.read.formats import Sample, detect_directory_format, detect_file_format
from kieval_core.read.readers import READERS, upload_suffixes

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "readers"
#: The two receipts of the JSON, JSONL, JSON-directory and long-table fixtures (one content).
RECEIPTS = {("menu.nm", "Tea"), ("menu.price", "5.00"), ("menu.nm", "Cake"), ("menu.price", "3.50"),
            ("total", "5.00"), ("total", "7.00"), ("date", "02/01/2024")}
#: Reader -> (fixture, options beyond auto-detection, its documents, its (entity type, value) pairs).
CASES = {
    "json": ("gt.json", None, ("r1", "r2"), RECEIPTS),
    "jsonl": ("gt.jsonl", None, ("r1", "r2"), RECEIPTS),
    "json-dir": ("json-dir", None, ("r1", "r2"), RECEIPTS),
    "table": ("gt.csv", None, ("r1", "r2"), RECEIPTS),
    "cord": ("cord.jsonl", None, ("r1", "r2"), {("menu.nm", "Tea"), ("total.total_price", "7.00")}),
    "kieval-csv": ("kieval-csv", None, ("0", "1"), {("menu.nm", "-TICKET CP")}),
    "iob2": ("gt.iob2", None, ("1", "2"), {("total", "5.00"), ("date", "02/01/2024"), ("total", "7.00")}),
    "lists": ("lists.jsonl", {"format": "lists", "related_fields": ("description", "amount")}, ("s1",),
              {("account", "123"), ("description", "ATM"), ("amount", "$100")}),
    "funsd": ("82092117.json", None, ("82092117",), {("qa.question", "TO:"), ("qa.answer", "Bob")}),
    "docile": ("inv1.json", None, ("inv1",), {("date_due", "1/02/02"), ("line_item_code", "42630")}),
}


def _options(case) -> LoadOptions:
    return LoadOptions(**(case[1] or {}))


def _pairs(ds) -> set[tuple[str, str]]:
    return set(zip(ds.entities["entity_type"].astype(str), ds.entities["value"].astype(str), strict=True))


def _zipped(folder: Path) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.writestr(f"{folder.name}/{path.name}", path.read_bytes())
    return out.getvalue()


def test_every_reader_has_a_fixture():
    assert set(CASES) == set(READERS)


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_reader_reads_its_fixture_from_a_path_and_as_an_upload(name):
    fixture, _, doc_ids, pairs = CASES[name]
    path = FIXTURES / fixture
    options = _options(CASES[name])
    from_path = load(path, options)
    assert from_path.format == name
    assert from_path.doc_ids == doc_ids
    assert pairs == _pairs(from_path) if pairs is RECEIPTS else pairs <= _pairs(from_path)
    if path.is_dir():
        upload = load_bytes(_zipped(path), f"{path.name}.zip", options)
    else:
        upload = load_bytes(path.read_bytes(), path.name, options)
        assert path.suffix in upload_suffixes()  # the app's uploader takes the file as it is
    assert upload.format == name
    assert upload.entities.equals(from_path.entities)


@pytest.mark.parametrize("name", sorted(READERS))
def test_auto_detection_finds_exactly_the_readers_with_a_sniffer(name):
    reader = READERS[name]
    path = FIXTURES / CASES[name][0]
    if path.is_dir():
        files = {p.name: p.read_bytes() for p in sorted(path.iterdir())}
        accepting = [r.name for r in READERS.values() if r.sniff_files and r.sniff_files(files)]
        detected = detect_directory_format(files, str(path))
    else:
        sample = Sample(path.read_bytes(), path.suffix, str(path))
        accepting = [r.name for r in READERS.values() if r.sniff and r.sniff(sample)]
        detected = detect_file_format(path.read_bytes(), path.suffix, str(path))
    if reader.sniff is None and reader.sniff_files is None:
        assert name not in accepting  # read only when named (lists: JSON records as jsonl)
        assert detected != name
    else:
        assert accepting == [name]  # no two sniffers accept one input: their order does not matter
        assert detected == name


def test_a_reader_claims_its_suffixes():
    for reader in READERS.values():
        assert reader.suffixes, reader.name
        assert all(s.startswith(".") and s == s.lower() for s in reader.suffixes), reader.name
    assert {".iob2", ".bio", ".zip", ".parquet"} <= set(upload_suffixes())


def test_the_apps_upload_types_are_the_readers_suffixes():
    from kieval_app.uploads import UPLOAD_TYPES

    assert {f".{t}" for t in UPLOAD_TYPES} == set(upload_suffixes())
    assert "iob2" in UPLOAD_TYPES  # a bare .iob2 file can be uploaded
