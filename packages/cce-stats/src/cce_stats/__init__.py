"""cce-stats (placeholder; filled in by its issue)."""
