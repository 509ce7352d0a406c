"""L-BFGS-B on the full-batch DCA sub-problem: no step size to choose."""

from __future__ import annotations

import math

import torch

from .subproblem import SubProblem

Tensor = torch.Tensor


class LBFGSSolver:
    """L-BFGS-B (scipy) on the full-batch sub-problem, in float64, with the bound ``v >= eps``.

    The sub-problem is smooth except where a sample's two group scores tie, so a quasi-Newton
    method copes with its curvature (softplus with beta = 100 is very sharp) far better than
    fixed-step first-order methods. Its line search only accepts decreasing points, so the result is
    never worse than the warm start. Full batch only.
    """

    method = "lbfgs"
    # BLAS threads while L-BFGS-B runs (None: the BLAS's own setting). Its updates are vector
    # operations of a few ten thousand entries, too small to share out; OpenBLAS's threads (scipy's
    # own copy) fought torch's for the cores and made n_jobs=2 fits ~3x slower than with one BLAS
    # thread (benchmarks/lbfgs_blas_threads.py). One thread also makes a fit independent of the
    # machine's core count (the summation order of L-BFGS-B's dot products follows the threads).
    blas_threads: int | None = 1

    def __init__(self, n_iter: int, eps: float, atom_unit: float = 1.0):
        """``atom_unit``: L-BFGS-B sees ``U / atom_unit`` (see :func:`lbfgs_atom_unit`)."""
        self.n_iter, self.eps, self.atom_unit = n_iter, eps, atom_unit
        self.batch_size = None

    def to(self, device: torch.device | str) -> LBFGSSolver:
        """This solver (it carries nothing between DCA iterations)."""
        return self

    def solve(self, problem: SubProblem, U0: Tensor, v0: Tensor, seed: int,
              heads: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Return ``(U, v, iterations)`` (per head, the iterations run; heads are solved jointly)."""
        import numpy as np
        from scipy.optimize import Bounds, minimize
        from threadpoolctl import threadpool_limits

        shape_U, n_U = U0.shape, U0.numel()
        dtype, device = U0.dtype, U0.device

        unit = self.atom_unit

        def unpack(x: np.ndarray) -> tuple[Tensor, Tensor]:
            flat = torch.from_numpy(x).to(device)
            return flat[:n_U].view(shape_U) * unit, flat[n_U:].view(v0.shape)

        def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
            U, v = unpack(x)
            value, dU, dv = problem.value_and_grad(U.to(dtype), v.to(dtype))
            grad = torch.cat([dU.reshape(-1) * unit, dv.reshape(-1)]).double().cpu().numpy()
            return float(value.sum()), grad

        x0 = torch.cat([U0.reshape(-1).double() / unit, v0.reshape(-1).double()]).cpu().numpy()
        # arrays, not a list of pairs: converting 58000 pairs cost ~0.2 s a call at N = 400
        bounds = Bounds(np.concatenate([np.full(n_U, -np.inf), np.full(v0.numel(), self.eps)]), np.inf)
        with threadpool_limits(limits=self.blas_threads, user_api="blas"):
            result = minimize(value_and_grad, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                              options={"maxiter": self.n_iter, "maxcor": 10})
            start_is_better = result.fun > value_and_grad(x0)[0]
        U, v = unpack(x0 if start_is_better else result.x)
        iterations = torch.full((U0.shape[0],), float(result.nit), dtype=dtype, device=device)
        return U.to(dtype), v.to(dtype), iterations


def lbfgs_atom_unit(row_norm: float) -> float:
    """The unit of ``U`` that L-BFGS-B sees for rows of root-mean-square norm ``row_norm``:
    ``1 / row_norm``, and exactly 1 for unit-norm rows (to float32 rounding).

    The atoms scale like ``1 / r`` and their gradient like ``r``, and L-BFGS-B's stopping tests
    and first step are absolute: on raw digits times 1e-9 it stopped at once (every row one
    class). In units of ``1 / r`` every scale of the rows gives L-BFGS-B the same problem (rows
    that ``base.training_scale`` divides by ``r`` too), and unit-norm rows keep their results bit
    for bit.
    """
    if not 0 < row_norm < math.inf or abs(row_norm - 1.0) <= 1e-6:
        return 1.0
    return 1.0 / row_norm
