"""Text from files stays text outside the app: CSV exports hold no live formula, the
terminal receives no control sequence (SPEC 8b)."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
from builders import write_jsonl
from hypothesis import given
from hypothesis import strategies as st

from kieval_core import evaluate
from kieval_core.cli import main
from kieval_core.figures.error_analysis import error_list_csv, error_list_json
from kieval_core.safe_text import for_terminal, neutralise_formulas

FORMULAS = ["=HYPERLINK(\"http://x.example\",\"a\")", "=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)",
            "\t=1", "\r=1"]
RISKY = tuple("=+-@\t\r")


def hostile_files(folder):
    """GT and predictions whose ids, keys and values are formulas or carry terminal codes."""
    gt = [{"doc_id": doc, "gt_parse": {"total": value, "store": "plain"}}
          for doc, value in zip(FORMULAS, FORMULAS[::-1], strict=True)]
    gt.append({"doc_id": "esc\x1b[2J\x1b[Hall gates passed\ndoc", "gt_parse": {"total": "1"}})
    pred = [{"doc_id": doc, "prediction": {"total": f"{value}x", "=key": "@v"}}
            for doc, value in zip(FORMULAS, FORMULAS, strict=True)]
    return write_jsonl(folder / "gt.jsonl", gt), write_jsonl(folder / "pred.jsonl", pred)


def cells(data: bytes) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(data.decode("utf-8"), newline="")) for cell in row]


def test_the_errors_csv_holds_no_formula_unless_asked(tmp_path, capsys):
    gt, pred = hostile_files(tmp_path)
    out = tmp_path / "e.csv"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--errors-csv", str(out), "--json", str(tmp_path / "r.json")]) == 0
    written = cells(out.read_bytes())
    assert not [c for c in written if c.startswith(RISKY)]
    assert {f"'{f}" for f in FORMULAS} <= set(written)
    kept = tmp_path / "kept.csv"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0",
                 "--errors-csv", str(kept), "--csv-formulas", "keep"]) == 0
    assert set(FORMULAS) <= set(cells(kept.read_bytes()))
    capsys.readouterr()


def test_the_dashboard_download_holds_no_formula(tmp_path):
    gt, pred = hostile_files(tmp_path)
    errors = evaluate(gt, {"m": pred}).models["m"].error_list
    assert sum(str(v).startswith(RISKY) for v in errors.astype(object).to_numpy().ravel()) >= len(FORMULAS)
    written = cells(error_list_csv(errors))
    assert not [c for c in written if c.startswith(RISKY)]
    assert {f"'{f}" for f in FORMULAS} <= set(written)
    records = json.loads(error_list_json(errors))  # the JSON keeps every value as it is
    assert set(FORMULAS) <= {r["doc_id"] for r in records}


@given(st.lists(st.one_of(st.text(max_size=8), st.none()), min_size=1, max_size=20))
def test_neutralised_cells_read_back_as_the_values(values):
    frame = pd.DataFrame({"v": pd.Series(values, dtype=object), "n": range(len(values))})
    out = neutralise_formulas(frame)
    assert out["n"].tolist() == frame["n"].tolist()
    for before, after in zip(frame["v"], out["v"], strict=True):
        if isinstance(before, str) and before.startswith(RISKY):
            assert after == "'" + before
        else:
            assert after is before or (pd.isna(after) and pd.isna(before)) or after == before


def test_terminal_lines_carry_no_control_sequence(tmp_path, capsys):
    gt, pred = hostile_files(tmp_path)
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--bootstrap", "0"]) == 0
    captured = capsys.readouterr()
    warning = [line for line in captured.err.splitlines() if "absent from the predictions" in line]
    assert len(warning) == 1 and "\\x1b[2J\\x1b[Hall gates passed\\x0adoc" in warning[0]
    for text in (captured.out, captured.err):
        assert not any(ch in text for ch in "\x1b\r\x9b\u202e")
    assert main(["evaluate", "--gt", str(tmp_path / "\x1b[31mmissing.jsonl"), "--pred", str(pred)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[31mmissing.jsonl" in err


@given(st.text())
def test_for_terminal_leaves_no_control_character(text):
    shown = for_terminal(text)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E for c in shown)
    if text.isprintable():
        assert shown == text
