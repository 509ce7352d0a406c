"""DCA, the difference-of-convex algorithm of LAST, over a batch of heads.

Each iteration linearises ``h`` at the current point and hands the convex sub-problem to an inner
solver (:mod:`.solvers`), warm-started there. Heads stop independently, by the paper's rule: every
entry of ``Omega = [U; v^T]`` changed by at most ``tol`` in absolute or relative terms. In
full-batch mode a step is accepted only if the objective of (P), accumulated in float64, did not
rise; otherwise the head keeps its point and stops (the sub-problem could not be improved, which is
DCA's own convergence criterion). So the recorded full-batch objective never rises. In minibatch
mode a solve that found nothing better than its warm start is retried with a smaller step, up to
``MINIBATCH_RETRIES`` times in a row, before the head stops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable

import torch

from .solvers import InnerSolver, LBFGSSolver
from .subproblem import Data, SubProblem, objective_and_h_gradient

Tensor = torch.Tensor


@dataclass(frozen=True)
class DCASettings:
    """The paper's knobs (names as in the estimator)."""

    nu: float
    beta: float
    eps: float
    max_dca_iter: int
    tol: float
    inner_solver: InnerSolver | LBFGSSolver
    mu: float = 0.0


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


# Minibatch mode: DCA iterations in a row whose solve returned its warm start before a head stops
# (each retry has a 10x smaller step; measured on MNIST, stopping at the first one ended training
# while the test error was still falling).
MINIBATCH_RETRIES = 3

# Called after DCA iteration k with (k, objectives [H], U, v); returning True stops DCA there.
IterationHook = Callable[[int, Tensor, Tensor, Tensor], bool | None]


def run_dca(data: Data, U: Tensor, v: Tensor, settings: DCASettings, seed: int,
            on_iteration: IterationHook | None = None) -> DCAResult:
    """Run DCA from ``(U, v)``; ``on_iteration`` sees every iterate and may stop the run."""
    n_heads = U.shape[0]
    start = time.perf_counter()
    full_batch = settings.inner_solver.batch_size is None
    U, v = U.clone(), v.clone()
    objective, A, b = objective_and_h_gradient(data, U, v, settings.beta, settings.nu, settings.mu)
    history: list[list[dict]] = [[] for _ in range(n_heads)]
    converged = torch.zeros(n_heads, dtype=torch.bool)
    stalls = torch.zeros(n_heads, dtype=torch.long)
    for k in range(settings.max_dca_iter):
        active = torch.nonzero(~converged).flatten()
        if active.numel() == 0:
            break
        heads = active.to(U.device)
        sub_data = Data(data.X, data.targets[heads], data.groups[heads])
        problem = SubProblem(sub_data, U[heads], v[heads], settings.beta, settings.nu, settings.eps,
                             settings.mu, h_grad=(A[heads], b[heads]))
        new_U, new_v, step = settings.inner_solver.solve(problem, U[heads], v[heads], seed + 7919 * k, heads)
        new_objective, new_A, new_b = objective_and_h_gradient(sub_data, new_U, new_v, settings.beta,
                                                                settings.nu, settings.mu)
        if full_batch:
            rose = new_objective > objective[heads]
            new_U = torch.where(rose[:, None, None], U[heads], new_U)
            new_v = torch.where(rose[:, None], v[heads], new_v)
            new_objective = torch.where(rose, objective[heads], new_objective)
            new_A = torch.where(rose[:, None, None], A[heads], new_A)
            new_b = torch.where(rose[:, None], b[heads], new_b)
        change = parameter_change(U[heads], v[heads], new_U, new_v)
        U[heads], v[heads], A[heads], b[heads] = new_U, new_v, new_A, new_b
        objective[heads] = new_objective
        elapsed = time.perf_counter() - start
        for i, head in enumerate(active.tolist()):
            history[head].append({"objective": float(new_objective[i]), "step": float(step[i]),
                                  "change": float(change[i]), "time": elapsed})
        done = (change <= settings.tol).cpu()
        if not full_batch:
            # A minibatch solve that found nothing better than its warm start returns it unchanged
            # (change 0); its solver shrinks the step for the next try, so that is not yet a stop.
            stalled = (change == 0).cpu()
            stalls[active] = torch.where(stalled, stalls[active] + 1, 0)
            done &= ~stalled | (stalls[active] >= MINIBATCH_RETRIES)
        converged[active] = done
        if on_iteration is not None and on_iteration(k, objective, U, v):
            break
    return DCAResult(U, v, history, converged.tolist())
