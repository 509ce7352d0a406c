"""What a ``LASTClassifier`` fit runs with: every "auto" and default resolved in one place.

:func:`resolve` turns the estimator's parameters and the size of the problem into
:class:`FitSettings`: full batch or minibatches, the sub-problem solver and its iterations, the
convex majoriser, the line search, the stopping tolerance and patience, and the loss of a shared
dictionary. The rules follow what trained best (see the benchmarks page, docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INNER_SOLVERS = ("auto", "adam", "lbfgs", "subgradient")  # inner_solver's options
# From this many training rows on, sub-problems are solved on minibatches (the paper's limit).
FULL_BATCH_LIMIT = 5000
# Rows per minibatch (the paper's 200): with Adam's carried moments, as accurate in less time.
MINIBATCH_SIZE = 500
# Iterations per sub-problem solve by default, per solver and batch mode. Adam carries its moments
# between DCA iterations on minibatches, and its shorter full-batch solves generalised better than
# the paper's 1000 (a shared dictionary's shorter still); subgradient descent keeps the paper's.
MINIBATCH_ITER = {"adam": 300, "subgradient": 5000}
FULL_BATCH_ITER = {"adam": 300, "lbfgs": 300, "subgradient": 1000}
SHARED_FULL_BATCH_ADAM_ITER = 100
# ``tol=None``: the paper's delta on the parameters in full batch; on minibatches the fall of the
# objective per training row that counts as progress (scikit-learn's MLP default).
FULL_BATCH_TOL, MINIBATCH_TOL = 1e-3, 1e-4
# What multiclass="shared" trains on minibatches (large data): this share of each class's atoms vote
# against it, and one-vs-all's binary hinges, with this weight, join the multi-class hinge. In full
# batch (small data) the plain multi-class hinge, every atom voting for its class, trained better.
SHARED_ATOMS_AGAINST = 0.5
SHARED_OVR_HINGE_WEIGHT = 1.0


@dataclass(frozen=True)
class FitSettings:
    """The resolved settings of one fit (see :func:`resolve`)."""

    batch_size: int | None  # rows per minibatch; None: full batch
    solver: str  # "adam", "lbfgs" or "subgradient"
    inner_iter: int  # iterations per sub-problem solve
    step_sizes: tuple[float, ...] | None  # None: the solver's own grid
    surrogate: str  # the convex majoriser: "dc" (the paper's g - <grad h, .>) or "tight"
    line_search: bool  # boosted DCA's stretch of each step
    tol: float
    patience: int | None  # minibatch DCA iterations without progress; None: the hold-out decides
    shares_dictionary: bool  # one dictionary for every class (multiclass="shared", > 2 classes)
    atoms_against: float  # share of each class's atoms in a shared dictionary that vote against it
    ovr_hinge_weight: float  # weight of one-vs-all's hinges in the loss (0: none)


def resolve(estimator: Any, n_samples: int, n_classes: int) -> FitSettings:
    """The settings ``estimator``'s parameters give on ``n_samples`` training rows of ``n_classes``.

    - ``batch_size=None``: full batch below ``FULL_BATCH_LIMIT`` rows, else ``MINIBATCH_SIZE``
      (a batch at least as large as the data is full batch).
    - ``inner_solver="auto"``: Adam, except L-BFGS for binary or one-vs-all heads in full batch
      with a weight decay (``mu > 0`` or "auto"), where the problem is well posed and near-exact
      solves won.
    - The majoriser: the paper's "dc" for binary or one-vs-all heads in full batch and with
      L-BFGS; else "tight", which goes further per DCA iteration.
    - The line search: on with minibatches only.
    - ``tol=None``: ``FULL_BATCH_TOL`` or ``MINIBATCH_TOL``; ``early_stopping`` lets the hold-out
      score stop the fit instead of the minibatch patience.
    - A shared dictionary on minibatches: ``SHARED_ATOMS_AGAINST`` and ``SHARED_OVR_HINGE_WEIGHT``;
      in full batch the plain multi-class hinge.
    """
    batch = _batch_size(estimator.batch_size, n_samples)
    shares = shares_dictionary(estimator.multiclass, n_classes)
    signed = shares and batch is not None  # the shared form with atoms against and one-vs-all's hinges
    full_batch_heads = batch is None and not shares
    solver = estimator.inner_solver
    if solver == "auto":
        solver = "lbfgs" if full_batch_heads and (estimator.mu == "auto" or estimator.mu > 0) else "adam"
    if batch is not None:
        if solver == "lbfgs":
            raise ValueError("inner_solver='lbfgs' needs full-batch solves: give batch_size='full' "
                             "(lastedge train: --batch-size full) or use inner_solver='adam'")
        default_iter = MINIBATCH_ITER[solver]
    elif shares and solver == "adam":
        default_iter = SHARED_FULL_BATCH_ADAM_ITER
    else:
        default_iter = FULL_BATCH_ITER[solver]
    return FitSettings(
        batch_size=batch, solver=solver, inner_iter=int(estimator.inner_iter or default_iter),
        step_sizes=None if estimator.step_sizes is None else tuple(estimator.step_sizes),
        surrogate="dc" if full_batch_heads or solver == "lbfgs" else "tight",
        line_search=batch is not None,
        tol=float(estimator.tol) if estimator.tol is not None else
        FULL_BATCH_TOL if batch is None else MINIBATCH_TOL,
        patience=None if estimator.early_stopping else int(estimator.n_iter_no_change),
        shares_dictionary=shares, atoms_against=SHARED_ATOMS_AGAINST if signed else 0.0,
        ovr_hinge_weight=SHARED_OVR_HINGE_WEIGHT if signed else 0.0)


def shares_dictionary(multiclass: str, n_classes: int) -> bool:
    """Whether the classes share one dictionary: "shared" with more than two classes (two classes
    train one binary head either way)."""
    return multiclass == "shared" and n_classes > 2


def _batch_size(batch_size: int | str | None, n_samples: int) -> int | None:
    if batch_size == "full":
        return None
    if batch_size is None:
        return None if n_samples < FULL_BATCH_LIMIT else MINIBATCH_SIZE
    return None if batch_size >= n_samples else int(batch_size)
