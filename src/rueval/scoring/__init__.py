"""Scoring: metrics, task scores and totals, bootstrap statistics and subpopulation slices."""
