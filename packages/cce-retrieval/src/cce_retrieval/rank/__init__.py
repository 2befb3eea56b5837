"""Queries to ranked chunks.

BM25, cosine, hybrid fusion, the derived structures and the backends.
"""
