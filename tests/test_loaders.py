"""Every loader on a real file and on malformed input."""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import replace

import pandas as pd
import pytest
from builders import write_jsonl

from kieval_core import KievalInputError, LoadOptions, NoCommonDocuments, evaluate, load, load_bytes
from kieval_core.cli import main
from kieval_core.limits import Limits
from kieval_core.read.formats.nested import flatten_document


def _rows(ds):
    return sorted(ds.entities[["doc_id", "group_type", "group", "entity_type", "value"]]
                  .itertuples(index=False, name=None))


# --- real files -------------------------------------------------------------------------


def test_cord_valid_line_equals_gt_parse(shared_data):
    full = load(shared_data / "cord_v2_dev" / "cord_v2_validation_full.jsonl")
    parse = load(shared_data / "cord_v2_dev" / "cord_v2_validation_gt_parse.jsonl")
    assert len(full.doc_ids) == len(parse.doc_ids) == 100
    assert parse.n_entities == 1219
    assert _rows(full) == _rows(parse)  # same entities, same groups


def test_cord_gt_parse_shapes(shared_data):
    ds = load(shared_data / "cord_v2_dev" / "cord_v2_validation_gt_parse.jsonl")
    doc3 = ds.entities[ds.entities["doc_id"] == "validation_0003"]
    # menu is one object with sub-items flattened into the same group
    assert doc3[doc3["entity_type"] == "menu.sub.nm"]["value"].tolist() == ["70%", "Less Ice"]
    assert set(doc3[doc3["group_type"] == "menu"]["group"]) == {0}


def test_sroie_textract_confidences(shared_data):
    ds = load(shared_data / "sroie" / "predictions" / "aws_textract_analyzeexpense.jsonl")
    first = ds.entities[ds.entities["doc_id"] == "X00016469670"].set_index("entity_type")
    assert first.loc["company", "confidence"] == 0.9999
    assert math.isnan(first.loc["date", "confidence"])  # null in field_confidence
    assert set(ds.entities["group_type"]) == {""}
    assert "field_confidence" not in set(ds.entities["entity_type"])


def test_sroie_ground_truth_top_level(shared_data):
    path = shared_data / "sroie" / "sroie_test_gt.jsonl"
    ds = load(path, LoadOptions(meta=("split",)))
    assert len(ds.doc_ids) == 347
    assert set(ds.entities["entity_type"]) == {"company", "date", "address", "total"}
    assert set(ds.meta["split"]) == {"test"} and len(ds.meta) == 347
    with_split = load(path)
    assert "split" in set(with_split.entities["entity_type"])


def test_sroie_all_systems_evaluate(shared_data, tmp_path):
    preds = sorted((shared_data / "sroie" / "predictions").glob("*.jsonl"))
    out = tmp_path / "r.json"
    args = ["evaluate", "--gt", str(shared_data / "sroie" / "sroie_test_gt.jsonl"),
            "--meta", "split", "--json", str(out), "--bootstrap", "50"]
    for p in preds:
        args += ["--pred", str(p)]
    assert main(args) == 0
    report = json.loads(out.read_text("utf-8"))
    assert len(report["models"]) == 7
    gpt = report["models"]["gpt4o_vision_themurtez"]
    assert gpt["n_documents"] == 347 and len(gpt["missing_documents"]) == 7
    assert gpt["unknown_documents"]  # training documents are listed, not scored
    assert any("not in the ground truth" in w for w in report["warnings"])


def test_official_csv_directory_and_zip(shared_data):
    folder = shared_data / "kieval_qwenvl72b_cord" / "gt_csv"
    from_dir = load(folder)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for f in folder.iterdir():
            archive.writestr(f"gt_csv/{f.name}", f.read_bytes())
    from_zip = load_bytes(buffer.getvalue(), "gt_csv.zip")
    assert from_dir.n_entities == 1301
    assert _rows(from_dir) == _rows(from_zip)


# --- formats on small files -------------------------------------------------------------


