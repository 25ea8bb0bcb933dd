"""The figures depend on the data only: not on the order of documents, groups or
entities, and not on the format the same data is written in (issue 8)."""

from __future__ import annotations

import io
import json
import math
import random
import zipfile

import numpy as np
import pandas as pd
from builders import dataset
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core import DecisionOptions, evaluate, load_bytes
from kieval_core.output.render import report_json

# few values and few confidences: many duplicates and ties
VALUES = st.sampled_from(["1", "2", "A", "B"])
CONF = st.one_of(st.none(), st.sampled_from([0.2, 0.5, 0.5, 0.9]))
NON_GROUP = st.sampled_from(["company", "total"])
GROUP_ENTITY = st.sampled_from(["menu.nm", "menu.price"])


@st.composite
def document(draw, with_conf):
    rows = []
    for _ in range(draw(st.integers(0, 3))):
        conf = draw(CONF) if with_conf else None
        rows.append(("", "", draw(NON_GROUP), draw(VALUES), math.nan if conf is None else conf))
    for g in range(draw(st.integers(0, 4))):
        for _ in range(draw(st.integers(1, 3))):
            conf = draw(CONF) if with_conf else None
            conf = math.nan if conf is None else conf
            rows.append(("menu", str(g), draw(GROUP_ENTITY), draw(VALUES), conf))
    return rows


@st.composite
def corpus(draw):
    n = draw(st.integers(1, 4))
    gt = {f"d{i}": draw(document(with_conf=False)) for i in range(n)}
    pred = {f"d{i}": draw(document(with_conf=True)) for i in range(n)}
    return gt, pred


def _report(gt: dict, pred: dict) -> str:
    result = evaluate(dataset(gt, "gt"), {"m": dataset(pred, "m")})
    return report_json(result, DecisionOptions(resamples=25, target=0.6))


def _permuted(docs: dict, rnd: random.Random) -> dict:
    """Documents, groups and entities in a new order; groups renamed."""
    out = {}
    for doc_id in rnd.sample(list(docs), len(docs)):
        rows = list(docs[doc_id])
        rnd.shuffle(rows)
        keys = list(dict.fromkeys(r[1] for r in rows if r[0]))
        names = [f"g{i}" for i in range(len(keys))]
        rnd.shuffle(names)
        rename = dict(zip(keys, names, strict=True))
        out[doc_id] = [(r[0], rename[r[1]] if r[0] else "", *r[2:]) for r in rows]
    return out


@settings(max_examples=50, deadline=None)
@given(corpus(), st.randoms(use_true_random=False))
def test_any_permutation_gives_a_byte_identical_report(data, rnd):
    gt, pred = data
    assert _report(gt, pred) == _report(_permuted(gt, rnd), _permuted(pred, rnd))


# --- one dataset, every format -----------------------------------------------------------


def _nested(rows) -> dict:
    """A document as nested JSON: non-group keys at the root, menu lines as a list."""
    def leaf(value, conf):
        return value if math.isnan(conf) else {"value": value, "confidence": conf}

    doc: dict = {}
    lines: dict[str, dict] = {}
    for gtype, key, etype, value, conf in rows:
        target = doc if not gtype else lines.setdefault(key, {})
        name = etype if not gtype else etype.split(".", 1)[1]
        target.setdefault(name, []).append(leaf(value, conf))
    if lines:
        doc["menu"] = list(lines.values())
    return doc


def _table(docs: dict) -> pd.DataFrame:
    return pd.DataFrame([
        {"doc_id": d, "entity": etype, "value": value, "group": key,
         "confidence": None if math.isnan(conf) else conf}
        for d, rows in docs.items() for (_, key, etype, value, conf) in rows
    ] + [{"doc_id": d, "entity": "", "value": "", "group": "", "confidence": None}
         for d, rows in docs.items() if not rows],
        columns=["doc_id", "entity", "value", "group", "confidence"])


