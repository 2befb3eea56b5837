"""The one failure a build reports: `BuildError`, whose message the user reads.

Why it exists: every step of a build (the embedder, the embedding cells, the walk) fails
the same way, and callers catch one type; it lives apart so each step can raise it.
"""

from __future__ import annotations


class BuildError(Exception):
    """The build was aborted (an embedder failed); nothing may be written."""