def test_long_table_csv_tsv_jsonl_parquet(tmp_path):
    frame = pd.DataFrame({
        "doc_id": ["a", "a", "a", "b"], "entity": ["menu.nm", "menu.price", "total", "total"],
        "value": ["Tea", "5", "5", ""], "group": ["1", "1", "", ""],
        "confidence": ["0.9", "", "1", ""],
    })
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_csv(tmp_path / "t.tsv", index=False, sep="\t")
    records = frame.to_dict(orient="records")
    for record in records:  # JSON numbers, null for a missing confidence
        record["confidence"] = float(record["confidence"]) if record["confidence"] else None
    write_jsonl(tmp_path / "t.jsonl", records)
    frame.to_parquet(tmp_path / "t.parquet")
    for suffix in ("csv", "tsv", "jsonl", "parquet"):
        ds = load(tmp_path / f"t.{suffix}")
        assert ds.doc_ids == ("a", "b"), suffix  # b has no entity but is a document
        assert _rows(ds) == [("a", "", -1, "total", "5"), ("a", "menu", 0, "menu.nm", "Tea"),
                             ("a", "menu", 0, "menu.price", "5")], suffix
        assert ds.entities["confidence"].fillna(-1).tolist() == [0.9, -1, 1.0]


def test_a_long_table_may_name_its_entity_column_entity_type(tmp_path):
    """The tool's own exports call it entity_type; CSV and JSONL (detected) read it."""
    (tmp_path / "t.csv").write_text("doc_id,entity_type,value,group\na,menu.nm,Tea,1\na,total,5,\n", "utf-8")
    write_jsonl(tmp_path / "t.jsonl", [{"doc_id": "a", "entity_type": "menu.nm", "value": "Tea", "group": 1},
                                       {"doc_id": "a", "entity_type": "total", "value": 5}])
    for suffix in ("csv", "jsonl"):
        ds = load(tmp_path / f"t.{suffix}")
        assert ds.format == "table"
        assert _rows(ds) == [("a", "", -1, "total", "5"), ("a", "menu", 0, "menu.nm", "Tea")], suffix
    with pytest.raises(KievalInputError, match="both an entity and an entity_type column"):
        load_bytes(b"doc_id,entity,entity_type,value\na,x,x,1\n", "both.csv")


WIDE = "file,company,total,date\nX1,ACME,9.00,01/02/2019\nX2,,5,\n"


def test_a_wide_table_is_one_row_per_document(tmp_path):
    """One column per field, the document id from doc_id or a column named like one (here
    file), else the first column when its values are distinct; empty cells are absent."""
    expected = [("X1", "", -1, "company", "ACME"), ("X1", "", -1, "date", "01/02/2019"),
                ("X1", "", -1, "total", "9.00"), ("X2", "", -1, "total", "5")]
    (tmp_path / "w.csv").write_text(WIDE, "utf-8")
    (tmp_path / "w.tsv").write_text(WIDE.replace(",", "\t"), "utf-8")
    pd.read_csv(io.StringIO(WIDE), dtype=str).to_parquet(tmp_path / "w.parquet")
    for suffix in ("csv", "tsv", "parquet"):
        ds = load(tmp_path / f"w.{suffix}")
        assert ds.doc_ids == ("X1", "X2") and _rows(ds) == expected, suffix
        assert ds.entities["entity_type"].tolist() == ["company", "total", "date", "total"]  # row by row
        assert any("wide table" in n and "'file'" in n for n in ds.notes)
    first = load_bytes(b"receipt,total\nr1,5\nr2,6\n", "first.csv")
    assert first.doc_ids == ("r1", "r2") and any("'receipt'" in n for n in first.notes)
    meta = load_bytes(b"doc_id,split,total\nr1,test,5\n", "meta.csv", LoadOptions(meta=("split",)))
    assert _rows(meta) == [("r1", "", -1, "total", "5")] and meta.meta["split"].tolist() == ["test"]
    gt = tmp_path / "gt.jsonl"
    write_jsonl(gt, [{"doc_id": "X1", "company": "ACME", "total": "9.00", "date": "01/02/2019"},
                     {"doc_id": "X2", "total": "5"}])
    assert evaluate(gt, {"w": tmp_path / "w.csv"}).models["w"].entity.f1 == 1.0


