"""Reading: every input format into a :class:`~kieval_core.read.dataset.Dataset`."""
