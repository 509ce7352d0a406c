"""Argument types the benchmark scripts share; argparse and pathlib only (output checks import the
light runtime when called), so that a script timing the light runtime imports nothing heavier."""

from __future__ import annotations

import argparse
from pathlib import Path


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


def atom_counts(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"atom counts must be >= 1, got {text!r}")
    return values


def seed(text: str) -> int:
    """argparse type of ``--seed``: a ``random_state`` that numpy, scikit-learn and torch all take."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"seeds must be in 0..2**32 - 1, got {value}")
    return value


def output_file(text: str) -> Path:
    """argparse type of ``--json``: a path whose folder exists and takes new files, checked before
    any fit so that a typo does not cost the run's results."""
    try:
        from lastedge.runtime.model import check_output_path

        return check_output_path(text, Path(text).suffix.lower(), "--json")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def figure_file(text: str) -> Path:
    """argparse type of ``--plot``: a .png, .pdf or .svg path that can be written, with matplotlib
    installed, checked before any fit."""
    try:
        from lastedge.runtime.figures import check_figure_path

        return check_figure_path(text)
    except (ValueError, ImportError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None
