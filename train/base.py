"""What every soft-threshold estimator shares: validation, labels, preprocessing, the start point,
torch set-up, the rescaling of rows float32 cannot train on as they are, and the conversion of
trained ``(U, v)`` into a ``runtime.Model``."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from lastedge.runtime import __version__
from lastedge.runtime import Model, Preprocess
from lastedge.runtime.model import FLOAT32_MAX, check_input, in_row_blocks

from . import distributed, preprocess_choice, problem
from .distributed import Shard
from .objective import atom_votes
from .params import (BOOLEAN, COMMON_CONSTRAINTS, DEVICE, POSITIVE_FLOAT32, STEP_SIZES, THREADS, Interval,
                     check_params, integers, python_scalar)


def validate_fit_data(estimator: BaseEstimator, X, y, min_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``X`` and class indices of ``y``; sets ``classes_`` and ``n_features_in_``.

    Raises ValueError on NaN, infinite or beyond-float32 inputs (which predict refuses) and on
    fewer than ``min_classes`` classes (one rank's shard of a distributed fit may hold one).
    """
    X, y = validate_data(estimator, X, y, dtype=[np.float64, np.float32], ensure_min_samples=2)
    check_input(X, X.shape[1])
    check_classification_targets(y)
    estimator.classes_, y_index = np.unique(y, return_inverse=True)
    if len(estimator.classes_) < min_classes:
        raise ValueError(f"y has a single class ({estimator.classes_[0].tolist()!r}); "
                         "a classifier needs at least 2 classes")
    return X, y_index


def validate_predict_data(estimator: BaseEstimator, X) -> np.ndarray:
    """Validated ``X`` for a fitted estimator's methods: ``n_features_in_`` wide and, as fit asks,
    finite in float32 (beyond, the codes of every backend are meaningless)."""
    X = validate_data(estimator, X, reset=False, dtype=[np.float64, np.float32])
    check_input(X, X.shape[1])
    return X


def recorded_params(estimator: BaseEstimator) -> dict:
    """``get_params()`` as a model's metadata records them: numbers, strings, booleans and None as
    themselves (numpy scalars, e.g. from a numpy parameter grid, as the Python value), the rest as
    their repr."""
    params = {}
    for name, value in estimator.get_params().items():
        value = python_scalar(value)
        params[name] = value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)
    return params


