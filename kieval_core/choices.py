"""Names the command line offers and the core defines here, importing nothing, so that
``kieval evaluate --help`` builds its parser without pandas or numpy: metric families,
review choices, engines, peer structures, confidence sources and CSV formula handling.
Each is defined here and imported by the module that uses it.

The input formats and the comparators are not here: the parser takes them from their
registries, :data:`kieval_core.read.readers.READERS` and
:data:`kieval_core.count.comparators.REGISTRY`, which import nothing heavy either.
"""

from __future__ import annotations

#: Families selectable with ``--metrics`` (:mod:`kieval_core.result.registry`), with what each holds.
FAMILIES: dict[str, str] = {
    "kieval": "KIEval, flat entity F1 and the automation curve",
    "anls_star": "ANLS* on the nested structure",
    "nted": "Donut's nTED accuracy and field F1",
    "oi": "reading-order-independent OIECER, OIEWER, OINerval",
    "bag": "bag-of-tagged-words and bag-of-entities",
    "lists": "list metrics over groups (items, positional, row alignment)",
    "tokens": "SCORE tokens found / tokens added",
}
#: What a prediction without confidence counts as (SPEC 4c, :mod:`kieval_core.review.automation`):
#: reviewed at every threshold, 0 included (-inf, below every threshold; the default), or
#: automated (1.0).
MISSING_POLICIES = {"review": float("-inf"), "automate": 1.0}
#: What the report covers (:mod:`kieval_core.review.decisions`): review of single
#: predictions, of whole documents (SPEC 4c), or both.
REVIEW_CHOICES = ("both", "predictions", "documents")
#: The most bootstrap resamples a run may ask for: each keeps about 8 KB of its band
#: (1,000 points), so 10,000 hold about 80 MB; more add nothing to a 95% interval.
MAX_RESAMPLES = 10_000

#: The engines of :func:`kieval_core.evaluate`: this process, or a Dask cluster.
ENGINES = ("local", "dask")
#: The structures the peer metrics read: as uploaded, or re-nested from the entities.
STRUCTURES = ("uploaded", "renested")
#: Where confidences come from: the model, or the consensus of the other models.
CONFIDENCE_FROM = ("model", "consensus")
#: Text cells that begin like a formula in the error CSV: escaped, or kept.
CSV_FORMULAS = ("escape", "keep")
