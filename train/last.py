"""``LASTClassifier``: the paper's learning algorithm as a scikit-learn estimator."""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_random_state

from lastedge.runtime.model import check_image_shape

from . import distributed, mu_choice, problem
from .augment import shifted_copies
from .base import SoftThresholdBase, root_mean_square_norm, training_mu
from .distributed import Shard
from .dca import DCAResult, DCASettings, run_dca
from .params import BOOLEAN, IMAGE_SHAPE, Interval, Options, integers
from .progress import progress_bar
from .settings import INNER_SOLVERS, FitSettings, resolve, shares_dictionary
from .lbfgs import lbfgs_atom_unit
from .solvers import Solver, make_inner_solver, subgradient_atom_scale
from .subproblem import Data
from .tracking import IterationTracker, Monitor
from .warm_start import WarmStart, warm_start_from


class LASTClassifier(SoftThresholdBase):
    """Soft-threshold classifier ``score(x) = w^T max(0, D^T x - 1)`` learned by DCA (LAST).

    Binary problems train one ``(D, w)``. With C > 2 classes, ``multiclass="ovr"`` trains C
    one-vs-all heads together as one batched tensor problem; ``multiclass="shared"`` trains one
    dictionary for every class. The expert controls are listed under "Other Parameters".

    Parameters
    ----------
    n_atoms : int, default=100
        Atoms N per one-vs-all head (binary: the model's atoms); with ``multiclass="shared"``,
        the atoms of the one dictionary.
    multiclass : {"ovr", "shared"}, default="ovr"
        With more than two classes: "ovr" trains one dictionary per class (the paper); "shared"
        one for all, about C times cheaper on the device: each atom votes for one class (on
        minibatches, half of each class's atoms vote against it, with one-vs-all's hinges added).
    preprocess : {"auto", "none", "l2", "center-l2", "standardize"}, default="auto"
        Applied to every input before training and prediction, and recorded in the model
        (``preprocess_``). "auto": "l2" (the paper's unit norm), or "standardize" where a
        nearest-neighbour vote on a hold-out of the training rows is clearly better with it
        (tabular data whose row norm or column scales matter); see docs/generalisation.md.
    mu : float or "auto", default="auto"
        Weight decay ``(mu/2)||U||^2`` on the atoms ``u_j = |w_j| d_j``; "auto": 0.1 or 0.3 times the
        preprocessed rows' mean squared norm, whichever scores better on 20 % of the rows held out
        where fits are cheap (full-batch binary or one-vs-all heads, 200+ rows; :mod:`.mu_choice`),
        else 0.1. ``lastedge train --mu 0,1,10`` chooses among given values on a hold-out.
    mu_factor : float or None, default=None
        With ``mu="auto"``: the weight decay per unit of the preprocessed rows' mean squared norm,
        fixed (no hold-out); None chooses it as ``mu`` says. The unit ``LASTClassifierCV`` and
        ``lastedge train --auto`` search in. Refused with a numeric ``mu``.
    nu : float, default=1.0
        Weight of ``(nu/2)||w||^2`` against the hinge losses summed over samples.
    max_dca_iter : int, default=50
        DCA iterations K at most.
    tol : float or None, default=None
        Full batch: a head stops when no entry of ``[U; v^T]`` moved by more than ``tol`` (the
        paper's rule); minibatches: when its objective per row fell by at most ``tol`` for
        ``n_iter_no_change`` DCA iterations. None: 1e-3 in full batch, 1e-4 on minibatches.
    n_iter_no_change : int, default=3
        DCA iterations without progress (see ``tol``), or with ``early_stopping`` without a
        better hold-out score, before training stops.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training rows (stratified), stop when their
        accuracy stops improving, and keep the best iterate.
    validation_fraction : float, default=0.1
        Share of the training rows held out when ``early_stopping``.
    batch_size : int, "full" or None, default=None
        Rows per minibatch of the sub-problem solves, or "full". None: full batch below 5000
        rows, else minibatches of 500.
    warm_start : bool, default=False
        Continue from where the previous fit ended (its atoms, preprocessing and solver state);
        the classes, features, ``n_atoms`` and ``multiclass`` must be the same.
    device : str, default="cpu"
        Torch device, e.g. "cuda", or "auto": a GPU when torch sees one, else the CPU. A GPU fit
        is not bit-identical to a CPU fit.
    n_jobs : int or None, default=1
        Torch threads during fit; -1 uses all cores, -2 all but one. None keeps torch's setting.
    random_state : int, RandomState or None, default=None
        Seeds the start point, the hold-out and the minibatch order.
    verbose : int, default=1
        0 silent; 1 a progress bar over DCA iterations.

    Other Parameters
    ----------------
    beta : float, default=100.0
        Softplus smoothing of ``max(0, .)`` during training; prediction uses the exact ``max``.
    eps : float, default=1e-4
        Lower bound on the thresholds ``v = |w|``.
    inner_solver : {"auto", "adam", "lbfgs", "subgradient"}, default="auto"
        Solver of each DCA sub-problem: "subgradient" is the paper's, "lbfgs" needs full batch.
        "auto": Adam, except L-BFGS for binary and one-vs-all heads in full batch with a weight
        decay (``mu`` > 0 or "auto").
    inner_iter : int or None, default=None
        Iterations per sub-problem solve. None: 300 for Adam (100 for a shared dictionary in
        full batch) and L-BFGS; the paper's 1000 (full batch) or 5000 for subgradient descent.
    step_sizes : tuple of float or None, default=None
        Candidate base steps, each tried on the first iterations of a solve; None: the solver's
        grid. The grid grows by 10x where the best candidate is at its edge.
    image_shape : tuple of int or None, default=None
        Each row as an image, (H, W) or (H, W, 3) channels last: needed by ``shift_augment``,
        and recorded in the model (``lastedge inspect --atoms`` draws the atoms so).
    shift_augment : int, default=0
        Also train on copies of every training image moved 1..``shift_augment`` pixels up, down,
        left and right (not the early-stopping hold-out); the model keeps its size.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted.
    n_features_in_ : int
        Features of the training rows.
    dictionary_ : ndarray of shape (n_features, total atoms)
        The atoms ``D`` of every head side by side (one-vs-all: ``n_classes * n_atoms``).
    coef_ : ndarray of shape (total atoms, n_outputs)
        The output weights ``w`` (binary: one column).
    history_ : list of dict
        One record per DCA iteration: "objective" of (P), "step", "extrapolation", "change" and
        "time"; with one-vs-all heads, one such list per head.
    mu_ : float
        The weight decay used, on the rows as given ("auto" resolved).
    mu_factor_ : float or None
        With ``mu="auto"``: the weight decay used per unit of the rows' mean squared norm (given,
        chosen or the first candidate); None with a numeric ``mu``.
    mu_choice_ : dict or None
        With ``mu="auto"`` chosen on a hold-out: each candidate (per unit of the rows' mean
        squared norm) and its held-out accuracy; else None.
    n_iter_ : int
        DCA iterations run (the most of any head).
    converged_ : ndarray of bool
        Per head, whether it met ``tol``.
    fit_time_ : float
        Seconds the fit took.
    validation_scores_ : list of float or None
        Hold-out accuracy after every DCA iteration with ``early_stopping``, else None.
    best_validation_score_ : float or None
        The best of them.
    model_ : lastedge.runtime.Model
        The trained classifier, as :meth:`to_model` returns it.
    """

    _parameter_constraints: dict[str, list] = {
        **SoftThresholdBase._parameter_constraints,
        "mu": [Interval(0), Options(("auto",))],
        "mu_factor": [Interval(0), None],
        "multiclass": [Options(("ovr", "shared"))],
        "max_dca_iter": [integers(1)],
        "tol": [Interval(0), None],
        "n_iter_no_change": [integers(1)],
        "early_stopping": [BOOLEAN],
        "batch_size": [integers(1), Options(("full",)), None],
        "warm_start": [BOOLEAN],
        "inner_solver": [Options(INNER_SOLVERS)],
        "inner_iter": [integers(1), None],
        "image_shape": [IMAGE_SHAPE, None],
        "shift_augment": [integers(0)],
    }

    def __init__(self, n_atoms: int = 100, *, multiclass: str = "ovr", preprocess: str = "auto",
                 mu: float | str = "auto", mu_factor: float | None = None, nu: float = 1.0,
                 max_dca_iter: int = 50, tol: float | None = None, n_iter_no_change: int = 3,
                 early_stopping: bool = False, validation_fraction: float = 0.1,
                 batch_size: int | str | None = None, warm_start: bool = False, device: str = "cpu",
                 n_jobs: int | None = 1, random_state=None, verbose: int = 1, beta: float = 100.0,
                 eps: float = 1e-4, inner_solver: str = "auto", inner_iter: int | None = None,
                 step_sizes: tuple[float, ...] | None = None, image_shape: tuple[int, ...] | None = None,
                 shift_augment: int = 0):
        self.n_atoms = n_atoms
        self.multiclass = multiclass
        self.preprocess = preprocess
        self.mu = mu
        self.mu_factor = mu_factor
        self.nu = nu
        self.max_dca_iter = max_dca_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.batch_size = batch_size
        self.warm_start = warm_start
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.beta = beta
        self.eps = eps
        self.inner_solver = inner_solver
        self.inner_iter = inner_iter
        self.step_sizes = step_sizes
        self.image_shape = image_shape
        self.shift_augment = shift_augment

    def _check_params(self) -> None:
        super()._check_params()
        if self.shift_augment and self.image_shape is None:
            raise ValueError("shift_augment needs image_shape, the (H, W) or (H, W, 3) of each row")
        if self.mu_factor is not None and not (isinstance(self.mu, str) and self.mu == "auto"):
            raise ValueError(f"mu_factor applies to mu='auto' only (a weight decay per unit of the rows' "
                             f"mean squared norm); mu={self.mu!r} is a weight decay of its own")

    def _layout(self, y_index: np.ndarray, atoms_against: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``SoftThresholdBase._layout``'s heads, or one shared head in which ``atoms_against`` of
        each class's atoms vote against it."""
        if shares_dictionary(self.multiclass, len(self.classes_)):
            return problem.shared_layout(y_index, len(self.classes_), self.n_atoms, atoms_against)
        return super()._layout(y_index)

    def fit(self, X, y, monitor: Monitor | None = None) -> LASTClassifier:
        """Learn the dictionary and weights by DCA. ``y`` may hold any labels (numbers, strings).

        ``monitor(k, estimator)``, if given, is called after every DCA iteration ``k`` with the
        estimator holding the current iterate (``predict`` works); returning True stops training
        there, as in scikit-learn's gradient boosting. It serves learning curves and time budgets.
        ``mu="auto"`` first chooses the weight decay on held-out rows where the fit is cheap
        (:mod:`.mu_choice`).
        """
        return self._fit(X, y, monitor)

    def _fit(self, X, y, monitor: Monitor | None = None) -> LASTClassifier:
        """``fit`` (also of :mod:`.mu_choice`'s candidates, whose fits ``lastedge train`` does not
        count as its own)."""
        self._check_params()
        start = time.perf_counter()
        X, y_index, warm = self._fit_data(X, y)
        rng = check_random_state(self.random_state)
        with distributed.raised_on_any_rank():
            X, y_index, X_val, y_val = self._validation_split(X, y_index, rng)
        X_rows, y_rows = X, y_index  # before augmentation: what a weight decay choice holds out from
        if self.shift_augment:
            X, y_index = shifted_copies(X, y_index, self.image_shape, int(self.shift_augment))
        shard = distributed.shard_of(len(X))
        settings = resolve(self, len(X) if shard is None else shard.total, len(self.classes_))
        if warm is None:
            y_all = y_index if shard is None else distributed.all_gather_rows(y_index)
            prepared = self._prepare(X, y_all, rng, self._layout(y_all, settings.atoms_against), shard)
        else:
            prepared = warm.prepare(self, X, y_index)
        Z, row_scale, _, groups, _, _ = prepared
        mu_factor = self._auto_mu_factor(warm, settings.solver, X_rows, y_rows, shard, monitor)
        solver, schedule = self._inner_solver(settings, Z, warm, shard)
        tracker = IterationTracker(self, groups, row_scale, start, X_val, y_val, monitor)
        seed = int(rng.randint(2**31 - 1)) if warm is None else warm.seed  # a warm start's run goes on
        done = 0 if warm is None else warm.iterations_done
        result = self._run_dca(prepared, settings, solver, tracker, seed, done, shard, mu_factor)
        self._record(result, tracker, settings.tol)
        U, v = tracker.best if self.early_stopping else (result.U.cpu().numpy(), result.v.cpu().numpy())
        self._store_solution(U, v, groups, time.perf_counter() - start, row_scale)
        self._warm_state = WarmStart(self.classes_, self.preprocess_, row_scale, groups, U, v, solver,
                                     schedule, seed, self.n_iter_ + done, mu_factor)
        return self

    def _auto_mu_factor(self, warm: WarmStart | None, solver: str, X: np.ndarray, y_index: np.ndarray,
                        shard: Shard | None, monitor: Monitor | None) -> float:
        """``mu="auto"``'s weight decay per unit of the rows' mean squared norm (also kept as
        ``mu_factor_``, None for a numeric ``mu``): ``mu_factor``, a warm start's (its
        ``mu_choice_`` kept), chosen on held-out rows of ``X`` where :func:`.mu_choice.applies`
        (recorded in ``mu_choice_``; ``monitor`` watches its fits), else the first candidate."""
        given = None
        if self.mu_factor is not None:
            given, self.mu_choice_ = float(self.mu_factor), None
        elif warm is not None:
            given = warm.mu_factor
        if given is None:
            self.mu_choice_ = None
            given = mu_choice.CANDIDATES[0]
            if mu_choice.applies(self, solver, len(X), shard is not None):
                given, self.mu_choice_ = mu_choice.choose(self, X, y_index, self.preprocess_.kind, monitor)
        self.mu_factor_ = given if isinstance(self.mu, str) else None
        return given

    def _fit_data(self, X, y) -> tuple[np.ndarray, np.ndarray, WarmStart | None]:
        """Validated ``X``, class indices and the fit to continue (None: a fresh fit). A refused
        warm start leaves the previous fit as it was."""
        if self.warm_start and distributed.is_distributed():
            raise ValueError("warm_start is not supported in a distributed fit (torch.distributed "
                             "is initialised with several ranks)")
        fitted = dict(self.__dict__)
        try:
            with distributed.raised_on_any_rank():  # a shard may hold one class
                X, y_index = self._validate_fit_data(X, y, 1 if distributed.is_distributed() else 2)
                if self.image_shape is not None:
                    check_image_shape(self.image_shape, X.shape[1])
            warm = warm_start_from(self, X, y_index) if self.warm_start else None
        except ValueError:
            self.__dict__.clear()
            self.__dict__.update(fitted)
            raise
        if distributed.is_distributed():
            distributed.check_same(X.shape[1], "feature counts")
            self.classes_, y_index = distributed.unique_labels(self.classes_[y_index])
            if len(self.classes_) < 2:
                raise ValueError(f"y has a single class ({self.classes_[0].tolist()!r}) on every rank; "
                                 "a classifier needs at least 2 classes")
        return X, y_index, warm

    def _inner_solver(self, settings: FitSettings, Z: np.ndarray, warm: WarmStart | None,
                      shard: Shard | None = None) -> tuple[Solver, tuple]:
        """The sub-problem solver and its schedule. A warm start with the same schedule carries on
        with its own solver (minibatch Adam's moments and step, see ``solvers._AdamMemory``)."""
        name = settings.solver
        scales = {"subgradient": subgradient_atom_scale, "lbfgs": lbfgs_atom_unit}
        atom_scale = scales[name](root_mean_square_norm(Z, shard)) if name in scales else 1.0
        schedule = (name, settings.batch_size, settings.inner_iter, settings.step_sizes, atom_scale)
        if warm is not None and warm.schedule == schedule:
            return warm.solver, schedule
        return make_inner_solver(name, settings.inner_iter, settings.batch_size, self.eps, settings.step_sizes,
                                 atom_scale), schedule

    def _run_dca(self, prepared: tuple, settings: FitSettings, solver: Solver, tracker: IterationTracker,
                 seed: int, iterations_done: int, shard: Shard | None, mu_factor: float) -> DCAResult:
        """DCA on the ``_prepare``d problem (this rank's ``shard`` of the rows in a distributed fit),
        on the estimator's device, with its progress bar (on rank 0 only); ``mu="auto"`` is
        ``mu_factor`` times the rows' mean squared norm."""
        Z, row_scale, targets, groups, U0, v0 = prepared
        mu = training_mu(self.mu, Z, row_scale, shard, mu_factor)
        self.mu_ = mu * row_scale**2  # on the rows as given
        dca = DCASettings(self.nu, self.beta, self.eps, int(self.max_dca_iter), settings.tol, solver, mu,
                          settings.surrogate, settings.line_search, settings.patience)
        with self._torch_session() as device:
            if shard is not None:
                distributed.check_device(device)
            data = Data(torch.as_tensor(Z, device=device), torch.as_tensor(targets, device=device),
                        torch.as_tensor(groups, device=device), settings.ovr_hinge_weight, shard)
            solver.to(device)
            verbose = self.verbose if distributed.rank() == 0 else 0
            with progress_bar(self.max_dca_iter, "LAST (DCA)", verbose) as report:
                result = run_dca(data, torch.as_tensor(U0, device=device), torch.as_tensor(v0, device=device),
                                 dca, seed=seed, on_iteration=tracker.hook(report),
                                 iterations_done=iterations_done)
            solver.to("cpu")
        return result

    def _record(self, result: DCAResult, tracker: IterationTracker, tol: float) -> None:
        """``history_``, ``converged_`` and ``n_iter_``; a ConvergenceWarning for heads that ran
        out of iterations."""
        self.history_ = result.history[0] if len(result.history) == 1 else result.history
        self.converged_ = np.array(result.converged)
        self.n_iter_ = max(len(h) for h in result.history)
        if not (self.converged_.all() or tracker.stopped):
            warnings.warn(f"DCA stopped at max_dca_iter={self.max_dca_iter} before "
                          f"{int((~self.converged_).sum())} of {len(self.converged_)} head(s) met "
                          f"tol={tol}; raise max_dca_iter or tol", ConvergenceWarning, stacklevel=4)

    def _validation_split(self, X: np.ndarray, y_index: np.ndarray, rng: np.random.RandomState):
        """``X, y, X_val, y_val``: a stratified hold-out when ``early_stopping``, else no split."""
        if not self.early_stopping:
            return X, y_index, None, None
        try:
            X, X_val, y_index, y_val = train_test_split(
                X, y_index, test_size=self.validation_fraction, stratify=y_index,
                random_state=rng.randint(2**31 - 1))
        except ValueError as error:  # e.g. fewer held-out rows than classes, or no rows left to train on
            raise ValueError(f"early_stopping cannot hold out validation_fraction={self.validation_fraction} "
                             f"of the {len(X)} training rows, stratified by class: {error}") from None
        return X, y_index, X_val, y_val

    def _model_meta(self) -> dict:
        meta = super()._model_meta()
        if self.image_shape is not None:  # where `lastedge train` records the shape of its images
            meta["data"] = {"image_shape": [int(n) for n in self.image_shape]}
        return meta

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.device != "cpu"
        return tags
