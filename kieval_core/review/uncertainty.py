"""Uncertainty of threshold decisions (SPEC 4b, 4d): a seeded bootstrap over documents,
the assured threshold (the smallest whose one-sided lower bound reaches the target), and
a holdout check (choose the threshold on one part of the documents, read it on the other).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..exceptions import KievalOptionError
from ..validation import check_int, check_length, check_share
from .automation import ReviewModel, automation_curve, recommend, review_at


@dataclass(frozen=True)
class Bootstrap:
    """A seeded bootstrap over documents (SPEC 4b): a 95% band of KIEval_Aligned^t and
    intervals of the recommended threshold and its automation rate."""

    seed: int
    resamples: int
    band: pd.DataFrame  # threshold, low, high
    threshold: tuple[float, float] | None
    auto_rate: tuple[float, float] | None
    reachable_share: float  # share of resamples in which the target is reachable

    def interval(self) -> dict:
        return {"threshold": self.threshold, "auto_rate": self.auto_rate}


def resample_weights(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """How often each of ``n`` documents is drawn in each of ``size`` resamples with
    replacement (the multinomial counts of n uniform draws), as floats.

    >>> resample_weights(np.random.default_rng(0), 4, 3).sum(axis=1).tolist()
    [4.0, 4.0, 4.0]
    """
    draws = rng.integers(0, n, (size, n)) if n else np.zeros((size, 0), int)
    weights = np.empty((size, n))
    for row, drawn in enumerate(draws):  # one short bincount per resample stays in cache
        weights[row] = np.bincount(drawn, minlength=n)
    return weights


def _weighted(weights: np.ndarray, per_document: np.ndarray) -> np.ndarray:
    """Per resample, the weighted sum of a per-document count. Not a BLAS product: on a
    busy machine its threads spin for small products and cost more CPU than the sum."""
    return np.einsum("rd,d->r", weights, per_document.astype(np.float64))


#: Most cells of one temporary array of :class:`_Below` (32 MB of float64).
_CELLS = 1 << 22


class _Below:
    """Weighted counts of the predictions of a mask below thresholds, per resample.

    Weights and flags are whole numbers, so every sum is exact in float64 whatever its
    order: these counts equal any other way of adding the same terms.
    """

    def __init__(self, model: ReviewModel, mask: np.ndarray, order: np.ndarray, column: np.ndarray) -> None:
        """``order`` sorts the predictions by confidence; ``column`` is the rank of each one's
        confidence among the distinct ones, in that order."""
        keep = mask[order]
        self.doc = model.doc[order[keep]]
        self.column = column[keep]
        self.n_documents = model.n_documents

    def at(self, weights: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Per resample (row of ``weights``), the weighted count below each threshold
        (``at``, ascending: how many distinct confidences lie below it); one column per
        threshold, read from the running sum over the predictions in confidence order."""
        ends = np.searchsorted(self.column, at, side="left")
        out = np.zeros((len(weights), len(at)))
        last = int(ends[-1]) if len(ends) else 0
        if not last:
            return out
        some = ends > 0
        step = max(1, _CELLS // last)
        for start in range(0, len(weights), step):
            running = np.cumsum(weights[start:start + step, self.doc[:last]], axis=1)
            out[start:start + step, some] = running[:, ends[some] - 1]
        return out

    def onwards(self, weights: np.ndarray, known: np.ndarray, start: np.ndarray, at: np.ndarray
                ) -> np.ndarray:
        """Per resample r, the weighted count below each of its own thresholds ``at[r, k]``
        (all at least ``start[r]``), given ``known[r]``, its count below ``start[r]``: only the
        predictions between ``start[r]`` and its last threshold are added up."""
        first = np.searchsorted(self.column, start, side="left")
        ends = np.searchsorted(self.column, at, side="left") - first[:, None]
        out = np.repeat(known[:, None], at.shape[1], axis=1).astype(np.float64)
        if not len(self.doc):
            return out
        length = ends[:, -1]
        step = max(1, _CELLS // max(int(length.max(initial=0)), 1))
        for begin in range(0, len(weights), step):
            rows = np.arange(begin, min(begin + step, len(weights)))
            offsets = np.arange(int(length[rows].max()))
            inside = offsets < length[rows, None]
            entries = np.minimum(first[rows, None] + offsets, len(self.doc) - 1)
            running = np.zeros((len(rows), len(offsets) + 1))
            np.cumsum(np.where(inside, weights[rows[:, None], self.doc[entries]], 0.0), axis=1,
                      out=running[:, 1:])
            out[rows] += np.take_along_axis(running, ends[rows], axis=1)
        return out

    def one_each(self, weights: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Per resample r, the weighted count below its own threshold ``at[r]``: the
        documents' counts grow threshold by threshold, one product per resample."""
        ends = np.searchsorted(self.column, at, side="left")
        out = np.empty(len(weights))
        per_doc = np.zeros(self.n_documents)
        done = 0
        for end in np.unique(ends):
            per_doc += np.bincount(self.doc[done:end], minlength=self.n_documents)
            done = end
            rows = ends == end
            out[rows] = _weighted(weights[rows], per_doc)
        return out


def _accuracy(tp: np.ndarray, addition: np.ndarray, total_wrong: np.ndarray, gained: np.ndarray,
              deleted: np.ndarray) -> np.ndarray:
    """KIEval_Aligned^t per resample (rows) and threshold (columns) from its whole-number
    counts: TPs and additions before review, wrong predictions, and the wrong predictions
    below the threshold that review substitutes (``gained``) or deletes."""
    tp_after = tp[:, None] + gained
    errors = addition[:, None] + (total_wrong[:, None] - (gained + deleted))
    return np.where(tp_after + errors > 0, tp_after / np.maximum(tp_after + errors, 1e-300), 1.0)


def bootstrap(model: ReviewModel, target: float, resamples: int = 1000, seed: int = 0,
              band_points: int = 1000, chunk: int = 50) -> Bootstrap:
    """Resample documents with replacement; each resample's exact curve gives its own
    recommended threshold. Deterministic for a seed.

    Each resample's KIEval_Aligned^t never decreases with t and its automation rate never
    grows (whole-number counts, correctly rounded divisions), so its recommended threshold
    is the first where the accuracy reaches the target, kept when some automation is left
    there. The accuracy comes from the few wrong predictions (running sums of the substituted
    and of the deleted ones): first at the band's thresholds (and the last), then at the
    thresholds between the last grid point below the target and the first above it; the
    automation rate only at the threshold found.
    """
    check_share("target", target)
    check_int("resamples", resamples)
    check_int("seed", seed)
    check_int("band_points", band_points, minimum=1)
    check_int("chunk", chunk, minimum=1)
    sorted_ = _Sorted(model)
    boot = _BootstrapPass(sorted_, target, band_points)
    _resample(sorted_, resamples, seed, chunk, [boot])
    return boot.result(seed, resamples)


def bootstrap_and_assured(model: ReviewModel, target: float, assurance: float = 0.95, resamples: int = 1000,
                          seed: int = 0, curve: pd.DataFrame | None = None) -> tuple[Bootstrap, Assured]:
    """:func:`bootstrap` and :func:`assured_threshold` (default band and chunks) from one
    draw of the resamples: the first pass of the assured threshold's search reads the
    bootstrap's draws, so both equal their own calls to the bit."""
    check_share("target", target)
    check_share("assurance", assurance, open_interval=True)
    check_int("resamples", resamples, minimum=1)
    check_int("seed", seed)
    sorted_ = _Sorted(model)
    boot = _BootstrapPass(sorted_, target, 1000)
    assured = _assured(sorted_, target, assurance, resamples, seed, curve, [boot])
    return boot.result(seed, resamples), assured


class _Sorted:
    """The predictions in confidence order, shared by every pass over the resamples: the
    distinct confidences, and the wrong predictions that review substitutes (``gain``) or
    deletes, and all of them (``every``), below any threshold."""

    def __init__(self, model: ReviewModel) -> None:
        self.model = model
        order = model.by_confidence
        ordered = model.confidence[order]
        first_of_value = np.concatenate([[True], ordered[1:] != ordered[:-1]])[:len(ordered)]
        column = np.cumsum(first_of_value) - 1  # rank among the distinct confidences, in confidence order
        self.distinct = ordered[first_of_value]
        self.gain = _Below(model, model.gain, order, column)
        self.deleted = _Below(model, model.wrong & ~model.gain, order, column)
        self.every = _Below(model, np.ones(model.n_predictions, bool), order, column)

    def below(self, taus: np.ndarray) -> np.ndarray:
        """How many distinct confidences lie below each threshold."""
        return np.searchsorted(self.distinct, taus, side="left")


def _resample(sorted_: _Sorted, resamples: int, seed: int, chunk: int, passes: list) -> None:
    """Draw the resamples ``chunk`` at a time (``resample_weights`` of
    ``np.random.default_rng(seed)``) and give every pass each chunk, with the weighted TPs
    and additions and the weighted substituted and deleted predictions below the union of
    the passes' ``columns`` (whole numbers: each pass reads the same values as alone)."""
    model = sorted_.model
    columns = np.unique(np.concatenate([p.columns for p in passes]))
    where = [np.searchsorted(columns, p.columns) for p in passes]
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, chunk):
        weights = resample_weights(rng, model.n_documents, min(chunk, resamples - start))
        tp, addition = _weighted(weights, model.doc_tp), _weighted(weights, model.doc_addition)
        gained, deleted = sorted_.gain.at(weights, columns), sorted_.deleted.at(weights, columns)
        for one, at in zip(passes, where, strict=True):
            one.add(weights, tp, addition, gained[:, at], deleted[:, at])


class _BootstrapPass:
    """The state of :func:`bootstrap` over the chunks of resamples."""

    def __init__(self, sorted_: _Sorted, target: float, band_points: int) -> None:
        model = sorted_.model
        self.sorted, self.target = sorted_, target
        self.taus = taus = model.taus
        self.at = sorted_.below(taus)
        self.per_doc = np.bincount(model.doc, minlength=model.n_documents)
        self.shown = np.unique(np.linspace(0, len(taus) - 1, min(band_points, len(taus))).round().astype(int))
        # every resample's accuracy is computed at the grid first, then at most ``width``
        # thresholds above one grid point, up to the next
        self.grid = np.union1d(self.shown, [len(taus) - 1])
        self.band = np.searchsorted(self.grid, self.shown)
        self.width = max(1, int(np.diff(self.grid).max(initial=0)))
        self.columns = self.at[self.grid]
        self.chosen_tau: list[np.ndarray] = []
        self.chosen_auto: list[np.ndarray] = []
        self.kept: list[np.ndarray] = []
        self.reached = 0

    def add(self, weights: np.ndarray, tp: np.ndarray, addition: np.ndarray, gained: np.ndarray,
            dropped: np.ndarray) -> None:
        target, at, grid, taus = self.target, self.at, self.grid, self.taus
        gain, deleted = self.sorted.gain, self.sorted.deleted
        rows = np.arange(len(weights))
        total = _weighted(weights, self.per_doc)
        total_wrong = gained[:, -1] + dropped[:, -1]
        on_grid = _accuracy(tp, addition, total_wrong, gained, dropped)
        self.kept.append(on_grid[:, self.band])
        # the first threshold reaching the target lies above the grid point before the first
        # grid point reaching it, up to that one
        ok = on_grid >= target - 1e-12
        j = np.argmax(ok, axis=1)
        before = np.maximum(j - 1, 0)
        low = np.where(j > 0, at[grid[before]], 0)
        candidates = np.minimum(np.where(j > 0, grid[before], -1)[:, None] + 1 + np.arange(self.width),
                                grid[j][:, None])
        gained = gain.onwards(weights, np.where(j > 0, gained[rows, before], 0.0), low, at[candidates])
        dropped = deleted.onwards(weights, np.where(j > 0, dropped[rows, before], 0.0), low, at[candidates])
        first = candidates[rows, np.argmax(_accuracy(tp, addition, total_wrong, gained, dropped)
                                           >= target - 1e-12, axis=1)]
        below = self.sorted.every.one_each(weights, at[first])
        auto = np.where(total > 0, 1.0 - below / np.maximum(total, 1e-300), 1.0)
        hit = ok[rows, j] & (auto > 0)
        self.reached += int(hit.sum())
        self.chosen_tau.append(taus[first[hit]])
        self.chosen_auto.append(auto[hit])

    def result(self, seed: int, resamples: int) -> Bootstrap:
        values = np.concatenate(self.kept) if self.kept else np.zeros((0, len(self.shown)))
        table = pd.DataFrame({
            "threshold": self.taus[self.shown],
            "low": np.quantile(values, 0.025, axis=0) if len(values) else np.nan,
            "high": np.quantile(values, 0.975, axis=0) if len(values) else np.nan,
        })
        tau_all = np.concatenate(self.chosen_tau) if self.chosen_tau else np.zeros(0)
        auto_all = np.concatenate(self.chosen_auto) if self.chosen_auto else np.zeros(0)

        def interval(values: np.ndarray) -> tuple[float, float] | None:
            if not len(values):
                return None
            return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))

        return Bootstrap(seed, resamples, table, interval(tau_all), interval(auto_all),
                         self.reached / resamples if resamples else 0.0)


