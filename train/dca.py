"""DCA, the difference-of-convex algorithm of LAST, over a batch of heads.

Each iteration linearises ``h`` at the current point and hands the convex sub-problem to an inner
solver (:mod:`.solvers`), warm-started there. The sub-problem is a convex majoriser of (P) that is
tight at the current point: the paper's ``g - <grad h, .>`` (``surrogate="dc"``) or the tighter
``"tight"`` one (:func:`objective.tight_data_weights`); either way the objective cannot rise when
the sub-problem is solved. With ``line_search`` the step to the sub-problem's solution is then
stretched while (P) keeps falling (:func:`extrapolated_point`, boosted DCA).

Heads stop independently. In full batch, by the paper's rule: every entry of
``Omega = [U; v^T]`` changed by at most ``tol`` in absolute or relative terms. A full-batch step is
accepted only if the objective of (P), accumulated in float64, did not rise; otherwise the head
keeps its point and stops (the sub-problem could not be improved, which is DCA's own convergence
criterion). So the recorded full-batch objective never rises.

On minibatches the paper's rule rarely fires: Adam's noisy steps keep moving some entry by more
than ``tol`` until the step has been cut 10-100x. There a head stops as scikit-learn's
stochastic estimators do: when its objective of (P) per training row (exact, over all rows) has
not fallen below its best by more than ``tol`` for ``n_iter_no_change`` DCA iterations in a row.
A solve that found nothing better than its warm start counts as such an iteration; its solver
retries with a 10x smaller step. With ``n_iter_no_change=None`` heads never stop on their own:
the caller's hold-out score decides (the estimator's early stopping).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable

import torch

from . import objective
from .solvers import Solver
from .subproblem import Data, SubProblem, full_objective, objective_and_h_gradient

Tensor = torch.Tensor


@dataclass(frozen=True)
class DCASettings:
    """The paper's knobs (names as in the estimator)."""

    nu: float
    beta: float
    eps: float
    max_dca_iter: int
    tol: float
    inner_solver: Solver
    mu: float = 0.0
    surrogate: str = "dc"
    line_search: bool = False
    # minibatch: DCA iterations without progress before a head stops; None: heads never stop on
    # their own (a hold-out score decides, as with early stopping)
    n_iter_no_change: int | None = 3


@dataclass
class DCAResult:
    U: Tensor
    v: Tensor
    history: list[list[dict]]  # one list of per-iteration records per head
    converged: list[bool]


def parameter_change(U_old: Tensor, v_old: Tensor, U_new: Tensor, v_new: Tensor) -> Tensor:
    """Per head, ``max_ij min(|dOmega_ij|, |dOmega_ij / Omega_ij|)`` with ``Omega = [U; v^T]``."""
    old = torch.cat([U_old, v_old[:, None, :]], dim=1)
    new = torch.cat([U_new, v_new[:, None, :]], dim=1)
    delta = (new - old).abs()
    relative = delta / old.abs().clamp_min(torch.finfo(old.dtype).tiny)
    return torch.minimum(delta, relative).amax(dim=(1, 2))


# The line search compares points on this many rows (a fixed random sample of larger data sets)
# and stretches a step at most this many times.
LINE_SEARCH_ROWS = 8192
MAX_EXTRAPOLATION = 1024.0


def _estimated_objective(X: Tensor, targets: Tensor, count: int, data: Data, U: Tensor, v: Tensor,
                         settings: DCASettings) -> Tensor:
    """Objective of (P) per head, its data term estimated from ``count`` rows of ``data`` (``X``,
    ``targets``: those this rank holds; float64)."""
    total = objective.regulariser(U.double(), v.double(), settings.nu, settings.mu)
    hinge = objective.hinge_losses(X, targets, U, v, data.groups, settings.beta, data.ovr_weight).double().sum(dim=1)
    return total + data.summed(hinge)[0] * (data.n_samples / count)


