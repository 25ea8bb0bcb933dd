"""The metrics guide: every registry metric, and two worked examples evaluated live.

The examples are tiny in-memory datasets run through the same core as any upload, so the
guide shows numbers the engine computes now, next to the numbers the paper and the
specification give for them.
"""

from __future__ import annotations

import functools
import json

import pandas as pd

from kieval_core import EvaluationResult, evaluate, load_bytes
from kieval_core.figures import documents, overview
from kieval_core.figures.diff import table_html

#: The paper's Fig. 2: six menu lines; the prediction moved the 5th price to a line of
#: its own and lost the last price. Every predicted value occurs in the ground truth, so
#: flat F1 is high, but three lines are wrong.
FIG2_MENU = [
    ("ICE AMERICANO", "4,500"),
    ("CAFE LATTE", "5,000"),
    ("GREEN TEA", "5,500"),
    ("CHEESE CAKE", "6,500"),
    ("CHOCO MUFFIN", "3,800"),
    ("BAGEL", "3,200"),
]
FIG2_GT = {"menu": [{"nm": nm, "price": price} for nm, price in FIG2_MENU]}
FIG2_PREDICTION = {
    "menu": [
        *({"nm": nm, "price": price} for nm, price in FIG2_MENU[:4]),
        {"nm": "CHOCO MUFFIN"},
        {"price": "3,800"},
        {"nm": "BAGEL"},
    ]
}
#: (figure, what the paper reports) for Fig. 2.
FIG2_PAPER = {
    "Flat entity F1": 0.9565,
    "KIEval entity TP": 10,
    "KIEval entity FP": 1,
    "KIEval entity FN": 2,
    "KIEval entity F1": 0.8696,
    "Substitutions": 0,
    "Additions": 2,
    "Deletions": 1,
    "KIEval_Aligned": 0.7692,
    "Group TP": 4,
    "Group FP": 3,
    "Group FN": 2,
    "KIEval group F1": 0.6154,
    "Group-level aligned": 0.5714,
}

#: SPEC 4's automation example: one receipt with confidences.
AUTOMATION_GT = {
    "company": "ACME",
    "date": "01/02/2019",
    "total": "10.00",
    "address": "JL X",
    "menu": [{"nm": "A", "cnt": "1", "price": "100"}, {"nm": "B", "cnt": "2", "price": "200"}],
}
AUTOMATION_PREDICTION = {
    "company": {"value": "ACME", "confidence": 0.95},
    "date": {"value": "01/02/2018", "confidence": 0.40},
    "total": {"value": "10.00", "confidence": 0.90},
    "tax": {"value": "1.00", "confidence": 0.30},
    "menu": [
        {
            "nm": {"value": "A", "confidence": 0.90},
            "cnt": {"value": "1", "confidence": 0.80},
            "price": {"value": "100", "confidence": 0.85},
        },
        {
            "nm": {"value": "B", "confidence": 0.70},
            "cnt": {"value": "2", "confidence": 0.60},
            "price": {"value": "250", "confidence": 0.35},
        },
    ],
}
AUTOMATION_TARGET = 0.85


def _jsonl(doc_id: str, structure: dict) -> bytes:
    return (json.dumps({"doc_id": doc_id, "gt_parse": structure}) + "\n").encode()


def evaluate_example(gt: dict, prediction: dict) -> EvaluationResult:
    """Evaluate a one-document example with the core (as an upload would be)."""
    gt_set = load_bytes(_jsonl("example", gt), "example_gt.jsonl", name="ground truth")
    pred_set = load_bytes(_jsonl("example", prediction), "example_prediction.jsonl")
    return evaluate(gt_set, {"prediction": pred_set})


@functools.cache  # a constant example: evaluated once per process, never changed
def fig2_result() -> EvaluationResult:
    return evaluate_example(FIG2_GT, FIG2_PREDICTION)


@functools.cache  # constant: built once per process (a string, shared safely by every session)
def fig2_pairs_html() -> str:
    """The Fig. 2 example's value pairs as the Documents page shows them."""
    model = fig2_result().models["prediction"]
    return table_html(documents.value_columns(model), documents.alignment_rows(model, "example"))


@functools.cache  # constant: the registry's cards, read once per process
def metric_card_groups() -> tuple[tuple[str, tuple], ...]:
    """Every registry metric's card, as (family, rows) in the registry's order."""
    cards = overview.metric_cards().rename(columns={"how to read it": "how_to_read"})
    return tuple((family, tuple(metrics.itertuples(index=False)))
                 for family, metrics in cards.groupby("family", sort=False))


def fig2_table(result: EvaluationResult) -> pd.DataFrame:
    """Each Fig. 2 figure as computed now beside the paper's value, with a check mark."""
    m = result.models["prediction"]
    computed = {
        "Flat entity F1": m.entity_f1.f1,
        "KIEval entity TP": m.entity.tp,
        "KIEval entity FP": m.entity.fp,
        "KIEval entity FN": m.entity.fn,
        "KIEval entity F1": m.entity.f1,
        "Substitutions": m.corrections.substitution,
        "Additions": m.corrections.addition,
        "Deletions": m.corrections.deletion,
        "KIEval_Aligned": m.aligned,
        "Group TP": m.group.tp,
        "Group FP": m.group.fp,
        "Group FN": m.group.fn,
        "KIEval group F1": m.group.f1,
        "Group-level aligned": m.group_aligned,
    }
    rows = []
    for figure, paper in FIG2_PAPER.items():
        value = computed[figure]
        is_count = isinstance(paper, int)
        agrees = value == paper if is_count else abs(value - paper) < 5e-5
        rows.append(
            {
                "figure": figure,
                "computed now": f"{value:d}" if is_count else f"{100 * value:.2f}%",
                "paper (Fig. 2)": f"{paper:d}" if is_count else f"{100 * paper:.2f}%",
                "agrees": "yes" if agrees else "NO",
            }
        )
    return pd.DataFrame(rows)


def menu_lines(structure: dict) -> pd.DataFrame:
    """The example's menu lines as a table (one row per group)."""
    return pd.DataFrame(
        [
            {"line": i, "nm": line.get("nm", ""), "price": line.get("price", "")}
            for i, line in enumerate(structure["menu"])
        ]
    )


@functools.cache  # a constant example: evaluated once per process, never changed
def automation_result() -> EvaluationResult:
    return evaluate_example(AUTOMATION_GT, AUTOMATION_PREDICTION)
