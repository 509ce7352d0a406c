"""Prototype behind two rows of docs/results.md: the shared model with a late 10x step cut.

One-vs-all's heads cut their Adam step 10x when a DCA solve stops improving on its warm start,
class by class; the shared head (judged on all classes at once) never does. This runs
``benchmarks/shared_vs_ovr.py`` with every head's base step cut 10x once, from DCA iteration
``--cut-at`` (0-based) on, to test whether that late annealing is what the shared model lacks:

    python docs/reproduce/prototypes/late_step_cut.py --cut-at 8 [shared_vs_ovr.py arguments]

Minibatch Adam only (the step it carries between DCA iterations is what is cut); the fits run in
this process (the patch does not reach ``--parallel-fits`` workers, so that option is refused). Measured on MNIST
at 4000 atoms it did not help (docs/results.md), so it stays a prototype, not an option.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.train import solvers  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--cut-at":
        raise SystemExit("usage: late_step_cut.py --cut-at K [shared_vs_ovr.py arguments]")
    cut_at = int(argv[1])
    if any(arg.startswith("--parallel-fits") for arg in argv):
        raise SystemExit("late_step_cut.py: --parallel-fits would fit in other processes, without the cut")
    resume = solvers.InnerSolver._resume

    def resume_with_cut(self: solvers.InnerSolver, *args, **kwargs):
        # memory.t grows by n_iter per DCA iteration, so this holds in exactly one of them
        if self._memory.t // self.n_iter == cut_at:
            self._memory.rate /= 10
        return resume(self, *args, **kwargs)

    solvers.InnerSolver._resume = resume_with_cut
    return shared_vs_ovr.main(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