@pytest.mark.parametrize(("data", "expected"), [
    (b"receipt,total\nr1,5\nr1,6\n", "needs a document id column: name it doc_id (found: receipt, total)"),
    (b"doc_id,total\nr1,5\nr1,6\n", "line 3: document 'r1' is on two rows"),
    (b"doc_id,total\n,5\n", "line 2: empty document id"),
])
def test_a_wide_table_without_one_id_per_row_is_refused(data, expected):
    with pytest.raises(KievalInputError) as info:
        load_bytes(data, "w.csv")
    assert expected in str(info.value)


def test_a_table_jsonl_confidence_written_as_text_reads_as_the_csv_cell(tmp_path):
    """The CSV's cells as JSON strings ("" for no confidence), all text (Arrow's reader) or
    mixed with numbers and null (the row reader): the same entities as the CSV."""
    frame = pd.DataFrame({"doc_id": ["a", "a", "a", "b"], "entity": ["x", "y", "z", "x"],
                          "value": ["1", "2", "3", "4"], "confidence": ["0.9", "", " null ", "1"]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    expected = load(tmp_path / "t.csv").entities
    assert expected["confidence"].fillna(-1).tolist() == [0.9, -1, -1, 1.0]
    text = frame.to_dict(orient="records")
    mixed = [{**r, "confidence": c} for r, c in zip(text, [0.9, "", None, 1], strict=True)]
    for name, records in (("text", text), ("mixed", mixed)):
        ds = load(write_jsonl(tmp_path / f"{name}.jsonl", records))
        pd.testing.assert_frame_equal(ds.entities, expected, check_like=True, obj=name)
    bad = [*text[:2], {**text[2], "confidence": "high"}]
    with pytest.raises(KievalInputError, match=r"bad.jsonl, line 3: confidence 'high' is not a number"):
        load(write_jsonl(tmp_path / "bad.jsonl", bad))
    with pytest.raises(KievalInputError, match=r"line 2: confidence '1.5' is not a number in \[0, 1\]"):
        load(write_jsonl(tmp_path / "high.jsonl", [mixed[1], {**mixed[0], "confidence": 1.5}]))


def test_the_nesting_depth_limit_is_named(tmp_path):
    deep: dict = {"v": "1"}
    for _ in range(70):
        deep = {"k": deep}
    write_jsonl(tmp_path / "deep.jsonl", [{"doc_id": "d", "fields": deep}])
    with pytest.raises(KievalInputError, match="'d': structure nested deeper than 64 levels, the limit"):
        load(tmp_path / "deep.jsonl")
    shallow: dict = {"v": "1"}
    for _ in range(60):
        shallow = {"k": shallow}
    write_jsonl(tmp_path / "ok.jsonl", [{"doc_id": "d", "fields": shallow}])
    assert load(tmp_path / "ok.jsonl").entities["value"].tolist() == ["1"]


def test_nested_rules():
    rows, _ = flatten_document({
        "company": [{"value": "A", "confidence": 0.9}, {"value": "B", "confidence": 0.4}],
        "menu": [{"menu.nm": "Tea", "sub": {"nm": "Ice"}}, {"nm": None}],
        "total": {"total_price": 30000},
        "empty": [], "none": None, "blank": " ",
    }, source="x", doc_id="d", aliases={"nm": "name"})
    assert rows == [
        ("", -1, "company", "A", 0.9), ("", -1, "company", "B", 0.4),
        ("menu", 0, "menu.nm", "Tea", rows[2][4]), ("menu", 0, "menu.sub.name", "Ice", rows[3][4]),
        ("total", 0, "total.total_price", "30000", rows[4][4]),
    ]


def test_numbers_keep_their_json_text(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d", "fields": {"a": 1.50, "b": 30000}}])
    path.write_text('{"doc_id": "d", "fields": {"a": 1.50, "b": 30000, "c": true}}\n')
    assert sorted(load(path).entities["value"]) == ["1.50", "30000", "true"]


def test_donut_metadata_and_json_object_and_dir(tmp_path):
    write_jsonl(tmp_path / "metadata.jsonl", [
        {"file_name": "img/r1.png", "ground_truth": json.dumps({"gt_parse": {"total": "5"}})}])
    ds = load(tmp_path / "metadata.jsonl")
    assert ds.doc_ids == ("r1",) and _rows(ds) == [("r1", "", -1, "total", "5")]
    (tmp_path / "all.json").write_text(json.dumps({"r1": {"total": "5"}, "r2": {}}))
    assert load(tmp_path / "all.json").doc_ids == ("r1", "r2")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "r1.json").write_text(json.dumps({"prediction": {"total": "5"}}))
    (folder / "r2.json").write_text(json.dumps({"prediction": {"total": "6"}}))
    ds = load(folder)  # every document holds only the wrapper: unwrapped, and the report says so
    assert _rows(ds) == [("r1", "", -1, "total", "5"), ("r2", "", -1, "total", "6")]
    assert any("only the key 'prediction'" in n for n in ds.notes)
    (folder / "r1.json").write_text(json.dumps({"total": "5"}))  # now ambiguous: content
    assert _rows(load(folder)) == [("r1", "", -1, "total", "5"),
                                   ("r2", "prediction", 0, "prediction.total", "6")]


def test_key_option(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d", "fields": {"a": "1"}, "mine": {"b": "2"}}])
    assert _rows(load(path, LoadOptions(key="mine"))) == [("d", "", -1, "b", "2")]


# --- malformed input --------------------------------------------------------------------

BAD_FILES = [
    ("bad.jsonl", b'{"doc_id": "a", "fields": {}}\n{"doc_id": "b", "fields": {\n', "line 2"),
    ("bad.json", b'{"a": {"x": "1"}', "invalid JSON"),
    ("empty.jsonl", b"", "empty"),
    ("bin.jsonl", b"\x00\x01\x02{", "binary"),
    ("latin.jsonl", '{"doc_id": "a", "fields": {"x": "caf\u00e9"}}'.encode("latin-1"), "UTF-8"),
    ("top.json", b'"just a string"', "JSON object"),
    ("list.jsonl", b"[1, 2]\n", "line 1: expected a JSON object"),
    ("noid.jsonl", b'{"fields": {"a": "1"}}\n', "no document id"),
    ("dup.jsonl", b'{"doc_id": "a", "fields": {}}\n{"doc_id": "a", "fields": {}}\n', "appears twice"),
    ("conf.jsonl", b'{"doc_id": "a", "fields": {"x": {"value": "1", "confidence": "high"}}}\n',
     "not a number"),
    ("conf2.jsonl", b'{"doc_id": "a", "fields": {"x": {"value": "1", "confidence": 1.5}}}\n',
     "outside [0, 1]"),
    ("nan.jsonl", b'{"doc_id": "a", "fields": {"x": {"value": "1", "confidence": NaN}}}\n',
     "invalid JSON"),
    ("deep.json", b'{"d": ' + b'{"a": ' * 5000 + b'"x"' + b"}" * 5001, "deep"),
    ("cols.csv", b"doc_id,value\na,1\n", "missing column(s) entity"),
    ("Cols.csv", b"Doc_Id,Value\na,1\n", "missing column(s) entity (found: Doc_Id, Value)"),
    ("blank.csv", b" , \na,1\n", "missing column(s) doc_id, entity, value (found: , )"),  # fuzz found it
    ("kleister.tsv", b"party=Acme_Inc. term=3_years\njurisdiction=New_York\n",
     "line 1: key=value tokens (party=Acme_Inc., ...) instead of a header: Kleister's"),
    ("ragged.csv", b"doc_id,entity,value\na,x,1\nb,y,2,3\n", "line 3: 4 cells where the header has 3"),
    ("quoted.csv", b'doc_id,entity,value\na,x,"1\n2"\nb,y,2,3\n', "line 4: 4 cells where the header has 3"),
    ("pandas.tsv", b'doc_id\tentity\tvalue\na\tx\t1\nb\ty\t"two\nlines"\n',
     "line 4: 1 cell where the header has 3; TSV is read without quotes"),
    ("confcsv.csv", b"doc_id,entity,value,confidence\na,x,1,0.5\na,y,2,abc\n", "line 3"),
    ("x.xml", b"<xml/>", "unknown format"),
    ("x.zip", b"PK\x03\x04garbage", "zip"),
]


@pytest.mark.parametrize(("name", "data", "expected"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_malformed_input_gives_one_clear_error(name, data, expected):
    with pytest.raises(KievalInputError) as info:
        load_bytes(data, name)
    message = str(info.value)
    assert message.startswith(name) and expected in message, message


@pytest.mark.parametrize(("name", "data", "expected"), BAD_FILES[:4], ids=[b[0] for b in BAD_FILES[:4]])
def test_cli_exit_2_on_bad_input(tmp_path, capsys, name, data, expected):
    bad = tmp_path / name
    bad.write_bytes(data)
    good = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"x": "1"}}])
    assert main(["evaluate", "--gt", str(good), "--pred", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and name in err and "Traceback" not in err


def test_cli_unknown_path_and_option(tmp_path, capsys):
    assert main(["evaluate", "--gt", str(tmp_path / "nope.jsonl"), "--pred", "x.jsonl"]) == 2
    assert "no such file" in capsys.readouterr().err
    good = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"x": "1"}}])
    assert main(["evaluate", "--gt", str(good), "--pred", str(good), "--metrics", "bogus"]) == 2
    assert "unknown metric family" in capsys.readouterr().err


