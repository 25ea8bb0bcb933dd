"""Results and reports: tallies, result objects, the registry, decisions, the JSON report and saved runs."""
