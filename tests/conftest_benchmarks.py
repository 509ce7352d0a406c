"""Importing the scripts of ``benchmarks/`` (a folder of scripts, not a package) from tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def import_benchmark(name: str) -> ModuleType:
    """The module ``benchmarks/<name>.py``, imported without leaving ``benchmarks/`` on ``sys.path``."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