def test_llm_answers_recovered_from_fences_and_prose(tmp_path):
    records = [
        {"doc_id": "a", "output": 'Here you go:\n```json\n{"total": "5", "n": 1.50}\n```'},
        {"doc_id": "b", "output": 'The receipt says {"total": "6"} as far as I can see.'},
        {"doc_id": "c", "output": {"total": "7"}},
    ]
    ds = load(write_jsonl(tmp_path / "llm.jsonl", records))
    assert _rows(ds) == [("a", "", -1, "n", "1.50"), ("a", "", -1, "total", "5"),
                         ("b", "", -1, "total", "6"), ("c", "", -1, "total", "7")]
    assert ds.warnings == ("document 'a' (line 1): JSON recovered from code fence",
                           "document 'b' (line 2): JSON recovered from prose")
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "r1.json").write_text('Sure!\n```\n{"total": "5"}\n```\n')
    assert _rows(load(folder)) == [("r1", "", -1, "total", "5")]


@pytest.mark.parametrize(("text", "expected"), [
    ('I think {"a": "1"} or maybe {"a": "2"}', "2 JSON objects"),
    ("I could not read this receipt.", "no JSON object"),
    ('```json\n{"a": 1}\n```\n```json\n{"a": 2}\n```', "2 code fences"),
])
def test_ambiguous_llm_answers_are_refused(tmp_path, text, expected):
    path = write_jsonl(tmp_path / "llm.jsonl", [{"doc_id": "a", "output": text}])
    with pytest.raises(KievalInputError, match=expected) as info:
        load(path)
    assert "line 1" in str(info.value)


