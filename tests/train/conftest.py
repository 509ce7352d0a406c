"""Fixtures of the training tests: small data sets and fits that ignore DCA's ConvergenceWarning
(the fast settings stop it early on purpose)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning


def make_small_blobs(n_classes: int = 3, m: int = 90, n: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``m`` rows of ``n`` features around ``n_classes`` well separated centres, classes in turn."""
    rng = np.random.default_rng(seed)
    y = np.arange(m) % n_classes
    centres = rng.normal(0.0, 3.0, size=(n_classes, n))
    return centres[y] + rng.normal(size=(m, n)), y


def fit_without_convergence_warnings(estimator, X, y, **fit_params):
    """``estimator.fit(X, y)``, DCA's ConvergenceWarning ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y, **fit_params)


@pytest.fixture(scope="session")
def small_blobs():
    """``small_blobs(n_classes=3, m=90, n=5, seed=0) -> (X, y)``: easy Gaussian blobs."""
    return make_small_blobs


@pytest.fixture(scope="session")
def fit_quietly():
    """``fit_quietly(estimator, X, y, **fit_params)``: fit, ignoring DCA's ConvergenceWarning."""
    return fit_without_convergence_warnings
