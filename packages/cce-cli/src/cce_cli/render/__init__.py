"""Text, JSON and markdown renderings, and writing them to stdout safely."""
