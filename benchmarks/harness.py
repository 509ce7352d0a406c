"""What the accuracy benchmarks share: the methods, one timed run, the table and the JSON file.

Used by ``digits.py`` and ``reproduce.py``. Every method is built from the same few facts (atoms per
head, number of heads, preprocessing, seed, budget), fitted once with its training time measured,
and scored on the test set.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sklearn
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.svm import SVC, LinearSVC
from threadpoolctl import threadpool_limits

from arguments import atom_counts, output_file, seed
from grid_search import CV_FOLDS, WidenedGridSearch
from lastedge.runtime import Preprocess
from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train.base import root_mean_square_norm
from lastedge.train.baselines import SoftThresholdEncoderSVM
from lastedge.train.centroids import KMeansCentroidClassifier
from lastedge.train.selection import choose_mu, holdout_split
from lastedge.train.sgd import DEFAULT_STEPS
from lastedge.train.sparse_coding import SparseCodingSVM

# The paper runs SGD for 250000 minibatch iterations (plus 4 step-size trials of 1/5 the budget
# each); at ~2 ms an iteration on this 2-core machine that was ~15 minutes a fit, so we use 20000
# (the closed-form steps since 2026-12-05 take 0.12-0.3 ms: benchmarks/sgd_step.py).
SGD_ITER = 20_000
PREDICT_REPEATS = 5
# Fits show their progress bar (stderr) on a terminal, where a run of an hour would otherwise be
# silent between rows, and not in a log file, where the bar's redraws would be noise.
PROGRESS = int(sys.stderr.isatty())


@dataclass(frozen=True)
class Budget:
    """Training budgets: the library defaults (and ``SGD_ITER``), or tiny ones for ``--quick``."""

    quick: bool = False

    @property
    def last(self) -> dict[str, int]:
        return {"max_dca_iter": 2, "inner_iter": 100} if self.quick else {}

    @property
    def sgd_iter(self) -> int:
        return 500 if self.quick else SGD_ITER


@dataclass(frozen=True)
class Setting:
    """What a method is built from: atoms per head, heads, preprocessing, seed and budget.

    ``options`` adds keyword arguments per method key (e.g. ``{"last": {"batch_size": 1000}}``) and
    ``cv_rows`` caps the rows a cross-validated search sees (the best setting is then refitted on
    all rows), which keeps kernel methods affordable on MNIST-size sets.
    """

    n_atoms: int
    n_heads: int
    preprocess: str
    seed: int
    budget: Budget
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cv_rows: int | None = None

    def kwargs(self, key: str) -> dict[str, Any]:
        return dict(self.options.get(key, {}))


@dataclass(frozen=True)
class Method:
    label: str
    build: Callable[[Setting], Any]
    uses_atoms: bool = True


# Weight decay on the atoms, (mu/2)||U||^2, for the "last-mu" method (mu = 0 is the paper's objective).
MU_GRID = (0.0, 0.1, 1.0, 10.0)


class ValidatedMu:
    """LAST with its weight decay ``mu`` chosen on held-out training rows, never on the test set.

    With ``early_stopping=True`` each candidate is fitted once on all training rows; its own
    validation split (the same rows for every candidate: same ``random_state``) scores its best
    iterate and the best candidate is kept as fitted: no refit, one fit per candidate. Without
    early stopping (small data) the choice is a ``CV_FOLDS``-fold cross-validation, or with
    ``holdout`` one stratified split of that fraction (when a fit is too slow to repeat per fold),
    and the best ``mu`` is refitted on all rows.
    """

    def __init__(self, estimator: LASTClassifier, grid: tuple[float, ...] = MU_GRID,
                 holdout: float | None = None):
        self.estimator, self.grid, self.holdout = estimator, grid, holdout

    def _splits(self) -> Any:
        if self.holdout is None:
            return CV_FOLDS
        return holdout_split(self.holdout, self.estimator.random_state)

    def fit(self, X: np.ndarray, y: np.ndarray, monitor_factory: Callable[[], Any] | None = None) -> ValidatedMu:
        self.scores_: dict[float, float] = {}
        self.monitor_ = None
        if not self.estimator.early_stopping:
            best_mu, self.scores_ = choose_mu(self.estimator, self.grid, X, y, self._splits())
            self.best_estimator_ = sklearn.clone(self.estimator).set_params(mu=best_mu).fit(X, y)
        else:
            for mu in self.grid:
                monitor = monitor_factory() if monitor_factory is not None else None
                fitted = sklearn.clone(self.estimator).set_params(mu=mu).fit(X, y, monitor=monitor)
                if not self.scores_ or fitted.best_validation_score_ > max(self.scores_.values()):
                    self.best_estimator_, self.monitor_ = fitted, monitor  # ties keep the smaller mu
                self.scores_[mu] = fitted.best_validation_score_
                print(f"    mu={mu:g}: validation accuracy {100 * self.scores_[mu]:.2f} %",
                      file=sys.stderr, flush=True)
        self.mu_ = self.best_estimator_.mu
        return self

    def __getattr__(self, name: str):
        # predict, transform, history_, to_model, ...: the chosen fit's
        if name == "best_estimator_":
            raise AttributeError(name)
        return getattr(self.best_estimator_, name)

    def notes(self) -> str:
        how = ("validation" if self.estimator.early_stopping else f"{CV_FOLDS}-fold CV" if self.holdout is None
               else f"{self.holdout:.0%} hold-out")
        scores = ", ".join(f"{mu:g}: {100 * score:.2f}" for mu, score in self.scores_.items())
        return f"mu={self.mu_:g} ({how} accuracy % {scores}); {_notes(self.best_estimator_)}"


class UnitMeanNorm(TransformerMixin, BaseEstimator):
    """Scales all rows by one number, fitted so that the training rows' mean squared l2 norm is 1.

    It puts the SVMs' C and gamma grids on the data's scale: the identity on unit-norm rows (MNIST,
    USPS, textures), while raw 0-255 pixels (deer vs horse, row norms ~7000) land inside the same
    grids instead of many decades below them, where liblinear also converges slowly.
    """

    def fit(self, X: np.ndarray, y: np.ndarray | None = None) -> UnitMeanNorm:
        self.scale_ = 1.0 / root_mean_square_norm(X)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return X * np.asarray(self.scale_, dtype=X.dtype)


def _svm_pipeline(setting: Setting, svm) -> Any:
    return make_pipeline(FunctionTransformer(Preprocess(setting.preprocess).apply), UnitMeanNorm(), svm)


def _search(s: Setting, estimator, grid: dict[str, list[float]], max_widenings: int = 3) -> WidenedGridSearch:
    widenings = 0 if s.budget.quick else max_widenings
    return WidenedGridSearch(estimator, grid, widenings, cv_rows=s.cv_rows, seed=s.seed)


def _linear_svm(s: Setting) -> WidenedGridSearch:
    svm = LinearSVC(max_iter=10_000, random_state=s.seed)
    return _search(s, _svm_pipeline(s, svm), {"linearsvc__C": [0.01, 0.1, 1, 10, 100]})


def _rbf_svm(s: Setting) -> WidenedGridSearch:
    grid = {"svc__C": [0.1, 1, 10, 100, 1000], "svc__gamma": [0.1, 1, 10, 100, 1000]}
    return _search(s, _svm_pipeline(s, SVC(kernel="rbf", cache_size=1000)), grid)


def _knn(s: Setting) -> WidenedGridSearch:
    knn = KNeighborsClassifier()
    return _search(s, _svm_pipeline(s, knn), {"kneighborsclassifier__n_neighbors": [1, 3, 5, 9]}, 0)


def _last(solver: str) -> Callable[[Setting], LASTClassifier]:
    def build(s: Setting) -> LASTClassifier:
        params = {"inner_solver": solver, "random_state": s.seed, "verbose": PROGRESS, **s.budget.last,
                  **s.kwargs("last")}
        return LASTClassifier(s.n_atoms, preprocess=s.preprocess, **params)
    return build


def _sgd(optimizer: str) -> Callable[[Setting], SGDSoftThresholdClassifier]:
    def build(s: Setting) -> SGDSoftThresholdClassifier:
        params = {"max_iter": s.budget.sgd_iter, "random_state": s.seed, "verbose": PROGRESS,
                  **s.kwargs("sgd")}
        return SGDSoftThresholdClassifier(s.n_atoms, preprocess=s.preprocess, optimizer=optimizer, **params)
    return build


def _encoder_svm(dictionary: str) -> Callable[[Setting], SoftThresholdEncoderSVM]:
    # One dictionary shared by all classes, as large as LAST's n_atoms per head x heads.
    return lambda s: SoftThresholdEncoderSVM(s.n_atoms * s.n_heads, dictionary=dictionary, alpha=None,
                                             C=None, preprocess=s.preprocess, random_state=s.seed,
                                             **s.kwargs(f"{dictionary}-svm"))


def _sparse_coding(s: Setting) -> SparseCodingSVM:
    return SparseCodingSVM(s.n_atoms, C=None, preprocess=s.preprocess, random_state=s.seed,
                           **s.kwargs("sparse-coding"))


def _centroid_nn(s: Setting) -> KMeansCentroidClassifier:
    return KMeansCentroidClassifier(s.n_atoms, preprocess=s.preprocess, random_state=s.seed)


METHODS: dict[str, Method] = {
    "last": Method("LAST", _last("auto")),
    "last-lbfgs": Method("LAST (L-BFGS inner solver)", _last("lbfgs")),
    "last-adam": Method("LAST (Adam inner solver)", _last("adam")),
    "last-subgradient": Method("LAST (subgradient, paper)", _last("subgradient")),
    "last-mu": Method("LAST, weight decay mu by validation",
                      lambda s: ValidatedMu(_last("auto")(s), **s.kwargs("last-mu"))),
    "sgd": Method("SGD", _sgd("sgd")),
    "sgd-adam": Method("SGD (Adam)", _sgd("adam")),
    "random-svm": Method("random samples + soft threshold + linear SVM", _encoder_svm("random")),
    "kmeans-svm": Method("k-means + soft threshold + linear SVM", _encoder_svm("kmeans")),
    "l1-svm": Method("l1 dictionary + soft threshold + linear SVM", _encoder_svm("l1")),
    "sparse-coding": Method("l1 sparse coding + linear SVM", _sparse_coding),
    "centroid-nn": Method("nearest k-means centroid", _centroid_nn),
    "linear-svm": Method("linear SVM", _linear_svm, uses_atoms=False),
    "rbf-svm": Method("RBF SVM", _rbf_svm, uses_atoms=False),
    "knn": Method("k-NN", _knn, uses_atoms=False),
}


def run_method(key: str, setting: Setting, data: tuple[np.ndarray, ...], task: str,
               fit_params: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any]:
    """Fit one method once (timed), then score it; returns one result row and the fitted model."""
    X_train, y_train, X_test, y_test = data
    model = METHODS[key].build(setting)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(X_train, y_train, **(fit_params or {}))
        train_s = time.perf_counter() - start
    predictions, predict_s = _timed_predict(model, X_test)
    uses_atoms = METHODS[key].uses_atoms
    sparsity = getattr(model, "feature_sparsity", None) if uses_atoms else None
    row = {
        "task": task, "method": key, "label": METHODS[key].label,
        "n_atoms": setting.n_atoms if uses_atoms else None,
        "error_pct": 100.0 * float(np.mean(predictions != y_test)),
        "train_s": train_s, "predict_ms": 1000.0 * predict_s,
        "zeros_pct": 100.0 * sparsity(X_test) if sparsity is not None else None,
        "notes": _notes(model),
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }
    return row, model


def _timed_predict(model, X: np.ndarray) -> tuple[np.ndarray, float]:
    """Predictions and the best time of ``PREDICT_REPEATS`` calls on the whole set, one BLAS thread.

    On a shared 2-core machine a multi-threaded BLAS call waits for a time slice (the median of a
    0.5 ms product measured 12 ms); one thread and the best of several calls measure the method.
    """
    times = []
    with threadpool_limits(limits=1):
        for _ in range(PREDICT_REPEATS):
            start = time.perf_counter()
            predictions = model.predict(X)
            times.append(time.perf_counter() - start)
    return predictions, min(times)


def _notes(model) -> str:
    """The fitted choices worth a glance: DCA iterations, the SGD step, alpha and C, SVM grid."""
    if isinstance(model, WidenedGridSearch | ValidatedMu):
        return model.notes()
    if isinstance(model, LASTClassifier):
        return f"{model.n_iter_} DCA it, {int(model.converged_.sum())}/{model.converged_.size} converged"
    if isinstance(model, SGDSoftThresholdClassifier):
        return f"step={model.step_:g}, {model.n_iter_} it"
    if isinstance(model, SoftThresholdEncoderSVM):
        return f"alpha={model.alpha_:.4g}, C={model.C_:g}, {model.n_atoms} atoms"
    if isinstance(model, SparseCodingSVM):
        return f"lambda={model.l1_penalty:g}, C={model.C_:g}"
    return ""


def run_all(methods: list[str], n_atoms: list[int], data: tuple[np.ndarray, ...], task: str,
            preprocess: str, seed: int, budget: Budget) -> list[dict[str, Any]]:
    """Every method (atom-free ones once) on one task, printing progress to stderr."""
    n_classes = len(np.unique(data[1]))
    n_heads = 1 if n_classes == 2 else n_classes
    rows = []
    for key in methods:
        for n in (n_atoms if METHODS[key].uses_atoms else n_atoms[:1]):
            row, _ = run_method(key, Setting(n, n_heads, preprocess, seed, budget), data, task)
            print(f"  {task}: {key} N={n if METHODS[key].uses_atoms else '-'}: "
                  f"{row['error_pct']:.1f} % error, {row['train_s']:.1f} s", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


# ------------------------------------------------------------------ output
def notes(budget: Budget) -> str:
    """The caption every table needs: budgets, what the times include, how they were taken."""
    trials = f"{len(DEFAULT_STEPS['sgd'])} step-size trials, {len(DEFAULT_STEPS['adam'])} with Adam"
    return (f"Notes: SGD runs {budget.sgd_iter} iterations (paper: 250000). Train time is one fit "
            f"and includes the method's own model selection (SGD: {trials}; SVMs, k-NN, the soft-threshold "
            f"encoders and sparse coding: {CV_FOLDS}-fold CV). Predict: best of {PREDICT_REPEATS} calls on "
            "the whole test set, one BLAS thread. The linear SVM fits an intercept; the k-means encoder's "
            "SVM fits none, like LAST (the model has no bias).")


# --------------------------------------------------------------------- CLI
def parser(description: str) -> argparse.ArgumentParser:
    """The options both benchmarks take."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--n-atoms", type=atom_counts, default=None,
                   help="atoms per head, comma separated (default 10,50,100; --quick: 10)")
    p.add_argument("--methods", type=_method_list, default=list(METHODS),
                   help=f"comma separated subset of {','.join(METHODS)} (default all)")
    p.add_argument("--quick", action="store_true",
                   help="tiny budgets to check the script runs (LAST: 2 DCA x 100 inner "
                        "iterations; SGD: 500)")
    p.add_argument("--seed", type=seed, default=0, help="random_state of every model (default 0)")
    p.add_argument("--json", type=output_file, default=None, metavar="PATH", help="also write the results here")
    return p


def atoms_per_head(multiclass: str, total_atoms: int, n_classes: int) -> int:
    """``LASTClassifier``'s ``n_atoms`` for ``total_atoms`` in all: the shared model's one
    dictionary holds them all, one-vs-all splits them among its heads (at least one each)."""
    return total_atoms if multiclass == "shared" else max(1, total_atoms // n_classes)


def n_atoms_list(args: argparse.Namespace) -> list[int]:
    return args.n_atoms or ([10] if args.quick else [10, 50, 100])


def _method_list(text: str) -> list[str]:
    keys = [part.strip() for part in text.split(",")]
    for key in keys:
        if key not in METHODS:
            close = difflib.get_close_matches(key, METHODS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; choose from {','.join(METHODS)}"
            raise argparse.ArgumentTypeError(f"unknown method {key!r}{hint}")
    return keys
