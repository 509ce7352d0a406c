"""``SparseCodingSVM``: the paper's "l1 sparse coding + linear SVM" baseline.

An l1 dictionary is learned on the training rows without labels, every row is encoded by the lasso
``argmin_a 0.5 * ||z - D a||^2 + lambda * ||a||_1``, and a linear SVM is trained on the codes. The
codes are sparse like LAST's, but each one is an iterative solve (LARS here), where LAST's encoder
is one matrix product and a threshold: the paper's test-time comparison (14 s against 1.0 s on
10000 MNIST images). There is no ``to_model``: a ``runtime.Model`` computes soft thresholds only.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.decomposition import sparse_encode
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.utils.validation import check_is_fitted, check_random_state

from lastedge.runtime import Preprocess

from .base import validate_fit_data, validate_predict_data
from .baselines import C_GRID, best_cross_validated, l1_dictionary, linear_svm, unit_norm
from .params import COMMON_CONSTRAINTS, Interval, check_params
from .preprocess_choice import resolve

_C_FOLDS = 3  # cross-validation folds that choose C when it is None


class SparseCodingSVM(ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """l1 dictionary learning + lasso codes + linear SVM (the paper's sparse coding baseline).

    Parameters
    ----------
    n_atoms : int, default=100
        Atoms N of the one dictionary, learned on all training rows (no per-class split).
    l1_penalty : float > 0, default=0.1
        The paper's lambda, used both to learn the dictionary and to encode rows. The paper chose
        it by cross-validation in {0.1, 0.01, 0.001}; smaller values give denser codes and a slower
        fit and encoding.
    C : float > 0 or None, default=1.0
        SVM regularisation, on codes divided by their largest magnitude on the training rows. None
        chooses it by stratified 3-fold cross-validation in ``C_GRID`` on the codes (the dictionary
        and the codes do not depend on C, so they are computed once).
    preprocess : {"auto", "none", "l2", "center-l2", "standardize"}, default="auto"
        Applied to inputs before dictionary learning and encoding.
    random_state : int, RandomState or None
        Seeds dictionary learning and the SVM.

    Attributes
    ----------
    classes_, n_features_in_, preprocess_ : the labels, input width and fitted preprocessing.
    atoms_ : [n_features, n_atoms] unit-norm atoms (the paper's D).
    feature_scale_ : the codes are divided by this (their training maximum magnitude) before the SVM.
    svm_ : the fitted ``LinearSVC`` on the rescaled codes (no intercept, as liblinear in the paper).
    C_ : the C used.
    """

    _parameter_constraints: dict[str, list] = {
        **COMMON_CONSTRAINTS,
        "l1_penalty": [Interval(0, open_low=True)],
        "C": [Interval(0, open_low=True), None],
    }

    def __init__(self, n_atoms: int = 100, *, l1_penalty: float = 0.1, C: float | None = 1.0,
                 preprocess: str = "auto", random_state=None):
        self.n_atoms = n_atoms
        self.l1_penalty = l1_penalty
        self.C = C
        self.preprocess = preprocess
        self.random_state = random_state

    def fit(self, X, y) -> SparseCodingSVM:
        """Learn the dictionary on the preprocessed rows, encode them, and train the SVM."""
        check_params(self)
        X, y_index = validate_fit_data(self, X, y)
        rng = check_random_state(self.random_state)
        self.preprocess_ = Preprocess.fit(resolve(self.preprocess, X, y_index), X)
        Z = self.preprocess_.apply(X).astype(np.float64)
        self.atoms_ = unit_norm(l1_dictionary(Z, self.n_atoms, self.l1_penalty, rng)).T
        codes = self._encode(Z)
        scale = float(np.abs(codes).max())
        self.feature_scale_ = scale if scale > 0 else 1.0
        codes /= self.feature_scale_
        self.C_ = self.C if self.C is not None else _best_C(codes, y_index, self.classes_, rng)
        self.svm_ = linear_svm(self.C_, rng).fit(codes, y_index)
        self._n_features_out = self.atoms_.shape[1]  # one code per atom, for get_feature_names_out
        return self

    def _encode(self, Z: np.ndarray) -> np.ndarray:
        return sparse_encode(Z, self.atoms_.T, algorithm="lasso_lars", alpha=self.l1_penalty)

    def transform(self, X) -> np.ndarray:
        """Lasso codes ``argmin_a 0.5 * ||z - D a||^2 + l1_penalty * ||a||_1``, [n, n_atoms]."""
        check_is_fitted(self, "svm_")
        X = validate_predict_data(self, X)
        return self._encode(self.preprocess_.apply(X).astype(np.float64))

    def decision_function(self, X) -> np.ndarray:
        """SVM scores: [n] for binary (> 0 means ``classes_[1]``), else [n, n_classes]."""
        codes = self.transform(X)  # checks fitted first: unfitted -> NotFittedError
        return self.svm_.decision_function(codes / self.feature_scale_)

    def predict(self, X) -> np.ndarray:
        """Predicted labels."""
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)]

    def feature_sparsity(self, X) -> float:
        """Fraction of exactly-zero codes on ``X``, comparable with LAST's ``feature_sparsity``."""
        return float(np.mean(self.transform(X) == 0))


def _best_C(codes: np.ndarray, y_index: np.ndarray, classes: np.ndarray,
            rng: np.random.RandomState) -> float:
    """The C of ``C_GRID`` with the best mean 3-fold accuracy on the codes (ties: the smallest)."""
    folds = StratifiedKFold(n_splits=_C_FOLDS, shuffle=True, random_state=int(rng.randint(2**31 - 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # only the final fit's warning matters
        scores = [cross_val_score(linear_svm(C, rng, max_iter=1_000), codes, y_index, cv=folds).mean()
                  for C in C_GRID]
    return float(C_GRID[best_cross_validated(scores, y_index, classes, _C_FOLDS, "C")])
