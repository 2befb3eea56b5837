"""Chunk text to vectors.

The embedder interface, the hash embedder, model servers and the registry.
"""
