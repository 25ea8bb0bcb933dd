"""Naive oracles: direct, slow implementations of the SPEC, beside the fast paths.

* :func:`naive_counts`: SPEC 3 by enumeration of every group pairing of every block;
* :func:`naive_review`: SPEC 4 / 4b by simulating the review of every prediction;
* :func:`naive_field_thresholds`: every combination of per-type thresholds.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

from kieval_core.count.scores import aligned_score


def _groups(rows):
    """``{group_type: [Counter of (type, value)] }`` and the non-group Counter."""
    blocks: dict[str, dict[str, Counter]] = {}
    non_group: Counter = Counter()
    for gtype, key, etype, value, *_ in rows:
        if gtype:
            blocks.setdefault(gtype, {}).setdefault(key, Counter())[(etype, value)] += 1
        else:
            non_group[(etype, value)] += 1
    return {t: list(g.values()) for t, g in blocks.items()}, non_group


def _pair_figures(p: Counter, g: Counter) -> tuple[int, int, int]:
    """S (shared), W (substitutions) and X (exact) of a predicted and a GT group."""
    shared = sum((p & g).values())
    per_type_p, per_type_g = Counter(), Counter()
    for (etype, _), n in p.items():
        per_type_p[etype] += n
    for (etype, _), n in g.items():
        per_type_g[etype] += n
    same_type = sum(min(per_type_p[e], per_type_g[e]) for e in per_type_p)
    exact = int(shared == sum(p.values()) == sum(g.values()))
    return shared, same_type - shared, exact


def naive_counts(gt_docs: dict, pred_docs: dict) -> dict:
    """Corpus TP, FP, FN, corrections and group TP by enumerating every pairing of size
    min(N, M) in every block and keeping the lexicographic best (S, W, X): every corpus
    figure depends only on those three sums."""
    tp = subs = group_tp = n_gt = n_pred = n_gt_groups = n_pred_groups = 0
    for doc in gt_docs:
        gt_rows, pred_rows = gt_docs[doc], pred_docs.get(doc, [])
        n_gt += len(gt_rows)
        n_pred += len(pred_rows)
        g_blocks, g_free = _groups(gt_rows)
        p_blocks, p_free = _groups(pred_rows)
        s, w, _ = _pair_figures(p_free, g_free)
        tp, subs = tp + s, subs + w
        for gtype in set(g_blocks) | set(p_blocks):
            gs, ps = g_blocks.get(gtype, []), p_blocks.get(gtype, [])
            n_gt_groups += len(gs)
            n_pred_groups += len(ps)
            best = (0, 0, 0)
            small, large, flip = (ps, gs, False) if len(ps) <= len(gs) else (gs, ps, True)
            for chosen in itertools.permutations(range(len(large)), len(small)):
                total = [0, 0, 0]
                for i, j in enumerate(chosen):
                    p, g = (large[j], small[i]) if flip else (small[i], large[j])
                    for k, v in enumerate(_pair_figures(p, g)):
                        total[k] += v
                best = max(best, tuple(total))
            tp, subs, group_tp = tp + best[0], subs + best[1], group_tp + best[2]
    fp, fn = n_pred - tp, n_gt - tp
    return {"tp": tp, "fp": fp, "fn": fn, "substitution": subs, "addition": fn - subs,
            "deletion": fp - subs, "group_tp": group_tp, "group_fp": n_pred_groups - group_tp,
            "group_fn": n_gt_groups - group_tp}


def naive_review(counted, threshold: float, costs=(1.0, 0.0, 10.0, 10.0, 10.0)) -> dict:
    """Review every prediction with confidence below ``threshold`` (missing = 1.0), one by
    one, per the SPEC: in each cell the first min(r, FN) reviewed wrong values (lowest
    confidence first) are substituted, the other reviewed wrong values deleted, additions
    never fixed. Returns the figures of the review curve at that threshold, and the cost."""
    pred, cells = counted.pred_entities, counted.cells
    fn_of = cells["fn"].tolist()
    per_cell: dict[int, list[float]] = {}
    reviewed = 0
    opened, wrong_left_docs = set(), set()
    for row in pred.itertuples(index=False):
        conf = 1.0 if row.confidence != row.confidence else row.confidence
        if conf < threshold:
            reviewed += 1
            opened.add(row.doc_id)
        if row.status != "correct":
            per_cell.setdefault(row.cell, []).append(conf)
    tp_after = int(cells["tp"].sum())
    subs = dels = 0
    for cell, confs in per_cell.items():
        confs.sort()
        r = sum(c < threshold for c in confs)
        fixed = min(r, fn_of[cell])
        tp_after += fixed
        unreviewed = len(confs) - r
        missing = fn_of[cell] - fixed
        subs += min(unreviewed, missing)
        dels += unreviewed - min(unreviewed, missing)
        if unreviewed:
            wrong_left_docs.add(cells["doc_id"].iloc[cell])
    adds = int(cells["addition"].sum())
    n_docs = len(counted.doc_ids)
    added_docs = set(cells.loc[cells["addition"] > 0, "doc_id"])
    correct = sum(1 for d in counted.doc_ids if d not in wrong_left_docs and d not in added_docs)
    cost = (costs[0] * reviewed + costs[1] * len(opened) + costs[2] * subs + costs[3] * adds
            + costs[4] * dels)
    n = len(pred)
    return {
        "auto_rate": 1.0 - reviewed / n if n else 1.0,
        "kieval_aligned": float(aligned_score(tp_after, subs + dels + adds)),
        "reviewed": reviewed, "substitution": subs, "addition": adds, "deletion": dels,
        "straight_through_rate": 1.0 - len(opened) / n_docs if n_docs else 1.0,
        "document_accuracy": correct / n_docs if n_docs else 1.0,
        "opened_documents": len(opened), "cost": cost,
    }


def naive_field_thresholds(model, target: float, floors: dict | None = None) -> tuple[int, float] | None:
    """(fewest reviews, best accuracy among them) over every combination of one threshold
    per entity type with some automation and overall accuracy >= target, each type's
    threshold one at which its own accuracy reaches its floor (default: the target), or,
    when none of those automates any of it, the one that reviews it whole (SPEC 4d)."""
    from kieval_core.review.automation import review_at, thresholds

    review = model.review
    types = list(review.entity_types)
    candidates = []
    for code, name in enumerate(types):
        part = review.of_type(code)
        taus = thresholds(part.confidence)
        points = {t: review_at(part, t) for t in taus}
        floor = (floors or {}).get(name, target)
        ok = [t for t in taus if points[t].kieval_aligned >= floor - 1e-12]
        candidates.append(ok if any(points[t].auto_rate > 0 for t in ok) else [taus[-1]])
    best = None
    for combination in itertools.product(*candidates):
        point = review_at(review, dict(zip(types, combination, strict=True)))
        if point.auto_rate <= 0 or point.kieval_aligned < target - 1e-12:
            continue
        key = (point.reviewed, -point.kieval_aligned)
        if best is None or key < best:
            best = key
    return None if best is None else (best[0], -best[1])


def isclose(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def naive_document_review(counted, threshold: float, costs=(1.0, 0.0, 10.0, 10.0, 10.0),
                          missing: float = 1.0) -> dict:
    """Whole-document review (SPEC 4c), one document at a time: a document with any
    prediction below ``threshold`` (missing confidence = ``missing``) is opened and
    corrected entirely (its TPs become its GT entities, no error left); the others keep
    their counts. Returns the figures of the document-review curve at that threshold."""
    pred, cells = counted.pred_entities, counted.cells
    tp = subs = adds = dels = reviewed = opened = correct = 0
    for doc_id in counted.doc_ids:
        mine = pred[pred["doc_id"] == doc_id]
        confs = [missing if c != c else c for c in mine["confidence"]]
        doc_cells = cells[cells["doc_id"] == doc_id]
        c = {k: int(doc_cells[k].sum()) for k in ("tp", "n_gt", "substitution", "addition", "deletion")}
        if any(conf < threshold for conf in confs):
            opened += 1
            reviewed += len(confs)
            tp += c["n_gt"]
            correct += 1
        else:
            tp += c["tp"]
            subs, adds, dels = subs + c["substitution"], adds + c["addition"], dels + c["deletion"]
            correct += c["substitution"] + c["addition"] + c["deletion"] == 0
    n_docs, n = len(counted.doc_ids), len(pred)
    cost = (costs[0] * reviewed + costs[1] * opened + costs[2] * subs + costs[3] * adds + costs[4] * dels)
    return {
        "straight_through_rate": 1.0 - opened / n_docs if n_docs else 1.0,
        "kieval_aligned": float(aligned_score(tp, subs + adds + dels)),
        "document_accuracy": correct / n_docs if n_docs else 1.0,
        "auto_rate": 1.0 - reviewed / n if n else 1.0,
        "reviewed": reviewed, "opened_documents": opened, "substitution": subs, "addition": adds,
        "deletion": dels, "cost": cost,
        "cost_per_1000_documents": 1000.0 * cost / n_docs if n_docs else 0.0,
    }


def naive_consensus(predictions: dict, normalizer) -> dict:
    """Per model, per prediction (in order): the share of the other models having a
    prediction of the same normalised (entity type, value) in the same document."""
    seen = {name: {(d, t, normalizer(v)) for d, t, v in rows} for name, rows in predictions.items()}
    others = len(predictions) - 1
    return {name: [sum((d, t, normalizer(v)) in seen[o] for o in predictions if o != name) / others
                   for d, t, v in rows] for name, rows in predictions.items()}


def naive_bootstrap(review, target: float, resamples: int, seed: int, band_points: int = 1000,
                    chunk: int = 50) -> dict:
    """The seeded bootstrap of SPEC 4b one resample and one threshold at a time: the same
    draws (``resample_weights``, ``chunk`` resamples at a time), each resample's curve
    from sums over its predictions, its first threshold with accuracy >= target and some
    automation; the band is read at ``band_points`` evenly spaced thresholds."""
    import numpy as np

    from kieval_core.review.automation import thresholds
    from kieval_core.review.uncertainty import resample_weights

    taus = thresholds(review.confidence).tolist()
    shown = sorted({round(x) for x in np.linspace(0, len(taus) - 1, min(band_points, len(taus)))})
    doc_tp, doc_addition = review.doc_tp.tolist(), review.doc_addition.tolist()
    predictions = list(zip(review.doc.tolist(), review.confidence.tolist(), review.gain.tolist(),
                           review.wrong.tolist(), strict=True))
    rng = np.random.default_rng(seed)
    chosen, curves = [], []
    for start in range(0, resamples, chunk):
        for w in resample_weights(rng, review.n_documents, min(chunk, resamples - start)).tolist():
            tp = sum(wd * t for wd, t in zip(w, doc_tp, strict=True))
            addition = sum(wd * a for wd, a in zip(w, doc_addition, strict=True))
            total = sum(w[d] for d, *_ in predictions)
            curve, first = [], None
            for tau in taus:
                tp_after = tp + sum(w[d] for d, c, gain, _ in predictions if c < tau and gain)
                errors = addition + sum(w[d] for d, c, _, wrong in predictions if c >= tau and wrong)
                reviewed = sum(w[d] for d, c, *_ in predictions if c < tau)
                accuracy = tp_after / (tp_after + errors) if tp_after + errors > 0 else 1.0
                auto = 1.0 - reviewed / total if total > 0 else 1.0
                curve.append(accuracy)
                if first is None and accuracy >= target - 1e-12 and auto > 0:
                    first = (tau, auto)
            curves.append([curve[i] for i in shown])
            if first is not None:
                chosen.append(first)

    def interval(values):
        return (float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))) if values else None

    return {"threshold": interval([c[0] for c in chosen]), "auto_rate": interval([c[1] for c in chosen]),
            "reachable_share": len(chosen) / resamples if resamples else 0.0,
            "band": [[taus[i] for i in shown], np.quantile(curves, 0.025, axis=0).tolist(),
                     np.quantile(curves, 0.975, axis=0).tolist()] if curves else None}


def brute_force_match(shared, substitutable, exact) -> list[tuple[int, int]]:
    """The pairing of one block (SPEC 3.2) by enumeration: every pairing of size min(N, M),
    the best by (S, W, X), then the lexicographically smallest GT sequence over predicted
    rows (what :func:`kieval_core.count.matching.match_block` finds without enumerating)."""

    n_pred, n_gt = shared.shape
    best_key, best = None, []
    if n_pred <= n_gt:
        candidates = ([(n, m) for n, m in enumerate(p)] for p in itertools.permutations(range(n_gt), n_pred))
    else:
        candidates = ([(n, m) for m, n in enumerate(p)] for p in itertools.permutations(range(n_pred), n_gt))
    for pairs in candidates:
        sequence = [n_gt] * n_pred
        for n, m in pairs:
            sequence[n] = m
        key = (*(sum(int(x[n, m]) for n, m in pairs) for x in (shared, substitutable, exact)),
               tuple(-d for d in sequence))
        if best_key is None or key > best_key:
            best_key, best = key, sorted(pairs)
    return best
