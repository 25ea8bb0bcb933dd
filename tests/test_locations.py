"""Locations (SPEC 6.7): every loader keeps boxes and pages, bad boxes are named and
dropped, and boxes never change a figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import without_key
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import evaluate, load, load_bytes, render_report
from kieval_core.count.alignment import document_alignment, document_boxes
from kieval_core.read.locations import LOCATION_COLUMNS, BadLocation, box_of

SAMPLE = "sample_data"


def _located(ds) -> list[tuple]:
    e = ds.entities
    return [(t, v, *(None if math.isnan(x) else x for x in loc))
            for t, v, *loc in e[["entity_type", "value", *LOCATION_COLUMNS]].itertuples(index=False)]


def _jsonl(records) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


def test_nested_scored_leaves_carry_every_box_form():
    record = {"doc_id": "d", "fields": {
        "total": {"value": "5", "confidence": 0.9, "bbox": [1, 2, 3, 4], "page": 2},
        "date": {"value": "x", "box": [0, 0, 1, 1]},
        "menu": [{"nm": {"value": "Tea", "quad": {"x1": 1, "y1": 1, "x2": 5, "y2": 1, "x3": 5, "y3": 3,
                                                  "x4": 1, "y4": 3}},
                  "price": {"value": ["5", "6"], "polygon": [[2, 2], [9, 1], [4, 8]]},
                  "cnt": "1"}],
        "tax": {"value": "1", "polygon": [0, 0, 4, 0, 4, 2]},
    }}
    ds = load_bytes(_jsonl([record]), "p.jsonl")
    assert _located(ds) == [
        ("total", "5", 2, 1, 2, 3, 4),
        ("date", "x", 1, 0, 0, 1, 1),
        ("menu.nm", "Tea", 1, 1, 1, 5, 3),
        ("menu.price", "5", 1, 2, 1, 9, 8),
        ("menu.price", "6", 1, 2, 1, 9, 8),
        ("menu.cnt", "1", None, None, None, None, None),
        ("tax", "1", 1, 0, 0, 4, 2),
    ]
    assert ds.entities["confidence"].iloc[0] == 0.9
    assert not ds.warnings


def test_inputs_without_locations_have_no_location_columns():
    ds = load_bytes(_jsonl([{"doc_id": "d", "total": {"value": "5", "confidence": 0.5}}]), "p.jsonl")
    assert list(ds.entities.columns) == ["doc_id", "group_type", "group", "entity_type", "value",
                                         "confidence"]


def test_a_page_alone_is_a_location_without_box():
    ds = load_bytes(_jsonl([{"doc_id": "d", "total": {"value": "5", "page": 3}}]), "p.jsonl")
    assert _located(ds) == [("total", "5", 3, None, None, None, None)]


@pytest.mark.parametrize(("leaf", "problem"), [
    ({"value": "5", "bbox": [5, 0, 1, 1]}, "x1 < x0"),
    ({"value": "5", "bbox": [0, 5, 1, 1]}, "y1 < y0"),
    ({"value": "5", "bbox": [0, 0, "a", 1]}, "'a' is not a number"),
    ({"value": "5", "bbox": [0, 0, 1]}, "is not [x0, y0, x1, y1]"),
    ({"value": "5", "bbox": [0, 0, 1, 1], "page": 0}, "page 0 is not a whole number >= 1"),
    ({"value": "5", "quad": {"x1": 1}}, "a quad needs"),
])
def test_a_bad_box_is_dropped_with_one_warning_naming_file_and_document(leaf, problem):
    records = [{"doc_id": "a", "total": leaf, "date": {"value": "d", "bbox": [9, 9, 1, 1]}},
               {"doc_id": "b", "total": {"value": "7", "bbox": [0, 0, 1, 1]}}]
    ds = load_bytes(_jsonl(records), "preds.jsonl")
    assert ds.entities["value"].tolist() == ["5", "d", "7"]  # every entity is kept
    assert np.isnan(ds.entities[["x0", "y0", "x1", "y1"]].to_numpy()[:2]).all()
    assert ds.entities["x1"].iloc[2] == 1
    (warning,) = ds.warnings
    assert warning.startswith("preds.jsonl: document 'a': the box of 'total' was dropped")
    assert problem in warning and "(1 more in this file)" in warning


def test_long_table_location_columns_csv_and_jsonl():
    csv = (b"doc_id,entity,value,page,x0,y0,x1,y1\n"
           b"a,total,5,2,1,2,3,4\n"
           b"a,date,x,,,,,\n"
           b"a,tax,1,,1,1,2,2\n"
           b"a,name,y,1,9,1,2,2\n")
    ds = load_bytes(csv, "t.csv")
    assert _located(ds) == [("total", "5", 2, 1, 2, 3, 4), ("date", "x", None, None, None, None, None),
                            ("tax", "1", 1, 1, 1, 2, 2), ("name", "y", None, None, None, None, None)]
    assert ds.warnings == ("t.csv: document 'a': the box of 'name' was dropped: x1 < x0 (line 5); "
                           "the entity is scored without a location",)
    rows = [{"doc_id": "a", "entity": "total", "value": "5", "x0": 1, "y0": 2, "x1": 3, "y1": 4.5}]
    assert _located(load_bytes(_jsonl(rows), "t.jsonl")) == [("total", "5", 1, 1, 2, 3, 4.5)]


def test_cord_entity_box_is_the_union_of_its_value_words():
    def word(text, x1, y1, x2, y2, key=0):
        return {"text": text, "is_key": key, "quad": {"x1": x1, "y1": y1, "x2": x2, "y2": y1,
                                                      "x3": x2, "y3": y2, "x4": x1, "y4": y2}}
    record = {"doc_id": "r", "valid_line": [
        {"category": "menu.nm", "group_id": 3, "words": [word("REAL", 202, 554, 266, 586),
                                                        word("GANACHE", 272, 550, 372, 590)]},
        {"category": "total.total_price", "group_id": 9, "words": [word("TOTAL", 10, 10, 60, 30, key=1),
                                                                   word("45,500", 500, 12, 580, 32)]},
    ]}
    ds = load_bytes(_jsonl([record]), "cord.jsonl")
    assert ds.format == "cord"
    assert _located(ds) == [("menu.nm", "REAL GANACHE", 1, 202, 550, 372, 590),
                            ("total.total_price", "45,500", 1, 500, 12, 580, 32)]


def test_funsd_groups_linked_questions_and_answers():
    form = {"form": [
        {"id": 0, "label": "header", "text": "FAX", "box": [10, 10, 50, 20], "linking": [[0, 1]]},
        {"id": 1, "label": "question", "text": "TO:", "box": [10, 30, 30, 40], "linking": [[1, 2], [0, 1]]},
        {"id": 2, "label": "answer", "text": "Bob", "box": [40, 30, 60, 40], "linking": [[1, 2]]},
        {"id": 3, "label": "question", "text": "DATE:", "box": [10, 50, 30, 60], "linking": []},
        {"id": 4, "label": "other", "text": "", "box": [0, 0, 1, 1], "linking": []},
    ]}
    ds = load_bytes(json.dumps(form).encode(), "82092117.json")
    assert ds.format == "funsd" and ds.doc_ids == ("82092117",)
    e = ds.entities
    assert e[["group_type", "group", "entity_type", "value"]].values.tolist() == [
        ["", -1, "header", "FAX"], ["qa", 0, "qa.question", "TO:"], ["qa", 0, "qa.answer", "Bob"],
        ["", -1, "question", "DATE:"]]
    assert e[["x0", "y0", "x1", "y1"]].values.tolist()[2] == [40, 30, 60, 40]


def test_docile_fields_and_line_items_with_zero_based_pages():
    doc = {"field_extractions": [{"fieldtype": "date_due", "text": "1/02/02", "page": 0,
                                  "bbox": [0.5, 0.8, 0.6, 0.9]}],
           "line_item_extractions": [
               {"fieldtype": "line_item_quantity", "line_item_id": 1, "page": 1, "text": "4",
                "bbox": [0.1, 0.3, 0.2, 0.4]},
               {"fieldtype": "line_item_code", "line_item_id": 1, "page": 1, "text": "42630",
                "bbox": [0.3, 0.3, 0.4, 0.4]},
               {"fieldtype": "line_item_code", "line_item_id": 2, "page": 1, "text": "42631",
                "bbox": [0.3, 0.5, 0.4, 0.6]}],
           "line_item_headers": [{"fieldtype": "line_item_code", "text": "ITEM", "page": 0}]}
    ds = load_bytes(json.dumps(doc).encode(), "inv1.json")
    assert ds.format == "docile"
    e = ds.entities
    assert e[["group_type", "group", "entity_type", "page"]].values.tolist() == [
        ["", -1, "date_due", 1], ["line_item", 0, "line_item_quantity", 2],
        ["line_item", 0, "line_item_code", 2], ["line_item", 1, "line_item_code", 2]]
    assert "line_item_headers" in ds.notes[0]


@pytest.mark.shared_data
def test_real_funsd_docile_and_cord_files_have_boxes(shared_data):
    funsd = load(shared_data / "funsd" / "test")
    assert funsd.format == "funsd" and len(funsd.doc_ids) == 50
    assert funsd.entities["x0"].notna().all() and not funsd.warnings
    docile = load(shared_data / "docile" / "516f2d61ea404b30a9192a72.json")
    assert docile.format == "docile" and docile.entities["x1"].max() <= 1
    cord = load(shared_data / "cord_v2_dev" / "cord_v2_validation_full.jsonl")
    assert cord.entities["x0"].notna().all()
    first = cord.entities.iloc[1]  # "REAL GANACHE": words at x 202-266 and 272-372
    assert (first["value"], first["x0"], first["x1"]) == ("REAL GANACHE", 202, 372)


def test_error_export_gains_page_and_both_boxes(tmp_path):
    gt = [{"doc_id": "a", "total": {"value": "5", "bbox": [1, 2, 3, 4]},
           "addr": {"value": "JL", "bbox": [0, 50, 9, 60]},
           "menu": [{"nm": {"value": "Tea", "bbox": [0, 0, 5, 5]}}]}]
    pred = [{"doc_id": "a", "total": {"value": "6", "confidence": 0.5, "bbox": [1, 2, 3, 4.5]},
             "menu": [{"nm": {"value": "Tea", "confidence": 0.9, "bbox": [0, 0, 5, 5]}}],
             "tax": {"value": "1", "confidence": 0.3, "page": 2, "bbox": [7, 7, 8, 8]}}]
    (tmp_path / "gt.jsonl").write_bytes(_jsonl(gt))
    (tmp_path / "m.jsonl").write_bytes(_jsonl(pred))
    errors = evaluate(tmp_path / "gt.jsonl", {"m": tmp_path / "m.jsonl"}).models["m"].error_list
    got = errors[["entity_type", "kind", "page", "gt_box", "pred_box"]].values.tolist()
    assert got == [["addr", "addition", 1, [0, 50, 9, 60], None],
                   ["total", "substitution", 1, [1, 2, 3, 4], [1, 2, 3, 4.5]],
                   ["tax", "deletion", 2, None, [7, 7, 8, 8]]]


def _plain_copy(path, out):
    lines = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]
    out.write_bytes(_jsonl([without_key(r, "bbox") for r in lines]))


def test_boxes_never_change_a_figure(tmp_path):
    """The sample (every value boxed) and the same files without boxes: the same report to
    the byte, every metric family, and the same error list apart from the location columns."""
    gt, pred = f"{SAMPLE}/cord_v2_gt.jsonl", f"{SAMPLE}/sim_weak.jsonl"
    _plain_copy(gt, tmp_path / "cord_v2_gt.jsonl")
    _plain_copy(pred, tmp_path / "sim_weak.jsonl")
    boxed = evaluate(gt, {"sim_weak": pred}, metrics="all")
    plain = evaluate(tmp_path / "cord_v2_gt.jsonl", {"sim_weak": tmp_path / "sim_weak.jsonl"}, metrics="all")
    assert boxed.gt.entities["x0"].notna().all()
    assert "x0" not in plain.gt.entities
    assert render_report(plain).text.replace(str(tmp_path) + "/", f"{SAMPLE}/") == render_report(boxed).text
    with_boxes = boxed.models["sim_weak"].error_list
    assert with_boxes["gt_box"].notna().any() and with_boxes["pred_box"].notna().any()
    pd.testing.assert_frame_equal(with_boxes.drop(columns=["page", "gt_box", "pred_box"]),
                                  plain.models["sim_weak"].error_list)


@pytest.mark.parametrize("model", ["sim_strong", "sim_llm", "sim_weak"])
def test_simulated_predictions_are_boxed_where_the_values_came_from(model):
    """A right predicted value sits exactly on a GT box of that value in its document (the
    one it was copied from), so the document view of the sample is honest."""
    result = evaluate(f"{SAMPLE}/cord_v2_gt.jsonl", {model: f"{SAMPLE}/{model}.jsonl"})
    counted = result.models[model].detail()
    pred, gt = counted.pred_entities, counted.gt_entities
    assert pred["x0"].notna().all()
    keys = ["doc_id", "value", "x0", "y0", "x1", "y1"]
    correct = pred.loc[pred["status"] == "correct", keys].astype({"doc_id": object})
    known = gt[keys].astype({"doc_id": object}).drop_duplicates()
    found = correct.merge(known, on=keys, how="left", indicator=True)["_merge"]
    assert len(correct) > 500 and (found == "both").all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=4, max_size=4))
def test_box_of_accepts_exactly_the_ordered_boxes(coords):
    x0, y0, x1, y1 = coords
    if x1 < x0 or y1 < y0:
        with pytest.raises(BadLocation):
            box_of(coords)
    else:
        assert box_of(coords) == (x0, y0, x1, y1)
        # the same box as a polygon of its corners and as a CORD quad
        assert box_of([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], "polygon") == (x0, y0, x1, y1)
        quad = {"x1": x0, "y1": y0, "x2": x1, "y2": y0, "x3": x1, "y3": y1, "x4": x0, "y4": y1}
        assert box_of(quad, "quad") == (x0, y0, x1, y1)


def test_document_boxes_colour_each_side_and_number_matched_pairs(tmp_path):
    gt = [{"doc_id": "a", "total": {"value": "5", "bbox": [1, 2, 3, 4]},
           "addr": {"value": "JL", "bbox": [0, 50, 9, 60]},
           "menu": [{"nm": {"value": "Tea", "bbox": [0, 0, 5, 5]},
                     "price": {"value": "5", "bbox": [10, 0, 15, 5]}},
                    {"nm": {"value": "Pie", "bbox": [0, 9, 5, 14]}}]}]
    pred = [{"doc_id": "a", "total": {"value": "6", "confidence": 0.5, "bbox": [1, 2, 3, 4.5]},
             "menu": [{"nm": {"value": "Tea", "confidence": 0.9, "bbox": [0, 0, 5, 5]}, "price": "5"},
                      {"nm": {"value": "Pie", "confidence": 0.8, "bbox": [0, 9, 5, 14]}}],
             "tax": {"value": "1", "confidence": 0.3, "page": 2, "bbox": [7, 7, 8, 8]}}]
    (tmp_path / "gt.jsonl").write_bytes(_jsonl(gt))
    (tmp_path / "m.jsonl").write_bytes(_jsonl(pred))
    counted = evaluate(tmp_path / "gt.jsonl", {"m": tmp_path / "m.jsonl"}).models["m"].detail()
    boxes = document_boxes(counted, "a")
    got = boxes[["row", "side", "status", "value", "pair", "page", "x1"]].values.tolist()
    assert got == [
        [0, "gt", "substituted", "5", 0, 1, 3], [1, "gt", "added", "JL", 0, 1, 9],
        [3, "gt", "correct", "Tea", 1, 1, 5], [4, "gt", "correct", "5", 1, 1, 15],
        [5, "gt", "correct", "Pie", 2, 1, 5],
        [0, "pred", "substituted", "6", 0, 1, 3], [2, "pred", "deleted", "1", 0, 2, 8],
        [3, "pred", "correct", "Tea", 1, 1, 5], [5, "pred", "correct", "Pie", 2, 1, 5],
    ]  # the predicted price has no box: it is not drawn
    assert boxes.loc[boxes["side"] == "pred", "confidence"].tolist() == [0.5, 0.3, 0.9, 0.8]
    alignment = document_alignment(counted, "a")
    assert alignment.loc[boxes["row"], "entity_type"].tolist() == boxes["entity_type"].tolist()
