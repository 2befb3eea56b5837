"""Scoring labeled queries.

The harness, how an index is obtained, configurations and pre-run checks.
"""
