"""Error causes (SPEC 2c) and comparators per field (SPEC 2b): the worked example through
the Python API and the CLI, a naive oracle over the error list, and properties."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from builders import dataset, write_jsonl
from dateutil import parser as dateutil_parser
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import corpus
from test_worked_examples import RPA_GT, RPA_PRED

from kieval_core import KievalOptionError, Normalizer, evaluate
from kieval_core.cli import main
from kieval_core.count.causes import (
    CAUSE_COLUMNS,
    CAUSES_OF_KIND,
    coded_date_orders,
    dense_codes,
    field_date_orders,
    fixing_comparators,
    substitution_causes,
)
from kieval_core.count.comparators import (
    COMPARATORS,
    FORMAT_COMPARATORS,
    canonicalise,
    parse_rule,
    resolve,
    unmatched_rules,
)


def _subs(fmt: int, date_order: int, near_miss: int, other_value: int) -> dict:
    return {"format": fmt, "date_order": date_order, "near_miss": near_miss, "other_value": other_value}


EXPECTED_CAUSES = {"substitution": _subs(0, 0, 1, 1),
                   "deletion": {"misplaced": 0, "hallucinated": 1},
                   "addition": {"misplaced": 0, "missed": 1}}


def _files(tmp_path, gt: dict, pred: dict):
    gt_file = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "r", "gt_parse": gt}])
    pred_file = write_jsonl(tmp_path / "m.jsonl", [{"doc_id": "r", "prediction": pred}])
    return gt_file, pred_file


def _cli(tmp_path, gt: dict, pred: dict, *options: str) -> dict:
    gt_file, pred_file = _files(tmp_path, gt, pred)
    out = tmp_path / "report.json"
    argv = ["evaluate", "--gt", str(gt_file), "--pred", str(pred_file), "--json", str(out), *options]
    assert main(argv) == 0
    return json.loads(out.read_text("utf-8"))


# --- SPEC 2c worked example ----------------------------------------------------------------


def test_worked_example_through_the_python_api(tmp_path):
    m = evaluate(*_files(tmp_path, RPA_GT, RPA_PRED)).models["m"]
    assert m.causes == EXPECTED_CAUSES
    assert m.aligned_if_format_right == pytest.approx(7 / 11)
    errors = m.error_list.set_index(["kind", "entity_type"])["cause"]
    assert errors[("substitution", "date")] == "near_miss"  # 01/02/2018 for 01/02/2019: 0.9
    assert errors[("substitution", "menu.price")] == "other_value"  # 250 for 200: 0.67
    assert errors[("deletion", "tax")] == "hallucinated"
    assert errors[("addition", "address")] == "missed"
    by_type = m.by_entity_type.set_index("entity_type")
    assert by_type.loc["date", "substitution_near_miss"] == 1
    assert by_type.loc["menu.price", "substitution_other_value"] == 1
    assert m.documents.set_index("doc_id").loc["r", CAUSE_COLUMNS].sum() == m.corrections.total


def test_worked_example_through_the_cli(tmp_path):
    report = _cli(tmp_path, RPA_GT, RPA_PRED)
    m = report["models"]["m"]
    assert m["kieval"]["causes"] == EXPECTED_CAUSES
    assert m["kieval"]["aligned_if_format_right"] == pytest.approx(7 / 11)
    assert m["documents"][0]["causes"] == EXPECTED_CAUSES
    by_type = {row["entity_type"]: row["causes"] for row in m["by_entity_type"]}
    assert by_type["date"]["substitution"] == _subs(0, 0, 1, 0)
    assert by_type["tax"]["deletion"] == {"misplaced": 0, "hallucinated": 1}
    options = {k: v for k, v in report["options"].items() if k in ("comparators", "comparators_unparsed",
                                                                      "near_miss", "ignored")}
    assert options == {"comparators": {}, "comparators_unparsed": {}, "ignored": {}, "near_miss": 0.8}
    assert {r["source"] for r in report["options"]["rules"]} == {"default"}


def _two_receipts(tmp_path, pred_date: str) -> tuple:
    """The worked example's receipt and a second whose GT date is written day first."""
    gt = write_jsonl(tmp_path / "gt.jsonl", [{"doc_id": "r", "gt_parse": RPA_GT},
                                             {"doc_id": "s", "gt_parse": {"date": "25/12/2018"}}])
    pred = write_jsonl(tmp_path / "m.jsonl", [
        {"doc_id": "r", "prediction": {**RPA_PRED, "date": {"value": pred_date, "confidence": 0.4}}},
        {"doc_id": "s", "prediction": {"date": "25/12/2018"}}])
    return gt, pred


