"""Counting: value comparison, group matching, KIEval counts and the peer metrics."""
