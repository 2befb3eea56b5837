"""cce-cli (placeholder; filled in by its issue)."""