def _report(gt, pred, tmp_path, *options: str) -> dict:
    out = tmp_path / "report.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(out), *options]) == 0
    return json.loads(out.read_text("utf-8"))


def test_worked_example_second_paragraph(tmp_path):
    """SPEC 2c: with GT dates written day first (25/12/2018 elsewhere), 2019-02-01 for
    01/02/2019 is ``format``, 2019-01-02 is ``date_order``; with --compare date=date the
    first is a TP. TP 8 of 12 GT entities (7 + the second receipt's date)."""
    m = _report(*_two_receipts(tmp_path, "2019-02-01"), tmp_path)["models"]["m"]
    assert m["kieval"]["causes"]["substitution"] == _subs(1, 0, 0, 1)
    assert m["kieval"]["aligned_if_format_right"] == pytest.approx(9 / 12)
    m = _report(*_two_receipts(tmp_path, "2019-01-02"), tmp_path)["models"]["m"]
    assert m["kieval"]["causes"]["substitution"] == _subs(0, 1, 0, 1)
    assert m["kieval"]["aligned_if_format_right"] == pytest.approx(8 / 12)  # a real error: not in it
    compared = _report(*_two_receipts(tmp_path, "2019-02-01"), tmp_path, "--compare", "date=date")
    m = compared["models"]["m"]
    assert m["kieval"]["entity"]["tp"] == 9
    assert m["kieval"]["aligned"] == pytest.approx(9 / 12)  # what aligned_if_format_right said
    assert m["kieval"]["causes"]["substitution"] == _subs(0, 0, 0, 1)
    assert compared["options"]["comparators"] == {"date": "date:dmy"}
    assert compared["options"]["comparators_unparsed"] == {"date": 0}


def test_without_a_date_order_an_ambiguous_pair_is_never_format(tmp_path):
    """The worked example's GT has one date, 01/02/2019, which does not say its order."""
    m = _cli(tmp_path, RPA_GT, {**RPA_PRED, "date": "2019-02-01"})["models"]["m"]
    assert m["kieval"]["causes"]["substitution"] == _subs(0, 1, 0, 1)
    pred = {**RPA_PRED, "date": "1 Feb 2019"}
    m = _cli(tmp_path, RPA_GT, pred, "--compare", "date=date:mdy")["models"]["m"]
    assert m["kieval"]["causes"]["substitution"] == _subs(0, 1, 0, 1)


@pytest.mark.parametrize(("gt", "pred", "cause"), [
    ("07 MAR 2018", "07 Mar 2018 18:22", "format"),  # a time after a date does not change it
    ("21/12/16", "21/12/16 9:29:44 AM", "format"),  # same text, whichever order it is read in
    ("21-03-18", "2021-03-18", "date_order"),  # 21 March 2018 read year first
    ("02/01/2019", "2019-02-01", "date_order"),  # 2 January read as 1 February
    ("02/01/2019", "2019-01-02", "format"),
    ("NO 14& 16 JALAN PERMAS 4/3 BANDAR BARU PERMAS JAY",
     "No 14B 16 Jalan Permas 4/3 Bandar Baru Permas Jaya", "near_miss"),  # 0.46 as written, 0.96 case-folded
    ("NO 14& 16 JALAN PERMAS", "No 14B 16 Jalan Permas", "near_miss"),
    ("ACME", "acme.", "format"),
])
def test_causes_of_the_issue(gt, pred, cause):
    assert substitution_causes([gt], [pred], date_orders=[0]).tolist() == [cause]


def test_a_declared_date_order_silences_the_warning_of_a_gt_in_two_orders():
    gt = dataset({"a": [("", "", "date", "25/12/2018")], "b": [("", "", "date", "12/25/2018")],
                  "c": [("", "", "date", "01/02/2019")]}, "gt")
    pred = dataset({"a": [("", "", "date", "2018-12-25")], "b": [("", "", "date", "x")],
                    "c": [("", "", "date", "2019-02-01")]}, "m")
    plain = evaluate(gt, {"m": pred})
    assert plain.models["m"].causes["substitution"] == _subs(1, 1, 0, 1)
    assert plain.date_order_warnings == [
        "date: the ground truth does not settle a date order (3 of 3 GT values are dates; day first in 1 of "
        "2 unambiguous), so a date that is the same day only in another order is counted as date_order, "
        "never format; declare the order if you know it (--compare date=date:dmy, date:mdy or date:ymd)"]
    assert evaluate(gt, {"m": pred}, normalizer=Normalizer(comparators=(("date", "date:dmy"),))
                    ).date_order_warnings == []


