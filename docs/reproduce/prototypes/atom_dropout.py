"""Prototype for issue 6: dropout of a shared dictionary's atoms during minibatch steps.

At 4000 atoms two independent halves of 2000, joined, beat one fit of 4000 (docs/results.md,
"Two independent halves, joined"): asking each half to classify alone helps. Dropout asks it of
random halves: at every minibatch step each (sample, atom) feature of the tight majoriser is kept
with probability ``1 - p`` and scaled by ``1 / (1 - p)``. A masked sum of convex features with
non-negative weights is still convex, so each masked step is a step on a convex majoriser of the
masked loss; the DCA iterate, the solver's checkpoints and step trials are judged without masks
(the test-time model). It runs ``benchmarks/shared_vs_ovr.py`` with the patch, in this process:

    python docs/reproduce/prototypes/atom_dropout.py --dropout P [shared_vs_ovr.py arguments]

Only the tight majoriser's general path (atoms against their class, or one-vs-all's hinges added:
the new loss) is masked; other heads are refused, as is ``--parallel-fits`` above 1 (it would fit
in other processes, unpatched). ``masked_tight_data_weights`` mirrors the general path of
:func:`objective.tight_data_weights` at e49c7c0 with a mask added (a prototype's frozen copy: a
change there is not followed here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.train import objective, subproblem  # noqa: E402

Tensor = torch.Tensor
USAGE = "usage: atom_dropout.py --dropout P [shared_vs_ovr.py arguments]"


def masked_tight_data_weights(problem: subproblem.SubProblem, X: Tensor, targets: Tensor, U: Tensor,
                              v: Tensor, keep: Tensor) -> Tensor:
    """``R`` of :func:`objective.tight_data_weights` (general path) with every feature times ``keep``
    [H, rows, N] (0 or ``1 / (1 - p)``): the target group's score is the masked linearised one."""
    data, beta = problem.data, problem.beta
    groups, ovr_weight = data.groups, data.ovr_weight
    Z = objective.pre_activations(X, U, v)
    Z_k = objective.pre_activations(X, problem.U_k, problem.v_k)
    target_mask = objective._group_mask(groups, targets)
    slope_k = torch.sigmoid(beta * Z_k).mul_(target_mask)
    Q_k = objective.smooth_relu(Z_k, beta)
    step = (Z - Z_k).mul_(slope_k)
    Q = objective.smooth_relu(Z, beta).lerp_(Q_k.add_(step), target_mask).mul_(keep)
    weights = objective._score_weights(groups, ovr_weight)
    scores = Q @ weights
    S = scores[..., :groups.shape[-1]]
    linearised_target = S.gather(-1, targets[..., None]).squeeze(-1)
    _, A = objective._rival_terms(S, linearised_target, targets, data.hinge)
    dS = A.scatter_add_(-1, targets[..., None], -A.sum(dim=-1, keepdim=True))
    if ovr_weight:
        _, dS = objective._add_ovr_hinges(torch.zeros_like(linearised_target), dS, scores, targets, ovr_weight)
    slope = torch.sigmoid(beta * Z).lerp_(slope_k, target_mask)
    return slope.mul_(keep).mul_(dS @ weights.transpose(1, 2)).contiguous()


def patched_gradient(p: float, generator: torch.Generator):
    """``SubProblem.gradient`` whose minibatch steps see a fresh dropout mask each time."""

    def gradient(self: subproblem.SubProblem, U: Tensor, v: Tensor, index: Tensor | None = None):
        if self.surrogate != "tight" or self._one_group_per_atom:
            raise SystemExit("atom_dropout.py: only the new loss's tight majoriser is masked")
        X, targets = self.data.rows(index)
        shape = (U.shape[0], X.shape[0], U.shape[2])
        keep = torch.rand(shape, generator=generator).ge_(p).to(U.dtype).div_(1.0 - p)
        R = masked_tight_data_weights(self, X, targets, U, v, keep.to(U.device))
        rows = X.shape[0]
        dU, dv = self._linear_gradient(U, v)
        dU.add_(objective.pull_back(X, R), alpha=1.0 / rows)
        return dU, dv.sub_(R.sum(dim=1), alpha=1.0 / rows)

    return gradient


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--dropout":
        raise SystemExit(USAGE)
    p, rest = float(argv[1]), argv[2:]
    if not 0.0 < p < 1.0:
        raise SystemExit("atom_dropout.py: --dropout must lie in (0, 1)")
    args = shared_vs_ovr.parse_args(rest)
    if args.parallel_fits > 1:
        raise SystemExit("atom_dropout.py: --parallel-fits above 1 would fit in other processes, unpatched")
    generator = torch.Generator().manual_seed(10_000 + args.seed[0])  # masks differ by seed
    subproblem.SubProblem.gradient = patched_gradient(p, generator)
    return shared_vs_ovr.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