@dataclass(frozen=True)
class Holdout:
    """A threshold chosen on one part of the documents, checked on the other."""

    target: float
    chosen_on: str
    checked_on: str
    threshold: float | None
    accuracy_chosen: float | None
    accuracy_checked: float | None
    interval_checked: tuple[float, float] | None
    auto_rate_checked: float | None

    @property
    def carries_over(self) -> bool | None:
        """Whether the whole 95% interval on the other part lies at or above the target (an
        interval that crosses the target does not carry over)."""
        if self.accuracy_checked is None or self.interval_checked is None:
            return None
        return self.interval_checked[0] >= self.target - 1e-12

    def as_dict(self) -> dict:
        out = asdict(self)
        out["interval_checked"] = None if self.interval_checked is None else list(self.interval_checked)
        out["carries_over"] = self.carries_over
        return out


def holdout(model: ReviewModel, target: float, chosen: np.ndarray, *, names: tuple[str, str] = (
        "a random half", "the other half"), resamples: int = 1000, seed: int = 0, chunk: int = 50) -> Holdout:
    """Choose the threshold on the documents of ``chosen`` (a mask over ``doc_ids``) and
    read its accuracy after review, with a bootstrap interval, on the others (resampled
    ``chunk`` at a time: memory does not grow with ``resamples`` x documents)."""
    check_share("target", target)
    chosen = check_length("chosen", chosen, model.n_documents, "document").astype(bool)
    if len(names) != 2 or not all(isinstance(n, str) for n in names):
        msg = f"names must be two str (the part chosen on, the part checked on), got {names!r}"
        raise KievalOptionError(msg)
    check_int("resamples", resamples, minimum=1)
    check_int("seed", seed)
    check_int("chunk", chunk, minimum=1)
    part_a, part_b = model.restrict(chosen), model.restrict(~chosen)
    rec = recommend(automation_curve(part_a), target, part_a.n_documents)
    if not rec.reachable or not part_b.n_documents:
        return Holdout(target, names[0], names[1], rec.threshold, rec.accuracy, None, None, None)
    point = review_at(part_b, rec.threshold)
    acc = resampled_accuracy(part_b, rec.threshold, resamples, seed, chunk)
    interval = (float(np.quantile(acc, 0.025)), float(np.quantile(acc, 0.975)))
    return Holdout(target, names[0], names[1], rec.threshold, rec.accuracy, point.kieval_aligned, interval,
                   point.auto_rate)


