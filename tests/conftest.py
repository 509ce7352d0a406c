"""Shared fixtures: the digits split and a tiny LAST model trained on it once per session."""

from __future__ import annotations

import warnings

import pytest

# Trains in about a second; accuracy is poor (~70 %) but every code path runs.
TINY_LAST = dict(n_atoms=4, max_dca_iter=2, inner_iter=30, preprocess="center-l2", verbose=0,
                 random_state=0)


@pytest.fixture(scope="session")
def digits_data():
    """scikit-learn digits split 75/25 (stratified, seed 0) as a ``runtime.data.Dataset``."""
    from lastedge.runtime.data import load_dataset

    return load_dataset("digits")


@pytest.fixture(scope="session")
def tiny_last(digits_data):
    """A ``LASTClassifier`` fitted with ``TINY_LAST`` on the digits training part."""
    from sklearn.exceptions import ConvergenceWarning

    from lastedge.train import LASTClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LASTClassifier(**TINY_LAST).fit(digits_data.X_train, digits_data.y_train)


@pytest.fixture(scope="session")
def tiny_model_file(tiny_last, tmp_path_factory):
    """``tiny_last`` saved as a ``.npz`` model file."""
    return tiny_last.to_model().save(tmp_path_factory.mktemp("models") / "tiny.npz")
