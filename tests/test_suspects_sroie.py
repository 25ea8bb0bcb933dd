"""Suspect labels on SROIE with its seven real systems (SPEC 2f, issue 32's "done means").

The comparators are those a user would declare for SROIE: ``date`` as a date (day first),
``total`` as a number, ``company`` and ``address`` as ``alnum`` (receipts print names and
addresses in capitals and with varied punctuation; the GT copies the receipt's capitals,
several systems write title case). ``split`` is metadata.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from kieval_core import LoadOptions, Normalizer, evaluate, report_json
from kieval_core.review.suspects import field_forms
from tests.conftest import SHARED_DATA

SROIE_RULES = ["date=date", "total=number", "company=alnum", "address=alnum"]
OCR = {"0": "O", "O": "0", "1": "I", "I": "1", "5": "S", "S": "5", "8": "B", "B": "8", "2": "Z", "6": "G"}


@pytest.fixture(scope="module")
def sroie():
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    folder = SHARED_DATA / "sroie"
    predictions = {p.stem: str(p) for p in sorted((folder / "predictions").glob("*.jsonl"))}
    return folder / "sroie_test_gt.jsonl", predictions


def run(gt, predictions, **options):
    return evaluate(gt, predictions, normalizer=Normalizer.from_names(None, SROIE_RULES),
                    load_options=LoadOptions(meta=("split",)), **options)


def same_value(a: str, b: str, entity_type: str) -> bool:
    """Whether two values of a field are equal under the SROIE comparators."""
    forms = field_forms(np.array([a, b], object), np.array([entity_type] * 2, object),
                        Normalizer.from_names(None, SROIE_RULES))
    return forms[0] == forms[1]


def plant(value: str, kind: str, rng: random.Random) -> str | None:
    """One label error of a kind, or None when the value offers none."""
    if kind == "digit":
        places = [i for i, ch in enumerate(value) if ch.isdigit()]
        if not places:
            return None
        i = rng.choice(places)
        return value[:i] + rng.choice([d for d in "0123456789" if d != value[i]]) + value[i + 1:]
    if kind == "ocr":
        places = [i for i, ch in enumerate(value) if ch in OCR]
        if not places:
            return None
        i = rng.choice(places)
        return value[:i] + OCR[value[i]] + value[i + 1:]
    if kind == "drop":
        places = [i for i, ch in enumerate(value) if ch.isalnum()]
        if len(places) < 2:
            return None
        i = rng.choice(places)
        return value[:i] + value[i + 1:]
    m = re.match(r"^(\d{1,2})([/.-].*)$", value)  # a changed day
    if m is None or not 1 <= int(m[1]) <= 27:
        return None
    return f"{int(m[1]) + 1:0{len(m[1])}d}{m[2]}"


def planted_errors(gt_path, clean) -> list[dict]:
    """40 label errors, ten of each kind, on values at least 4 of the 7 systems get right."""
    right = sum((m.detail().gt_entities["status"] == "correct").astype(int).to_numpy()
                for m in clean.models.values())
    entities = clean.gt.entities.assign(right=right)
    agreed = entities[(entities["right"] >= 4) & (entities["entity_type"] != "split")]
    rng = random.Random(32)
    candidates = list(agreed[["doc_id", "entity_type", "value"]].itertuples(index=False))
    rng.shuffle(candidates)
    kinds = ["digit", "ocr", "drop", "day"] * 10
    planted, used = [], set()
    for kind in kinds:
        for doc_id, entity_type, value in candidates:
            if doc_id in used or (kind == "day") != (entity_type == "date"):
                continue
            new = plant(value, kind, rng)
            if new is None or same_value(value, new, entity_type):
                continue
            used.add(doc_id)
            planted.append({"doc_id": doc_id, "entity_type": entity_type, "original": value, "planted": new,
                            "kind": kind})
            break
    assert len(planted) == 40
    return planted


def write_planted(gt_path, planted, folder):
    by_doc = {p["doc_id"]: p for p in planted}
    lines = []
    for line in gt_path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["doc_id"] in by_doc:
            p = by_doc[record["doc_id"]]
            assert record[p["entity_type"]] == p["original"]
            record[p["entity_type"]] = p["planted"]
        lines.append(json.dumps(record, ensure_ascii=False))
    path = folder / "sroie_planted_gt.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def planted_run(sroie, tmp_path_factory):
    gt_path, predictions = sroie
    clean = run(gt_path, predictions)
    planted = planted_errors(gt_path, clean)
    path = write_planted(gt_path, planted, tmp_path_factory.mktemp("sroie"))
    return clean, planted, path


def test_the_b1750_address_is_a_suspect_of_the_unmodified_gt(planted_run):
    clean, _, _ = planted_run
    s = clean.suspects
    row = s[(s["doc_id"] == "X00016469670") & (s["entity_type"] == "address")]
    assert len(row) == 1
    assert "B1750" in row["gt_value"].iloc[0] and "81750" in row["proposed_value"].iloc[0]
    assert row.index[0] < 5  # among the strongest evidence


def test_planted_label_errors_rank_among_the_top_suspects(planted_run):
    clean, planted, path = planted_run
    m = len(clean.suspects)
    top = run(path, dict(clean_predictions(clean))).suspects.head(m + 40)
    found = {(r.doc_id, r.entity_type) for r in top.itertuples() if r.kind == "value"}
    hits = [p for p in planted if (p["doc_id"], p["entity_type"]) in found]
    proposals = {(r.doc_id, r.entity_type): r.proposed_value for r in top.itertuples()}
    assert len(hits) >= 36, [p for p in planted if p not in hits]
    # the proposal is the original value (under the field's comparator)
    for p in hits:
        proposal = proposals[(p["doc_id"], p["entity_type"])]
        assert same_value(p["original"], proposal, p["entity_type"]), (p, proposal)


def clean_predictions(clean):
    return {name: model.source for name, model in clean.models.items()}


def test_a_fix_file_undoing_the_planted_errors_gives_the_clean_figures(planted_run, tmp_path):
    clean, planted, path = planted_run
    before = path.read_bytes()
    fixes = [{"doc_id": p["doc_id"], "entity_type": p["entity_type"], "group": None, "gt_value": p["planted"],
              "fixed_value": p["original"], "note": p["kind"]} for p in planted]
    fix_file = tmp_path / "fixes.json"
    fix_file.write_text(json.dumps(fixes), encoding="utf-8")
    fixed = run(path, clean_predictions(clean), gt_fixes=fix_file)
    assert path.read_bytes() == before  # the input is never changed
    fixed_report = json.loads(report_json(fixed))
    clean_report = json.loads(report_json(clean))
    planted_report = json.loads(report_json(run(path, clean_predictions(clean))))
    for name in clean.models:
        ours, theirs = fixed_report["models"][name], clean_report["models"][name]
        for family in ("kieval", "entity_f1", "automation", "by_entity_type", "documents"):
            assert ours[family] == theirs[family], (name, family)
            if family != "documents":
                as_given = planted_report["models"][name][family]
                assert ours[f"{family}_before_fixes"] == as_given, (name, family)
    assert fixed_report["suspects"] == clean_report["suspects"]