def random_half(n_documents: int, seed: int = 0) -> np.ndarray:
    """A seeded random half of the documents (a mask), for :func:`holdout`."""
    check_int("n_documents", n_documents)
    check_int("seed", seed)
    mask = np.zeros(n_documents, bool)
    mask[np.random.default_rng(seed).permutation(n_documents)[: n_documents // 2]] = True
    return mask


def resampled_accuracy(model: ReviewModel, threshold: float, resamples: int = 1000, seed: int = 0,
                       chunk: int = 50) -> np.ndarray:
    """Accuracy after review at ``threshold`` (KIEval_Aligned^t) in each of ``resamples``
    resamples of the documents with replacement, drawn ``chunk`` at a time as
    ``rng.integers(0, n, (chunk, n))`` of ``np.random.default_rng(seed)``."""
    reviewed = model.confidence < threshold
    n = model.n_documents
    tp_doc = model.doc_tp + np.bincount(model.doc, weights=reviewed & model.gain, minlength=n)
    err_doc = model.doc_addition + np.bincount(model.doc, weights=model.wrong & ~reviewed, minlength=n)
    rng = np.random.default_rng(seed)
    sums = []
    for start in range(0, resamples, chunk):
        weights = resample_weights(rng, n, min(chunk, resamples - start))
        sums.append((_weighted(weights, tp_doc), _weighted(weights, err_doc)))
    if not sums:
        return np.zeros(0)
    tp, err = (np.concatenate(parts) for parts in zip(*sums, strict=True))
    return np.where(tp + err > 0, tp / np.maximum(tp + err, 1e-300), 1.0)


@dataclass(frozen=True)
class Assured:
    """The assured threshold for a target (SPEC 4d): the smallest τ, among those with some
    automation, whose one-sided lower ``assurance``-bound of accuracy after review (a
    seeded document bootstrap) reaches the target; and the point threshold beside it.

    ``reachable`` is False when no τ with automation has its bound at the target; then
    ``documents_needed`` says how many documents like these would bring the bound of the
    most accurate τ with automation (``best_threshold``) up to the target, the gap between
    its accuracy and its bound shrinking as one over the square root of the documents;
    None when that τ's accuracy does not exceed the target (more documents cannot help).
    """

    target: float
    assurance: float
    resamples: int
    seed: int
    reachable: bool
    threshold: float | None
    lower_bound: float | None
    accuracy: float | None
    auto_rate: float | None
    point_threshold: float | None
    point_lower_bound: float | None
    best_threshold: float | None = None
    documents: int = 0
    documents_needed: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def assured_threshold(model: ReviewModel, target: float, assurance: float = 0.95, resamples: int = 1000,
                      seed: int = 0, curve: pd.DataFrame | None = None) -> Assured:
    """The assured threshold (:class:`Assured`). Every resample's accuracy never falls as
    τ grows, so neither does its quantile: a bisection over the thresholds from the point
    threshold on finds the smallest whose bound reaches the target."""
    check_share("target", target)
    check_share("assurance", assurance, open_interval=True)
    check_int("resamples", resamples, minimum=1)
    check_int("seed", seed)
    return _assured(_Sorted(model), target, assurance, resamples, seed, curve, [])


def _assured(sorted_: _Sorted, target: float, assurance: float, resamples: int, seed: int,
             curve: pd.DataFrame | None, beside: list) -> Assured:
    """:func:`assured_threshold`; the passes ``beside`` (of the same resamples) read the
    draws of its first pass, or have the resamples to themselves when it needs none."""
    model = sorted_.model
    curve = automation_curve(model) if curve is None else curve
    point = recommend(curve, target, model.n_documents)
    common = {"target": target, "assurance": assurance, "resamples": resamples, "seed": seed,
              "documents": model.n_documents}
    if not point.reachable:
        if beside:
            _resample(sorted_, resamples, seed, _Bounds.chunk, beside)
        return Assured(**common, reachable=False, threshold=None, lower_bound=None, accuracy=None,
                       auto_rate=None, point_threshold=None, point_lower_bound=None)
    taus = curve["threshold"].to_numpy()
    first = int(np.searchsorted(taus, point.threshold))
    last = int(np.flatnonzero(curve["auto_rate"].to_numpy() > 0)[-1])
    bound = _Bounds(sorted_, taus, 1 - assurance, resamples, seed, first, last)
    bound.fill(first, beside)
    at_point, at_last = bound(first), bound(last)
    found = _first_reaching(bound, first, last, at_point, at_last, target)
    if found is None:
        best = first + int(np.argmax(curve["kieval_aligned"].to_numpy()[first:last + 1]))
        accuracy = float(curve["kieval_aligned"].iloc[best])
        gap = accuracy - (at_last if best == last else bound(best))
        needed = (math.ceil(model.n_documents * (gap / (accuracy - target)) ** 2)
                  if accuracy > target + 1e-12 else None)
        return Assured(**common, reachable=False, threshold=None, lower_bound=None, accuracy=None,
                       auto_rate=None, point_threshold=point.threshold, point_lower_bound=at_point,
                       best_threshold=float(taus[best]), documents_needed=needed)
    i, low = found
    row = curve.iloc[i]
    return Assured(**common, reachable=True, threshold=float(taus[i]), lower_bound=low,
                   accuracy=float(row["kieval_aligned"]), auto_rate=float(row["auto_rate"]),
                   point_threshold=point.threshold, point_lower_bound=at_point)


class _Bounds:
    """The lower bound (the ``quantile`` of accuracy after review over the resamples of
    :func:`resampled_accuracy`) at the thresholds ``taus[i]``, for the bisection of
    :func:`assured_threshold`.

    A bound not yet known is computed with a batch of others in one pass over the
    resamples: the same draws, every threshold of the batch at once (running sums of the
    wrong predictions below each). The batch spreads evenly over the gap between the
    nearest known bounds around the one asked for (at first ``[first, last]``), so the
    bisection visits the same thresholds as one bound at a time and reads the same values:
    the counts are whole numbers, exact in float64 whatever the order of their sums. A
    quantile only reads the order statistics at and after ``quantile * (resamples - 1)``:
    only the ``keep`` smallest accuracies per threshold are kept from one chunk to the next
    (the others read as +inf), so one pass holds every threshold of a usual search; the
    quantile itself is taken only at the thresholds the bisection reads.
    """

    chunk = 50  # resamples drawn at once

    def __init__(self, sorted_: _Sorted, taus: np.ndarray, quantile: float, resamples: int, seed: int,
                 first: int, last: int) -> None:
        self.sorted, self.taus, self.quantile = sorted_, taus, quantile
        self.resamples, self.seed = resamples, seed
        self.span = (first, last)
        self.keep = min(resamples, math.floor(quantile * (resamples - 1)) + 2)
        self.batch = max(2, _CELLS // (self.keep + self.chunk))  # thresholds of one pass
        model = sorted_.model
        self.wrong = np.bincount(model.doc, weights=model.wrong, minlength=model.n_documents)
        self.known: dict[int, np.ndarray] = {}  # per threshold, the ``keep`` smallest accuracies

    def __call__(self, i: int) -> float:
        if i not in self.known:
            self.fill(i)
        padded = np.full(self.resamples, np.inf)
        padded[:self.keep] = self.known[i]
        return float(np.quantile(padded, self.quantile))

    def fill(self, i: int, beside: list = ()) -> None:
        """Compute the bound at ``i`` and its batch in one pass, which the passes ``beside``
        share."""
        below = [k for k in self.known if k < i]
        above = [k for k in self.known if k > i]
        low = max(below) + 1 if below else self.span[0]
        high = min(above) - 1 if above else self.span[1]
        low, high = min(low, i), max(high, i)
        batch = np.unique(np.concatenate([
            np.linspace(low, high, min(self.batch, high - low + 1)).round().astype(int), [i]]))
        one = _BoundsPass(self, batch)
        _resample(self.sorted, self.resamples, self.seed, self.chunk, [one, *beside])
        one.finish()


class _BoundsPass:
    """One pass of :class:`_Bounds` over the chunks of resamples: the ``keep`` smallest
    accuracies per threshold of its batch."""

    def __init__(self, bounds: _Bounds, batch: np.ndarray) -> None:
        self.bounds, self.batch = bounds, batch
        self.columns = bounds.sorted.below(bounds.taus[batch])
        self.smallest = np.zeros((len(batch), 0))

    def add(self, weights: np.ndarray, tp: np.ndarray, addition: np.ndarray, gained: np.ndarray,
            deleted: np.ndarray) -> None:
        keep = self.bounds.keep
        accuracy = _accuracy(tp, addition, _weighted(weights, self.bounds.wrong), gained, deleted)
        # one row per threshold: the partition runs along contiguous memory
        self.smallest = np.concatenate([self.smallest, accuracy.T], axis=1)
        if self.smallest.shape[1] > keep:
            self.smallest = np.partition(self.smallest, keep - 1, axis=1)[:, :keep]

    def finish(self) -> None:
        self.bounds.known.update(zip(self.batch.tolist(), self.smallest, strict=True))


def _first_reaching(bound, first: int, last: int, at_first: float, at_last: float, target: float
                    ) -> tuple[int, float] | None:
    """The first index in [first, last] whose (non-decreasing) bound reaches the target,
    with its bound; None when even the last does not."""
    if at_first >= target - 1e-12:
        return first, at_first
    if at_last < target - 1e-12:
        return None
    low, high, at_high = first, last, at_last  # bound(low) < target <= bound(high)
    while high - low > 1:
        middle = (low + high) // 2
        value = bound(middle)
        if value >= target - 1e-12:
            high, at_high = middle, value
        else:
            low = middle
    return high, at_high
