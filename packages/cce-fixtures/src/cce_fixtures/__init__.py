"""cce-fixtures (placeholder; filled in by its issue)."""