class ModelBackedClassifier:
    """Prediction through the fitted ``model_`` (a ``runtime.Model``), shared by every trainer.

    Predictions are exactly what the exported file and the device compute.
    """

    def to_model(self) -> Model:
        """The trained classifier as a ``lastedge.runtime.Model`` (save, export, run anywhere)."""
        check_is_fitted(self, "model_")
        return self.model_

    def _check_predict_input(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        return validate_predict_data(self, X)

    def decision_function(self, X) -> np.ndarray:
        """Scores with the exact soft threshold: [n] for binary (> 0 means ``classes_[1]``), else [n, C]."""
        X = self._check_predict_input(X)
        return self.model_.decision_function(X)

    def predict(self, X) -> np.ndarray:
        """Predicted labels."""
        scores = self.decision_function(X)  # checks fitted first: unfitted -> NotFittedError
        return self.model_.labels_from_scores(scores)

    def feature_sparsity(self, X) -> float:
        """Fraction of exactly-zero features on ``X`` (the paper reports 96.7 % on MNIST), counted
        block by block: MNIST's 60000 training rows x 4000 atoms would need 960 MB at once."""
        X, model = self._check_predict_input(X), self.model_
        zeros = in_row_blocks(lambda rows: np.count_nonzero(model.features(rows) == 0, axis=1), X,
                              model.row_width)
        return float(zeros.sum() / (len(X) * model.n_atoms))


class SoftThresholdBase(ModelBackedClassifier, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                        ClassifierMixin, BaseEstimator):
    """Base of the estimators: classifiers whose ``transform`` gives the soft-threshold features.

    Subclasses declare their parameters (``_parameter_constraints``: these and their own) and
    implement ``fit``. The features are new ones, one per atom, so ``get_feature_names_out`` names
    them after the class (``lastclassifier0, ...``), as scikit-learn's PCA does, for pipelines and
    ``ColumnTransformer``.
    """

    _parameter_constraints: dict[str, list] = {
        **COMMON_CONSTRAINTS,
        "mu": [Interval(0)],
        "nu": [Interval(0, open_low=True)],
        "beta": [POSITIVE_FLOAT32],
        "eps": [POSITIVE_FLOAT32],
        "step_sizes": [STEP_SIZES, None],
        "validation_fraction": [Interval(0, 1, open_low=True, open_high=True)],
        "device": [DEVICE],
        "n_jobs": [THREADS, None],
        "verbose": [integers(0), BOOLEAN],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]  # features are float32, like the Model
        return tags

    def _check_params(self) -> None:
        """Every parameter against ``_parameter_constraints``; then whether the device can train."""
        check_params(self)
        usable_device(self.device)

    def _validate_fit_data(self, X, y, min_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
        X, y_index = validate_fit_data(self, X, y, min_classes)
        if self.classes_.dtype == object:  # e.g. pandas strings: stored as text, never pickled
            self.classes_ = self.classes_.astype(str)
        return X, y_index

    @contextlib.contextmanager
    def _torch_session(self):
        """Thread count and denormal flushing for the duration of a fit, then restored.

        Softplus and sigmoid of very negative arguments produce denormal floats, which slow x86
        arithmetic 20-500x; flushing them to zero changes no result that matters (~1e-38).
        A GPU running out of memory raises torch's ``OutOfMemoryError``, a ``RuntimeError``; it is
        raised again as the ``MemoryError`` a CPU fit would give, saying what to change.
        """
        threads, flushing = torch.get_num_threads(), flushes_denormals()
        if self.n_jobs is not None:
            torch.set_num_threads(thread_count(self.n_jobs))
        torch.set_flush_denormal(True)
        try:
            yield usable_device(self.device)
        except torch.OutOfMemoryError as error:
            reason = str(error).splitlines()[0] if str(error) else "out of memory"
            raise MemoryError(f"device {self.device!r} ran out of memory ({reason.rstrip('. ')}); "
                              "try a smaller batch_size, fewer atoms or rows, or device='cpu'") from None
        finally:
            torch.set_num_threads(threads)
            torch.set_flush_denormal(flushing)

    def _prepare(self, X: np.ndarray, y_index: np.ndarray, rng: np.random.RandomState,
                 layout: tuple[np.ndarray, np.ndarray] | None = None, shard: Shard | None = None):
        """``(Z, row_scale, targets, groups, U0, v0)``: the training rows, preprocessed and divided
        by ``row_scale`` (:func:`training_scale`, 1 for rows float32 trains on as they are), heads,
        signs/groups (``layout``, by default :meth:`_layout`'s) and the start point on ``Z`` (numpy
        arrays).

        In a distributed fit ``X`` is this rank's ``shard`` of the rows and ``y_index`` and
        ``layout`` are over every rank's rows: statistics and start atoms come from all of them,
        and the targets returned are this rank's.
        """
        Z = self._preprocessed(X, shard=shard, y_index=y_index if shard is None else shard.columns(y_index))
        row_scale = training_scale(Z, self.eps, shard)
        Z = scaled_rows(Z, row_scale)
        targets, groups = self._layout(y_index) if layout is None else layout
        rows = Z if shard is None else distributed.ShardedRows(Z, shard)
        U0, v0 = problem.initial_atoms(rows, targets, groups, rng)
        if shard is not None:
            targets = shard.columns(targets)
        return Z, row_scale, targets, groups, U0, v0

    def _preprocessed(self, X: np.ndarray, fitted: Preprocess | None = None, shard: Shard | None = None,
                      y_index: np.ndarray | None = None) -> np.ndarray:
        """Fit ``preprocess_`` on ``X`` (on every rank's rows of a distributed fit's ``shard``), or
        take an already ``fitted`` one, and return the training rows ``Z`` (float32).
        ``preprocess="auto"`` chooses the kind from ``X`` and its class indices ``y_index``
        (:mod:`.preprocess_choice`; every rank the same, from the vote counts of all ranks).

        ``Z`` is writable: "none" passes float32 rows through, and torch warns of undefined
        behaviour on read-only memory (a memory map, joblib's copies for ``n_jobs`` searches).
        """
        kind = self.preprocess if fitted is not None else preprocess_choice.resolve(self.preprocess, X, y_index, shard)
        if fitted is None and shard is not None and kind == "standardize":
            fitted = Preprocess.standardizing(*distributed.column_moments(X, shard), shard.total)
        self.preprocess_ = Preprocess.fit(kind, X) if fitted is None else fitted
        return np.require(self.preprocess_.apply(X), requirements="W")

    def _layout(self, y_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One-vs-all heads (one head for two classes): ``targets`` [H, m], ``groups`` [H, N, 2].

        Each head's share of atoms with a positive weight is its positive-class frequency (1/10 for
        ten balanced classes, as the paper's digits).
        """
        targets = problem.binary_heads(y_index, len(self.classes_))
        signs = np.stack([problem.atom_signs(self.n_atoms, f) for f in targets.mean(axis=1)])
        return targets, problem.sign_groups(signs)

    def _store_solution(self, U: np.ndarray, v: np.ndarray, groups: np.ndarray, fit_seconds: float,
                        row_scale: float = 1.0) -> None:
        """Keep the learned ``D = U / v`` and output weights; build the Model.

        ``(U, v)`` were trained on rows divided by ``row_scale`` (see :meth:`_prepare`): the model
        keeps the atoms of the rows as given, ``U / row_scale`` (:func:`atoms_of_rows_as_given`).

        Two groups (a binary head): ``w = s * v``, the score is positive-group minus negative-group.
        More groups (one shared dictionary): atom j adds ``v_j`` to the score of the class it votes
        for, or ``-v_j`` to the class it votes against (the class scores ``s`` of
        :func:`objective.atom_votes`: the group scores trained on, less one constant per sample).
        """
        if row_scale != 1.0:
            U = atoms_of_rows_as_given(U, v, row_scale, self.eps)
        n_heads, n_features, n_atoms = U.shape
        D = U / v[:, None, :]
        self.dictionary_ = np.concatenate(list(D), axis=1).astype(np.float32)
        if groups.shape[-1] > 2:
            self.coef_ = (atom_votes(groups[0]) * v[0][:, None]).astype(np.float32)  # [N, C]
        else:
            signed_v = (groups[..., 1] - groups[..., 0]) * v  # [H, N]
            self.coef_ = np.zeros((n_heads * n_atoms, n_heads), dtype=np.float32)
            for h in range(n_heads):
                self.coef_[h * n_atoms:(h + 1) * n_atoms, h] = signed_v[h]
        self._n_features_out = self.dictionary_.shape[1]  # transform's width, for get_feature_names_out
        self.fit_time_ = fit_seconds
        self.model_ = Model(self.dictionary_, self.coef_, self.classes_, 1.0, self.preprocess_,
                            self._model_meta())

    def _model_meta(self) -> dict:
        return {"trainer": type(self).__name__, "params": recorded_params(self),
                "lastedge_version": __version__, "n_features": int(self.n_features_in_),
                "fit_seconds": round(self.fit_time_, 3)}

    def transform(self, X) -> np.ndarray:
        """The sparse soft-threshold features ``max(0, D^T z - 1)``, [n, total atoms]."""
        X = self._check_predict_input(X)
        return self.model_.features(X)


# Rows' scales r trained on as they are: r**2 and 1 / r**2 stay a million-fold inside float32's
# normal range (see ``training_scale``).
TRAINABLE_SCALES = (1e-16, 1e16)


def training_scale(Z: np.ndarray, eps: float, shard: Shard | None = None) -> float:
    """What ``fit`` divides the rows by: 1, or their scale ``r`` (:func:`root_mean_square_norm`)
    when float32 cannot train on them as they are.

    The start responses grow like ``r**2`` (and SGD's step on ``U`` like ``1 / r**2``); beyond
    ``TRAINABLE_SCALES`` one of them leaves float32 (raw rows near 1e38 or 1e-38 with
    ``preprocess="none"``: the responses overflow or underflow, or the step cannot be held), so
    the estimators train on ``Z / r`` instead (:meth:`SoftThresholdBase._prepare`), with the weight
    decay ``mu / r**2`` (:func:`rescaled_mu`), and keep the atoms divided by ``r``
    (:meth:`SoftThresholdBase._store_solution`). Responses ``Z U - v`` and the objective of (P)
    are unchanged, so the objectives recorded in ``history_`` are those of the rows as given, and
    a solver whose steps follow the scale (SGD's, Adam's) takes the same descent in exact
    arithmetic; rows inside the range keep their results bit for bit. A ValueError, before any
    training, when the rows are so short that atoms whose threshold falls to ``eps`` would overflow
    float32 (otherwise :func:`atoms_of_rows_as_given` checks the trained atoms). In a distributed
    fit, ``r`` is that of every rank's rows (``shard``).
    """
    r = root_mean_square_norm(Z, shard)
    if TRAINABLE_SCALES[0] <= r <= TRAINABLE_SCALES[1]:
        return 1.0
    if r * eps * FLOAT32_MAX < 1:
        raise _atoms_beyond_float32(r, eps)
    return r


def scaled_rows(Z: np.ndarray, row_scale: float) -> np.ndarray:
    """``Z / row_scale`` (float32, divided in float64: ``1 / row_scale`` may be beyond float32),
    or ``Z`` itself for a scale of 1."""
    return Z if row_scale == 1.0 else (Z.astype(np.float64) / row_scale).astype(np.float32)


def training_mu(mu: float | str, Z: np.ndarray, row_scale: float, shard: Shard | None, factor: float) -> float:
    """The weight decay on the training rows ``Z`` (the rows as given divided by ``row_scale``):
    ``mu="auto"`` is ``factor`` times their mean squared norm (the same classifier for rows of any
    scale; over every rank's rows in a distributed fit), a number is :func:`rescaled_mu`'s."""
    if isinstance(mu, str) and mu == "auto":
        return factor * root_mean_square_norm(Z, shard) ** 2
    return rescaled_mu(mu, row_scale)


def rescaled_mu(mu: float, row_scale: float) -> float:
    """The weight decay on the atoms of rows divided by ``row_scale``: ``mu / row_scale**2``, or a
    ValueError when float32 cannot hold it (tiny rows need huge atoms, whose decay overflows)."""
    scaled = float(mu) / row_scale**2
    if scaled > FLOAT32_MAX:
        raise ValueError(f"mu={mu!r} cannot train on rows of scale {row_scale:.3g}: the weight decay "
                         f"(mu/2)||U||^2 of their atoms (of scale {1 / row_scale:.3g}) overflows "
                         "float32; use mu=0, rescale X or a preprocess other than 'none'")
    return scaled


def atoms_of_rows_as_given(U: np.ndarray, v: np.ndarray, row_scale: float, eps: float) -> np.ndarray:
    """``U / row_scale`` in float64 (the atoms of the rows before :func:`training_scale`), or a
    ValueError when the model's atoms ``D = U / v`` would overflow float32."""
    U = U.astype(np.float64) / row_scale
    if not np.all(np.abs(U / v[:, None, :]) <= FLOAT32_MAX):
        raise _atoms_beyond_float32(row_scale, eps)
    return U


def _atoms_beyond_float32(row_scale: float, eps: float) -> ValueError:
    return ValueError(f"rows of scale {row_scale:.3g} need atoms beyond float32's range: atoms scale like "
                      f"1 / (v r), and the thresholds v go down to eps={eps:g}; rescale X, use a "
                      "preprocess other than 'none' or a larger eps")


def root_mean_square_norm(Z: np.ndarray, shard: Shard | None = None) -> float:
    """``r``, the root of the rows' mean squared l2 norm (1 for unit-norm rows, and if zero); in a
    distributed fit, of every rank's rows (``shard``: ``Z`` holds this rank's)."""
    r_squared = distributed.mean(np.einsum("ij,ij->i", Z, Z, dtype=np.float64), shard)
    return float(np.sqrt(r_squared)) if r_squared > 0 else 1.0


def thread_count(n_jobs: int) -> int:
    """Torch threads for ``n_jobs`` counted as scikit-learn does: -1 all cores, -2 all but one, ..."""
    if n_jobs > 0:
        return n_jobs
    return max(1, (os.cpu_count() or 1) + 1 + n_jobs)


def flushes_denormals() -> bool:
    """Whether torch flushes denormal floats to zero now (torch has no getter for the setting)."""
    tiny = torch.tensor([1e-20], dtype=torch.float32)
    return bool((tiny * tiny).item() == 0.0)  # 1e-40 is a float32 denormal


# Device types that hold real data and run torch's training operations ("meta" tensors have no
# data, and the rest need plug-ins that lastedge is not tested with).
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu")


def available_accelerator() -> str:
    """What ``device="auto"`` trains on: "cuda" when torch sees a CUDA (or ROCm) GPU, "mps" on an
    Apple GPU, else "cpu"."""
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def usable_device(name: str | torch.device) -> torch.device:
    """``name`` as a torch device, or a ``ValueError`` saying why it cannot be used on this machine.

    "auto" is :func:`available_accelerator`. Checked before training starts by computing on the
    device: a CPU-only torch build asked for "cuda" would otherwise fail with an ``AssertionError``
    from inside torch.
    """
    if isinstance(name, str) and name == "auto":
        name = available_accelerator()
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', got {name!r}") from None
    if device.type not in DEVICE_TYPES:
        raise ValueError(f"device {name!r} cannot train: lastedge trains on "
                         f"{', '.join(DEVICE_TYPES[:-1])} or {DEVICE_TYPES[-1]} devices")
    try:
        torch.ones(2, device=device).sum().cpu()
    except (AssertionError, RuntimeError, ImportError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"device {name!r} is not usable with this torch build and machine ({reason}); "
                         f"use device='cpu'") from None
    return device
