"""Models and data for the export tests, as fixtures that return their builder (numpy-only builders
work in the legacy tflite-runtime environment, the digits model needs scikit-learn).

The digits model is genuinely trained: per-class k-means atoms scaled so a few percent of the
soft-threshold features are active, and output weights from a logistic regression on those features.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from lastedge.runtime import Model, Preprocess


def build_random_model(n_features: int = 20, n_atoms: int = 30, n_classes: int = 3, kind: str = "none",
                 seed: int = 0) -> tuple[Model, np.ndarray]:
    """A model with random weights whose atoms fire on some rows, and 300 raw rows for it."""
    rng = np.random.default_rng(seed)
    X = rng.normal(2.0, 3.0, size=(300, n_features)).astype(np.float32)
    pre = Preprocess.fit(kind, X)
    Z = pre.apply(X)
    D = rng.standard_normal((n_features, n_atoms))
    D /= np.linalg.norm(D, axis=0)
    D *= 1.0 / np.quantile(Z @ D, 0.9)  # about 10 % of the features are active
    n_outputs = 1 if n_classes == 2 else n_classes
    W = rng.standard_normal((n_atoms, n_outputs))
    return Model(D, W, np.arange(n_classes), 1.0, pre), X


@lru_cache(maxsize=None)
def build_digits_case(kind: str = "center-l2", per_class: int = 20):
    """A trained digits model and its split: (model, X_train, y_train, X_test, y_test)."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X.astype(np.float32), y, test_size=0.3, random_state=0, stratify=y)
    pre = Preprocess.fit(kind, X_train)
    Z = pre.apply(X_train)
    atoms = [KMeans(per_class, n_init=1, random_state=0).fit(Z[y_train == c]).cluster_centers_
             for c in range(10)]
    D = np.concatenate(atoms).T
    D /= np.linalg.norm(D, axis=0)
    D *= 1.0 / np.quantile(Z @ D, 0.95)  # about 5 % of the features are active
    probe = Model(D, np.zeros((D.shape[1], 10)), np.arange(10), 1.0, pre)
    lr = LogisticRegression(fit_intercept=False, C=10, max_iter=3000).fit(probe.features(X_train), y_train)
    model = Model(D, lr.coef_.T, lr.classes_, 1.0, pre)
    return model, X_train, y_train, X_test, y_test


def build_binary_digits_case():
    """A trained binary model (digits 3 vs 8, string labels): (model, X_train, X_test, y_test)."""
    from sklearn.linear_model import LogisticRegression

    model, X_train, y_train, X_test, y_test = build_digits_case()
    keep_train, keep_test = np.isin(y_train, (3, 8)), np.isin(y_test, (3, 8))
    names = {3: "three", 8: "eight"}
    y_bin = np.array([names[v] for v in y_train[keep_train]])
    lr = LogisticRegression(fit_intercept=False, C=10, max_iter=3000).fit(
        model.features(X_train[keep_train]), y_bin)
    # scikit-learn's binary convention is the model's: a positive score means classes[1]
    binary = Model(model.dictionary, lr.coef_.T, lr.classes_, 1.0, model.preprocess)
    return binary, X_train[keep_train], X_test[keep_test], np.array([names[v] for v in y_test[keep_test]])


@pytest.fixture(scope="session")
def random_model():
    """``build_random_model``: a model with random weights and rows for it."""
    return build_random_model


def build_one_output_per_atom(model: Model) -> Model:
    """``model`` with each atom's output weights cut to its largest: each atom votes for one
    class, as in LAST's one-vs-all and shared models."""
    W = np.zeros_like(model.weights)
    rows, columns = np.arange(len(W)), np.abs(model.weights).argmax(axis=1)
    W[rows, columns] = model.weights[rows, columns]
    return Model(model.dictionary, W, model.classes, model.alpha, model.preprocess)


@pytest.fixture(scope="session")
def one_output_per_atom():
    """``build_one_output_per_atom``: a model's output weights cut to one per atom."""
    return build_one_output_per_atom


@pytest.fixture(scope="session")
def digits_case():
    """``build_digits_case``: a trained digits model and its split (cached per preprocessing)."""
    return build_digits_case


@pytest.fixture(scope="session")
def binary_digits_case():
    """``build_binary_digits_case``: a trained binary digits model (3 vs 8, string labels)."""
    return build_binary_digits_case