def test_size_limits(tmp_path, capsys):
    small = LoadOptions(limits=replace(Limits.defaults("cli"), file_mb=1000 / 2**20))
    with pytest.raises(KievalInputError, match="above the limit"):
        load_bytes(b"doc_id,entity,value\n" + b"a,b,c\n" * 500, "big.csv", small)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:  # compresses 1000:1
        archive.writestr("a.json", json.dumps({"x": "a" * 100_000}))
    tight = LoadOptions(limits=replace(Limits.defaults("cli"), uncompressed_mb=50_000 / 2**20))
    with pytest.raises(KievalInputError, match=r"bomb.zip: 0.10 MiB uncompressed is above the limit"):
        load_bytes(buffer.getvalue(), "bomb.zip", tight)
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"doc_id": "a", "fields": {"x": "y" * 3000}}) + "\n")
    assert main(["evaluate", "--gt", str(path), "--pred", str(path), "--max-file-size", "0.001"]) == 2
    assert "above the limit" in capsys.readouterr().err


def test_no_document_in_common(tmp_path, capsys):
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"x": "1"}}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"doc_id": "b", "prediction": {"x": "1"}}])
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred)]) == 2
    err = capsys.readouterr().err
    assert "pred.jsonl: no document in common" in err
    assert "predicted ids such as b;" in err and "ground-truth ids such as a)" in err
    with pytest.raises(NoCommonDocuments) as raised:  # its own type: the app keeps such a file aside
        evaluate(gt, pred)
    assert isinstance(raised.value, KievalInputError) and raised.value.source == str(pred)
    assert "differ only" not in err  # a and b: no hint


