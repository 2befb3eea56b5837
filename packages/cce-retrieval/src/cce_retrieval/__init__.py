"""cce-retrieval (placeholder; filled in by its issue)."""