def test_the_field_order_is_the_one_every_unambiguous_gt_date_reads_in():
    types = ["a", "a", "a", "b", "b", "c", "c", "d", "e"]
    values = ["25/12/2018", "01/02/2019", "7 Mar 2018", "12/25/2018", "01/02/2019", "25/12/2018",
              "12/25/2018", "2019-02-01", "23-03-18"]
    # dmy, mdy, contradicted, ISO alone (undecided), ambiguous alone, no value
    assert field_date_orders(types, values, ["a", "b", "c", "d", "e", "f"]) == {
        "a": 0, "b": 1, "c": -1, "d": -1, "e": -1, "f": -1}


def test_near_miss_threshold(tmp_path):
    m = _cli(tmp_path, RPA_GT, RPA_PRED, "--near-miss", "0.95")["models"]["m"]
    assert m["kieval"]["causes"]["substitution"] == _subs(0, 0, 0, 2)
    m = _cli(tmp_path, RPA_GT, RPA_PRED, "--near-miss", "0.6")["models"]["m"]
    assert m["kieval"]["causes"]["substitution"] == _subs(0, 0, 2, 0)


def test_misplaced_values():
    # GT: total 10.00 and one menu line (A, 10.00); the prediction puts the price under
    # another type, and a line's name in another (unmatched) group.
    gt = dataset({"d": [("", "", "total", "10.00"), ("menu", "0", "menu.nm", "A"),
                        ("menu", "0", "menu.price", "7")]}, "gt")
    pred = dataset({"d": [("", "", "subtotal", "7"), ("menu", "0", "menu.nm", "A"),
                          ("menu", "1", "menu.nm", "B"), ("menu", "1", "menu.cnt", "A")]}, "m")
    m = evaluate(gt, {"m": pred}).models["m"]
    errors = m.error_list.set_index(["kind", "entity_type"])["cause"]
    assert errors[("deletion", "subtotal")] == "misplaced"  # 7 is the GT's menu.price
    assert errors[("deletion", "menu.cnt")] == "misplaced"  # A is the GT's menu.nm
    assert errors[("deletion", "menu.nm")] == "hallucinated"  # B is nowhere in the GT
    assert errors[("addition", "menu.price")] == "misplaced"  # 7 is the prediction's subtotal
    assert errors[("addition", "total")] == "missed"


def test_a_duplicate_in_the_same_place_is_hallucinated():
    gt = dataset({"d": [("", "", "total", "1")]}, "gt")
    pred = dataset({"d": [("", "", "total", "1"), ("", "", "total", "1")]}, "m")
    errors = evaluate(gt, {"m": pred}).models["m"].error_list
    assert errors[["kind", "cause"]].values.tolist() == [["deletion", "hallucinated"]]


# --- comparators -----------------------------------------------------------------------------


@pytest.mark.parametrize(("comparator", "values", "expected"), [
    ("exact", ["A b", "a B"], ["A b", "a B"]),
    ("casefold", ["ACME", "Straße"], ["acme", "strasse"]),
    ("alnum", ["L/RA 458", "l-ra458", "--"], ["lra458", "lra458", "--"]),
    ("number", ["$1,200.50", "1200.5", "USD 7", "7.00 €", "(3.5)", "3.5-", "-3.50", "1,2", "7.000",
                "Rp 45,500"],
     ["1200.5", "1200.5", "7", "7", "-3.5", "-3.5", "-3.5", "1,2", "7", "45500"]),
    ("number:comma", ["1.200,50", "7.000", "12,5", "1,200.50"], ["1200.5", "7000", "12.5", "1,200.50"]),
    ("date", ["01/02/2019", "2019-02-01", "1.2.19", "01 Feb 2019", "Feb 1, 2019", "01-FEB-19",
              "2019-02-01 10:30:00", "13/25/2019", "31/02/2019", "10.00", "March 2019"],
     ["2019-02-01"] * 7 + ["13/25/2019", "31/02/2019", "10.00", "March 2019"]),
    ("date:mdy", ["01/02/2019", "2019-02-01", "02/15/2019", "15/02/2019"],
     ["2019-01-02", "2019-02-01", "2019-02-15", "2019-02-15"]),
    ("date:ymd", ["19/02/01", "2019/02/01", "01/02/2019"], ["2019-02-01", "2019-02-01", "2019-01-02"]),
])
def test_canonical_forms(comparator, values, expected):
    assert canonicalise(comparator, values)[0].tolist() == expected


