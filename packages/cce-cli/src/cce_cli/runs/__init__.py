"""Runs: one fixture set or a whole suite, scored, compared and rendered."""
