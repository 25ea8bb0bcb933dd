"""The limits of SPEC 8b and the red-team findings of issue 22 they answer: zip bombs
(finding 1), a small Parquet file of 20M rows (2), zip members that were dropped or
skipped without a word (7), Parquet and CSV inputs that ended in Arrow's own errors (8).

The bombs are real: a 1 MB zip inflating to 1000 MiB, one of 200 members of 5 MiB, and
one whose central directory says a member has 100 bytes. Each is read in a fresh
process whose peak memory is measured, as the dashboard reads an upload.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap
import zipfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kieval_core import KievalInputError, LoadOptions, load, load_bytes
from kieval_core.cli import main
from kieval_core.exceptions import KievalOptionError
from kieval_core.limits import LIMITS, LimitExceeded, Limits, load_cost
from kieval_core.read.formats import _zip_members

ROOT = Path(__file__).resolve().parents[1]
CLI = Limits.defaults("cli")
APP = Limits.defaults("app")
MIB = 2**20


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _bomb(path: Path, members: int, mib: int) -> Path:
    """A zip of ``members`` members of ``mib`` MiB of blanks each, written in chunks."""
    chunk = b" " * MIB
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(members):
            with archive.open(f"bomb/d{i}.json", "w") as member:
                for _ in range(mib):
                    member.write(chunk)
    return path


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    one = _bomb(folder / "one.zip", 1, 1000)
    liar = folder / "liar.zip"
    data = bytearray(one.read_bytes())
    central = data.rindex(b"PK\x01\x02")  # the one member's central directory entry
    data[central + 24:central + 28] = (100).to_bytes(4, "little")  # says: 100 bytes
    liar.write_bytes(bytes(data))
    return {"one": one, "many": _bomb(folder / "many.zip", 200, 5), "liar": liar}


def _peak_in_fresh_process(path: Path, limits: Limits) -> dict:
    """Read ``path`` as the dashboard reads an upload, in a new process: the error and
    the peak memory above what the process held before (imports and the file's bytes)."""
    code = textwrap.dedent(f"""
        import json, time
        from dataclasses import replace
        from kieval_core import LoadOptions, load_bytes
        from kieval_core.limits import Limits
        data = open({str(path)!r}, "rb").read()
        def status(key):
            with open("/proc/self/status") as status:
                return next(int(l.split()[1]) for l in status if l.startswith(key)) / 1024
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # the peak (VmHWM) starts again from the resident memory now
        before, start = status("VmRSS"), time.perf_counter()
        try:
            load_bytes(data, "upload.zip", LoadOptions(limits=Limits(**{limits.__dict__!r})))
            error = None
        except Exception as exc:
            error = f"{{type(exc).__name__}}: {{exc}}"
        peak = status("VmHWM")
        seconds = time.perf_counter() - start
        print(json.dumps({{"error": error, "peak_mib": peak - before, "seconds": seconds}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout)


# --- one set of limits ----------------------------------------------------------------------


def test_limits_from_defaults_environment_and_options():
    env = {"KIEVAL_MAX_ROWS": "1_000", "KIEVAL_MEMORY_BUDGET_MB": "1500", "KIEVAL_MAX_ZIP_RATIO": ""}
    limits = Limits.from_env("app", env, memory_mb=None, zip_ratio=50)
    assert (limits.rows, limits.memory_mb, limits.zip_ratio) == (1000, 1500.0, 50.0)
    assert limits.file_mb == APP.file_mb == 200.0
    assert Limits.from_env("app", limits.environ()) == limits  # the server gets the same limits
    assert CLI.file_mb > APP.file_mb and CLI.rows > APP.rows  # batch work is given more
    with pytest.raises(KievalOptionError, match="KIEVAL_MAX_ROWS='many' is not a number"):
        Limits.from_env("cli", {"KIEVAL_MAX_ROWS": "many"})
    with pytest.raises(KievalOptionError, match="--max-file-size .* must be positive"):
        Limits.from_env("cli", {}, file_mb=0)
    assert {spec.env for spec in LIMITS} == set(limits.environ())


def test_readme_states_every_limit(root=ROOT):
    readme = (root / "README.md").read_text("utf-8")
    table = readme[readme.index("| limit |"):]
    for spec in LIMITS:
        assert spec.env in table and spec.option in table


def test_a_refusal_names_the_file_the_limit_and_how_to_raise_it():
    with pytest.raises(LimitExceeded) as info:
        load_bytes(b"doc_id,entity,value\n" + b"a,b,c\n" * 1000, "big.csv",
                   LoadOptions(limits=replace(CLI, memory_mb=0.01)))
    assert str(info.value) == ("big.csv: 0.24 MiB of memory estimated to read it is above the limit of "
                               "0.01 MiB (raise it with --memory-budget or KIEVAL_MEMORY_BUDGET_MB)")
    assert load_cost(MIB, rows=10) == 5 * MIB and load_cost(10, rows=MIB) == 250 * MIB


# --- finding 1: zip bombs --------------------------------------------------------------------


_RAISED = replace(APP, uncompressed_mb=2048)


@pytest.mark.parametrize(("bomb", "limits", "expected"), [
    ("one", APP, r"upload.zip: 1,000 MiB uncompressed is above the limit of 512 MiB \(raise it with "
                 r"--max-uncompressed or KIEVAL_MAX_UNCOMPRESSED_MB\)"),
    ("one", _RAISED, r"upload.zip/bomb/d0.json: 1,000 MiB from 1,019,\d+ bytes, a compression ratio of "
                     r"1,029x, is above the limit of 200x \(raise it with --max-zip-ratio or "
                     r"KIEVAL_MAX_ZIP_RATIO\)"),
    ("many", _RAISED, r"upload.zip/bomb/d0.json: 5 MiB from 5,\d+ bytes, a compression ratio of 1,0\d\dx"),
    ("many", replace(APP, zip_ratio=5000),
     r"upload.zip: 1,000 MiB uncompressed is above the limit of 512 MiB"),
    ("liar", APP, r"upload.zip: not a readable zip archive \(Bad CRC-32 for file 'bomb/d0.json'\)"),
], ids=["one", "one-ratio", "many-ratio", "many", "liar"])
def test_zip_bombs_are_refused_before_they_inflate(bombs, bomb, limits, expected):
    """Finding 1: 6-7 GiB at peak for a 1 MB zip; the lying directory took 6.9 s and 2.3 GiB."""
    assert bombs[bomb].stat().st_size < 1.1e6 or bomb == "many"
    outcome = _peak_in_fresh_process(bombs[bomb], limits)
    assert outcome["error"] is not None and re.search(expected, outcome["error"]), outcome
    assert outcome["peak_mib"] < 64 and outcome["seconds"] < 2, outcome


def test_members_are_read_with_a_cap_whatever_their_declared_size(monkeypatch):
    """A member that inflates beyond its declared size (a reader that would trust it) is
    stopped at the cap: the cap is counted on the bytes read, not the directory."""
    data = _zip({"a.json": b"{}"})

    class Endless(io.RawIOBase):
        def read(self, n=-1):
            return b" " * n

    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, member: Endless())
    limits = replace(APP, uncompressed_mb=3, zip_ratio=1e9)
    expected = r"x.zip: more than 3 MiB uncompressed \(a.json inflates beyond it\)"
    with pytest.raises(LimitExceeded, match=expected):
        _zip_members(data, "x.zip", LoadOptions(limits=limits))


# --- finding 7: nothing in a zip is dropped without a word ----------------------------------------


def test_members_with_the_same_file_name_are_refused_with_both_names():
    data = _zip({"a/doc1.json": b'{"x": "1"}', "b/doc1.json": b'{"x": "2"}'})
    with pytest.raises(KievalInputError, match=r"document 'doc1' appears twice: a/doc1.json, b/doc1.json"):
        load_bytes(data, "docs.zip")


def test_skipped_members_are_named_in_the_load_report():
    data = _zip({"doc1.json": b'{"x": "1"}', "..\\..\\win.json": b'{"x": "2"}', ".hidden.json": b"{}",
                 "__MACOSX/._doc1.json": b"", "README.md": b"notes", "in\\folder\\doc2.json": b'{"x": "3"}'})
    dataset = load_bytes(data, "docs.zip")
    assert dataset.doc_ids == ("doc1", "doc2")  # a backslash is a folder separator
    assert dataset.warnings == ("4 member(s) not read: ..\\..\\win.json (its path leaves the archive), "
                                ".hidden.json (hidden), README.md (not a document), __MACOSX/._doc1.json "
                                "(macOS metadata)",)


# --- finding 2: rows from the footer -----------------------------------------------------------


def _long_parquet(path: Path, rows: int) -> Path:
    """``rows`` rows of one document, dictionary-encoded: a few hundred KB on disk."""
    codes = pa.array([0] * rows, pa.int32())
    column = pa.DictionaryArray.from_arrays(codes, pa.array(["x"]))
    table = pa.table({"doc_id": column, "entity": column, "value": column})
    pq.write_table(table, path, use_dictionary=True)
    return path


def test_a_small_parquet_file_of_20m_rows_is_refused_from_its_footer(tmp_path, capsys, monkeypatch):
    """Finding 2: 174 KB, 20M rows; the dashboard took 7 GiB, the CLI ended in MemoryError."""
    path = _long_parquet(tmp_path / "rows.parquet", 20_000_000)
    assert path.stat().st_size < 1e6
    read = pytest.fail  # the footer decides: the table itself is never read
    monkeypatch.setattr(pq.ParquetFile, "read", lambda *a, **k: read("read"))
    expected = (r"rows.parquet: 20,000,000 rows in the footer is above the limit of 5,000,000 rows "
                r"\(raise it with --max-rows or KIEVAL_MAX_ROWS\)")
    with pytest.raises(LimitExceeded, match=expected):
        load_bytes(path.read_bytes(), path.name, LoadOptions(limits=APP))
    assert main(["evaluate", "--gt", str(path), "--pred", str(path)]) == 2
    assert "above the limit of 10,000,000 rows" in capsys.readouterr().err
    assert main(["evaluate", "--gt", str(path), "--pred", str(path), "--max-rows", "30000000",
                 "--memory-budget", "2000"]) == 2
    assert "of memory estimated to read it is above the limit of 2,000 MiB" in capsys.readouterr().err


def test_the_rows_limit_holds_for_every_format(tmp_path):
    lines = [json.dumps({"doc_id": f"d{i}", "fields": {"a": "1", "b": "2"}}) for i in range(10)]
    data = "\n".join(lines).encode()
    few = LoadOptions(limits=replace(CLI, rows=19))
    with pytest.raises(LimitExceeded, match="more than 19 entities is above the limit of 19 rows"):
        load_bytes(data, "gt.jsonl", few)
    assert len(load_bytes(data, "gt.jsonl", LoadOptions(limits=replace(CLI, rows=20))).entities) == 20
    csv = b"doc_id,entity,value\n" + b"d,a,1\n" * 20
    with pytest.raises(LimitExceeded, match="more than 19 entities"):
        load_bytes(csv, "gt.csv", few)


def test_the_cli_never_ends_in_memory_error(tmp_path, capsys, monkeypatch):
    import importlib

    def exhausted(*args, **kwargs):
        raise MemoryError

    engine = importlib.import_module("kieval_core.evaluate")  # the CLI imports it when it runs
    monkeypatch.setattr(engine, "evaluate", exhausted)
    gt = tmp_path / "gt.jsonl"
    gt.write_text('{"doc_id": "a", "fields": {"x": "1"}}\n')
    assert main(["evaluate", "--gt", str(gt), "--pred", str(gt), "--memory-budget", "900"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory (the memory budget is 900 MiB") and "Traceback" not in err


# --- finding 8: Parquet types and long CSV values --------------------------------------------------


@pytest.mark.parametrize(("column", "kind"), [
    (pa.array([["a"], ["b"]]), "list<element: string>"),
    (pa.array([{"k": "a"}, {"k": "b"}]), "struct<k: string>"),
    (pa.array([[("k", "a")], [("k", "b")]], pa.map_(pa.string(), pa.string())), "map<string, string"),
])
def test_nested_parquet_columns_are_refused_by_name(tmp_path, capsys, column, kind):
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"doc_id": ["a", "b"], "entity": ["x", "x"], "value": column}), path)
    expected = re.escape(f"nested.parquet, header: column 'value' is of type {kind}")
    with pytest.raises(KievalInputError, match=expected):
        load(path)
    assert main(["evaluate", "--gt", str(path), "--pred", str(path)]) == 2
    assert "column 'value' is of type" in capsys.readouterr().err


def test_binary_parquet_ids_are_read_as_text_or_refused_by_name(tmp_path):
    path = tmp_path / "binary.parquet"
    pq.write_table(pa.table({"doc_id": pa.array([b"a", b"b"], pa.binary()), "entity": ["x", "x"],
                             "value": ["1", "2"]}), path)
    assert load(path).doc_ids == ("a", "b")
    pq.write_table(pa.table({"doc_id": pa.array([b"a", b"\xff"], pa.binary()), "entity": ["x", "x"],
                             "value": ["1", "2"]}), path)
    with pytest.raises(KievalInputError, match="column 'doc_id' holds binary data that is not UTF-8 text"):
        load(path)


def test_a_csv_value_longer_than_arrows_block_is_read():
    """Finding 8: 'straddling object straddles two block boundaries' for one long value."""
    long = "v" * (8 * MIB)
    data = f'doc_id,entity,value\na,x,"{long}"\nb,x,short\n'.encode()
    dataset = load_bytes(data, "long.csv", LoadOptions(limits=replace(CLI, value_chars=len(long))))
    assert dataset.entities["value"].str.len().tolist() == [len(long), 5]
