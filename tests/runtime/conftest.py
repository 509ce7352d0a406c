"""Fixtures of the runtime tests: hard rows for a model, the runtime's own parity check, and the
fuzz harness (``fuzz.py`` and its modules, beside this file)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from lastedge.runtime import Model, load

# The fuzz harness's modules import each other by name, and its worker runs as a script from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))


def build_hard_rows(model: Model, X: np.ndarray) -> np.ndarray:
    """Real rows plus zeros, atoms scaled so that (for preprocess "none") an atom's input is
    exactly alpha, and large values."""
    Z = X[: len(X) // 2]
    at_threshold = model.dictionary.T[:5] / np.float32(1.5**2)
    return np.vstack([Z, np.zeros((3, model.n_features)), at_threshold,
                      X[:5] * 1e3, np.full((2, model.n_features), 50.0)]).astype(np.float32)


def check_parity(reference: Model, path: Path, X: np.ndarray, backend: str | None = None) -> None:
    """fp32: scores within 1e-4 * (1 + |score|) and identical labels; int8: >= 95% agreement."""
    predictor = load(path, backend=backend)
    expected, got = reference.decision_function(X), predictor.decision_function(X)
    assert got.shape == expected.shape and got.dtype == np.float32
    if predictor.precision == "int8":
        agreement = np.mean(predictor.predict(X) == reference.predict(X))
        assert agreement >= 0.95, f"{path.name}: int8 agrees on {agreement:.1%}"
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(predictor.predict(X), reference.predict(X))


@pytest.fixture(scope="session")
def hard_rows():
    """``build_hard_rows``: real rows plus zeros, rows at the threshold and large values."""
    return build_hard_rows


@pytest.fixture(scope="session")
def assert_parity():
    """``check_parity``: a file's scores against the reference model (fp32 tight, int8 by agreement)."""
    return check_parity


@pytest.fixture(scope="session")
def fuzz():
    """``fuzz.py``: ``campaign``, ``run_cases`` and their ``Report``."""
    import fuzz

    return fuzz


@pytest.fixture(scope="session")
def fuzz_cases():
    """``fuzz_cases.py``: the files lastedge writes and the hostile ones."""
    import fuzz_cases

    return fuzz_cases


@pytest.fixture(scope="session")
def base_files(fuzz_cases, tmp_path_factory):
    """Every kind of model file lastedge writes here (``fuzz_cases.model_files``), by name."""
    return fuzz_cases.model_files(tmp_path_factory.mktemp("base"))
