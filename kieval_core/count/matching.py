"""Group matching (SPEC 3.2): a one-to-one pairing of predicted and GT groups.

For every document and group type, the pairing has size min(N, M) and maximises, in this
order of priority:

1. ``S`` — the number of identical (type, value) entities shared by paired groups;
2. ``W`` — the substitutions the pairing allows (fewest corrections: Error = FP + FN - Subs
   and FP + FN are fixed once S is, so more substitutions means fewer corrections);
3. ``X`` — the number of exact pairs (group TPs);
4. the **lexicographically smallest** sequence of matched GT indices read over the
   predicted groups in order, an unmatched predicted group reading as M (rows and
   columns are the groups in canonical order, so this is SPEC 3.2's rule exactly). This
   last criterion leaves no tie: it names one pairing.

Two exact ways to reach that optimum, both batched over blocks of one shape:

* **One folded weight** ``S*A + W*B + X*C + L`` where ``L(n, m) = (M - m) * (M + 1)^(N-1-n)``
  reads the sequence as a number in base M + 1 (maximising L is minimising the sequence
  lexicographically; an unmatched row adds 0, the digit M) and each factor exceeds the
  largest total of everything after it. Used when every integer the solver can form
  stays exact in float64: K * (largest matching total) < 2^50 with K = max(N, M), a
  margin of 8 over the 2K-entry sums (path lengths, potentials) the shortest augmenting
  path solver builds.
* **Successive fixing on the tight graph**, for larger blocks (a 10 x 10 block of rich
  groups is already past the bound): solve S, W, X (folded when exact, else one level at a
  time), take optimal dual potentials from a Bellman-Ford pass over the solved pairing
  (integer arithmetic), keep the edges whose reduced cost is zero: the optimal pairings
  are exactly the perfect matchings of those edges. Then fix predicted groups in order,
  each to the smallest GT index it can take while a perfect matching of the rest remains
  (an alternating cycle found by a breadth-first search over the unfixed groups).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

#: Bound under which folded weights are exact in float64 (with a margin, see above).
EXACT_BOUND = float(2**50)
#: Sentinel for a forbidden edge in integer shortest paths.
_FORBIDDEN = np.int64(2**61)


def lexicographic_weights(n_pred: int, n_gt: int) -> np.ndarray:
    """``L(n, m) = (M - m) * (M + 1)^(N-1-n)`` as Python integers (dtype object).

    A pairing's total L is larger exactly when its sequence of matched GT indices over
    the predicted rows (M for an unmatched row) is lexicographically smaller.

    >>> lexicographic_weights(2, 2).tolist()
    [[6, 3], [2, 1]]
    """
    radix = n_gt + 1
    rows = np.array([radix ** (n_pred - 1 - n) for n in range(n_pred)], dtype=object)
    return np.outer(rows, np.array([n_gt - m for m in range(n_gt)], dtype=object))


#: Blocks whose larger side has at most this many rows or columns are solved by
#: :func:`assignment` (numpy, batched over blocks); larger ones by SciPy's
#: ``linear_sum_assignment`` itself, whose import costs 0.35 s (all of ``scipy.optimize``).
#: Both give the same pairing, so this bound changes only the time.
NUMPY_SOLVER_SIZE = 32
#: A path cost no real one reaches (int64 costs below 2**52 in magnitude).
_UNREACHED = np.int64(1) << 62


def assignment(cost: np.ndarray, allowed: np.ndarray | None = None, *, maximize: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.optimize.linear_sum_assignment`` of each of K blocks ``cost`` (K, N, M) of
    integers below 2**52 in magnitude, batched: the same pairing of size min(N, M), ties
    included. It is SciPy's method (shortest augmenting paths, Crouse 2016: rows added in
    order, columns scanned in SciPy's order, a free column preferred among the nearest;
    a tall block transposed) run on all blocks at once in exact int64 arithmetic. An edge
    where ``allowed`` is False is never used (SciPy's infinite cost); a pairing of allowed
    edges must exist. Returns rows, cols of shape (K, min(N, M)), rows ascending.

    >>> [x.tolist() for x in assignment(np.array([[[4, 1, 3], [2, 0, 5], [3, 2, 2]]]))]
    [[[0, 1, 2]], [[1, 0, 2]]]
    """
    n_blocks, n_rows, n_cols = cost.shape
    if max(n_rows, n_cols) > NUMPY_SOLVER_SIZE:
        from scipy.optimize import linear_sum_assignment

        real = cost if allowed is None else np.where(allowed, cost.astype(np.float64),
                                                     -np.inf if maximize else np.inf)
        solved = [linear_sum_assignment(c, maximize=maximize) for c in real]
        return (np.array([r for r, _ in solved], np.int64).reshape(n_blocks, -1),
                np.array([c for _, c in solved], np.int64).reshape(n_blocks, -1))
    if not np.issubdtype(cost.dtype, np.integer):
        msg = f"integer costs expected, not {cost.dtype}"
        raise TypeError(msg)
    cost = -cost.astype(np.int64) if maximize else cost.astype(np.int64)
    transpose = n_cols < n_rows
    if transpose:
        cost = cost.transpose(0, 2, 1)
        allowed = None if allowed is None else allowed.transpose(0, 2, 1)
        n_rows, n_cols = n_cols, n_rows
    u = np.zeros((n_blocks, n_rows), np.int64)  # dual potentials
    v = np.zeros((n_blocks, n_cols), np.int64)
    path = np.full((n_blocks, n_cols), -1, np.int64)  # the row before each column on its path
    col4row = np.full((n_blocks, n_rows), -1, np.int64)
    row4col = np.full((n_blocks, n_cols), -1, np.int64)
    blocks, positions = np.arange(n_blocks), np.arange(n_cols)
    for current in range(n_rows):
        # SciPy's scan order: columns from the last; a visited column swaps with the last unvisited
        remaining = np.tile(positions[::-1], (n_blocks, 1))
        n_remaining = np.full(n_blocks, n_cols)
        rows_seen = np.zeros((n_blocks, n_rows), bool)
        cols_seen = np.zeros((n_blocks, n_cols), bool)
        shortest = np.full((n_blocks, n_cols), _UNREACHED)
        min_val = np.zeros(n_blocks, np.int64)
        row = np.full(n_blocks, current)
        sink = np.full(n_blocks, -1)
        live = blocks
        while len(live):  # blocks whose path has not yet reached a free column
            b, i = live[:, None], row[live]
            rows_seen[live, i] = True
            order = remaining[live]
            unvisited = positions[None, :] < n_remaining[live][:, None]
            reduced = min_val[live][:, None] + cost[b, i[:, None], order] - u[live, i][:, None] - v[b, order]
            if allowed is not None:
                reduced = np.where(allowed[b, i[:, None], order], reduced, _UNREACHED)
            known = shortest[b, order]
            better = unvisited & (reduced < known)
            path[b, order] = np.where(better, i[:, None], path[b, order])
            known = np.where(better, reduced, known)
            shortest[b, order] = known
            known = np.where(unvisited, known, _UNREACHED)
            lowest = known.min(axis=1)
            if (lowest >= _UNREACHED).any():
                msg = "no pairing of the allowed edges"
                raise ValueError(msg)
            nearest = unvisited & (known == lowest[:, None])
            free = nearest & (row4col[b, order] == -1)
            # SciPy keeps the first nearest column in scan order, or the last free one
            last_free = n_cols - 1 - free[:, ::-1].argmax(axis=1)
            index = np.where(free.any(axis=1), last_free, nearest.argmax(axis=1))
            min_val[live] = lowest
            j = order[np.arange(len(live)), index]
            owner = row4col[live, j]
            sink[live] = np.where(owner == -1, j, -1)
            row[live] = np.where(owner == -1, i, owner)
            cols_seen[live, j] = True
            last = n_remaining[live] - 1
            remaining[live, index], remaining[live, last] = remaining[live, last], j
            n_remaining[live] = last
            live = live[owner != -1]
        u[:, current] += min_val
        rows_seen[:, current] = False
        on_path = np.take_along_axis(shortest, np.maximum(col4row, 0), axis=1)
        u += np.where(rows_seen, min_val[:, None] - on_path, 0)
        v -= np.where(cols_seen, min_val[:, None] - shortest, 0)
        j, walking = sink, blocks
        while len(walking):  # augment along each path back to the current row
            jw = j[walking]
            i = path[walking, jw]
            row4col[walking, jw] = i
            j[walking] = col4row[walking, i]
            col4row[walking, i] = jw
            walking = walking[i != current]
    if transpose:
        order = np.argsort(col4row, axis=1)
        return np.take_along_axis(col4row, order, axis=1), order
    return np.tile(np.arange(n_rows), (n_blocks, 1)), col4row


