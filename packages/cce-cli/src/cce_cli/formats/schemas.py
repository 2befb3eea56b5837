"""The schema identifiers of the documents cce writes and reads back.

Why it exists: the relevance report's schema is written by the renderers and checked by
whatever reads a saved report (`cce diff`, `cce report`, `cce plan`); naming it below both
keeps the reader from importing the writer.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REPORT_SCHEMA"]

REPORT_SCHEMA: Final = "cce.relevance.report/v2"
"""The `cce.relevance.report/v2` JSON report of `cce relevance --json`."""
