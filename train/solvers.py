"""First-order solvers for the convex DCA sub-problem, with the paper's step-size protocol.

Both solvers are projected (``v >= eps``), warm-started at the current DCA iterate, and follow
the paper's schedule ``rho_t = min(rho, rho * t0 / t)`` with ``t0 = T / 10``. The base step
``rho`` is chosen per head by running the first ``T / 20`` iterations (minibatch Adam: at least
50, see ``_ADAM_MINIBATCH_TRIAL``) with every candidate and keeping the one with the smallest
sub-objective. Two fixes to the literal protocol:

- **Bracketing.** How large a step is depends on the scale of the objective and the data, so a
  fixed grid need not contain the best step. When a head's winner is the largest (smallest)
  candidate, the grid is extended by a factor 10 in that direction, up to ``max_extensions`` times;
  when no candidate improved on the warm start at all (ties would otherwise go to the largest,
  diverging step), it is extended downwards. Minibatch Adam never extends upwards: its steps are
  already relative to each block's scale, and it carries the winner through every later DCA
  iteration, where a step above the grid that won a trial from the start point is too large
  (``_extends_upwards``).
- **Selection on a fixed evaluation set.** In minibatch mode the candidates are compared on the
  same fixed sample of rows, not on their last noisy minibatch.

On minibatches Adam carries its moments and step from one DCA iteration to the next instead of
re-running the trials (:class:`_AdamMemory` says why).

Every solve returns the best iterate it saw (the warm start included), so on the rows it is judged
on the result is never worse than the warm start: the sub-problem's value decreases, which is
what DCA's descent property needs.

- ``"subgradient"``: the paper's projected (stochastic) subgradient descent.
- ``"adam"``: Adam on the same sub-problem, with steps relative to each block's scale (the atoms'
  root-mean-square entry for ``U``, the thresholds' for ``v``), so one grid serves every scaling
  of the data.
- ``"lbfgs"``: L-BFGS-B on the full-batch sub-problem (:class:`LBFGSSolver`); no step to choose.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from .lbfgs import LBFGSSolver
from .subproblem import SubProblem

Tensor = torch.Tensor

DEFAULT_STEPS = {"subgradient": (0.1, 0.01, 0.001), "adam": (0.03, 0.01, 0.003)}
_EVAL_ROWS = 4096  # rows of the fixed evaluation sample in minibatch mode
_INDEX_BLOCK = 2**20  # minibatch row indices drawn and copied to the device at once (8 MiB)
_ADAM_BETAS = (0.9, 0.999)
# Shortest step trial of minibatch Adam, five times its momentum horizon 1 / (1 - beta1). Shorter
# trials judge Adam's start-up (its first steps move every coordinate by the full step), which
# favours too small steps. Minibatch Adam runs its trials once, so longer ones cost little.
_ADAM_MINIBATCH_TRIAL = 50


@dataclass
class _Run:
    """One trajectory: current point, solver state and best point, each with heads first."""

    U: Tensor
    v: Tensor
    best_U: Tensor
    best_v: Tensor
    best_value: Tensor
    moments: list[Tensor] = field(default_factory=list)

    def tensors(self) -> list[Tensor]:
        return [self.U, self.v, self.best_U, self.best_v, self.best_value, *self.moments]

    @classmethod
    def from_tensors(cls, tensors: list[Tensor]) -> "_Run":
        U, v, best_U, best_v, best_value, *moments = tensors
        return cls(U, v, best_U, best_v, best_value, moments)

    def remember(self, value: Tensor, U: Tensor, v: Tensor) -> None:
        """Keep ``(U, v)`` as the best point of each head where ``value`` improves on it."""
        better = value < self.best_value
        if bool(better.any()):
            self.best_value = torch.where(better, value, self.best_value)
            self.best_U = torch.where(better[:, None, None], U, self.best_U)
            self.best_v = torch.where(better[:, None], v, self.best_v)


def _pick_per_head(runs: list[_Run], winner: Tensor) -> _Run:
    """Assemble one run whose head h comes from ``runs[winner[h]]``."""
    heads = torch.arange(winner.shape[0], device=winner.device)
    columns = zip(*(run.tensors() for run in runs))
    return _Run.from_tensors([torch.stack(column)[winner, heads] for column in columns])


@dataclass
class _AdamMemory:
    """What minibatch Adam carries from one DCA iteration to the next, heads first.

    Consecutive sub-problems differ only in their linear term, so the moments stay good estimates.
    Restarting them costs more than it seems: fresh Adam's first steps move every coordinate by the
    full step, so the short step trials of a later DCA iteration (T / 20 noisy steps from a point
    that is already nearly optimal) all look worse than the warm start, the bracketing rule then
    shrinks the step 10x per iteration, and DCA stalls. The first solve chooses the step by trials;
    later ones reuse it.
    """

    moments: list[Tensor]
    rate: Tensor
    t: int


def subgradient_atom_scale(row_norm: float) -> float:
    """The subgradient solver's step multiplier on ``U`` for rows of root-mean-square norm
    ``row_norm`` (``base.root_mean_square_norm``): ``1 / row_norm**2``, rounded to a power of 2.

    The paper's steps suit its unit-norm rows. ``U``'s subgradient grows like ``r`` and the atoms
    like ``1 / r``, so a step on ``U`` must shrink like ``1 / r**2`` for one grid to fit any
    scale of the data (raw rows times 1e3 fell from 85 to 73 % training accuracy on an easy
    problem: the bracketing's three 10x extensions could not reach the step they needed). As a
    power of 2 the multiplier is exactly 1 for unit-norm rows, which keep the paper's steps bit
    for bit, and exact in float arithmetic.
    """
    mean_square = float(row_norm) ** 2
    if not 0 < mean_square < math.inf:
        return 1.0
    return 2.0 ** -round(math.log2(mean_square))


class InnerSolver:
    """Minimise a :class:`SubProblem` from a warm start; see the module docstring."""

    def __init__(self, method: str, n_iter: int, batch_size: int | None, eps: float,
                 step_sizes: tuple[float, ...] | None = None, max_extensions: int = 3,
                 atom_scale: float = 1.0):
        if method not in DEFAULT_STEPS:
            raise ValueError(f"first-order solver must be one of {tuple(DEFAULT_STEPS)}, got {method!r}")
        self.method, self.n_iter, self.batch_size, self.eps = method, n_iter, batch_size, eps
        self.step_sizes = tuple(sorted(step_sizes or DEFAULT_STEPS[method], reverse=True))
        self.max_extensions = max_extensions
        self.atom_scale = atom_scale  # subgradient's step multiplier on U (subgradient_atom_scale)
        self.checkpoint_every = max(1, n_iter // 20)  # minibatch steps between best-point checks
        # Minibatch Adam runs its step trials once and carries the winner (see _AdamMemory).
        self._carries_step = method == "adam" and batch_size is not None
        self.trial_steps = self.checkpoint_every  # steps of each step trial: the paper's T / 20
        if self._carries_step:
            self.trial_steps = min(n_iter, max(self.trial_steps, _ADAM_MINIBATCH_TRIAL))
        self.t0 = max(1, n_iter // 10)
        self._memory: _AdamMemory | None = None

    def to(self, device: torch.device | str) -> InnerSolver:
        """This solver with what it carries between DCA iterations on ``device`` (a fit keeps
        it on the CPU for ``warm_start``, whose next fit may run elsewhere)."""
        if self._memory is not None:
            memory = self._memory
            self._memory = _AdamMemory([m.to(device) for m in memory.moments], memory.rate.to(device), memory.t)
        return self

    @property
    def _extends_upwards(self) -> bool:
        """Whether the step grid may grow above its largest candidate.

        Not for minibatch Adam, which runs its trials once, from the start point, and then carries
        the winner (a carried step only shrinks). There a step above the grid wins the trial but is
        too large for the later, nearly optimal solves (heads that started above the grid scored
        worse; see the benchmarks page).
        """
        return not self._carries_step

    # ------------------------------------------------------------------ public
    def solve(self, problem: SubProblem, U0: Tensor, v0: Tensor, seed: int,
              heads: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Return ``(U, v, step)``: the best iterate per head and the base step each head used.

        ``heads`` names the heads being solved (all by default) for the state that minibatch Adam
        carries from one DCA iteration to the next (see :class:`_AdamMemory`).
        """
        eval_index = self._eval_index(problem, seed)
        scale = self._step_scale(U0, v0)
        start_value = problem.value(U0, v0, eval_index)
        if heads is None:
            heads = torch.arange(U0.shape[0], device=U0.device)
        if self._memory is not None:
            return self._resume(problem, U0, v0, start_value, scale, seed, eval_index, heads)
        grid = list(self.step_sizes)
        runs = {rho: self._trajectory(problem, U0, v0, start_value, rho, scale, seed, eval_index)
                for rho in grid}
        for _ in range(self.max_extensions):
            rho = self._extension(runs, grid, problem, eval_index, start_value)
            if rho is None:
                break
            runs[rho] = self._trajectory(problem, U0, v0, start_value, rho, scale, seed, eval_index)
        winner = self._winners(runs, grid, problem, eval_index)
        run = _pick_per_head([runs[rho] for rho in grid], winner)
        rate = torch.tensor(grid, dtype=U0.dtype, device=U0.device)[winner]
        run = self._continue(problem, run, rate, scale, self.trial_steps + 1, self.n_iter, seed + 1, eval_index)
        if self._carries_step:
            self._memory = _AdamMemory(run.moments, rate.clone(), self.n_iter)  # its steps change later
        return run.best_U, run.best_v, rate

    def _resume(self, problem: SubProblem, U0: Tensor, v0: Tensor, start_value: Tensor,
                scale: tuple[Tensor, Tensor], seed: int, eval_index: Tensor | None,
                heads: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """A later DCA iteration of minibatch Adam: the carried moments and steps, no new trials.

        A head whose solve did not improve on its warm start gets a 10x smaller step next time.
        """
        memory = self._memory
        run = _Run(U0.clone(), v0.clone(), U0.clone(), v0.clone(), start_value.clone(),
                   [moment[heads].clone() for moment in memory.moments])
        rate = memory.rate[heads]
        run = self._continue(problem, run, rate, scale, 1, self.n_iter, seed, eval_index, memory.t)
        for kept, moment in zip(memory.moments, run.moments):
            kept[heads] = moment
        memory.rate[heads] = torch.where(run.best_value < start_value, rate, rate / 10)
        memory.t += self.n_iter
        return run.best_U, run.best_v, rate

    # ---------------------------------------------------------------- helpers
    def _eval_index(self, problem: SubProblem, seed: int) -> Tensor | None:
        """Rows on which points are compared: all rows in full batch, a fixed sample otherwise."""
        m = problem.data.n_samples
        if self.batch_size is None or m <= _EVAL_ROWS:
            return None
        generator = torch.Generator().manual_seed(seed)
        return torch.randperm(m, generator=generator)[:_EVAL_ROWS].to(problem.data.X.device)

    def _step_scale(self, U0: Tensor, v0: Tensor) -> tuple[Tensor, Tensor]:
        """Per-head multipliers of the base step for ``U`` and ``v``.

        Adam's: the blocks' root-mean-square entries, floored at the smallest normal number only
        (raw rows of 1e13 start with atoms of 1e-15, which a floor of 1e-12 gave steps 1000x their
        size: no step improved, no training). Subgradient's: ``atom_scale`` on ``U``
        (:func:`subgradient_atom_scale`, set once per fit from the rows), 1 on ``v``.
        """
        if self.method == "subgradient":
            ones = torch.ones(U0.shape[0], dtype=U0.dtype, device=U0.device)
            return ones * self.atom_scale, ones
        tiny = torch.finfo(U0.dtype).tiny
        rms_U = U0.pow(2).mean(dim=(1, 2)).sqrt().clamp_min(tiny)
        rms_v = v0.pow(2).mean(dim=1).sqrt().clamp_min(tiny)
        return rms_U, rms_v

    def _values(self, runs: dict[float, _Run], grid: list[float], problem: SubProblem,
                eval_index: Tensor | None) -> Tensor:
        """Best value of every candidate for every head, [len(grid), H]."""
        return torch.stack([self._judge(problem, runs[rho], eval_index) for rho in grid])

    def _winners(self, runs: dict[float, _Run], grid: list[float], problem: SubProblem,
                 eval_index: Tensor | None) -> Tensor:
        """Index into ``grid`` of the best candidate for each head."""
        return self._values(runs, grid, problem, eval_index).argmin(dim=0)

    def _extension(self, runs: dict[float, _Run], grid: list[float], problem: SubProblem,
                   eval_index: Tensor | None, start_value: Tensor) -> float | None:
        """The next candidate step, or None when every head's best step is inside the grid.

        A head where no candidate improved on the warm start needs smaller steps; a head whose
        winner is the largest (smallest) candidate needs a larger (smaller) one, where the grid may
        grow (``_extends_upwards``).
        """
        values = self._values(runs, grid, problem, eval_index)
        winner = values.argmin(dim=0)
        stuck = (values >= start_value).all(dim=0)
        if bool(stuck.any()) or bool((winner == len(grid) - 1).any()):
            grid.append(grid[-1] / 10)
            return grid[-1]
        if self._extends_upwards and bool((winner == 0).any()):
            grid.insert(0, grid[0] * 10)
            return grid[0]
        return None

    def _judge(self, problem: SubProblem, run: _Run, eval_index: Tensor | None) -> Tensor:
        if eval_index is None:
            return run.best_value
        return problem.value(run.best_U, run.best_v, eval_index)

    def _trajectory(self, problem: SubProblem, U0: Tensor, v0: Tensor, start_value: Tensor,
                    rho: float, scale: tuple[Tensor, Tensor], seed: int,
                    eval_index: Tensor | None) -> _Run:
        """A step trial: ``trial_steps`` iterations from the warm start with base step ``rho``."""
        run = _Run(U0.clone(), v0.clone(), U0.clone(), v0.clone(), start_value.clone())
        if self.method == "adam":
            run.moments = [torch.zeros_like(U0), torch.zeros_like(U0),
                           torch.zeros_like(v0), torch.zeros_like(v0)]
        rate = torch.full((U0.shape[0],), rho, dtype=U0.dtype, device=U0.device)
        return self._continue(problem, run, rate, scale, 1, self.trial_steps, seed, eval_index)

    def _continue(self, problem: SubProblem, run: _Run, rate: Tensor, scale: tuple[Tensor, Tensor],
                  start: int, stop: int, seed: int, eval_index: Tensor | None, t_offset: int = 0) -> _Run:
        """Iterations ``start..stop`` (inclusive) of ``run`` with base steps ``rate`` [H].

        ``t_offset``: Adam steps already taken by carried moments (for the bias correction).
        """
        m = problem.data.n_samples
        device = run.U.device
        full_batch = self.batch_size is None or self.batch_size >= m
        batches = None if full_batch else minibatch_indices(
            m, self.batch_size, stop - start + 1, torch.Generator().manual_seed(seed), device)
        for t in range(start, stop + 1):
            index = None if full_batch else next(batches)
            if full_batch:
                value, dU, dv = problem.value_and_grad(run.U, run.v)
                run.remember(value, run.U, run.v)
            else:
                dU, dv = problem.gradient(run.U, run.v, index)
            step = rate * min(1.0, self.t0 / t)
            self._update(run, dU, dv, step, scale, t + t_offset)
            if not full_batch and (t % self.checkpoint_every == 0 or t == stop):
                run.remember(problem.value(run.U, run.v, eval_index), run.U, run.v)
        if full_batch:
            run.remember(problem.value_and_grad(run.U, run.v)[0], run.U, run.v)
        return run

    def _update(self, run: _Run, dU: Tensor, dv: Tensor, step: Tensor,
                scale: tuple[Tensor, Tensor], t: int) -> None:
        """One projected step of the chosen method.

        ``run.U`` and ``run.v`` are replaced, never written in place: the best point may alias them.
        """
        step_U = (step * scale[0])[:, None, None]
        step_v = (step * scale[1])[:, None]
        if self.method == "adam":
            dU, dv = self._adam_directions(run, dU, dv, t)
        run.U = torch.addcmul(run.U, step_U, dU, value=-1.0)
        run.v = torch.addcmul(run.v, step_v, dv, value=-1.0).clamp_min_(self.eps)

    @staticmethod
    def _adam_directions(run: _Run, dU: Tensor, dv: Tensor, t: int) -> tuple[Tensor, Tensor]:
        """Bias-corrected Adam directions; the gradients' buffers are reused for the result."""
        b1, b2 = _ADAM_BETAS
        mU, sU, mv, sv = run.moments
        directions = []
        for grad, first, second in ((dU, mU, sU), (dv, mv, sv)):
            first.lerp_(grad, 1 - b1)
            second.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            denom = torch.sqrt(second, out=grad).add_(1e-12 * (1 - b2 ** t) ** 0.5)
            directions.append(denom.reciprocal_().mul_(first).mul_((1 - b2 ** t) ** 0.5 / (1 - b1 ** t)))
        return directions[0], directions[1]


def minibatch_indices(m: int, batch_size: int, count: int, generator: torch.Generator,
                      device: torch.device) -> Iterator[Tensor]:
    """``count`` minibatches of ``batch_size`` row indices in ``[0, m)``, drawn with replacement.

    Drawn on the CPU (reproducible across devices) and copied to ``device`` in blocks: a copy to a
    GPU waits for the work queued before it, so one copy per step would stall every step. The
    values are those of one ``torch.randint`` per step from the same generator.
    """
    per_block = max(1, _INDEX_BLOCK // batch_size)
    for first in range(0, count, per_block):
        shape = (min(per_block, count - first), batch_size)
        yield from torch.randint(m, shape, generator=generator).to(device)


Solver = InnerSolver | LBFGSSolver


def make_inner_solver(method: str, n_iter: int, batch_size: int | None, eps: float,
                      step_sizes: tuple[float, ...] | None = None, atom_scale: float = 1.0) -> Solver:
    """The solver named by ``method`` ("adam", "subgradient" or "lbfgs", full batch only: see
    ``settings.resolve``), running ``n_iter`` iterations per solve; ``atom_scale``: subgradient's
    step multiplier on ``U``, or L-BFGS's unit of ``U`` (``lbfgs.lbfgs_atom_unit``)."""
    if method == "lbfgs":
        return LBFGSSolver(n_iter, eps, atom_scale)
    return InnerSolver(method, n_iter, batch_size, eps, step_sizes, atom_scale=atom_scale)