def test_no_document_in_common_names_ids_written_another_way(tmp_path, capsys):
    """The official KIEval sample's pred_json names its receipts 000, 001 ... where its CSVs
    say 0, 1 ...: the refusal says the ids differ only by leading zeros."""
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": str(i), "gt_parse": {"x": "1"}} for i in (0, 1, 10)])
    pred = write_jsonl(tmp_path / "pred.jsonl",
                       [{"doc_id": f"{i:03d}", "prediction": {"x": "1"}} for i in (0, 1)])
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert ("(predicted ids such as 000, 001; ground-truth ids such as 0, 1, 10): the ids differ only by "
            "leading zeros: '0' (ground truth) vs '000' (predictions); 2 of the 2 predicted ids match a "
            "ground-truth id that way\n") in err


def test_parallel_lists_format(tmp_path, capsys):
    """SPEC 6.4 and the list worked example: three transactions, two false positives."""
    gt = tmp_path / "gt.jsonl"
    gt.write_text(json.dumps({"doc_id": "s1", "account": "123", "description": "EFTPOS|ATM|Purchase",
                              "amount": "$50|$100|$75"}) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"doc_id": "s1", "account": "123",
                                "description": "EFTPOS|ATM|Purchase|Fee|Fee",
                                "amount": "$50|$100|$75|$1|$2"}) + "\n")
    options = LoadOptions(format="lists", related_fields=("description", "amount"))
    ds = load(gt, options)
    assert _rows(ds) == [("s1", "", -1, "account", "123"),
                         ("s1", "row", 0, "amount", "$50"), ("s1", "row", 0, "description", "EFTPOS"),
                         ("s1", "row", 1, "amount", "$100"), ("s1", "row", 1, "description", "ATM"),
                         ("s1", "row", 2, "amount", "$75"), ("s1", "row", 2, "description", "Purchase")]
    out = tmp_path / "r.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--format", "lists",
                 "--related-fields", "description,amount", "--metrics", "lists", "--json", str(out)]) == 0
    lists = json.loads(out.read_text())["models"]["pred"]["lists"]
    assert lists["items"]["precision"] == pytest.approx(6 / 10)  # two extra rows, 2 fields each
    assert lists["items"]["recall"] == 1.0 and lists["items"]["f1"] == pytest.approx(0.75)
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--format", "lists"]) == 2
    assert "related fields" in capsys.readouterr().err


# --- inputs already in memory (evaluate's Python callers) -----------------------------------


