"""Several acceptable ground-truth values of one leaf (SPEC 2e): read from JSON ``any_of``
and from a long table's ``alternative`` column, counted as one GT entity, a prediction equal
to any of them correct, a substitution shown against the closest, ANLS* equal to the
``anls-star`` package given them as a tuple."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from anls_star import anls_score
from builders import write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import KievalInputError, Normalizer, evaluate, load, load_bytes
from kieval_core.read.formats.builder import ALTERNATIVE_SET

GT = [{"doc_id": "a", "date": {"any_of": ["01/02/2019", "1 Feb 2019"]}, "total": "5",
       "menu": [{"nm": {"any_of": ["Tea", "Ice Tea"]}, "price": "2"}]},
      {"doc_id": "b", "date": {"any_of": ["25/12/2018", "25 Dec 2018"]}, "total": "7"}]
PRED = [{"doc_id": "a", "date": "1 Feb 2019", "total": "5", "menu": [{"nm": "Ice Tee", "price": "2"}]},
        {"doc_id": "b", "date": "25 Dec 2019", "total": "7"}]


def _evaluate(gt, pred, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(gt, {"m": pred}, **options).models["m"]


def test_any_of_is_one_leaf_of_several_values(tmp_path):
    ds = load(write_jsonl(tmp_path / "gt.jsonl", GT))
    rows = ds.entities[["doc_id", "group_type", "entity_type", "value", ALTERNATIVE_SET]].values.tolist()
    assert rows == [["a", "", "date", "01/02/2019", 0], ["a", "", "date", "1 Feb 2019", 0],
                    ["a", "", "total", "5", -1], ["a", "menu", "menu.nm", "Tea", 3],
                    ["a", "menu", "menu.nm", "Ice Tea", 3], ["a", "menu", "menu.price", "2", -1],
                    ["b", "", "date", "25/12/2018", 6], ["b", "", "date", "25 Dec 2018", 6],
                    ["b", "", "total", "7", -1]]
    assert ds.structures["a"]["date"] == ("01/02/2019", "1 Feb 2019")  # ANLS*'s alternatives


def test_hand_worked_counts(tmp_path):
    """a: date 1 Feb 2019 is the second alternative (TP), total TP, Ice Tee is a near miss of
    the closest alternative Ice Tea (0.86; Tea: 0.57), price TP; b: 25 Dec 2019 is a near miss
    of 25 Dec 2018, total TP. 6 GT entities (one per leaf), TP 4, 2 substitutions."""
    m = _evaluate(write_jsonl(tmp_path / "gt.jsonl", GT), write_jsonl(tmp_path / "p.jsonl", PRED))
    assert (m.entity.tp, m.entity.fp, m.entity.fn) == (4, 2, 2)
    assert (m.corrections.substitution, m.corrections.addition, m.corrections.deletion) == (2, 0, 0)
    shown = m.error_list[["entity_type", "gt_value", "pred_value", "cause"]].values.tolist()
    assert shown == [["menu.nm", "Ice Tea", "Ice Tee", "near_miss"], ["date", "25 Dec 2018", "25 Dec 2019",
                                                                          "near_miss"]]
    missing = _evaluate(write_jsonl(tmp_path / "gt.jsonl", GT), [{"doc_id": "a", "total": "5"},
                                                                  {"doc_id": "b", "total": "7"}])
    assert missing.corrections.addition == 4  # each leaf once: two dates, a name, a price


def test_a_prediction_equal_under_the_fields_comparator_is_correct():
    gt = {"a": {"date": {"any_of": ["x", "01/02/2019"]}}, "b": {"date": "25/12/2018"}}
    pred = {"a": {"date": "2019-02-01"}, "b": {"date": "25/12/2018"}}
    assert _evaluate(gt, pred).entity.tp == 1
    assert _evaluate(gt, pred, normalizer=Normalizer(comparators=(("date", "date:dmy"),))).entity.tp == 2
    assert _evaluate(gt, pred).error_list["cause"].tolist() == ["format"]  # against 01/02/2019, not x


def test_long_table_alternative_rows_equal_any_of(tmp_path):
    rows = [("a", "date", "01/02/2019", "", ""), ("a", "date", "1 Feb 2019", "", "true"),
            ("a", "total", "5", "", "false"), ("a", "menu.nm", "Tea", "0", ""),
            ("a", "menu.nm", "Ice Tea", "0", "TRUE"), ("a", "menu.price", "2", "0", ""),
            ("b", "date", "25/12/2018", "", "0"), ("b", "date", "25 Dec 2018", "", "1"),
            ("b", "total", "7", "", "")]
    frame = pd.DataFrame(rows, columns=["doc_id", "entity_type", "value", "group", "alternative"])
    frame.to_csv(tmp_path / "gt.csv", index=False)
    records = frame.to_dict("records")
    for record in records:
        record["alternative"] = record["alternative"].lower() in ("true", "1")
    write_jsonl(tmp_path / "gt_rows.jsonl", records)
    pred = write_jsonl(tmp_path / "p.jsonl", PRED)
    nested = _evaluate(write_jsonl(tmp_path / "gt.jsonl", GT), pred)
    for table in ("gt.csv", "gt_rows.jsonl"):
        m = _evaluate(tmp_path / table, pred)
        assert (m.entity, m.corrections) == (nested.entity, nested.corrections), table
        assert m.error_list[["gt_value", "pred_value"]].values.tolist() == \
            nested.error_list[["gt_value", "pred_value"]].values.tolist()


@pytest.mark.parametrize(("data", "expected"), [
    (b"doc_id,entity,value,alternative\na,d,1,true\n", "line 2: an alternative value without a first value"),
    (b"doc_id,entity,value,alternative\na,d,1,\na,d,2,maybe\n", "line 3: alternative is 'maybe'"),
])
def test_bad_alternative_rows_are_named(data, expected):
    with pytest.raises(KievalInputError, match=expected):
        load_bytes(data, "t.csv")


def test_anls_star_equals_the_package_given_the_alternatives_as_a_tuple(tmp_path):
    gt_file, pred_file = write_jsonl(tmp_path / "gt.jsonl", GT), write_jsonl(tmp_path / "p.jsonl", PRED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = evaluate(gt_file, {"m": pred_file}, metrics="all").models["m"]
    expected = []
    for g, p in zip(GT, PRED, strict=True):
        def tupled(node):
            if isinstance(node, dict) and set(node) == {"any_of"}:
                return tuple(node["any_of"])
            if isinstance(node, dict):
                return {k: tupled(v) for k, v in node.items() if k != "doc_id"}
            return [tupled(v) for v in node] if isinstance(node, list) else node
        expected.append(anls_score(tupled(g), {k: v for k, v in p.items() if k != "doc_id"}))
    assert m.peer["anls_star"].figures["anls_star"] == pytest.approx(sum(expected) / 2, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["A", "a", "B", "1,000", "1000", "x y"]), min_size=1, max_size=4,
                unique=True),
       st.sampled_from(["A", "a", "B", "1000", "zz"]))
def test_a_matched_alternative_scores_as_that_value_alone(options, predicted):
    """When the prediction equals one alternative, the figures are those of a ground truth
    holding that value alone; otherwise one substitution against one GT entity."""
    gt = {"d": {"f": {"any_of": options}, "g": "k"}}
    m = _evaluate(gt, {"d": {"f": predicted, "g": "k"}})
    if predicted in options:
        alone = _evaluate({"d": {"f": predicted, "g": "k"}}, {"d": {"f": predicted, "g": "k"}})
        assert (m.entity, m.corrections) == (alone.entity, alone.corrections)
    else:
        assert (m.entity.tp, m.entity.fn, m.corrections.substitution) == (1, 1, 1)
        assert m.error_list["gt_value"].iloc[0] in options


def test_nted_scores_the_file_as_written(tmp_path):
    """Donut's nTED knows no alternatives: it is given the any_of object as the file has it,
    and equals Donut's evaluator on that file."""
    sys.path.insert(0, str(Path(__file__).parent / "peer"))
    import donut_reference as donut

    gt = [{"doc_id": "a", "date": {"any_of": ["01/02/2019", "1 Feb 2019"]}, "total": "5"}]
    pred = [{"doc_id": "a", "date": "1 Feb 2019", "total": "5"}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = evaluate(write_jsonl(tmp_path / "gt.jsonl", gt), {"m": write_jsonl(tmp_path / "p.jsonl", pred)},
                     metrics="all").models["m"]
    assert m.entity.f1 == 1.0
    body = [{k: v for k, v in r.items() if k != "doc_id"} for r in (gt[0], pred[0])]
    assert m.peer["nted"].figures["nted"] == pytest.approx(donut.cal_acc(body[1], body[0]), abs=1e-9)
