"""Outputs: the JSON report and summary; saved runs written, read, checked and pruned;
outputs whole or absent; MLflow tracking."""