def _files(docs: dict) -> dict[str, bytes]:
    """The same documents in every format that carries groups and confidences."""
    nested = {d: _nested(rows) for d, rows in docs.items()}
    jsonl = "".join(json.dumps({"doc_id": d, "prediction": s}) + "\n" for d, s in nested.items())
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        for d, s in nested.items():
            z.writestr(f"{d}.json", json.dumps(s))
    table = _table(docs)
    csv = table.assign(confidence=table["confidence"].map(lambda c: "" if c is None or c != c else repr(c)))
    parquet = io.BytesIO()
    table.assign(confidence=table["confidence"].astype(float)).to_parquet(parquet)
    table_jsonl = "".join(json.dumps({k: (None if (isinstance(v, float) and v != v) else v)
                                      for k, v in r.items()}) + "\n" for r in table.to_dict("records"))
    # the CSV's cells as JSON strings: "confidence": "" is no confidence, as in the CSV
    table_text = "".join(json.dumps(r) + "\n" for r in csv.to_dict("records"))
    return {
        "p.jsonl": jsonl.encode(),
        "p.json": json.dumps(nested).encode(),
        "p.zip": archive.getvalue(),
        "p.csv": csv.to_csv(index=False).encode(),
        "p.tsv": csv.to_csv(index=False, sep="\t").encode(),
        "t.jsonl": table_jsonl.encode(),
        "t-text.jsonl": table_text.encode(),
        "p.parquet": parquet.getvalue(),
    }


def _figures(model) -> tuple:
    group = None if model.group is None else (model.group.tp, model.group.fp, model.group.fn)
    return (model.entity.tp, model.entity.fp, model.entity.fn, model.corrections.as_dict(), group,
            model.entity_f1.tp, model.documents[["doc_id", "tp", "corrections"]].values.tolist(),
            model.curve.round(12).values.tolist())


@settings(max_examples=25, deadline=None)
@given(corpus())
def test_every_format_gives_the_same_figures(data):
    gt_docs, pred_docs = data
    gt = dataset(gt_docs, "gt")
    figures = {}
    for name, content in _files(pred_docs).items():
        pred = load_bytes(content, name)
        figures[name] = _figures(evaluate(gt, {"m": pred}).models["m"])
    first = next(iter(figures.values()))
    for name, value in figures.items():
        assert value == first, name


def test_formats_without_confidences_agree():
    """The official KIEval CSVs and CORD's valid_line give the figures of nested JSON."""
    gt = dataset({"d0": [("total", "0", "total.total_price", "A", np.nan),
                         ("menu", "0", "menu.nm", "1", np.nan), ("menu", "0", "menu.price", "2", np.nan),
                         ("menu", "1", "menu.nm", "B", np.nan)]})
    nested = {"d0": {"total": {"total_price": "A"}, "menu": [{"nm": "1", "price": "3"}, {"nm": "B"}]}}
    csv = "0\ntotal.total_price\nA\n\n1\nmenu.nm\tmenu.price\n1\t3\nB\t<empty>\n"
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("d0.csv", csv)
    cord = {"doc_id": "d0", "valid_line": [
        {"category": "total.total_price", "group_id": 9, "words": [{"text": "A"}]},
        {"category": "menu.nm", "group_id": 1, "words": [{"text": "1"}]},
        {"category": "menu.price", "group_id": 1, "words": [{"text": "3"}]},
        {"category": "menu.nm", "group_id": 2, "words": [{"text": "B"}]}]}
    results = []
    for name, content in (("p.json", json.dumps(nested).encode()), ("p.zip", archive.getvalue()),
                          ("c.jsonl", (json.dumps(cord) + "\n").encode())):
        model = evaluate(gt, {"m": load_bytes(content, name)}).models["m"]
        results.append((model.entity.tp, model.entity.fp, model.entity.fn, model.group.tp))
    assert results[0] == (3, 1, 1, 2)
    assert results == [results[0]] * 3