def extrapolated_point(data: Data, U_old: Tensor, v_old: Tensor, U_new: Tensor, v_new: Tensor,
                       settings: DCASettings, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """Boosted DCA: go on along the step ``new - old`` while the objective of (P) keeps falling.

    A majoriser's minimiser stops short of where the objective itself stops falling (measured on
    MNIST: extending the step 2 to 64 times still lowered (P)). Tries ``new + f (new - old)`` for
    f = 1, 2, 4, ... and keeps, per head, the best f (0: the DCA point itself). Returns ``(U, v, f)``.
    """
    m, index = data.n_samples, None
    if m > LINE_SEARCH_ROWS:
        generator = torch.Generator().manual_seed(seed)
        index = torch.randperm(m, generator=generator)[:LINE_SEARCH_ROWS].to(data.X.device)
    X, targets = data.rows(index)
    count = data.count(index)
    dU, dv = U_new - U_old, v_new - v_old
    best = _estimated_objective(X, targets, count, data, U_new, v_new, settings)
    best_factor = torch.zeros_like(best)
    factor = 1.0
    while factor <= MAX_EXTRAPOLATION:
        value = _estimated_objective(X, targets, count, data, U_new + factor * dU,
                                     (v_new + factor * dv).clamp_min(settings.eps), settings)
        better = value < best
        if not bool(better.any()):
            break
        best = torch.where(better, value, best)
        best_factor = torch.where(better, factor, best_factor)
        factor *= 2
    f = best_factor.to(U_new.dtype)
    return U_new + f[:, None, None] * dU, (v_new + f[:, None] * dv).clamp_min(settings.eps), best_factor


class _ProgressTracker:
    """The minibatch stopping rule (module docstring): per head, the best objective of (P) so far and
    the DCA iterations since it last fell by more than ``tol`` per training row."""

    def __init__(self, objective: Tensor, n_rows: int, settings: DCASettings):
        self.best = objective.clone()
        self.margin = settings.tol * n_rows
        self.patience = settings.n_iter_no_change
        self.since_progress = torch.zeros(objective.shape[0], dtype=torch.long)

    def stalled(self, heads: Tensor, objective: Tensor) -> Tensor:
        """Record the new objective of ``heads``; return which of them have stopped progressing."""
        progressed = objective < self.best[heads] - self.margin
        self.since_progress[heads] = torch.where(progressed, 0, self.since_progress[heads] + 1)
        self.best[heads] = torch.minimum(self.best[heads], objective)
        return self.since_progress[heads] >= self.patience


# Called after DCA iteration k with (k, objectives [H], U, v); returning True stops DCA there.
IterationHook = Callable[[int, Tensor, Tensor, Tensor], bool | None]


def _evaluate(data: Data, U: Tensor, v: Tensor, settings: DCASettings
              ) -> tuple[Tensor, tuple[Tensor, Tensor] | None]:
    """Objective of (P) per head and, for the "dc" surrogate, ``grad h`` (from the same pass)."""
    if settings.surrogate == "dc":
        value, A, b = objective_and_h_gradient(data, U, v, settings.beta, settings.nu, settings.mu)
        return value, (A, b)
    return full_objective(data, U, v, settings.beta, settings.nu, settings.mu), None


def run_dca(data: Data, U: Tensor, v: Tensor, settings: DCASettings, seed: int,
            on_iteration: IterationHook | None = None, iterations_done: int = 0) -> DCAResult:
    """Run DCA from ``(U, v)``; ``on_iteration`` sees every iterate and may stop the run.

    ``iterations_done``: DCA iterations of an earlier run that this one continues (a warm start):
    its minibatches and line searches follow on from that run's, as one longer run's would.
    """
    n_heads = U.shape[0]
    start = time.perf_counter()
    full_batch = settings.inner_solver.batch_size is None
    U, v = U.clone(), v.clone()
    objective, h_grad = _evaluate(data, U, v, settings)
    history: list[list[dict]] = [[] for _ in range(n_heads)]
    converged = torch.zeros(n_heads, dtype=torch.bool)
    stops_on_objective = not full_batch and settings.n_iter_no_change is not None
    progress = _ProgressTracker(objective.cpu(), data.n_samples, settings) if stops_on_objective else None
    for k in range(settings.max_dca_iter):
        active = torch.nonzero(~converged).flatten()
        if active.numel() == 0:
            break
        heads = active.to(U.device)
        sub_data = data.heads(heads)
        problem = SubProblem(sub_data, U[heads], v[heads], settings.beta, settings.nu, settings.eps,
                             settings.mu, h_grad=None if h_grad is None else (h_grad[0][heads], h_grad[1][heads]),
                             surrogate=settings.surrogate)
        new_U, new_v, step = settings.inner_solver.solve(problem, U[heads], v[heads], seed + 7919 * (iterations_done + k), heads)
        factor = torch.zeros_like(step)
        if settings.line_search:
            new_U, new_v, factor = extrapolated_point(sub_data, U[heads], v[heads], new_U, new_v,
                                                      settings, seed + 7919 * (iterations_done + k))
        new_objective, new_h_grad = _evaluate(sub_data, new_U, new_v, settings)
        if full_batch:  # keep the old point where the objective rose (cannot happen in exact DCA)
            kept = new_objective > objective[heads]
            new_U = torch.where(kept[:, None, None], U[heads], new_U)
            new_v = torch.where(kept[:, None], v[heads], new_v)
            new_objective = torch.where(kept, objective[heads], new_objective)
            if h_grad is not None:
                new_h_grad = (torch.where(kept[:, None, None], h_grad[0][heads], new_h_grad[0]),
                              torch.where(kept[:, None], h_grad[1][heads], new_h_grad[1]))
        change = parameter_change(U[heads], v[heads], new_U, new_v)
        U[heads], v[heads], objective[heads] = new_U, new_v, new_objective
        if h_grad is not None:
            h_grad[0][heads], h_grad[1][heads] = new_h_grad
        elapsed = time.perf_counter() - start
        for i, head in enumerate(active.tolist()):
            history[head].append({"objective": float(new_objective[i]), "step": float(step[i]),
                                  "extrapolation": float(factor[i]), "change": float(change[i]),
                                  "time": elapsed})
        if full_batch:
            converged[active] = (change <= settings.tol).cpu()
        elif progress is not None:
            converged[active] = progress.stalled(active, new_objective.cpu())
        if on_iteration is not None and on_iteration(k, objective, U, v):
            break
    return DCAResult(U, v, history, converged.tolist())
