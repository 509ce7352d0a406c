"""``SoftThresholdEncoderSVM``: the paper's fixed-encoder baseline for LAST.

A dictionary is built without looking at the classifier (supervised k-means, random samples or l1
dictionary learning, atoms of unit norm), inputs are encoded with the one-sided soft threshold
``h_alpha(z) = max(0, D^T z - alpha)``, and a linear SVM is trained on the codes. Unlike LAST, the
dictionary and the threshold are not learned for the task: this is the comparison that shows what
learning ``D`` buys.

The dictionary builders, the data check and the choice by cross-validation here are shared with
the other baselines (``sparse_coding.SparseCodingSVM``, ``centroids.KMeansCentroidClassifier``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.decomposition import MiniBatchDictionaryLearning
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.svm import LinearSVC
from sklearn.utils.validation import check_random_state

from lastedge.runtime import __version__
from lastedge.runtime import Model, Preprocess

from .base import ModelBackedClassifier, recorded_params, validate_fit_data
from .params import COMMON_CONSTRAINTS, Interval, Options, check_params, integers
from .preprocess_choice import resolve

DICTIONARIES = ("kmeans", "random", "l1")
# alpha=None: candidate thresholds are the quantiles of the training responses D^T z that leave
# this fraction of the features active (non-zero). See the class docstring for why not {0.1..1}.
ACTIVE_FRACTIONS = (0.75, 0.5, 0.25, 0.1, 0.05, 0.02)
# C=None: candidates for the SVM on codes rescaled to a maximum of 1 on the training rows.
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
# Passes over the data of online l1 dictionary learning at most (it stops earlier when its cost
# stops improving); each pass solves one LARS problem per row in Python, the baseline's main cost.
DICTIONARY_EPOCHS = 20
# liblinear iterations: scikit-learn's default while searching (dense codes with a large C can take
# 10000 and are never the best), more for the final fit.
_SEARCH_MAX_ITER, _FINAL_MAX_ITER = 1_000, 10_000


class SoftThresholdEncoderSVM(ModelBackedClassifier, ClassifierMixin, ClassNamePrefixFeaturesOutMixin,
                              TransformerMixin, BaseEstimator):
    """Fixed dictionary + soft threshold ``max(0, D^T z - alpha)`` + linear SVM (the paper's baseline).

    Parameters
    ----------
    n_atoms : int, default=100
        Total atoms N, split evenly over the classes (``N // C`` each, the first ``N % C`` classes
        one more). Binary problems get the paper's kappa = 0.5: half the atoms from each class.
        For a one-vs-all comparison with LAST at N atoms per head, pass ``N * n_classes`` so both
        models have the same dictionary size (the same test-time cost).
    dictionary : {"kmeans", "random", "l1"}, default="kmeans"
        Each class's atoms are the k-means centroids of its (preprocessed) training rows, or a random
        subset of them; or, for "l1", one dictionary of ``n_atoms`` learned on all rows, without
        labels, by l1 dictionary learning (see :func:`l1_dictionary`). Atoms are scaled to unit l2
        norm.
    l1_penalty : float > 0, default=0.1
        The paper's lambda for ``dictionary="l1"`` (which chose it by cross-validation in
        {0.1, 0.01, 0.001}); unused by the other dictionaries.
    alpha : float > 0 or None, default=None
        Threshold. None chooses it by stratified ``cv``-fold cross-validation among the quantiles
        of the training responses ``D^T z`` that leave 75, 50, 25, 10, 5 or 2 % of the features
        active (not the paper's grid, see Notes).
    C : float > 0 or None, default=1.0
        SVM regularisation, on codes rescaled to a maximum of 1 over the training rows (so one C
        suits every alpha). None chooses it by cross-validation in (0.01, 0.1, 1, 10, 100),
        jointly with alpha.
    preprocess : {"auto", "none", "l2", "center-l2", "standardize"}, default="auto"
        Applied to inputs before encoding (recorded in the model).
    cv : int, default=3
        Folds of the cross-validation (used only when alpha or C is None). The dictionary is
        built once from all training rows; the folds choose alpha and C only.
    random_state : int, RandomState or None
        Seeds k-means, the random dictionary, dictionary learning, the folds and the SVM.

    Notes
    -----
    The paper's thresholds {0.1, ..., 1} assume well-spread responses; on raw texture patches (unit
    norm, all pixels positive) every response lies in [0.88, 1], so that grid can only choose "all
    active" (0.9) or "none" (1.0). Quantiles of the responses adapt to any preprocessing.

    The SVM has no intercept (``fit_intercept=False``), as LAST and the ``runtime.Model`` contract
    have no bias (liblinear, which the paper used, also fits none by default). This makes
    :meth:`to_model` exact: ``max(0, D^T z - alpha) = alpha * max(0, (D / alpha)^T z - 1)``, so the
    model stores ``D / alpha`` with threshold 1 and the SVM weights times ``alpha / feature_scale_``.

    Attributes
    ----------
    classes_, n_features_in_, preprocess_ : as in LASTClassifier.
    atoms_ : [n_features, n_atoms] unit-norm atoms (the paper's D).
    atom_classes_ : [n_atoms] the class index each atom was built from; None for "l1" (unsupervised).
    alpha_, C_ : the threshold and SVM regularisation used.
    feature_scale_ : the codes are divided by this (their training maximum) before the SVM.
    svm_ : the fitted ``LinearSVC`` on the rescaled codes.
    cv_results_ : dict of arrays "alpha", "C", "mean_accuracy" (None when nothing was searched).
    dictionary_ [n_features, n_atoms], coef_ [n_atoms, n_outputs] : the model's ``D / alpha`` and
    weights. fit_time_ : seconds.
    """

    _parameter_constraints: dict[str, list] = {
        **COMMON_CONSTRAINTS,
        "dictionary": [Options(DICTIONARIES)],
        "l1_penalty": [Interval(0, open_low=True)],
        "alpha": [Interval(0, open_low=True), None],
        "C": [Interval(0, open_low=True), None],
        "cv": [integers(2)],
    }

    def __init__(self, n_atoms: int = 100, *, dictionary: str = "kmeans", l1_penalty: float = 0.1,
                 alpha: float | None = None, C: float | None = 1.0, preprocess: str = "auto", cv: int = 3,
                 random_state=None):
        self.n_atoms = n_atoms
        self.dictionary = dictionary
        self.l1_penalty = l1_penalty
        self.alpha = alpha
        self.C = C
        self.preprocess = preprocess
        self.cv = cv
        self.random_state = random_state

    def fit(self, X, y) -> SoftThresholdEncoderSVM:
        """Build the dictionary, choose alpha and C if asked, and train the SVM on the codes."""
        check_params(self)
        start = time.perf_counter()
        X, y_index = validate_fit_data(self, X, y)
        rng = check_random_state(self.random_state)
        self.preprocess_ = Preprocess.fit(resolve(self.preprocess, X, y_index), X)
        Z = self.preprocess_.apply(X).astype(np.float64)
        self.atoms_, self.atom_classes_ = self._build_dictionary(Z, y_index, rng)
        responses = Z @ self.atoms_
        alphas = [self.alpha] if self.alpha is not None else _quantile_alphas(responses)
        Cs = [self.C] if self.C is not None else list(C_GRID)
        self.cv_results_ = None
        if len(alphas) * len(Cs) > 1:
            self.cv_results_ = self._search(responses, y_index, alphas, Cs, rng)
            searched = " and ".join(name for name in ("alpha", "C") if getattr(self, name) is None)
            best = best_cross_validated(self.cv_results_["mean_accuracy"], y_index, self.classes_,
                                        int(self.cv), searched)
            self.alpha_ = float(self.cv_results_["alpha"][best])
            self.C_ = float(self.cv_results_["C"][best])
        else:
            self.alpha_, self.C_ = float(alphas[0]), float(Cs[0])
        codes, self.feature_scale_ = _scaled_codes(responses, self.alpha_)
        self.svm_ = linear_svm(self.C_, rng).fit(codes, y_index)
        self.fit_time_ = time.perf_counter() - start
        self.model_ = self._build_model()
        self.dictionary_, self.coef_ = self.model_.dictionary, self.model_.weights
        self._n_features_out = self.atoms_.shape[1]  # one code per atom, for get_feature_names_out
        return self

    def _build_dictionary(self, Z: np.ndarray, y_index: np.ndarray,
                          rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray | None]:
        """Unit-norm atoms [n_features, n_atoms] and the class index of each atom (None for "l1")."""
        if self.dictionary == "l1":
            return unit_norm(l1_dictionary(Z, self.n_atoms, self.l1_penalty, rng)).T, None
        atoms, atom_classes = class_atoms(Z, y_index, self.classes_, self.n_atoms, self.dictionary, rng)
        return unit_norm(atoms).T, atom_classes

    def _search(self, responses: np.ndarray, y_index: np.ndarray, alphas, Cs,
                rng: np.random.RandomState) -> dict[str, np.ndarray]:
        """Mean cross-validated accuracy of every (alpha, C), in grid order (ties: the first)."""
        folds = StratifiedKFold(n_splits=int(self.cv), shuffle=True,
                                random_state=int(rng.randint(2**31 - 1)))
        grid = {"alpha": [], "C": [], "mean_accuracy": []}
        with warnings.catch_warnings():
            # Large C on dense codes may stop at max_iter; only the final fit's warning matters.
            warnings.simplefilter("ignore", ConvergenceWarning)
            for alpha in alphas:
                codes, _ = _scaled_codes(responses, alpha)
                for C in Cs:
                    svm = linear_svm(C, rng, max_iter=_SEARCH_MAX_ITER)
                    accuracy = cross_val_score(svm, codes, y_index, cv=folds).mean()
                    grid["alpha"].append(float(alpha))
                    grid["C"].append(float(C))
                    grid["mean_accuracy"].append(float(accuracy))
        return {key: np.array(values) for key, values in grid.items()}

    def _build_model(self) -> Model:
        """``max(0, D^T z - alpha) @ w / s == max(0, (D / alpha)^T z - 1) @ (alpha * w / s)``."""
        weights = self.svm_.coef_.T * (self.alpha_ / self.feature_scale_)  # [n_atoms, n_outputs]
        meta = {"trainer": type(self).__name__, "params": recorded_params(self), "alpha": self.alpha_,
                "C": self.C_, "lastedge_version": __version__,
                "n_features": int(self.n_features_in_), "fit_seconds": round(self.fit_time_, 3)}
        classes = np.asarray(self.classes_.tolist())  # object arrays of strings -> str dtype
        return Model(self.atoms_ / self.alpha_, weights, classes, 1.0, self.preprocess_, meta)

    def transform(self, X) -> np.ndarray:
        """The paper's codes ``max(0, D^T z - alpha)`` with unit-norm atoms, [n, n_atoms]."""
        X = self._check_predict_input(X)  # before ``preprocess_``: unfitted -> NotFittedError
        Z = self.preprocess_.apply(X).astype(np.float64)
        return np.maximum(Z @ self.atoms_ - self.alpha_, 0.0)


def _quantile_alphas(responses: np.ndarray) -> list[float]:
    """Candidate thresholds: response quantiles leaving ``ACTIVE_FRACTIONS`` of the codes active.

    Only positive values are kept (``D / alpha`` needs alpha > 0); duplicates, to 12 significant
    digits (not decimals: responses of raw rows near 1e-13 would all round to 0), are dropped.
    """
    levels = np.quantile(responses, 1.0 - np.asarray(ACTIVE_FRACTIONS))
    alphas = [a for a in dict.fromkeys(float(f"{level:.12g}") for level in levels) if a > 0]
    if not alphas:
        raise ValueError("every training response D^T z is <= 0, so no threshold alpha > 0 leaves "
                         "a code active; check the preprocessing or pass alpha")
    return alphas


def _scaled_codes(responses: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Codes ``max(0, responses - alpha)`` divided by their maximum (1 if all are zero)."""
    codes = np.maximum(responses - alpha, 0.0)
    scale = float(codes.max())
    scale = scale if scale > 0 else 1.0
    return codes / scale, scale


def linear_svm(C: float, rng: np.random.RandomState, max_iter: int = _FINAL_MAX_ITER) -> LinearSVC:
    """The linear SVM on codes: liblinear without intercept, as in the paper, seeded from ``rng``."""
    # The dual solver: 3-10x faster than the primal here (codes are wide, rows few), measured on digits.
    return LinearSVC(C=C, fit_intercept=False, dual=True, max_iter=max_iter,
                     random_state=int(rng.randint(2**31 - 1)))


def best_cross_validated(mean_accuracy: np.ndarray, y_index: np.ndarray, classes: np.ndarray,
                         n_folds: int, searched: str) -> int:
    """Index of the best mean cross-validated accuracy (ties: the first), NaN entries skipped.

    scikit-learn scores a fold NaN when its fit fails, e.g. a binary task whose training fold holds
    one class only; when every candidate failed there is nothing to choose from, so say why rather
    than return an arbitrary candidate. ``searched`` names the parameters being chosen.
    """
    accuracy = np.asarray(mean_accuracy, dtype=np.float64)
    if not np.isfinite(accuracy).any():
        counts = np.bincount(y_index, minlength=len(classes))
        rarest = int(np.argmin(counts))
        raise ValueError(f"cannot choose {searched} by {n_folds}-fold cross-validation: the SVM failed "
                         f"on a fold for every candidate (class {classes[rarest].tolist()!r} has "
                         f"{counts[rarest]} training row(s)); give {searched} explicitly or more rows "
                         f"of each class")
    return int(np.nanargmax(accuracy))


def class_atom_counts(n_atoms: int, classes: np.ndarray) -> np.ndarray:
    """Atoms per class: ``n_atoms // C`` each, the first ``n_atoms % C`` classes one more.

    Two classes get the paper's kappa = 0.5: half the atoms from each.
    """
    n_classes = len(classes)
    if n_atoms < n_classes:
        raise ValueError(f"n_atoms={n_atoms} gives some of the {n_classes} classes no atom; "
                         f"use n_atoms >= {n_classes}")
    counts = np.full(n_classes, n_atoms // n_classes)
    counts[:n_atoms % n_classes] += 1
    return counts


def class_atoms(Z: np.ndarray, y_index: np.ndarray, classes: np.ndarray, n_atoms: int, kind: str,
                rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """Supervised atoms [n_atoms, n_features], not normalised, and the class index of each.

    Each class gets its :func:`class_atom_counts` share: the k-means centroids of its rows
    (``kind="kmeans"``) or a random subset of them (``kind="random"``).
    """
    counts = class_atom_counts(n_atoms, classes)
    atoms = []
    for c, k in enumerate(counts):
        rows = Z[y_index == c]
        if len(rows) < k:
            raise ValueError(f"class {classes[c].tolist()!r} has {len(rows)} training rows, "
                             f"fewer than its {k} atoms; lower n_atoms")
        if kind == "kmeans":
            kmeans = KMeans(n_clusters=int(k), n_init="auto", random_state=int(rng.randint(2**31 - 1)))
            atoms.append(kmeans.fit(rows).cluster_centers_)
        else:
            atoms.append(rows[rng.choice(len(rows), size=int(k), replace=False)])
    return np.concatenate(atoms), np.repeat(np.arange(len(classes)), counts)


def l1_dictionary(Z: np.ndarray, n_atoms: int, l1_penalty: float,
                  rng: np.random.RandomState) -> np.ndarray:
    """Atoms [n_atoms, n_features] (norm <= 1) of l1 dictionary learning on all rows, without labels.

    Minimises ``sum_i 0.5 * ||z_i - D a_i||^2 + l1_penalty * ||a_i||_1`` over ``D`` and the codes
    ``a_i`` (the objective of SPAMS, which the paper used) by scikit-learn's online algorithm
    (Mairal et al. 2009) with LARS codes, which stops when its running cost stops improving. The
    full-batch ``DictionaryLearning`` would code every row at every iteration. A smaller
    ``l1_penalty`` takes longer: denser codes make each LARS solve take more steps.
    """
    learner = MiniBatchDictionaryLearning(n_atoms, alpha=l1_penalty, fit_algorithm="lars",
                                          max_iter=DICTIONARY_EPOCHS,
                                          random_state=int(rng.randint(2**31 - 1)))
    return learner.fit(Z).components_


def unit_norm(atoms: np.ndarray) -> np.ndarray:
    """Rows of ``atoms`` scaled to unit l2 norm; an all-zero row stays zero (it never fires)."""
    norms = np.linalg.norm(atoms, axis=1, keepdims=True)
    return atoms / np.where(norms > 0, norms, 1.0)