def test_evaluate_takes_dicts_records_and_dataframes_as_the_files_with_the_same_content(tmp_path):
    docs = {"r1": {"company": "ACME", "total": 9.5, "menu": [{"nm": "Tea", "price": "2"}]},
            "r2": {"company": "BETA", "total": "5"}}
    menu = [{"nm": "Tea", "price": "2"}]
    pred_records = [{"doc_id": "r1", "company": "ACME", "total": "9.50", "menu": menu},
                    {"doc_id": "r2", "company": "BETA"}]
    long_rows = [{"doc_id": "r1", "entity_type": "company", "value": "ACME"},
                 {"doc_id": "r2", "entity_type": "total", "value": "5"}]
    wide = pd.DataFrame({"doc_id": ["r1", "r2"], "company": ["ACME", None], "total": ["9.5", "5"]})
    (tmp_path / "gt.json").write_text(json.dumps(docs), "utf-8")
    write_jsonl(tmp_path / "p.jsonl", pred_records)
    write_jsonl(tmp_path / "long.jsonl", long_rows)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    in_memory = evaluate(docs, {"p": pred_records, "long": long_rows, "long_frame": pd.DataFrame(long_rows),
                                "wide": wide})
    files = evaluate(tmp_path / "gt.json", {"p": tmp_path / "p.jsonl", "long": tmp_path / "long.jsonl",
                                            "long_frame": tmp_path / "long.jsonl",
                                            "wide": tmp_path / "wide.csv"})
    for name, model in files.models.items():
        mine = in_memory.models[name]
        assert (mine.entity, mine.corrections) == (model.entity, model.corrections)
        assert mine.error_list.astype(str).equals(model.error_list.astype(str)), name
    assert in_memory.models["p"].entity.tp == 4  # 9.5 keeps its JSON text: "9.50" is another value
    single = evaluate(docs, pred_records)  # one prediction set given as its records
    assert list(single.models) == ["in-memory records"]


@pytest.mark.parametrize("bad", [42, {"m": 42}, b"x"])
def test_evaluate_says_in_one_line_what_it_takes(bad, tmp_path):
    with pytest.raises(TypeError) as info:
        evaluate({"r1": {"total": "5"}}, bad)
    message = str(info.value)
    assert "\n" not in message and "a {doc_id: document} dict, a list of records" in message
    assert "pandas DataFrame" in message


def test_inputs_read_while_the_one_before_is_parsed_raise_in_reading_order(tmp_path):
    """``evaluate`` parses each input in a thread while it reads the next input's files: the
    error raised is still the first one reading them in turn meets."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for directory, text in ((good, "0\nmenu.nm\nTea\n"), (bad, "0\nmenu.nm\tmenu.price\nTea\n")):
        directory.mkdir()
        (directory / "a.csv").write_text(text)
    options = LoadOptions(format="kieval-csv")
    with pytest.raises(KievalInputError, match=r"bad/a.csv, line 3: 1 cells where the header has 2"):
        evaluate(bad, tmp_path / "absent", load_options=options)  # the GT's parse fails first
    with pytest.raises(KievalInputError, match=r"absent: no such file or directory"):
        evaluate(good, tmp_path / "absent", load_options=options)
    with pytest.raises(KievalInputError, match=r"bad/a.csv, line 3"):
        evaluate(good, {"m": good, "n": bad}, load_options=options)
    result = evaluate(good, {"m": good, "n": good}, load_options=options)
    assert [m.aligned for m in result.models.values()] == [1.0, 1.0]


def test_an_input_is_parsed_in_a_thread_only_while_a_directory_is_read(tmp_path, monkeypatch):
    """The ground truth's parse overlaps the predictions' files only when they are a
    directory; before a single file it runs in turn (a signal then never waits for it)."""
    import threading

    import kieval_core.read.load as load_module

    gt_dir, pred_dir = tmp_path / "gt", tmp_path / "pred"
    for directory in (gt_dir, pred_dir):
        directory.mkdir()
        (directory / "a.csv").write_text("0\nmenu.nm\nTea\n")
    gt_file = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "a", "gt_parse": {"x": "1"}}])
    threads = []
    for function in ("load_files", "load_bytes"):
        original = getattr(load_module, function)

        def recorded(*args, original=original, **kwargs):
            threads.append(threading.current_thread() is threading.main_thread())
            return original(*args, **kwargs)

        monkeypatch.setattr(load_module, function, recorded)
    evaluate(gt_dir, pred_dir, load_options=LoadOptions(format="kieval-csv"))
    assert threads == [False, True]  # the GT beside the predictions' reads, the last in turn
    threads.clear()
    evaluate(gt_file, gt_file)
    assert threads == [True, True]
