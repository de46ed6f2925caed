"""The dataset audit: leakage, artifacts, train/evaluation duplicates and heuristic coverage."""
