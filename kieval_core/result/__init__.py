"""The result model: counts tallied, result objects, the metric registry, consensus
confidences, tables and comparisons."""
