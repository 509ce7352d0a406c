"""``SGDSoftThresholdClassifier``: the paper's SGD baseline for LAST.

Same architecture, same smoothed objective (P) and same start point as :class:`LASTClassifier`,
minimised directly (no DC split) by minibatch SGD with a constant step chosen on a held-out 10 %
of the training rows, or by Adam as the modern reference. It is the comparison that shows what
DCA buys.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from sklearn.utils.validation import check_random_state

from . import objective
from .base import SoftThresholdBase, rescaled_mu, root_mean_square_norm
from .params import check_number
from .progress import progress_bar
from .solvers import minibatch_indices
from .subproblem import Data, full_objective

DEFAULT_STEPS = {"sgd": (0.1, 0.01, 0.001, 0.0001), "adam": (0.01, 0.001, 0.0001)}
_CHECKPOINTS = 50  # objective evaluations recorded in ``history_``
ADAM_EPS = 1e-8  # torch's default, for unit-norm rows


class SGDSoftThresholdClassifier(SoftThresholdBase):
    """Soft-threshold classifier trained by minibatch SGD (or Adam) on the smoothed objective.

    Parameters
    ----------
    n_atoms, preprocess, nu, mu, beta, eps, sign_ratio, init_active_fraction, device, n_jobs,
    random_state, verbose :
        As in :class:`LASTClassifier`.
    optimizer : {"sgd", "adam"}, default="sgd"
    batch_size : int, default=10
        Minibatch size (the paper's 10).
    max_iter : int, default=250000
        Iterations of the final run (the paper's budget).
    step_sizes : tuple of float or None
        Constant steps to choose from; None: (0.1, 0.01, 0.001, 0.0001) for SGD, (0.01, 0.001,
        0.0001) for Adam. They are the steps for unit-norm rows: on rows of mean squared l2 norm
        ``r**2`` (``preprocess="none"`` on raw pixels) the step on ``U`` is multiplied by ``1 / r**2``
        (SGD) or ``1 / r`` (Adam, whose ``eps`` on ``U`` is multiplied by ``r``), the step on ``v``
        is not. The start atoms scale like ``1 / r`` and the gradient in ``U`` like ``r``, so
        training on ``c * X`` gives the same classifier as on ``X``: one grid fits any data scale.
        Rows of a scale float32 cannot follow so (near 1e38 or 1e-38) are trained on divided by
        ``r``, the same descent (see :func:`~lastedge.train.base.training_scale`).
    validation_fraction : float, default=0.1
        Held-out share used to choose the step; each candidate runs ``max_iter // 5`` iterations.

    Attributes
    ----------
    step_ : the chosen step; history_ : list of {"objective", "iteration", "time"} records
    (objective of (P) on all training rows, summed over heads); plus those of LASTClassifier.
    """

    def __init__(self, n_atoms: int = 100, *, preprocess: str = "l2", optimizer: str = "sgd",
                 nu: float = 1.0, mu: float = 0.0, beta: float = 100.0, eps: float = 1e-4, batch_size: int = 10,
                 max_iter: int = 250_000, step_sizes: tuple[float, ...] | None = None,
                 validation_fraction: float = 0.1, sign_ratio: str | float = "auto",
                 init_active_fraction: float | None = 0.05, device: str = "cpu",
                 n_jobs: int | None = 1, random_state=None, verbose: int = 1):
        self.n_atoms = n_atoms
        self.preprocess = preprocess
        self.optimizer = optimizer
        self.nu = nu
        self.mu = mu
        self.beta = beta
        self.eps = eps
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.step_sizes = step_sizes
        self.validation_fraction = validation_fraction
        self.sign_ratio = sign_ratio
        self.init_active_fraction = init_active_fraction
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> None:
        super()._check_params()
        if self.optimizer not in DEFAULT_STEPS:
            raise ValueError(f"optimizer must be one of {tuple(DEFAULT_STEPS)}, got {self.optimizer!r}")
        for name in ("max_iter", "batch_size"):
            check_number(self, name, integer=True, low=1)
        check_number(self, "validation_fraction", low=0, high=1, open_low=True, open_high=True)

    def fit(self, X, y) -> "SGDSoftThresholdClassifier":
        """Choose the step on a held-out split, then train on all rows with it."""
        self._check_params()
        start = time.perf_counter()
        X, y_index = self._validate_fit_data(X, y)
        rng = check_random_state(self.random_state)
        Z, row_scale, targets, groups, U0, v0 = self._prepare(X, y_index, rng)
        mu = rescaled_mu(self.mu, row_scale)
        steps = DEFAULT_STEPS[self.optimizer] if self.step_sizes is None else tuple(self.step_sizes)
        r = root_mean_square_norm(Z)
        held_out = rng.rand(len(Z)) < self.validation_fraction
        if held_out.all() or not held_out.any():
            held_out[:] = False
            held_out[rng.randint(len(Z))] = True
        seed = int(rng.randint(2**31 - 1))
        with self._torch_session() as device:
            tensors = [torch.as_tensor(a, device=device) for a in (Z, targets, groups, U0, v0)]
            Zt, Tt, Gt, U0t, v0t = tensors
            fit_rows, val_rows = torch.as_tensor(~held_out), torch.as_tensor(held_out)
            trial_iter = max(1, int(self.max_iter) // 5)
            errors = []
            for step in steps:
                U, v, _ = self._descend(Zt[fit_rows], Tt[:, fit_rows], Gt, U0t, v0t, step, r, mu,
                                        trial_iter, seed, progress=None)
                errors.append(_error_rate(Zt[val_rows], Tt[:, val_rows], U, v, Gt))
            self.step_ = steps[int(np.argmin(errors))]
            with progress_bar(_CHECKPOINTS, f"{self.optimizer.upper()} baseline", self.verbose) as report:
                U, v, self.history_ = self._descend(Zt, Tt, Gt, U0t, v0t, self.step_, r, mu,
                                                    int(self.max_iter), seed, progress=report)
        _check_not_diverged(U, v, self.step_)
        self.n_iter_ = int(self.max_iter)
        self._store_solution(U.cpu().numpy(), v.cpu().numpy(), groups, time.perf_counter() - start,
                             row_scale)
        return self

    def _descend(self, Z, targets, groups, U0, v0, step, r, mu, n_iter, seed, progress):
        """Projected minibatch descent on (P) / m with weight decay ``mu``, ``r`` the rows' scale;
        returns (U, v, objective history)."""
        U = U0.clone().requires_grad_(True)
        v = v0.clone().requires_grad_(True)
        # U's gradient scales like r and U like 1 / r: its step (and Adam's eps) follow the scale
        if self.optimizer == "adam":
            optimizer = torch.optim.Adam([{"params": [U], "lr": step / r, "eps": ADAM_EPS * r},
                                          {"params": [v]}], lr=step, eps=ADAM_EPS)
        else:
            optimizer = torch.optim.SGD([{"params": [U], "lr": step / r**2}, {"params": [v]}], lr=step)
        m = Z.shape[0]
        batches = minibatch_indices(m, min(int(self.batch_size), m), n_iter,
                                    torch.Generator().manual_seed(seed), Z.device)
        checkpoint = math.ceil(n_iter / _CHECKPOINTS)  # at most _CHECKPOINTS records, as the bar shows
        history, start = [], time.perf_counter()
        for t, rows in enumerate(batches, start=1):
            loss = objective.hinge_losses(Z[rows], targets[:, rows], U, v, groups, self.beta).mean(1)
            loss = (loss + objective.regulariser(U, v, self.nu, mu) / m).sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                v.clamp_(min=self.eps)
                if not torch.isfinite(U).all():
                    break  # the step diverged: keep the record, validation rejects it
            if progress is not None and (t % checkpoint == 0 or t == n_iter):
                with torch.no_grad():
                    # chunked over rows: one [H, m, N] tensor of all rows would not fit MNIST-size data
                    value = full_objective(Data(Z, targets, groups), U, v, self.beta, self.nu, mu).sum()
                history.append({"objective": float(value), "iteration": t,
                                "time": time.perf_counter() - start})
                progress(len(history) - 1, value)
        return U.detach(), v.detach(), history


def _check_not_diverged(U: torch.Tensor, v: torch.Tensor, step: float) -> None:
    """A ValueError when the final run diverged (every candidate step may diverge): its model's
    atoms ``D = U / v`` or weights ``v`` would hold infinities or NaNs."""
    if not (torch.isfinite(v).all() and torch.isfinite(U / v[:, None, :]).all()):
        raise ValueError(f"training diverged with step {step:g} (the atoms overflowed); give smaller "
                         "step_sizes")


def _error_rate(Z, targets, U, v, groups) -> float:
    """Validation error of the exact soft-threshold scores (inf if the run diverged)."""
    if not (torch.isfinite(U).all() and torch.isfinite(v).all()):
        return float("inf")
    with torch.no_grad():
        S = torch.relu(objective.pre_activations(Z, U, v)) @ groups  # [H, m, 2]
        scores = S[..., 1] - S[..., 0]  # [H, m]
        if scores.shape[0] == 1:
            wrong = (scores[0] > 0).long() != targets[0]
        else:
            wrong = scores.argmax(0) != targets.argmax(0)
    return float(wrong.float().mean())