def match_stack(shared: np.ndarray, substitutable: np.ndarray, exact: np.ndarray,
                *, bound: float = EXACT_BOUND) -> tuple[np.ndarray, np.ndarray]:
    """Optimal pairings of K blocks of the same shape (N, M).

    Parameters
    ----------
    shared : ndarray of int, shape (K, N, M)
        S(n, m): identical entities shared by predicted group n and GT group m.
    substitutable : ndarray of int, shape (K, N, M)
        W(n, m): substitutions the pair would need (sum over entity types of
        min(FP^e, FN^e)).
    exact : ndarray of {0, 1}, shape (K, N, M)
        X(n, m): 1 when the two groups are identical (a group TP if paired).
    bound : float
        Folded weights are used only below this bound (tests lower it to exercise the
        tight-graph path on small blocks).

    Returns
    -------
    rows, cols : ndarray of int, shape (K, min(N, M))
        Matched predicted and GT group indices per block, rows ascending.
    """
    n_blocks, n_pred, n_gt = shared.shape
    k, size = min(n_pred, n_gt), max(n_pred, n_gt)
    rows = np.empty((n_blocks, k), np.int64)
    cols = np.empty((n_blocks, k), np.int64)
    if n_blocks == 0 or k == 0:
        return rows, cols
    if n_blocks > 1:  # equal blocks have equal pairings: solve each distinct block once
        flat = np.concatenate([x.reshape(n_blocks, -1) for x in (shared, substitutable, exact)], axis=1)
        _, first, inverse = np.unique(flat, axis=0, return_index=True, return_inverse=True)
        if len(first) < n_blocks:
            rows, cols = match_stack(shared[first], substitutable[first], exact[first], bound=bound)
            return rows[inverse.ravel()], cols[inverse.ravel()]
    # the factors are per block (never per stack), so a block's pairing depends on that
    # block alone, not on the other blocks of the same shape in the corpus or partition
    s_max = shared.max(axis=(1, 2)).astype(np.float64)
    w_max = substitutable.max(axis=(1, 2)).astype(np.float64)
    b = np.full(n_blocks, k + 1.0)  # X below W
    a = (w_max * k + 1.0) * b  # W below S
    primary_total = (s_max * k + 1.0) * a
    lex_range = float(n_gt + 1) ** min(n_pred, 60)  # L below X (capped: 2**60 is out of bounds anyway)
    folded = size * primary_total * lex_range < bound
    if folded.any():
        lex = lexicographic_weights(n_pred, n_gt).astype(np.float64)
        scale = lex_range * np.stack([a, b, np.ones_like(a)], axis=1)[folded]
        weights = (shared[folded] * scale[:, 0, None, None] + substitutable[folded] * scale[:, 1, None, None]
                   + exact[folded] * scale[:, 2, None, None] + lex[None])
        at = np.flatnonzero(folded)
        candidates = _injections(n_pred, n_gt)
        if candidates is not None:  # small blocks: every pairing at once, no solver
            step = max(1, _ENUMERATION_CELLS // candidates[0].size)  # bounded temporary arrays
            for start in range(0, len(at), step):
                part = weights[start:start + step]
                best = part[:, candidates[0], candidates[1]].sum(axis=2).argmax(axis=1)
                rows[at[start:start + step]] = candidates[0][best]
                cols[at[start:start + step]] = candidates[1][best]
        else:
            rows[at], cols[at] = assignment(weights.astype(np.int64), maximize=True)
    rest = np.flatnonzero(~folded)
    if len(rest):
        fits = size * primary_total[rest] < bound
        levels = []
        if fits.all():
            folded_primary = (shared[rest] * a[rest, None, None] + substitutable[rest] * b[rest, None, None]
                              + exact[rest])
            levels.append(folded_primary)
        else:  # thousands of groups: one criterion at a time, each exact
            levels += [shared[rest], substitutable[rest], exact[rest]]
        rows[rest], cols[rest] = _tight_lexicographic(levels, n_pred, n_gt)
    return rows, cols


#: Blocks with at most this many pairings of size min(N, M) are solved by enumeration.
MAX_ENUMERATED = 720
#: Weights gathered at once when enumerating (blocks x pairings x pairs): 32 MiB of floats.
_ENUMERATION_CELLS = 1 << 22


@functools.lru_cache(maxsize=256)
def _injections(n_pred: int, n_gt: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Every pairing of size min(N, M) as (rows, cols) arrays of shape (C, min(N, M)), rows
    ascending; None when there are more than :data:`MAX_ENUMERATED`. With the folded
    weight (whose lexicographic term makes the optimum unique) the best one is an argmax.

    >>> [c.tolist() for c in _injections(2, 2)]
    [[[0, 1], [0, 1]], [[0, 1], [1, 0]]]
    """
    k = min(n_pred, n_gt)
    if math.perm(max(n_pred, n_gt), k) > MAX_ENUMERATED:
        return None
    chosen = np.array(list(itertools.permutations(range(max(n_pred, n_gt)), k)), np.int64).reshape(-1, k)
    ordered = np.broadcast_to(np.arange(k), chosen.shape)
    return (ordered, chosen) if n_pred <= n_gt else (np.sort(chosen, axis=1),
                                                     np.argsort(chosen, axis=1))


def match_block(shared: np.ndarray, substitutable: np.ndarray,
                exact: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Optimal pairing of one block: rows are predicted groups, columns GT groups.

    Examples
    --------
    Two identical lines tie on S, W and X; the tie goes to the lowest indices:

    >>> rows, cols = match_block(np.array([[2, 2], [2, 2]]), np.zeros((2, 2), int))
    >>> cols.tolist()
    [0, 1]
    """
    exact = np.zeros_like(shared) if exact is None else exact
    rows, cols = match_stack(shared[None], substitutable[None], exact[None])
    return rows[0], cols[0]


# --- the tight-graph method -----------------------------------------------------------------


def _square(x: np.ndarray, size: int) -> np.ndarray:
    """Pad a stack of (N, M) matrices with zeros to (size, size): dummy groups."""
    out = np.zeros((x.shape[0], size, size), np.int64)
    out[:, : x.shape[1], : x.shape[2]] = x
    return out


def _tight_lexicographic(levels: list[np.ndarray], n_pred: int, n_gt: int
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Lexicographic optimum by successive fixing (see the module docstring)."""
    n_blocks = levels[0].shape[0]
    size = max(n_pred, n_gt)
    allowed = np.ones((n_blocks, size, size), bool)
    mate = np.empty((n_blocks, size), np.int64)  # row -> column of the square problem
    for level in levels:
        weights = _square(level, size)
        mate[:] = assignment(weights, allowed, maximize=True)[1]
        allowed &= tight_edges(weights, allowed, mate)
    mate = lexicographic_smallest(allowed, mate, n_pred, n_gt)
    k = min(n_pred, n_gt)
    real = (np.arange(size)[None, :] < n_pred) & (mate < n_gt)
    rows = np.nonzero(real)[1].reshape(n_blocks, k)
    return rows, np.take_along_axis(mate, rows, axis=1)


def tight_edges(weights: np.ndarray, allowed: np.ndarray, mate: np.ndarray) -> np.ndarray:
    """Edges of zero reduced cost under optimal dual potentials of a max-weight pairing.

    ``weights`` (K, n, n) integers, ``allowed`` the edges that may be used, ``mate`` an
    optimal perfect matching of allowed edges (row -> column). The residual graph, with
    each row merged with its matched column, has an edge a -> b of cost
    ``c[a, mate[b]] - c[b, mate[b]]`` (c = -weights: row a takes b's column, b gives it
    up) and no negative cycle because ``mate`` is optimal; Bellman-Ford from a source
    joined to every node gives potentials ``pi``. Then row potential ``pi[b]`` and column
    potential ``pi[b] + c[b, mate[b]]`` make every allowed edge's reduced cost >= 0 and
    every matched edge's 0; a perfect matching is optimal exactly when it uses zero-cost
    edges only (complementary slackness).
    """
    n_blocks, size, _ = weights.shape
    cost = -weights
    by_node = np.take_along_axis(cost, mate[:, None, :].repeat(size, axis=1), axis=2)  # c[a, mate[b]]
    ok = np.take_along_axis(allowed, mate[:, None, :].repeat(size, axis=1), axis=2)
    own = np.take_along_axis(cost, mate[:, :, None], axis=2)[:, :, 0]  # c[b, mate[b]]
    step = np.where(ok, by_node - own[:, None, :], _FORBIDDEN)
    pi = np.zeros((n_blocks, size), np.int64)
    for _ in range(size):
        relaxed = np.minimum(pi, (pi[:, :, None] + step).min(axis=1))
        if np.array_equal(relaxed, pi):
            break
        pi = relaxed
    tight_nodes = ok & (pi[:, :, None] + step == pi[:, None, :])
    tight = np.zeros_like(allowed)
    blocks = np.arange(n_blocks)[:, None, None]
    tight[blocks, np.arange(size)[None, :, None], mate[:, None, :]] = tight_nodes
    return tight


def lexicographic_smallest(tight: np.ndarray, mate: np.ndarray, n_pred: int, n_gt: int) -> np.ndarray:
    """The perfect matching of ``tight`` edges whose columns, read over rows 0..n_pred-1,
    form the lexicographically smallest sequence (columns >= n_gt are dummies: digit n_gt).

    ``mate`` is any perfect matching of tight edges. Row n in turn takes the smallest
    column it can while rows before it keep theirs: column j is possible when its owner
    can move on, through owners of further columns, to row n's own column (rows after n
    only), which a breadth-first search over columns finds.
    """
    mate = mate.copy()
    n_blocks, size = mate.shape
    index = np.arange(size)
    digit = np.minimum(index, n_gt)
    owner = np.empty_like(mate)
    np.put_along_axis(owner, mate, np.broadcast_to(index, mate.shape), axis=1)
    for n in range(n_pred):
        current = digit[mate[:, n]]
        candidates = tight[:, n, :] & (digit[None, :] < current[:, None]) & (owner > n)
        active = np.flatnonzero(candidates.any(axis=1))
        if not len(active):
            continue
        t, m, o = tight[active], mate[active], owner[active]
        free = index[None, :] > n  # rows that may still move
        reach = np.zeros((len(active), size), bool)  # columns from which n's column is reachable
        reach[np.arange(len(active)), m[:, n]] = True
        via = np.full((len(active), size), -1)  # per row: the column it moves to
        joined = np.zeros((len(active), size), bool)
        while True:
            hits = t & reach[:, None, :]
            new = hits.any(axis=2) & free & ~joined
            if not new.any():
                break
            via = np.where(new, hits.argmax(axis=2), via)
            joined |= new
            reach |= np.take_along_axis(joined, o, axis=1)
        choice = np.where(candidates[active] & reach, digit[None, :], size + 1)
        target = choice.argmin(axis=1)
        moving = choice.min(axis=1) < current[active]
        for j, b in enumerate(active):  # walk each alternating cycle (short in practice)
            if not moving[j]:
                continue
            column, row = target[j], o[j, target[j]]
            mate[b, n] = column
            owner[b, column] = n
            while row != n:
                column = via[j, row]
                mate[b, row] = column
                next_row = o[j, column]
                owner[b, column] = row
                row = next_row
    return mate