def test_which_values_parse():
    assert canonicalise("date", ["soon", "01/02/2019", "2019-02-01"])[1].tolist() == [False, True, True]
    assert canonicalise("number", ["1,2", "1200.5", "-0"])[1].tolist() == [False, True, True]
    assert canonicalise("alnum", ["--", "a"])[1].tolist() == [False, True]
    assert canonicalise("casefold", ["--"])[1].tolist() == [True]


@pytest.mark.parametrize("comparator", [c for c in COMPARATORS if c != "exact"])
@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="0123456789/.-, $ABCabc:", max_size=12), min_size=1, max_size=8))
def test_a_canonical_form_is_its_own_canonical_form(comparator, values):
    forms, parsed = canonicalise(comparator, values)
    again, parsed_again = canonicalise(comparator, forms)
    if comparator == "number:comma":  # its plain decimals are not read back (module docstring)
        parsed_forms = forms[parsed & ~np.char.count(forms.astype(str), ".").astype(bool)]
        assert canonicalise(comparator, parsed_forms)[0].tolist() == parsed_forms.tolist()
        return
    assert again.tolist() == forms.tolist()
    assert parsed_again[parsed].all()


DATE_FORMATS = ["%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y", "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%d/%m/%y",
                "%d-%b-%y"]


@settings(max_examples=200, deadline=None)
@given(st.dates(datetime.date(1971, 1, 1), datetime.date(2068, 12, 31)), st.sampled_from(DATE_FORMATS))
def test_dates_agree_with_dateutil(day, fmt):
    """Day-first dates read as python-dateutil reads them with ``dayfirst=True``."""
    text = day.strftime(fmt)
    reference = dateutil_parser.parse(text, dayfirst=True).date()
    if "%y" in fmt:  # two-digit years pivot at 70 here, on today's date in dateutil
        reference = reference.replace(year=day.year)
    assert canonicalise("date", [text])[0][0] == reference.isoformat() == day.isoformat()
    assert canonicalise("date", [day.isoformat()])[0][0] == day.isoformat()


def test_rules_globs_and_names():
    assert parse_rule(" *.price = Number ") == ("*.price", "number")
    assert resolve([("*.price", "number"), ("menu.price", "exact")], ["menu.price", "sub.price"]) == {
        "sub.price": "number"}
    assert unmatched_rules([("*.price", "number"), ("dat", "date:dmy")], ["menu.price", "date"]) == ["dat"]
    for bad in ("date", "=date", "date=", "date=dates"):
        with pytest.raises(KievalOptionError, match="valid names: exact, casefold, alnum"):
            parse_rule(bad)
    with pytest.raises(KievalOptionError, match=r"\[0, 1\]"):
        Normalizer(near_miss=1.5)


def test_unparsed_values_are_counted_and_compared_as_they_are():
    gt = dataset({"d": [("", "", "date", "01/02/2019"), ("", "", "date", "soon"), ("", "", "total", "x")]},
                 "gt")
    pred = dataset({"d": [("", "", "date", "2019-02-01"), ("", "", "date", "soon"), ("", "", "total", "y")]},
                   "m")
    result = evaluate(gt, {"m": pred}, normalizer=Normalizer.from_names(None, ["da*=date", "nothing=alnum"]))
    m = result.models["m"]
    assert m.entity.tp == 2
    assert result.comparators == {"date": "date:dmy"}
    assert result.comparators_unparsed == {"date": 2}
    expected = "'nothing' (Normalizer(comparators=...)) matches no entity type; entity types: date, total"
    assert any(expected in w for w in result.all_warnings)


# --- naive oracle over the error list ---------------------------------------------------------


