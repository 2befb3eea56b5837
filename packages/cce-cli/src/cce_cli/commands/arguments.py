"""Argument types shared by the subcommands.

Why it exists: several commands take counts (`--jobs`, `--depth`, `--limit`, `--k`), and a
bad one must read the same everywhere: argparse turns an `ArgumentTypeError` into a usage
error (exit 2) naming the flag. This module owns those converters.
"""

from __future__ import annotations

import argparse

__all__ = ["positive_int"]


def positive_int(text: str) -> int:
    """A whole number >= 1, or an `ArgumentTypeError` quoting the text."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value
