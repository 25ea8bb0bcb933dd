"""The error types of bad input and bad options, and the warning type of undefined scores.

The CLI maps both error types to exit code 2 and any other exception to exit code 1
(an internal error is never disguised as bad input).
"""

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

    def __reduce__(self):
        """Pickled with its parts, so it crosses process boundaries (a Dask worker's error
        reaches the client as the same error)."""
        return type(self), (self.source, self.where, self.problem)


class NoCommonDocuments(KievalInputError):
    """A prediction set sharing no document with the ground truth: almost always the
    wrong file (or ids written differently). The app keeps such a file aside and checks it
    again when the ground truth changes, so it is recognised by this type.
    """


class KievalOptionError(ValueError):
    """An option that cannot be used (unknown name, value out of range, wrong direction)."""


class UndefinedMetricWarning(UserWarning):
    """A score is 0/0 (for example group F1 when the ground truth has no groups)."""


class UnscoredKeyWarning(UserWarning):
    """A key on one side only (SPEC 6.1, metadata): a ground-truth key that no prediction
    file has, set aside as metadata and not scored, or a predicted key the ground truth
    lacks, scored as a wrong field. The message says how to change it."""