def _levenshtein(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


_ORACLE_SEPARATORS = "/-. "
#: strptime formats per reading order ("all": the same date in every order).
_ORACLE_FORMATS = {
    "dmy": ["%d{s}%m{s}%Y", "%d{s}%m{s}%y"],
    "mdy": ["%m{s}%d{s}%Y", "%m{s}%d{s}%y"],
    "ymd": ["%y{s}%m{s}%d"],
    "all": ["%Y{s}%m{s}%d", "%d{s}%b{s}%Y", "%d{s}%B{s}%Y", "%d{s}%b{s}%y"],  # month names: no order
}


def _oracle_date(text: str, order: str) -> datetime.date | None:
    """The date ``text`` names read in ``order`` (strptime; a trailing time dropped)."""
    words = text.split()
    while words and (":" in words[-1] or words[-1].lower() in ("am", "pm")):
        words.pop()
    text = " ".join(words)
    for fmt in _ORACLE_FORMATS[order] + _ORACLE_FORMATS["all"]:
        for sep in _ORACLE_SEPARATORS:
            try:
                day = datetime.datetime.strptime(text, fmt.format(s=sep)).date()
            except ValueError:
                continue
            year = day.year if fmt.count("%Y") else (day.year % 100) + (2000 if day.year % 100 < 70 else 1900)
            return day.replace(year=year)
    for fmt in ("%b %d, %Y", "%B %d, %Y"):
        try:
            return datetime.datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    return None


def _oracle_readings(text: str) -> dict:
    return {order: _oracle_date(text, order) for order in ("dmy", "mdy", "ymd")}


def _one_date(readings: dict):
    dates = {d for d in readings.values() if d is not None}
    return dates.pop() if len(dates) == 1 else None


def _oracle_field_order(gt_values) -> str | None:
    """SPEC 2c: the one order in which every GT value naming one date reads as a date."""
    allowed = {"dmy", "mdy", "ymd"}
    for value in set(gt_values):
        readings = _oracle_readings(value)
        if _one_date(readings) is not None:
            allowed &= {order for order, day in readings.items() if day is not None}
    return allowed.pop() if len(allowed) == 1 else None


def _oracle_number(text: str, decimal: str):
    text = re.sub(r"^(?i:rm|myr|usd)\s*|^\$\s*|\s*(?i:rm|myr)$", "", text)
    thousands = "," if decimal == "." else "."
    t, d = re.escape(thousands), re.escape(decimal)
    if not re.fullmatch(rf"-?(\d{{1,3}}({t}\d{{3}})+|\d+)({d}\d+)?", text):
        return None
    return Decimal(text.replace(thousands, "").replace(decimal, "."))


def oracle_substitution(g: str, p: str, order: str | None, near_miss: float = 0.8) -> str:
    """The cause of a substitution by SPEC 2c, written apart from the engine: the field's
    date order ``order`` (None: none decided)."""
    def alnum(v):
        return "".join(ch for ch in v.casefold() if ch.isalnum())

    if alnum(g) and alnum(g) == alnum(p):
        return "format"
    for decimal in ".,":
        ng, np_ = _oracle_number(g, decimal), _oracle_number(p, decimal)
        if ng is not None and ng == np_:
            return "format"
    rg, rp = _oracle_readings(g), _oracle_readings(p)

    def in_field_order(readings):
        if order is not None and readings[order] is not None:
            return readings[order]
        return _one_date(readings)

    if in_field_order(rg) is not None and in_field_order(rg) == in_field_order(rp):
        return "format"
    if rg == rp and any(rg.values()):
        return "format"
    if any(a is not None and a == b for a in rg.values() for b in rp.values()):
        return "date_order"
    folded_g, folded_p = " ".join(g.casefold().split()), " ".join(p.casefold().split())
    similarity = 1 - _levenshtein(folded_g, folded_p) / max(len(folded_g), len(folded_p))
    return "near_miss" if similarity >= near_miss else "other_value"


def _naive_cause(error: dict, gt_rows: list, pred_rows: list, normalizer: Normalizer,
                 near_miss: float, orders: dict) -> str:
    kind = error["kind"]
    if kind == "substitution":
        g, p = normalizer(error["gt_value"]), normalizer(error["pred_value"])
        return oracle_substitution(g, p, orders.get(error["entity_type"]), near_miss)
    own_value = normalizer(error["gt_value"] if kind == "addition" else error["pred_value"])
    other_rows = pred_rows if kind == "addition" else gt_rows
    paired = error["pred_group"] if kind == "addition" else error["gt_group"]
    paired = -1 if paired is None or paired != paired else int(paired)
    if error["group_type"] != "" and paired == -1:  # an unmatched group: every place is elsewhere
        place = None
    else:
        place = (error["entity_type"], error["group_type"], paired)
    elsewhere = any(normalizer(value) == own_value and (etype, gtype, group) != place
                    for gtype, group, etype, value in other_rows)
    if kind == "deletion":
        return "misplaced" if elsewhere else "hallucinated"
    return "misplaced" if elsewhere else "missed"


def _rows(docs: dict, doc_id: str) -> list:
    """A document's entities as (group type, group index, entity type, value), the group
    index as the loader numbers group keys (their order of appearance)."""
    keys: dict = {}
    out = []
    for gtype, key, etype, value, *_ in docs.get(doc_id, []):
        index = -1 if gtype == "" else keys.setdefault((gtype, key), len([k for k in keys if k[0] == gtype]))
        out.append((gtype, index, etype, value))
    return out


def _field_orders(gt_docs: dict, normalizer: Normalizer) -> dict:
    values: dict = {}
    for rows in gt_docs.values():
        for _, _, etype, value, *_ in rows:
            values.setdefault(etype, []).append(normalizer(value))
    return {etype: _oracle_field_order(v) for etype, v in values.items()}


VALUES = st.sampled_from(["1", "1.0", "10", "A", "a", "B", "x y", "01/02/2019", "2019-02-01", "1,000",
                          "1000", "02/01/2019", "25/12/2018", "12/25/2018", "21/12/16", "21/12/16 9:29 AM"])


@st.composite
def valued_corpus(draw):
    gt, pred = draw(corpus())

    def revalue(docs):
        return {d: [(*r[:3], draw(VALUES), *r[4:]) for r in rows] for d, rows in docs.items()}

    return revalue(gt), revalue(pred)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(valued_corpus(), st.sampled_from([0.5, 0.8, 1.0]), st.booleans())
def test_causes_equal_a_naive_oracle(data, near_miss, casefold):
    gt_docs, pred_docs = data
    normalizer = Normalizer(casefold=casefold, near_miss=near_miss)
    m = evaluate(dataset(gt_docs, "gt"), {"m": dataset(pred_docs, "m")}, normalizer=normalizer).models["m"]
    errors = m.error_list
    orders = _field_orders(gt_docs, normalizer)
    for error in errors.to_dict("records"):
        doc = error["doc_id"]
        expected = _naive_cause(error, _rows(gt_docs, doc), _rows(pred_docs, doc), normalizer, near_miss,
                                orders)
        assert error["cause"] == expected, error


# --- properties ----------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(valued_corpus())
def test_every_correction_has_exactly_one_cause(data):
    gt_docs, pred_docs = data
    m = evaluate(dataset(gt_docs, "gt"), {"m": dataset(pred_docs, "m")}).models["m"]
    errors = m.error_list
    assert errors["cause"].notna().all()
    kinds_and_causes = zip(errors["kind"], errors["cause"], strict=True)
    assert all(cause in CAUSES_OF_KIND[kind] for kind, cause in kinds_and_causes)
    for kind, causes in m.causes.items():
        assert sum(causes.values()) == getattr(m.corrections, kind)
    for table in (m.documents, m.by_entity_type, m.by_group_type):
        assert (table[CAUSE_COLUMNS].sum(axis=1) == table["corrections"]).all()
    total_format = m.causes["substitution"]["format"]
    assert m.aligned <= m.aligned_if_format_right
    denominator = m.entity.tp + m.corrections.total
    expected = (m.entity.tp + total_format) / denominator if denominator else 1.0
    assert m.aligned_if_format_right == pytest.approx(expected)
    detail = m.detail()
    for side in (detail.gt_entities, detail.pred_entities):
        assert (side["cause"].isna() == (side["status"] == "correct")).all()


FIELDS = ("date", "total", "name")
PAIR_VALUES = st.sampled_from(["01/02/2019", "2019-02-01", "1 Feb 2019", "02/01/2019", "1,000.00", "1000",
                               "$1000", "ACME", "acme.", "Acme Ltd", "x", "1.000,00"])


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FIELDS), PAIR_VALUES, PAIR_VALUES), min_size=1, max_size=3,
                unique_by=lambda t: t[0]))
