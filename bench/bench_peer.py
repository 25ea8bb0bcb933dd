"""Time the peer metrics against their reference implementations on the same data.

Generates seeded, receipt-like documents (root fields plus a list of menu lines) with
noisy predictions, then times, in one run:

* ANLS*: ``kieval_core.count.peer.anls.anls_star`` vs ``anls_star.anls_score``;
* OI metrics: ``oi_metrics`` (one call for the corpus) vs ie-eval 0.2.0's scorers
  (``OiEcerEwer`` x2, ``OiNerval``, ``BagOfWords`` on tagged words and on entities,
  micro-averaged as ie-eval does);
* nTED and Donut field F1: ours (``nted_corpus``, one call for the subset) vs the
  zss-based Donut oracle in ``tests/peer/donut_reference.py`` (on a subset by default:
  zss is slow);
* list metrics and token diagnostics: ours only (no reference package).

Usage: ``python bench/bench_peer.py [--docs 10000] [--donut-docs 500] [--seed 0]``.
Prints a Markdown table of timings, speed-ups and the largest difference between our
scores and the reference's (OI: uncapped rates and P/R/F1 as fractions).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "peer")]

import donut_reference  # noqa: E402
from anls_star import anls_score  # noqa: E402
from ie_eval_reference import ie_eval_scores  # noqa: E402

from kieval_core.count.peer import (  # noqa: E402
    anls_star,
    donut_field_f1,
    list_metrics,
    nted_corpus,
    oi_metrics,
    token_diagnostics,
)

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
ROOT_FIELDS = ["company", "date", "address", "total", "subtotal", "tax"]
MENU_FIELDS = ["nm", "cnt", "price"]


def make_documents(n: int, seed: int) -> list[tuple[dict, dict]]:
    rng = random.Random(seed)

    def value() -> str:
        words = rng.randint(1, 3)
        return " ".join(
            "".join(rng.choice(ALPHABET) for _ in range(rng.randint(2, 8))) for _ in range(words)
        )

    def noisy(text: str) -> str:
        roll = rng.random()
        if roll < 0.6:
            return text
        if roll < 0.85:
            cut = rng.randrange(len(text))
            return text[:cut] + rng.choice(ALPHABET) + text[cut + 1 :]
        return value()

    docs = []
    for _ in range(n):
        gt = {f: value() for f in rng.sample(ROOT_FIELDS, rng.randint(2, 5))}
        gt["menu"] = [{f: value() for f in MENU_FIELDS} for _ in range(rng.randint(1, 8))]
        pred = {k: noisy(v) for k, v in gt.items() if k != "menu" and rng.random() < 0.9}
        if rng.random() < 0.3:
            pred[rng.choice(ROOT_FIELDS)] = value()
        pred["menu"] = [
            {f: noisy(v) for f, v in line.items() if rng.random() < 0.95}
            for line in gt["menu"]
            if rng.random() < 0.9
        ]
        if rng.random() < 0.5:
            rng.shuffle(pred["menu"])
        docs.append((gt, pred))
    return docs


def entities(doc: dict) -> list[tuple[str, str]]:
    flat = [(k, v) for k, v in doc.items() if k != "menu"]
    flat += [(f"menu.{f}", v) for line in doc.get("menu", []) for f, v in line.items()]
    return flat


def parallel_lists(doc: dict) -> dict[str, list[str | None]]:
    lines = doc.get("menu", [])
    return {f: [line.get(f) for line in lines] for f in MENU_FIELDS}


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--donut-docs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    docs = make_documents(args.docs, args.seed)
    rows = []

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, t_ref = timed(lambda: [anls_score(g, p) for g, p in docs])
    ours, t_ours = timed(lambda: [anls_star(g, p) for g, p in docs])
    diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
    rows.append(("ANLS*", len(docs), t_ours, "anls-star 1.0.1", t_ref, diff))

    pairs = [(entities(g), entities(p)) for g, p in docs]
    result, t_ours = timed(lambda: oi_metrics(pairs, cer_threshold=0.30))
    ref, t_ref = timed(lambda: ie_eval_scores(pairs, 30.0))
    n_gt = ref.ecer.label_word_count["total"]
    diff = max(
        abs(result.oiecer.rate - ref.ecer.error_count["total"] / n_gt),
        abs(result.oiewer.rate - ref.ewer.error_count["total"] / n_gt),
        abs(100 * result.oinerval.f1 - ref.nerval.f1["total"]) / 100,
        abs(100 * result.bag_of_tagged_words.f1 - ref.botw.f1["total"]) / 100,
        abs(100 * result.bag_of_entities.f1 - ref.boe.f1["total"]) / 100,
    )
    rows.append(("OI metrics (all five)", len(docs), t_ours, "ie-eval 0.2.0", t_ref, diff))

    subset = docs[: args.donut_docs]
    ours, t_ours = timed(lambda: nted_corpus(subset).per_document)
    theirs, t_ref = timed(lambda: [donut_reference.cal_acc(p, g) for g, p in subset])
    diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
    rows.append(("nTED", len(subset), t_ours, "Donut evaluator on zss", t_ref, diff))

    gts, preds = [g for g, _ in docs], [p for _, p in docs]
    f1, t_ours = timed(lambda: donut_field_f1(gts, preds).f1)
    theirs, t_ref = timed(lambda: donut_reference.cal_f1(preds, gts))
    rows.append(("Donut field F1", len(docs), t_ours, "Donut evaluator", t_ref, abs(f1 - theirs)))

    lists = [(parallel_lists(g), parallel_lists(p)) for g, p in docs]
    _, t_ours = timed(lambda: list_metrics(lists))
    rows.append(("List metrics", len(docs), t_ours, "-", None, None))

    values = [([v for _, v in entities(g)], [v for _, v in entities(p)]) for g, p in docs]
    _, t_ours = timed(lambda: token_diagnostics(values))
    rows.append(("Token diagnostics", len(docs), t_ours, "-", None, None))

    print(f"seed {args.seed}, {len(docs)} documents, Python {sys.version.split()[0]}\n")
    print("| metric | documents | ours (s) | reference | reference (s) | speed-up | max diff |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, n, ours_s, ref_name, ref_s, diff in rows:
        ref_cell = f"{ref_s:.2f}" if ref_s is not None else "-"
        ratio = f"{ref_s / ours_s:.1f}x" if ref_s is not None else "-"
        diff_cell = f"{diff:.1e}" if diff is not None else "-"
        print(f"| {name} | {n} | {ours_s:.2f} | {ref_name} | {ref_cell} | {ratio} | {diff_cell} |")


if __name__ == "__main__":
    main()
