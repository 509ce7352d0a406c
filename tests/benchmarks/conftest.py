"""The benchmark tests import the scripts of ``benchmarks/`` (a folder of scripts, not a package)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def import_script(name: str) -> ModuleType:
    """The module ``benchmarks/<name>.py``, imported without leaving ``benchmarks/`` on ``sys.path``."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="session")
def import_benchmark():
    """``import_script``: the module ``benchmarks/<name>.py``."""
    return import_script