def test_the_comparator_that_makes_a_format_pair_equal_makes_it_a_tp(pairs):
    """One value per field on each side (non-group): a ``format`` pair is one a comparator
    makes equal; declaring, for a field, a comparator that makes a pair equal turns it into
    a TP, and an ``other_value`` pair stays a substitution with cause ``other_value`` under
    every comparator."""
    gt = dataset({"d": [("", "", f, g) for f, g, _ in pairs]}, "gt")
    pred = dataset({"d": [("", "", f, p) for f, _, p in pairs]}, "m")
    before = evaluate(gt, {"m": pred}).models["m"].error_list.set_index("entity_type")
    for field, g, p in pairs:
        if g == p:
            continue
        fixing = fixing_comparators([g], [p])[0]
        cause = before.loc[field, "cause"]
        assert cause != "format" or fixing.any()
        for comparator, fixes in zip(FORMAT_COMPARATORS, fixing, strict=True):
            after = evaluate(gt, {"m": pred}, normalizer=Normalizer(comparators=((field, comparator),)))
            errors = after.models["m"].error_list.set_index("entity_type")
            if fixes:
                assert field not in errors.index
            if cause == "other_value":
                assert errors.loc[field, ["kind", "cause"]].tolist() == ["substitution", "other_value"]
            others = [f for f, _, _ in pairs if f != field]
            assert errors.reindex(others)["cause"].tolist() == before.reindex(others)["cause"].tolist()


