"""Argument types the benchmark scripts share; argparse only, so that a script timing the light
runtime imports nothing heavier."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type of a count (runs, repeats, rows): an integer >= 1, so that ``--runs 0`` is a
    usage error rather than a traceback from a median of nothing."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value
