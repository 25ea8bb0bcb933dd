"""The one error type for bad input, and the one warning type for undefined scores."""

from __future__ import annotations


class KievalInputError(ValueError):
    """Input that cannot be evaluated: names the file, the place in it and the problem.

    >>> str(KievalInputError("pred.jsonl", "line 3", "invalid JSON"))
    'pred.jsonl, line 3: invalid JSON'
    """

    def __init__(self, source: str, where: str | None, problem: str) -> None:
        self.source = source
        self.where = where
        self.problem = problem
        place = f"{source}, {where}" if where else source
        super().__init__(f"{place}: {problem}")


class UndefinedMetricWarning(UserWarning):
    """A score is 0/0 (for example group F1 when the ground truth has no groups)."""
