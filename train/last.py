"""``LASTClassifier``: the paper's learning algorithm as a scikit-learn estimator."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_random_state

from lastedge.runtime import Preprocess
from lastedge.runtime.model import check_image_shape

from . import problem
from .augment import shifted_copies
from .base import SoftThresholdBase, rescaled_mu, root_mean_square_norm, scaled_rows
from .dca import DCASettings, run_dca
from .objective import HINGES
from .params import check_number
from .progress import progress_bar
from .solvers import SOLVERS, InnerSolver, LBFGSSolver, make_inner_solver, subgradient_atom_scale
from .subproblem import SURROGATES, Data

# Above this many training rows the paper switches to minibatch sub-problem solves.
FULL_BATCH_LIMIT = 5000
# The paper's subgradient steps per sub-problem, on minibatches and in full batch.
PAPER_MINIBATCH_ITER, PAPER_FULL_BATCH_ITER = 5000, 1000
# L-BFGS iterations per sub-problem: each costs about one subgradient step (plus line search).
LBFGS_ITER = 300
# Full-batch Adam steps per sub-problem, fewer than the paper's 1000 (DCA runs more iterations).
# Binary and one-vs-all heads: with 300 Adam beat the paper's L-BFGS solve in 30 of 32 texture and
# digits fits at mu = 0, and 300 beat 100 on the textures; a shared dictionary: 100 beat 300 and
# 1000 on digits and MNIST subsamples at a tenth of the cost (docs/results.md).
FULL_BATCH_ADAM_ITER = 300
SHARED_FULL_BATCH_ADAM_ITER = 100
# Minibatch Adam: 300 steps on 500 rows per DCA iteration (the paper: 5000 subgradient steps on
# 200). Adam carries its moments from one DCA iteration to the next, so shorter solves suffice; the
# paper's schedule overfitted (USPS: no training error after its first DCA iteration) and was no
# more accurate in 1.1-4x the time (test error, USPS seeds 0 / 1 / 2: 5.78 / 5.13 / 5.73 against
# 4.88 / 5.68 / 5.63 %; CIFAR-10 deer vs horse 18.75 against 17.05 %; docs/results.md).
MINIBATCH_SIZE = 500
MINIBATCH_ADAM_ITER = 300
# ``tol=None``: the paper's delta on the parameters in full batch; on minibatches the fall of the
# objective per training row that counts as progress, scikit-learn MLP's default. With 1e-4 and
# patience 3, default fits' heads stopped after 14-23 DCA iterations on MNIST and 11-17 on USPS
# (instead of 39-50) at the same or a lower test error, and 400 atoms on MNIST with shifted copies
# still trains for 16-20; 1e-3 would stop that one after 9-15, while its test error was still
# falling (docs/results.md).
FULL_BATCH_TOL, MINIBATCH_TOL = 1e-3, 1e-4


class LASTClassifier(SoftThresholdBase):
    """Soft-threshold classifier ``score(x) = w^T max(0, D^T x - 1)`` learned by DCA (LAST).

    Binary problems train one ``(D, w)``; with C > 2 classes, C one-vs-all heads train together as
    one batched tensor problem, each with ``n_atoms`` atoms.

    Parameters
    ----------
    n_atoms : int, default=100
        Atoms N per head.
    preprocess : {"none", "l2", "center-l2", "standardize"}, default="l2"
        Applied to inputs before training and prediction (recorded in the model). Rows of a scale
        float32 cannot train on as they are ("none" on values near 1e38 or 1e-38) are trained on
        divided by their scale r, with ``mu / r**2``, and the atoms divided by r after
        (:func:`~lastedge.train.base.training_scale`): the objective in ``history_`` is that of
        the rows as given, its "change" (and ``tol``'s test in full batch) that of the rescaled
        atoms. A ValueError before training where float32 cannot hold the model's atoms.
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
        Iterations T of each sub-problem solve: on minibatches 300 for Adam (the paper's 5000 for
        subgradient descent); in full batch 300 for Adam (100 for a shared dictionary, where
        shorter solves generalised better), 300 for L-BFGS and the paper's 1000 for subgradient
        descent.
    batch_size : int, "full" or None, default=None
        None: full batch when there are fewer than 5000 rows, else minibatches of 500 (the
        paper's 200; with 300 Adam steps per DCA iteration as accurate in a fraction of the time).
    step_sizes : tuple of float or None, default=None
        Candidate base steps, each > 0; None means the solver's default ((0.1, 0.01, 0.001) for
        subgradient, (0.03, 0.01, 0.003) for Adam). When the best candidate is at an edge, the
        trials try 10x beyond it (minibatch Adam, which carries its step, only downwards).
    tol : float or None, default=None
        When a head has converged. In full batch (the paper's rule): every entry of ``[U; v^T]``
        changed by at most ``tol`` (absolutely or relatively) in one DCA iteration. On minibatches,
        where Adam's noise keeps moving some entry by more than that, as scikit-learn's SGD and
        MLP estimators do: the objective per training row fell by at most ``tol`` below its best
        for ``n_iter_no_change`` DCA iterations in a row (with ``early_stopping``, as there, the
        hold-out score decides instead). None: 1e-3 in full batch, 1e-4 on minibatches.
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
    atoms_against : float in [0, 1), default=0.0
        Share of each class's atoms in "shared" that vote AGAINST the class (a negative output
        weight, as one-vs-all's negative atoms) instead of for it; at least one atom per class
        votes for it. The device model keeps one weight per atom, so the cost is unchanged.
    ovr_hinge_weight : float, default=0.0
        With "shared": weight lam of one-vs-all's binary hinges added to the multi-class hinge,
        ``lam * sum_c max(0, 1 - t_c s_c)`` (``t_c = +1`` on the sample's class, -1 elsewhere).
        Still a difference of convex functions; it needs ``atoms_against > 0`` (otherwise a rival's
        score cannot go below 0). With ``atoms_against=0.5`` and 1.0 here, on MNIST with
        minibatches and shifted copies, 100, 200 and 1600 shared atoms beat one-vs-all with the
        same total atoms in each of 12 seeds, 800 in 11, 400 led on median (inside the noise), and
        at 4000 one-vs-all was ahead (by 0.02 points over 16 seeds, 0.04 over 8 more after the
        step-grid fix, level with ``sub_dictionaries=2``; the plain shared model trails from 400
        on); on scikit-learn's small digits it did not help (docs/results.md).
        ``lastedge train`` can choose both on a hold-out (``selection.choose_params``).
    sub_dictionaries : int, default=1
        With "shared": train the ``n_atoms`` as this many independent dictionaries of
        ``n_atoms / sub_dictionaries`` atoms (each with its own start point, side by side as heads
        of one tensor problem, as one-vs-all's heads are) and average their class scores. The
        device model is the same: one dictionary of ``n_atoms`` atoms, one weight per atom. On
        MNIST's 4000 atoms (atoms against, one-vs-all's hinges, shifted copies) two halves fitted
        apart and joined scored 0.03 points below one fit over 8 seeds, level with one-vs-all
        (docs/results.md). ``n_atoms`` must split evenly, with at least one atom per class in each.
    hinge : {"max", "sum"}, default="max"
        The multi-class hinge of "shared": "max" (Crammer-Singer) charges the best rival class,
        ``max(0, 1 + max_{c != y} S_c - S_y)``; "sum" (Weston-Watkins) charges every rival,
        ``sum_{c != y} max(0, 1 + S_c - S_y)``. Both are differences of convex functions; with two
        classes (binary, each one-vs-all head) both are the paper's hinge.
    inner_solver : {"auto", "lbfgs", "adam", "subgradient"}, default="auto"
        Solver of the convex sub-problem. "subgradient" is the paper's projected subgradient
        descent (its steps on the atoms divided by the rows' mean squared norm, a power of 2:
        the paper's steps for unit-norm rows, and one grid for any scale); "lbfgs" (full batch only) and "adam" reach a far lower objective in the same time
        (measured, see README). "auto": Adam, except L-BFGS for binary and one-vs-all heads in
        full batch with a weight decay (``mu > 0``). On the paper's objective (``mu = 0``, where
        the atoms' scale is free) Adam's few steps per DCA iteration generalised better than
        L-BFGS's near-exact solves in 30 of 32 texture and digits fits (one level, one behind);
        with a weight decay the objective is well posed and L-BFGS's solves scored better (3-fold
        CV on the textures, docs/results.md).
    init_active_fraction : float or None, default=0.05
        Initial atoms are scaled so that each starts above the threshold on this fraction of the
        training rows; None keeps the paper's unscaled samples (see ``problem.initial_atoms``).
    shift_augment : int, default=0
        Train also on copies of every training row moved 1..``shift_augment`` pixels up, down, left
        and right (``4 * shift_augment`` copies; needs ``image_shape``). The model keeps its size;
        on MNIST one pixel cut the test error of 400 shared atoms from 1.8 to 1.4 % (docs/results.md).
        The early-stopping hold-out is taken before, from the original rows only.
    image_shape : tuple of int or None, default=None
        Each row as an image, (H, W) or (H, W, 3) channels last; used by ``shift_augment`` and
        recorded in the model (``Model.image_shape``: ``inspect --atoms`` and ``predict`` use it).
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training rows (stratified), score the iterate on
        them after every DCA iteration, stop after ``n_iter_no_change`` iterations without a better
        score, and keep the best iterate. DCA minimises the training objective; on small or easy
        data its later iterations can overfit (measured on digits with L-BFGS, see README).
    validation_fraction : float, default=0.1
        Share of the training rows held out when ``early_stopping``.
    n_iter_no_change : int, default=3
        DCA iterations without a better validation score before ``early_stopping`` stops; on
        minibatches also without progress of the objective before a head stops (see ``tol``).
    device : str, default="cpu"
        Torch device, e.g. "cuda", or "auto": a GPU when torch sees one (CUDA, then Apple's MPS),
        else the CPU. A GPU fit is not bit-identical to a CPU fit (another order of float sums).
    n_jobs : int or None, default=1
        Torch threads during fit. One thread is fastest for small problems and on busy or 2-core
        machines (measured: 2 threads on a busy 2-core machine ran a texture step 70x slower);
        raise it for MNIST-size problems on an idle machine; -1 uses all cores, -2 all but one
        (as in scikit-learn). None leaves torch's setting.
    surrogate : {"auto", "tight", "dc"}, default="auto"
        The convex majoriser of (P) each DCA iteration minimises. "dc" is the paper's
        ``g - <grad h(U_k, v_k), .>``; it charges every correctly classified sample for any change
        of its target-group features, which pins the features near the current point and stalls
        DCA on large data (measured on MNIST, see docs/results.md). "tight" linearises the same
        ``h`` inside each sample's hinge, ``max(0, 1 + rival - lin S_target)``: never above "dc",
        equal to (P) at the current point, convex, so DCA keeps its descent property. It goes
        much further per iteration, also towards (P)'s degenerate side (thresholds ``v`` down to
        ``eps``, see README), which costs accuracy on small data. "auto": "tight", except "dc" for
        binary and one-vs-all heads in full batch (measured on MNIST vs scikit-learn's digits) and
        with ``inner_solver="lbfgs"``.
        A shared dictionary in full batch gets "tight" with Adam: on digits that lowered its test
        error in every split and size tried (20 atoms: 2.8-4.4 % against 5.4-10.2 % with "dc" and
        L-BFGS; docs/results.md).
    line_search : "auto" or bool, default="auto"
        Boosted DCA: after each sub-problem solve, stretch the step (2x, 4x, ...) while the
        objective of (P) keeps falling (judged on up to 8192 rows). "auto": on with minibatches
        (measured on MNIST: 1.5x lower objective in the same time); off in full batch, where the
        greedier path ended in worse local minima on scikit-learn's digits.
    warm_start : bool, default=False
        Start ``fit`` from where the previous fit ended (scikit-learn's convention): its atoms
        and weights, its preprocessing (not refitted), and minibatch Adam's moments and step, so
        ``max_dca_iter`` more DCA iterations continue the run (in full batch, 3 then 3 more are
        6 in one go). The classes, features and atom layout (``n_atoms``, ``multiclass``,
        ``sub_dictionaries``, ...) must be those of the previous fit. ``history_`` and ``n_iter_``
        describe the latest fit.
    random_state : int, RandomState or None
        Seeds the start point and the minibatch order.
    verbose : int, default=1
        0 silent; 1 a progress bar over DCA iterations.

    Attributes
    ----------
    classes_, n_features_in_, dictionary_ [n_features, heads * n_atoms], coef_ [heads * n_atoms,
    n_outputs], history_ (binary and shared: list of per-iteration dicts; one-vs-all and
    ``sub_dictionaries`` > 1: one list per head),
    n_iter_ (DCA iterations run, max over heads), converged_ (bool per head), fit_time_ (seconds),
    validation_scores_ (accuracy on the hold-out per DCA iteration; None without early stopping),
    best_validation_score_ (the best of them; None without early stopping).
    """

    def __init__(self, n_atoms: int = 100, *, preprocess: str = "l2", nu: float = 1.0,
                 mu: float = 0.0, beta: float = 100.0, eps: float = 1e-4, max_dca_iter: int = 50,
                 inner_iter: int | None = None, batch_size: int | str | None = None,
                 step_sizes: tuple[float, ...] | None = None, tol: float | None = None,
                 sign_ratio: str | float = "auto", multiclass: str = "ovr",
                 atoms_per_class: str = "proportional", atoms_against: float = 0.0,
                 ovr_hinge_weight: float = 0.0, sub_dictionaries: int = 1, hinge: str = "max",
                 inner_solver: str = "auto",
                 init_active_fraction: float | None = 0.05, shift_augment: int = 0,
                 image_shape: tuple[int, ...] | None = None, early_stopping: bool = False,
                 validation_fraction: float = 0.1, n_iter_no_change: int = 3, device: str = "cpu",
                 n_jobs: int | None = 1, surrogate: str = "auto", line_search: str | bool = "auto",
                 warm_start: bool = False, random_state=None, verbose: int = 1):
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
        self.atoms_against = atoms_against
        self.ovr_hinge_weight = ovr_hinge_weight
        self.sub_dictionaries = sub_dictionaries
        self.hinge = hinge
        self.inner_solver = inner_solver
        self.init_active_fraction = init_active_fraction
        self.shift_augment = shift_augment
        self.image_shape = image_shape
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.device = device
        self.n_jobs = n_jobs
        self.surrogate = surrogate
        self.line_search = line_search
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> None:
        super()._check_params()
        self._check_choices()
        check_number(self, "max_dca_iter", integer=True, low=1)
        check_number(self, "inner_iter", integer=True, low=1, also=(None,))
        check_number(self, "batch_size", integer=True, low=1, also=("full", None))
        check_number(self, "tol", low=0, also=(None,))
        check_number(self, "atoms_against", low=0, high=1, open_high=True)
        check_number(self, "ovr_hinge_weight", low=0)
        check_number(self, "sub_dictionaries", integer=True, low=1)
        check_number(self, "shift_augment", integer=True, low=0)
        if self.shift_augment and self.image_shape is None:
            raise ValueError("shift_augment needs image_shape, the (H, W) or (H, W, 3) of each row")
        check_number(self, "validation_fraction", low=0, high=1, open_low=True, open_high=True)
        check_number(self, "n_iter_no_change", integer=True, low=1)

    def _check_choices(self) -> None:
        """The parameters that name one of a few options."""
        choices = {"multiclass": ("ovr", "shared"), "hinge": HINGES, "surrogate": ("auto", *SURROGATES),
                   "inner_solver": SOLVERS, "atoms_per_class": problem.ATOMS_PER_CLASS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.line_search not in ("auto", True, False):
            raise ValueError(f"line_search must be 'auto', True or False, got {self.line_search!r}")

    def _shares_dictionary(self) -> bool:
        """Whether the classes share one dictionary ("shared" with more than two classes)."""
        return self.multiclass == "shared" and len(self.classes_) > 2

    def _layout(self, y_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._shares_dictionary():
            members = int(self.sub_dictionaries)
            if members > 1 and (self.n_atoms % members or self.n_atoms // members < len(self.classes_)):
                raise ValueError(f"sub_dictionaries={members} needs n_atoms to split into {members} "
                                 f"equal parts of at least {len(self.classes_)} atoms (one per class), "
                                 f"got n_atoms={self.n_atoms}")
            targets, groups = problem.shared_layout(y_index, len(self.classes_), self.n_atoms // members,
                                                    self.atoms_per_class, float(self.atoms_against))
            return np.repeat(targets, members, axis=0), np.repeat(groups, members, axis=0)
        return super()._layout(y_index)

    def _schedule(self, n_samples: int) -> tuple[int | None, int]:
        """(batch size or None for full batch, inner iterations T): the paper's full-batch limit,
        each solver's default T (see the constants above) unless ``inner_iter`` is given."""
        if self.batch_size == "full":
            batch = None
        elif self.batch_size is None:
            batch = None if n_samples < FULL_BATCH_LIMIT else MINIBATCH_SIZE
        else:
            batch = None if self.batch_size >= n_samples else int(self.batch_size)
        solver = self._solver_name(batch)
        if batch is not None:
            default_T = MINIBATCH_ADAM_ITER if solver == "adam" else PAPER_MINIBATCH_ITER
        elif solver == "lbfgs":
            default_T = LBFGS_ITER
        elif solver == "adam":
            default_T = SHARED_FULL_BATCH_ADAM_ITER if self._shares_dictionary() else FULL_BATCH_ADAM_ITER
        else:
            default_T = PAPER_FULL_BATCH_ITER
        return batch, int(self.inner_iter or default_T)

    def _tol(self, batch: int | None) -> float:
        """``tol``, or its default for full-batch or minibatch solves (see ``MINIBATCH_TOL``)."""
        if self.tol is not None:
            return float(self.tol)
        return FULL_BATCH_TOL if batch is None else MINIBATCH_TOL

    def _full_batch_heads(self, batch: int | None) -> bool:
        """Binary or one-vs-all heads solved in full batch: the paper's setting."""
        return batch is None and not self._shares_dictionary()

    def _solver_name(self, batch: int | None) -> str:
        """The solver: "auto" is Adam, except L-BFGS for full-batch heads with a weight decay
        (``mu > 0``; see the ``inner_solver`` parameter)."""
        if self.inner_solver != "auto":
            return self.inner_solver
        return "lbfgs" if self._full_batch_heads(batch) and self.mu > 0 else "adam"

    def _surrogate_name(self, batch: int | None) -> str:
        """The majoriser: "auto" is the paper's "dc" for full-batch heads and for L-BFGS (on "tight"
        L-BFGS was the worst pairing for every model on digits), else "tight"."""
        if self.surrogate != "auto":
            return self.surrogate
        return "dc" if self._full_batch_heads(batch) or self._solver_name(batch) == "lbfgs" else "tight"

    def fit(self, X, y, monitor: Monitor | None = None) -> "LASTClassifier":
        """Learn the dictionary and weights by DCA. ``y`` may hold any labels (numbers, strings).

        ``monitor(k, estimator)``, if given, is called after every DCA iteration ``k`` with the
        estimator holding the current iterate (``predict`` works); returning True stops training
        there, as in scikit-learn's gradient boosting. It serves learning curves and time budgets.
        """
        self._check_params()
        start = time.perf_counter()
        fitted = dict(self.__dict__)  # a warm start refused below leaves the previous fit as it was
        try:
            X, y_index = self._validate_fit_data(X, y)
            warm = self._warm_start_from(X, y_index) if self.warm_start else None
        except ValueError:
            self.__dict__.clear()
            self.__dict__.update(fitted)
            raise
        if self.image_shape is not None:
            check_image_shape(self.image_shape, X.shape[1])
        rng = check_random_state(self.random_state)
        X, y_index, X_val, y_val = self._validation_split(X, y_index, rng)
        if self.shift_augment:
            X, y_index = shifted_copies(X, y_index, self.image_shape, int(self.shift_augment))
        if warm is None:
            Z, row_scale, targets, groups, U0, v0 = self._prepare(X, y_index, rng)
        else:
            Z, row_scale, targets, groups, U0, v0 = warm.prepare(self, X, y_index)
        batch, n_inner = self._schedule(len(Z))
        name, steps = self._solver_name(batch), None if self.step_sizes is None else tuple(self.step_sizes)
        atom_scale = subgradient_atom_scale(root_mean_square_norm(Z)) if name == "subgradient" else 1.0
        schedule = (name, batch, n_inner, steps, atom_scale)
        if warm is not None and warm.schedule == schedule:  # its Adam moments and step carry on
            solver = warm.solver
        else:
            solver = make_inner_solver(name, n_inner, batch, self.eps, steps, atom_scale)
        tol = self._tol(batch)
        settings = DCASettings(self.nu, self.beta, self.eps, int(self.max_dca_iter), tol, solver,
                               rescaled_mu(self.mu, row_scale), self._surrogate_name(batch),
                               batch is not None if self.line_search == "auto" else bool(self.line_search),
                               None if self.early_stopping else int(self.n_iter_no_change))
        tracker = _IterationTracker(self, groups, row_scale, start, X_val, y_val, monitor)
        seed = int(rng.randint(2**31 - 1)) if warm is None else warm.seed  # a warm start's run goes on
        with self._torch_session() as device:
            data = Data(torch.as_tensor(Z, device=device),
                        torch.as_tensor(targets, device=device),
                        torch.as_tensor(groups, device=device), self.hinge,
                        float(self.ovr_hinge_weight) if self._shares_dictionary() else 0.0)
            solver.to(device)
            with progress_bar(self.max_dca_iter, "LAST (DCA)", self.verbose) as report:
                result = run_dca(data, torch.as_tensor(U0, device=device),
                                 torch.as_tensor(v0, device=device), settings,
                                 seed=seed, on_iteration=tracker.hook(report),
                                 iterations_done=0 if warm is None else warm.iterations_done)
            solver.to("cpu")
        self.history_ = result.history[0] if len(result.history) == 1 else result.history
        self.converged_ = np.array(result.converged)
        self.n_iter_ = max(len(h) for h in result.history)
        U, v = tracker.best if self.early_stopping else (result.U.cpu().numpy(), result.v.cpu().numpy())
        if not (self.converged_.all() or tracker.stopped):
            warnings.warn(f"DCA stopped at max_dca_iter={self.max_dca_iter} before "
                          f"{int((~self.converged_).sum())} of {len(self.converged_)} head(s) met "
                          f"tol={tol}; raise max_dca_iter or tol", ConvergenceWarning, stacklevel=2)
        self._store_solution(U, v, groups, time.perf_counter() - start, row_scale)
        self._warm_state = _WarmStart(self.classes_, self.preprocess_, row_scale, groups, U, v, solver, schedule,
                                      seed, self.n_iter_ + (0 if warm is None else warm.iterations_done))
        return self

    def _warm_start_from(self, X: np.ndarray, y_index: np.ndarray) -> _WarmStart | None:
        """The previous fit's end, checked against this fit's classes, features and atom layout
        (None before any fit: ``warm_start`` then starts as a fresh fit does)."""
        warm = getattr(self, "_warm_state", None)
        if warm is None:
            return None
        if not np.array_equal(warm.classes, self.classes_):
            raise ValueError(f"warm_start continues a fit of the classes {warm.classes.tolist()}, got "
                             f"{self.classes_.tolist()}: set warm_start=False to start afresh")
        if X.shape[1] != warm.U.shape[1]:
            raise ValueError(f"warm_start continues a fit of {warm.U.shape[1]} features, got {X.shape[1]}")
        groups = self._layout(y_index)[1]
        if groups.shape != warm.groups.shape:
            raise ValueError(f"warm_start continues a fit of {warm.groups.shape[0]} head(s) of "
                             f"{warm.groups.shape[1]} atoms, the parameters now give {groups.shape[0]} of "
                             f"{groups.shape[1]} (n_atoms, multiclass or sub_dictionaries changed): set "
                             "warm_start=False to start afresh")
        return warm

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


Monitor = Callable[[int, LASTClassifier], bool | None]


@dataclass(frozen=True)
class _WarmStart:
    """Where a fit ended, for the next one with ``warm_start``: its iterate ``(U, v)`` on its rows
    divided by ``row_scale``, the atoms' groups, the fitted preprocessing, and its solver, whose
    minibatch Adam carries its moments and step (step trials re-run from a nearly optimal point
    shrink the step and stall DCA, see ``solvers._AdamMemory``) when the schedule is the same."""

    classes: np.ndarray
    preprocess: Preprocess
    row_scale: float
    groups: np.ndarray
    U: np.ndarray
    v: np.ndarray
    solver: InnerSolver | LBFGSSolver
    schedule: tuple
    seed: int  # of the DCA run that the fits continue
    iterations_done: int  # by every fit this one continues, its own included

    def prepare(self, estimator: LASTClassifier, X: np.ndarray, y_index: np.ndarray):
        """``SoftThresholdBase._prepare``'s tuple for ``estimator``, starting from this fit's end
        (its atom layout checked by ``LASTClassifier._warm_start_from``)."""
        targets = estimator._layout(y_index)[0]
        Z = scaled_rows(estimator._preprocessed(X, fitted=self.preprocess), self.row_scale)
        return Z, self.row_scale, targets, self.groups, self.U, self.v


class _IterationTracker:
    """After each DCA iteration: progress, validation score and best iterate, the user's monitor.

    The estimator's ``model_`` is rebuilt from the iterate only when something needs to predict;
    the iterates are those of the rows divided by ``row_scale`` (see ``SoftThresholdBase._prepare``).
    """

    def __init__(self, estimator: LASTClassifier, groups: np.ndarray, row_scale: float, start: float,
                 X_val: np.ndarray | None, y_val: np.ndarray | None, monitor: Monitor | None):
        self.estimator, self.groups, self.row_scale, self.start = estimator, groups, row_scale, start
        self.X_val, self.y_val, self.monitor = X_val, y_val, monitor
        self.best: tuple[np.ndarray, np.ndarray] | None = None
        self.best_score = -np.inf
        self.since_best = 0
        self.stopped = False
        estimator.validation_scores_ = [] if X_val is not None else None
        estimator.best_validation_score_ = None  # set by the first validation score, if any

    def hook(self, report: Callable[[int, torch.Tensor], None]):
        def on_iteration(k: int, objectives: torch.Tensor, U: torch.Tensor, v: torch.Tensor) -> bool:
            report(k, objectives)
            if self.X_val is None and self.monitor is None:
                return False
            est = self.estimator
            U_np, v_np = U.cpu().numpy(), v.cpu().numpy()
            est._store_solution(U_np, v_np, self.groups, time.perf_counter() - self.start, self.row_scale)
            stop = self._early_stop(U_np, v_np) if self.X_val is not None else False
            if self.monitor is not None and self.monitor(k, est):
                stop = True
            self.stopped = self.stopped or stop
            return stop

        return on_iteration

    def _early_stop(self, U: np.ndarray, v: np.ndarray) -> bool:
        est = self.estimator
        model = est.model_
        score = float(np.mean(model.labels_from_scores(model.decision_function(self.X_val))
                              == est.classes_[self.y_val]))
        est.validation_scores_.append(score)
        if score > self.best_score:
            self.best, self.best_score, self.since_best = (U.copy(), v.copy()), score, 0
        else:
            self.since_best += 1
        est.best_validation_score_ = self.best_score
        return self.since_best >= est.n_iter_no_change
