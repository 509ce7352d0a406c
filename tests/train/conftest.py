"""Fixtures of the training tests: small data sets, fits that ignore DCA's ConvergenceWarning (the
fast settings stop it early on purpose), and the baselines' data and l1 encoder."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning

from lastedge.train.baselines import SoftThresholdEncoderSVM


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


@pytest.fixture(scope="session")
def digits():
    """600 training and 400 test rows of scikit-learn's digits (a fixed permutation)."""
    X, y = load_digits(return_X_y=True)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(X))
    train, test = order[:600], order[600:1000]
    return X[train], y[train], X[test], y[test]


@pytest.fixture(scope="session")
def binary():
    """A binary make_classification task: 200 training and 100 test rows of 12 features."""
    X, y = make_classification(n_samples=300, n_features=12, n_informative=6, n_redundant=0,
                               class_sep=1.5, random_state=1)
    return X[:200], y[:200], X[200:], y[200:]


@pytest.fixture(scope="session")
def l1_encoder(binary):
    """SoftThresholdEncoderSVM with an l1-learned dictionary of 10 atoms, fitted on ``binary``."""
    X, y, _, _ = binary
    return SoftThresholdEncoderSVM(10, dictionary="l1", random_state=0).fit(X, y)
