"""``LASTClassifier``: the paper's learning algorithm as a scikit-learn estimator."""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from . import problem
from .base import SoftThresholdBase
from .dca import DCASettings, run_dca
from .progress import progress_bar
from .solvers import SOLVERS, make_inner_solver
from .subproblem import Data

# Above this many training rows the paper switches to minibatch sub-problem solves.
FULL_BATCH_LIMIT = 5000
# L-BFGS iterations per sub-problem: each costs about one subgradient step (plus line search).
LBFGS_ITER = 300


class LASTClassifier(SoftThresholdBase):
    """Soft-threshold classifier ``score(x) = w^T max(0, D^T x - 1)`` learned by DCA (LAST).

    Binary problems train one ``(D, w)``; with C > 2 classes, C one-vs-all heads train together as
    one batched tensor problem, each with ``n_atoms`` atoms.

    Parameters
    ----------
    n_atoms : int, default=100
        Atoms N per head.
    preprocess : {"none", "l2", "center-l2", "standardize"}, default="l2"
        Applied to inputs before training and prediction (recorded in the model).
    nu : float, default=1.0
        Weight of ``(nu/2)||v||^2`` against the hinge losses summed over samples.
    mu : float, default=0.0
        Weight of ``(mu/2)||U||^2``, a weight decay on the atoms ``u_j = |w_j| d_j`` (convex, so it
        joins ``g`` and DCA is unchanged). 0 is the paper's objective, where only ``v = |w|`` is
        penalised and the atoms' scale is free.
    beta : float, default=100.0
        Softplus smoothing of ``max(0, .)`` during training.
    eps : float, default=1e-4
        Lower bound on the thresholds ``v`` (the relaxation of ``v > 0``).
    max_dca_iter : int, default=50
        DCA iterations K.
    inner_iter : int or None, default=None
        Iterations T of each sub-problem solve: the paper's 1000 (full batch) and 5000 (minibatch)
        for the first-order solvers, 300 for L-BFGS.
    batch_size : int, "full" or None, default=None
        None: full batch when there are fewer than 5000 rows, else minibatches of 200.
    step_sizes : tuple of float or None, default=None
        Candidate base steps; None means the solver's default ((0.1, 0.01, 0.001) for subgradient).
    tol : float, default=1e-3
        Early stop of a head when every entry of ``[U; v^T]`` changed by at most ``tol``
        (absolutely or relatively) in one DCA iteration.
    sign_ratio : "auto" or float, default="auto"
        Fraction of atoms with a positive output weight; "auto" uses each head's positive-class
        frequency (1/10 for ten balanced classes, as the paper uses on digits).
    multiclass : {"ovr", "shared"}, default="ovr"
        With more than two classes: "ovr" trains one (D, w) of ``n_atoms`` atoms per class
        (the paper); "shared" trains ONE dictionary of ``n_atoms`` atoms in total, each atom voting
        for one class, with the multi-class hinge ``max(0, 1 + max_{c != y} S_c - S_y)`` (still a
        difference of convex functions; about C times cheaper on the device).
    atoms_per_class : {"proportional", "equal"}, default="proportional"
        How "shared" divides the atoms among classes.
    inner_solver : {"auto", "lbfgs", "adam", "subgradient"}, default="auto"
        Solver of the convex sub-problem. "subgradient" is the paper's projected subgradient
        descent; "lbfgs" (full batch only) and "adam" reach a far lower objective in the same time
        (measured, see README). "auto": L-BFGS in full batch, Adam on minibatches.
    init_active_fraction : float or None, default=0.05
        Initial atoms are scaled so that each starts above the threshold on this fraction of the
        training rows; None keeps the paper's unscaled samples (see ``problem.initial_atoms``).
    device : str, default="cpu"
        Torch device, e.g. "cuda".
    n_jobs : int or None, default=1
        Torch threads during fit. One thread is fastest for small problems and on busy or 2-core
        machines (measured: 2 threads on a busy 2-core machine ran a texture step 70x slower);
        raise it for MNIST-size problems on an idle machine. None leaves torch's setting.
    random_state : int, RandomState or None
        Seeds the start point and the minibatch order.
    verbose : int, default=1
        0 silent; 1 a progress bar over DCA iterations.

    Attributes
    ----------
    classes_, n_features_in_, dictionary_ [n_features, heads * n_atoms], coef_ [heads * n_atoms,
    n_outputs], history_ (binary: list of per-iteration dicts; one-vs-all: one list per head),
    n_iter_ (DCA iterations run, max over heads), converged_ (bool per head), fit_time_ (seconds).
    """

    def __init__(self, n_atoms: int = 100, *, preprocess: str = "l2", nu: float = 1.0,
                 mu: float = 0.0, beta: float = 100.0, eps: float = 1e-4, max_dca_iter: int = 50,
                 inner_iter: int | None = None, batch_size: int | str | None = None,
                 step_sizes: tuple[float, ...] | None = None, tol: float = 1e-3,
                 sign_ratio: str | float = "auto", multiclass: str = "ovr",
                 atoms_per_class: str = "proportional", inner_solver: str = "auto",
                 init_active_fraction: float | None = 0.05, device: str = "cpu",
                 n_jobs: int | None = 1, random_state=None, verbose: int = 1):
        self.n_atoms = n_atoms
        self.preprocess = preprocess
        self.nu = nu
        self.mu = mu
        self.beta = beta
        self.eps = eps
        self.max_dca_iter = max_dca_iter
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.step_sizes = step_sizes
        self.tol = tol
        self.sign_ratio = sign_ratio
        self.multiclass = multiclass
        self.atoms_per_class = atoms_per_class
        self.inner_solver = inner_solver
        self.init_active_fraction = init_active_fraction
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> None:
        super()._check_params()
        if self.multiclass not in ("ovr", "shared"):
            raise ValueError(f"multiclass must be 'ovr' or 'shared', got {self.multiclass!r}")
        if self.inner_solver not in SOLVERS:
            raise ValueError(f"inner_solver must be one of {SOLVERS}, got {self.inner_solver!r}")
        if int(self.max_dca_iter) < 1:
            raise ValueError(f"max_dca_iter must be >= 1, got {self.max_dca_iter!r}")
        if self.inner_iter is not None and int(self.inner_iter) < 1:
            raise ValueError(f"inner_iter must be >= 1 or None, got {self.inner_iter!r}")
        if not (self.eps > 0 and self.tol >= 0):
            raise ValueError(f"eps must be > 0 and tol >= 0, got eps={self.eps!r}, tol={self.tol!r}")

    def _layout(self, y_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.multiclass == "shared" and len(self.classes_) > 2:
            return problem.shared_layout(y_index, len(self.classes_), int(self.n_atoms),
                                         self.atoms_per_class)
        return super()._layout(y_index)

    def _schedule(self, n_samples: int) -> tuple[int | None, int]:
        """(batch size or None for full batch, inner iterations T), the paper's rule by default."""
        if self.batch_size == "full":
            batch = None
        elif self.batch_size is None:
            batch = None if n_samples < FULL_BATCH_LIMIT else 200
        else:
            batch = int(self.batch_size)
            if batch < 1:
                raise ValueError(f"batch_size must be >= 1, 'full' or None, got {self.batch_size!r}")
            batch = None if batch >= n_samples else batch
        if batch is not None:
            default_T = 5000
        else:
            default_T = LBFGS_ITER if self._solver_name(batch) == "lbfgs" else 1000
        return batch, int(self.inner_iter or default_T)

    def _solver_name(self, batch: int | None) -> str:
        if self.inner_solver != "auto":
            return self.inner_solver
        return "lbfgs" if batch is None else "adam"

    def fit(self, X, y) -> "LASTClassifier":
        """Learn the dictionary and weights by DCA. ``y`` may hold any labels (numbers, strings)."""
        self._check_params()
        start = time.perf_counter()
        X, y_index = self._validate_fit_data(X, y)
        Z, targets, groups, U0, v0, rng = self._prepare(X, y_index)
        batch, n_inner = self._schedule(len(Z))
        solver = make_inner_solver(self.inner_solver, n_inner, batch, self.eps,
                                   tuple(self.step_sizes) if self.step_sizes else None)
        settings = DCASettings(self.nu, self.beta, self.eps, int(self.max_dca_iter), self.tol, solver,
                               self.mu)
        with self._torch_session() as device:
            data = Data(torch.as_tensor(Z, device=device),
                        torch.as_tensor(targets, device=device),
                        torch.as_tensor(groups, device=device))
            with progress_bar(self.max_dca_iter, "LAST (DCA)", self.verbose) as report:
                result = run_dca(data, torch.as_tensor(U0, device=device),
                                 torch.as_tensor(v0, device=device), settings,
                                 seed=int(rng.randint(2**31 - 1)), on_iteration=report)
        self.history_ = result.history[0] if len(result.history) == 1 else result.history
        self.converged_ = np.array(result.converged)
        self.n_iter_ = max(len(h) for h in result.history)
        if not self.converged_.all():
            warnings.warn(f"DCA stopped at max_dca_iter={self.max_dca_iter} before "
                          f"{int((~self.converged_).sum())} of {len(self.converged_)} head(s) met "
                          f"tol={self.tol}; raise max_dca_iter or tol", ConvergenceWarning)
        self._store_solution(result.U.cpu().numpy(), result.v.cpu().numpy(), groups,
                             time.perf_counter() - start)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.device != "cpu"
        return tags
