"""Prototype for issue 6: minibatch Adam's base step per class in a shared dictionary.

One-vs-all's heads each carry a base step and cut it 10x when a DCA iteration's solve does not
improve on its warm start, class by class; a shared dictionary is one head, so one step serves
every class and is cut only when the solve fails for all of them together. This is the lead
docs/results.md names as not built. The patch gives a shared head (more than two classes) one
step per atom, set per class: after each later solve the atoms of class c keep their step when
replacing only them by the solve's result lowers the sub-problem's value on the solver's
evaluation rows, and are cut 10x otherwise. The step trials of the first solve, full-batch
solves and one-vs-all or binary heads are unchanged. It runs ``benchmarks/shared_vs_ovr.py``
with the patch, in this process:

    python docs/reproduce/prototypes/per_class_step.py [shared_vs_ovr.py arguments]

(``--parallel-fits P`` with P > 1 would fit in other processes, unpatched, and is refused.) Each
DCA iteration's history records the smallest class step as the head's step, so the benchmark's
``dca_steps`` show when some class was cut (its first runs, 2026-12-02, recorded the largest). Telling its effect at
4000 atoms from the seed noise needs eight or more seeds (``--device cuda``: a GPU job).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.train import solvers  # noqa: E402

Tensor = torch.Tensor


def atom_classes(groups: Tensor) -> Tensor | None:
    """The class each atom of a shared head belongs to, [H, N], from its group row: ``e_c`` for
    an atom voting for c, ``1 - e_c`` for one voting against c; None for binary heads."""
    if groups.shape[-1] <= 2:
        return None
    for_class = groups.sum(dim=-1) == 1
    return torch.where(for_class, groups.argmax(dim=-1), groups.argmin(dim=-1))


def improved_per_class(problem, U0: Tensor, v0: Tensor, U: Tensor, v: Tensor, owner: Tensor,
                       start_value: Tensor, eval_index: Tensor | None) -> Tensor:
    """[H, N]: whether replacing only the atoms of each atom's class by ``(U, v)`` lowers the
    sub-problem's value below ``start_value`` (the warm start's)."""
    improved = torch.zeros_like(owner, dtype=torch.bool)
    for c in torch.unique(owner).tolist():
        mask = owner == c
        value = problem.value(torch.where(mask[:, None, :], U, U0), torch.where(mask, v, v0), eval_index)
        improved |= mask & (value < start_value)[:, None]
    return improved


def patch() -> None:
    """Per-atom steps in ``InnerSolver``'s update, first solve and later solves."""
    update, solve, resume = solvers.InnerSolver._update, solvers.InnerSolver.solve, solvers.InnerSolver._resume

    def update_per_atom(self, run, dU, dv, step, scale, t):
        if step.dim() == 1:
            return update(self, run, dU, dv, step, scale, t)
        if self.method == "adam":
            dU, dv = self._adam_directions(run, dU, dv, t)
        run.U = torch.addcmul(run.U, (step * scale[0][:, None])[:, None, :], dU, value=-1.0)
        run.v = torch.addcmul(run.v, step * scale[1][:, None], dv, value=-1.0).clamp_min_(self.eps)

    def solve_then_step_per_atom(self, problem, U0, v0, seed, heads=None):
        first = self._memory is None
        result = solve(self, problem, U0, v0, seed, heads)
        if first and self._memory is not None and atom_classes(problem.data.groups) is not None:
            rate = self._memory.rate  # one per head, from the step trials
            self._memory.rate = rate[:, None].expand(-1, U0.shape[2]).clone()
        return result

    def resume_per_class(self, problem, U0, v0, start_value, scale, seed, eval_index, heads):
        memory = self._memory
        owner = atom_classes(problem.data.groups)
        if owner is None or memory.rate.dim() == 1:
            return resume(self, problem, U0, v0, start_value, scale, seed, eval_index, heads)
        run = solvers._Run(U0.clone(), v0.clone(), U0.clone(), v0.clone(), start_value.clone(),
                           [moment[heads].clone() for moment in memory.moments])
        rate = memory.rate[heads]
        run = self._continue(problem, run, rate, scale, 1, self.n_iter, seed, eval_index, memory.t)
        for kept, moment in zip(memory.moments, run.moments):
            kept[heads] = moment
        improved = improved_per_class(problem, U0, v0, run.best_U, run.best_v, owner, start_value, eval_index)
        memory.rate[heads] = torch.where(improved, rate, rate / 10)
        memory.t += self.n_iter
        return run.best_U, run.best_v, rate.min(dim=1).values  # a class's cut shows in the history

    solvers.InnerSolver._update = update_per_atom
    solvers.InnerSolver.solve = solve_then_step_per_atom
    solvers.InnerSolver._resume = resume_per_class


def main(argv: list[str]) -> int:
    if shared_vs_ovr.parse_args(argv).parallel_fits > 1:
        raise SystemExit("per_class_step.py: --parallel-fits above 1 would fit in other processes, unpatched")
    patch()
    return shared_vs_ovr.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
