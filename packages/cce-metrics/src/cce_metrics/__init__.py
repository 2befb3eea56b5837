"""cce-metrics (placeholder; filled in by its issue)."""