SROIE_MODELS = ("aws_textract_analyzeexpense", "gpt4o_vision_themurtez", "claude_haiku_4.5")


def test_every_sroie_substitution_cause_equals_the_spec_classifier(shared_data):
    """On SROIE with Textract, GPT-4o and Claude Haiku, every substitution's cause is the one
    a classifier of SPEC 2c written apart from the engine gives (date order of the field from
    the GT, a time after a date, near miss on case-folded values)."""
    sroie = shared_data / "sroie"
    gt_file = sroie / "sroie_test_gt.jsonl"
    result = evaluate(gt_file, {name: sroie / "predictions" / f"{name}.jsonl" for name in SROIE_MODELS})
    gt = result.gt.entities
    orders = {etype: _oracle_field_order(rows["value"].map(Normalizer()))
              for etype, rows in gt.groupby("entity_type", observed=True)}
    assert orders["date"] is None  # 130 GT dates only day first, and 4/22/2018 only month first
    seen = set()
    for model in result.models.values():
        subs = model.error_list.query("kind == 'substitution'")
        expected = [oracle_substitution(g, p, orders[t]) for t, g, p in
                    subs[["entity_type", "gt_value", "pred_value"]].itertuples(index=False)]
        assert subs["cause"].tolist() == expected
        seen |= set(expected)
    assert seen == {"format", "date_order", "near_miss", "other_value"}
    (said,) = result.date_order_warnings  # the user is told why the ambiguous dates are date_order
    assert said.startswith("date: the ground truth does not settle a date order (347 of 347 GT values are "
                           "dates; day first in 135 of 136 unambiguous)")
    assert said in result.all_warnings


def test_substitution_causes_on_pairs():
    causes = substitution_causes(["ACME", "1,000.00", "Pears", "Pear", "7000"],
                                 ["acme", "1000", "Pear", "Pea", "1000"])
    assert causes.tolist() == ["format", "format", "near_miss", "other_value", "other_value"]  # 0.8, 0.75


@pytest.mark.parametrize("normalizer", [Normalizer(), Normalizer(casefold=True)])
def test_suggestions_from_the_kept_substitutions_equal_those_of_the_error_list(normalizer):
    """The hint reads the format substitutions off the fixes the suggested rules keep per
    model (one pass over every substitution); a model without the engine's tables reads
    its error list: the same suggestions, and the suggested rules' counts their sums."""
    from conftest import SAMPLE_DATA

    from kieval_core.result.suggest import Substitutions, suggested_comparators

    result = evaluate(SAMPLE_DATA / "cord_v2_gt.jsonl", sorted(SAMPLE_DATA.glob("sim_*.jsonl")),
                      normalizer=normalizer)
    for model in result.models.values():
        Substitutions.of([model], normalizer)  # fills the model's kept fixes first
        kept = suggested_comparators(model, normalizer)
        listed = suggested_comparators(dataclasses.replace(model, counted=None,
                                                           partition_error_list=model.error_list), normalizer)
        assert not kept.empty
        pd.testing.assert_frame_equal(kept, listed)
    total = Substitutions.of(result.models.values(), normalizer)
    parts = [Substitutions.of([m], normalizer) for m in result.models.values()]
    assert total == parts[0] + parts[1] + parts[2]


# --- command line ----------------------------------------------------------------------------


def test_the_summary_prints_causes_and_the_comparator_to_try(tmp_path, capsys):
    gt_file, pred_file = _two_receipts(tmp_path, "2019-02-01")
    assert main(["evaluate", "--gt", str(gt_file), "--pred", str(pred_file)]) == 0
    out = capsys.readouterr().out
    assert "Subs: format" in out and "Adds: missed" in out and "KIEval_Aligned if formats were right" in out
    assert "Subs: date order" in out
    assert "try: m: --compare date=date would raise KIEval_Aligned from 0.6667 to 0.7500" in out
    assert main(["evaluate", "--gt", str(gt_file), "--pred", str(pred_file), "--compare", "date=date"]) == 0
    out = capsys.readouterr().out
    assert "rules: date=date:dmy (--compare date=date)" in out and "try:" not in out


