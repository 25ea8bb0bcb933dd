"""The names the command line offers (input formats, comparators, metric families, engines,
...), importing nothing: ``kieval evaluate --help`` builds its parser from here without
pandas, numpy or the comparators' parsers.

The engine, peer-structure, confidence-source and CSV-formula names are defined here and
imported by their modules. The others are built by their modules from a registry (or owned
by a module this one must not import); their copies here are checked equal to them by
``tests/test_startup.py``, so adding a format, comparator or family fails that test until
it is named here too.
"""

from __future__ import annotations

#: Input formats (``kieval_core.read.formats.FORMATS``).
FORMATS = ("auto", "json", "jsonl", "json-dir", "table", "cord", "kieval-csv", "iob2", "lists", "funsd",
           "docile")
#: Comparator names (``kieval_core.count.comparators.COMPARATORS``).
COMPARATORS = ("exact", "casefold", "alnum", "number", "number:comma", "date", "date:dmy", "date:mdy",
               "date:ymd", "phone", "phone:CC")
#: Metric families (the keys of ``kieval_core.result.registry.FAMILIES``).
FAMILIES = ("kieval", "anls_star", "nted", "oi", "bag", "lists", "tokens")
#: What review does with predictions without confidence (``kieval_core.review.automation.MISSING_POLICIES``).
MISSING_POLICIES = ("review", "automate")
#: What the report's review covers, and the most bootstrap resamples (``kieval_core.review.decisions``).
REVIEW_CHOICES = ("both", "predictions", "documents")
MAX_RESAMPLES = 10_000

#: The engines of :func:`kieval_core.evaluate`: this process, or a Dask cluster.
ENGINES = ("local", "dask")
#: The structures the peer metrics read: as uploaded, or re-nested from the entities.
STRUCTURES = ("uploaded", "renested")
#: Where confidences come from: the model, or the consensus of the other models.
CONFIDENCE_FROM = ("model", "consensus")
#: Text cells that begin like a formula in the error CSV: escaped, or kept.
CSV_FORMULAS = ("escape", "keep")
