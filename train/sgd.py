"""``SGDSoftThresholdClassifier``: the paper's SGD baseline for LAST.

Same architecture, same smoothed objective (P) and same start point as :class:`LASTClassifier`,
minimised directly (no DC split) by minibatch SGD with a constant step chosen on a held-out 10 %
of the training rows, or by Adam as the modern reference. It is the comparison that shows what
DCA buys.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from sklearn.utils.validation import check_random_state

from . import distributed, objective
from .base import SoftThresholdBase, rescaled_mu, root_mean_square_norm
from .params import Options, integers
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
    n_atoms, preprocess, nu, mu, beta, eps, device, n_jobs, random_state, verbose :
        As in :class:`LASTClassifier` (one-vs-all heads with more than two classes).
    optimizer : {"sgd", "adam"}, default="sgd"
        Plain SGD (the paper's baseline) or Adam (the modern reference).
    batch_size : int, default=10
        Minibatch size (the paper's 10).
    max_iter : int, default=250000
        Iterations of the final run (the paper's budget).
    step_sizes : tuple of float or None, default=None
        Constant steps to choose from, for unit-norm rows (the step on ``U`` follows the rows'
        scale, so one grid fits any data). None: (0.1, 0.01, 0.001, 0.0001) for SGD, (0.01,
        0.001, 0.0001) for Adam.
    validation_fraction : float, default=0.1
        Held-out share used to choose the step; each candidate runs ``max_iter // 5`` iterations.

    Attributes
    ----------
    step_ : float
        The chosen step.
    step_trials_ : list of dict
        One {"step", "iterations", "validation_error"} record per trial run made (a run that
        diverged ends at the checkpoint that found it, its error inf).
    history_ : list of dict
        {"objective", "iteration", "time"} records of the final run (objective of (P) on all
        training rows, summed over heads).
    n_iter_ : int
        Steps of the run kept (``max_iter`` unless a monitor stopped it).
    classes_, n_features_in_, dictionary_, coef_, fit_time_, model_ :
        As in :class:`LASTClassifier`.

    Notes
    -----
    On rows of mean squared l2 norm ``r**2`` the step on ``U`` is multiplied by ``1 / r**2`` (SGD)
    or ``1 / r`` (Adam, whose ``eps`` on ``U`` is multiplied by ``r``), the step on ``v`` is not:
    the start atoms scale like ``1 / r`` and the gradient in ``U`` like ``r``, so training on
    ``c * X`` gives the same classifier as on ``X``. Rows of a scale float32 cannot follow so (near
    1e38 or 1e-38) are trained on divided by ``r``, the same descent
    (:func:`~lastedge.train.base.training_scale`).
    """

    _parameter_constraints: dict[str, list] = {
        **SoftThresholdBase._parameter_constraints,
        "optimizer": [Options(tuple(DEFAULT_STEPS))],
        "batch_size": [integers(1)],
        "max_iter": [integers(1)],
    }

    def __init__(self, n_atoms: int = 100, *, preprocess: str = "auto", optimizer: str = "sgd",
                 nu: float = 1.0, mu: float = 0.0, beta: float = 100.0, eps: float = 1e-4, batch_size: int = 10,
                 max_iter: int = 250_000, step_sizes: tuple[float, ...] | None = None,
                 validation_fraction: float = 0.1, device: str = "cpu",
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
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, monitor: Monitor | None = None) -> "SGDSoftThresholdClassifier":
        """Choose the step on a held-out split, then train on all rows with it.

        ``monitor(k, estimator)``, if given, is called at every checkpoint ``k`` (counted from 0) of
        each run: every ``ceil(n / 50)`` of its ``n`` steps, where the final run records
        ``history_[k]``, with the estimator holding the run's iterate (``predict`` works), as
        LASTClassifier's monitor is after each DCA iteration. Returning True stops training there
        and keeps the best model so far, so that a time budget or Ctrl-C (``lastedge train``) loses
        nothing: in the final run its iterate, ``n_iter_`` steps long; in the step trials, whose
        iterates are trained on the rows not held out, the trial run of lowest hold-out error among
        those finished and the one stopped (its iterate scored as the finished ones), which makes
        ``step_`` and ``n_iter_``; ``history_`` is then empty, as no final run began.
        """
        self._check_params()
        if distributed.is_distributed():
            raise ValueError("SGDSoftThresholdClassifier trains in one process; with torch.distributed "
                             "initialised on several ranks, only LASTClassifier trains (data-parallel)")
        start = time.perf_counter()
        X, y_index = self._validate_fit_data(X, y)
        rng = check_random_state(self.random_state)
        Z, row_scale, targets, groups, U0, v0 = self._prepare(X, y_index, rng)
        mu = rescaled_mu(self.mu, row_scale)
        steps, trial_iter = step_trials(self)
        r = root_mean_square_norm(Z)
        held_out = rng.rand(len(Z)) < self.validation_fraction
        if held_out.all() or not held_out.any():
            held_out[:] = False
            held_out[rng.randint(len(Z))] = True
        seed = int(rng.randint(2**31 - 1))
        watch = None if monitor is None else self._watcher(monitor, groups, row_scale, start)
        with self._torch_session() as device:
            tensors = [torch.as_tensor(a, device=device) for a in (Z, targets, groups, U0, v0)]
            Zt, Tt, Gt, U0t, v0t = tensors
            fit_rows, val_rows = torch.as_tensor(~held_out), torch.as_tensor(held_out)
            self.step_trials_, best = [], None
            for step in steps:
                trial = self._descend(Zt[fit_rows], Tt[:, fit_rows], Gt, U0t, v0t, step, r, mu,
                                      trial_iter, seed, progress=None, watch=watch)
                error = _error_rate(Zt[val_rows], Tt[:, val_rows], trial.U, trial.v, Gt)
                self.step_trials_.append({"step": step, "iterations": trial.steps, "validation_error": error})
                if best is None or error < best[0]:  # ties keep the first, as an argmin
                    best = (error, step, trial)
                if trial.stopped:
                    break
            _, self.step_, run = best
            stopped = trial.stopped
            if not stopped:
                with progress_bar(_CHECKPOINTS, f"{self.optimizer.upper()} baseline", self.verbose) as report:
                    run = self._descend(Zt, Tt, Gt, U0t, v0t, self.step_, r, mu, int(self.max_iter), seed,
                                        progress=report, watch=watch)
                stopped = run.stopped
        self.history_ = run.history
        _check_not_diverged(run.U, run.v, self.step_)
        self.n_iter_ = run.steps if stopped else int(self.max_iter)
        self._store_solution(run.U.cpu().numpy(), run.v.cpu().numpy(), groups, time.perf_counter() - start,
                             row_scale)
        return self

    def _watcher(self, monitor: Monitor, groups: np.ndarray, row_scale: float,
                 start: float) -> Callable[[int, torch.Tensor, torch.Tensor], bool]:
        """``watch(k, U, v)`` for :meth:`_descend`: the estimator takes the iterate, then the
        monitor says whether to stop."""
        def watch(k: int, U: torch.Tensor, v: torch.Tensor) -> bool:
            self._store_solution(U.cpu().numpy(), v.cpu().numpy(), groups, time.perf_counter() - start,
                                 row_scale)
            return bool(monitor(k, self))

        return watch

    def _descend(self, Z, targets, groups, U0, v0, step, r, mu, n_iter, seed, progress, watch) -> _Run:
        """Projected minibatch descent on (P) / m with weight decay ``mu``, ``r`` the rows' scale,
        for ``n_iter`` steps unless ``watch(k, U, v)`` says stop at checkpoint ``k``.

        Each step takes the closed-form gradient (:func:`~lastedge.train.objective.loss_gradient`)
        and updates in place: a minibatch of 10 rows costs little arithmetic, so autograd and
        ``torch.optim`` were most of a step. Divergence is looked for at the checkpoints only (a
        test every step waited on its result): a run whose atoms are no longer finite there ends,
        its record counting the steps up to that checkpoint, and validation rejects it.
        """
        # [H, n, N] in the memory layout of [n, H, N]: the one product of all heads' atoms
        # (objective.head_products) then reads U as it is, where a copy of U cost as much as it
        U = U0.transpose(0, 1).clone(memory_format=torch.contiguous_format).transpose(0, 1)
        v = v0.clone()
        update = _adam_update(U, v, step, r) if self.optimizer == "adam" else _sgd_update(U, v, step, r)
        m = Z.shape[0]
        batch = min(int(self.batch_size), m)
        batches = minibatch_indices(m, batch, n_iter, torch.Generator().manual_seed(seed), Z.device)
        checkpoint = math.ceil(n_iter / _CHECKPOINTS)  # at most _CHECKPOINTS records, as the bar shows
        history, start = [], time.perf_counter()
        for t, rows in enumerate(batches, start=1):
            dU, dv = objective.loss_gradient(Z.index_select(0, rows), targets.index_select(1, rows), U, v,
                                             groups, self.beta)
            # the minibatch's mean loss and (regulariser / m), summed over heads, as autograd had it
            dU.div_(batch)
            if mu:
                dU.add_(U, alpha=mu / m)
            update(dU, dv.div_(batch).add_(v, alpha=self.nu / m))
            v.clamp_(min=self.eps)
            if not (t % checkpoint == 0 or t == n_iter):
                continue
            if not torch.isfinite(U).all():
                break  # the step diverged: keep the record, validation rejects it
            if progress is not None:
                # chunked over rows: one [H, m, N] tensor of all rows would not fit MNIST-size data
                value = full_objective(Data(Z, targets, groups), U, v, self.beta, self.nu, mu).sum()
                history.append({"objective": float(value), "iteration": t,
                                "time": time.perf_counter() - start})
                progress(len(history) - 1, value)
            if watch is not None and watch(-(-t // checkpoint) - 1, U, v):
                return _Run(U, v, history, t, stopped=True)
        return _Run(U, v, history, t, stopped=False)


_Update = Callable[[torch.Tensor, torch.Tensor], None]


def _sgd_update(U: torch.Tensor, v: torch.Tensor, step: float, r: float) -> _Update:
    """``update(dU, dv)``: a plain gradient step, in place. U's gradient scales like r and U like
    1 / r, so its step is ``step / r**2``."""
    def update(dU: torch.Tensor, dv: torch.Tensor) -> None:
        U.add_(dU, alpha=-step / r**2)
        v.add_(dv, alpha=-step)

    return update


def _adam_update(U: torch.Tensor, v: torch.Tensor, step: float, r: float) -> _Update:
    """``update(dU, dv)``: an Adam step in place, as ``torch.optim.Adam`` (defaults, no weight
    decay) computes it. U's step and ``eps`` follow the rows' scale: ``step / r`` and
    ``ADAM_EPS * r``."""
    beta1, beta2 = 0.9, 0.999
    params = ((U, step / r, ADAM_EPS * r), (v, step, ADAM_EPS))
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p, _, _ in params]
    count = 0

    def update(dU: torch.Tensor, dv: torch.Tensor) -> None:
        nonlocal count
        count += 1
        bias_correction1 = 1 - beta1**count
        bias_correction2_sqrt = (1 - beta2**count) ** 0.5
        for (p, lr, eps), (first, second), grad in zip(params, moments, (dU, dv)):
            first.lerp_(grad, 1 - beta1)
            second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            p.addcdiv_(first, (second.sqrt() / bias_correction2_sqrt).add_(eps),
                       value=-lr / bias_correction1)

    return update


def step_trials(estimator: SGDSoftThresholdClassifier) -> tuple[tuple[float, ...], int]:
    """``(steps, iterations)``: the trial runs ``estimator.fit`` makes, one per candidate step,
    each ``max_iter // 5`` steps long (at least 1), before its final run."""
    steps = DEFAULT_STEPS[estimator.optimizer] if estimator.step_sizes is None else tuple(estimator.step_sizes)
    return steps, max(1, int(estimator.max_iter) // 5)


class _Run(NamedTuple):
    """Where one descent ended: its iterate, objective records, steps taken, and whether the
    monitor stopped it (a diverged run ends early unstopped)."""

    U: torch.Tensor
    v: torch.Tensor
    history: list[dict[str, float]]
    steps: int
    stopped: bool


Monitor = Callable[[int, SGDSoftThresholdClassifier], bool | None]


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