def test_no_hints_leaves_out_the_try_line_and_its_work(tmp_path, capsys, monkeypatch):
    """--no-hints: no 'try:' line and no re-count of the suggested comparators (it is never
    called); every other line of the summary and the JSON report stay the same."""
    from kieval_core.result import suggest

    gt_file, pred_file = _two_receipts(tmp_path, "2019-02-01")
    runs = {}
    for flags in ([], ["--no-hints"]):
        report = tmp_path / f"report{len(flags)}.json"
        assert main(["evaluate", "--gt", str(gt_file), "--pred", str(pred_file), "--json", str(report),
                     *flags]) == 0
        runs[bool(flags)] = capsys.readouterr().out.splitlines(), report.read_bytes()
        monkeypatch.setattr(suggest, "hint_lines", lambda *a, **k: pytest.fail("hints computed"))
    (with_hints, report_with), (without, report_without) = runs[False], runs[True]
    assert [line for line in with_hints if line.startswith("try: ")] == [
        "try: m: --compare date=date would raise KIEval_Aligned from 0.6667 to 0.7500"]
    assert not any(line.startswith("try:") for line in without)
    assert without == [line for line in with_hints if not line.startswith("try: ")]
    assert report_without == report_with


def test_gates_on_causes(tmp_path):
    gt_file, pred_file = _files(tmp_path, RPA_GT, RPA_PRED)
    base = ["evaluate", "--gt", str(gt_file), "--pred", str(pred_file)]
    assert main([*base, "--gate", "kieval.causes.addition.missed<=1"]) == 0
    assert main([*base, "--gate", "kieval.causes.substitution.near_miss<=0"]) == 3
    assert main([*base, "--gate", "kieval.aligned_if_format_right>=0.6"]) == 0
    assert main([*base, "--gate", "kieval.causes.addition.missed>=1"]) == 2  # wrong direction


@pytest.mark.parametrize("option", ["date=dates", "date", "=date", "date="])
def test_bad_comparators_exit_2_listing_the_names(tmp_path, capsys, option):
    gt_file, pred_file = _files(tmp_path, RPA_GT, RPA_PRED)
    assert main(["evaluate", "--gt", str(gt_file), "--pred", str(pred_file), "--compare", option]) == 2
    err = capsys.readouterr().err
    names = "exact, casefold, alnum, number, number:comma, date, date:dmy, date:mdy, date:ymd"
    assert f"valid names: {names}" in err
    assert "Traceback" not in err


def test_a_glob_matching_nothing_is_a_warning(tmp_path, capsys):
    gt_file, pred_file = _files(tmp_path, RPA_GT, RPA_PRED)
    argv = ["evaluate", "--gt", str(gt_file), "--pred", str(pred_file), "--compare", "*.prize=number"]
    assert main(argv) == 0
    assert ("warning: the rule declared for '*.prize' (--compare *.prize=number) matches no entity type; "
            "entity types: address") in (
        capsys.readouterr().err)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5).flatmap(lambda k: st.lists(
    st.tuples(*[st.sampled_from([-1, 0, 1, 7, 2**40, 2**61]) for _ in range(k)]), max_size=30)),
    st.integers(1, 5))
def test_dense_codes_rank_rows_lexicographically(rows, k):
    """One sort of packed keys (ranked first when they would overflow) gives every row
    its rank among the distinct rows, as sorting the tuples does."""
    width = len(rows[0]) if rows else k
    columns = [np.array([r[j] for r in rows], np.int64) for j in range(width)]
    rank = {row: i for i, row in enumerate(sorted(set(rows)))}
    assert dense_codes(*columns).tolist() == [rank[r] for r in rows]


def test_date_orders_of_codes_equal_those_of_the_strings():
    """The engine passes value and type codes (each pair counted once): the same orders as
    the strings (a: dmy and mdy values, contradicted; b: ISO, which decides nothing, and mdy)."""
    types = np.array([0, 0, 0, 1, 1, 1])
    codes = np.array([0, 1, 1, 2, 2, 0])
    distinct = np.array(["12/25/2018", "25/12/2018", "2019-02-01"], dtype=object)
    names = np.array(["a", "b"], dtype=object)
    expected = field_date_orders(names[types], distinct[codes], ["a", "b", "c"])
    assert coded_date_orders(types, codes, names, distinct, ["a", "b", "c"]) == expected == {
        "a": -1, "b": 1, "c": -1}
