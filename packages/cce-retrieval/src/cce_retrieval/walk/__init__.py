"""The corpus walk: which files of a tree are indexed, `.gitignore` rules, and why one is not."""
