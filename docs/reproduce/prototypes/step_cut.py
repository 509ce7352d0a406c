"""Prototype behind rows of docs/results.md: minibatch Adam's step cut, forced late or switched off.

One-vs-all's heads cut their Adam step 10x when a DCA solve stops improving on its warm start,
class by class; the shared head (judged on all classes at once) rarely does. This runs
``benchmarks/shared_vs_ovr.py`` with that rule changed, in one of two ways:

    python docs/reproduce/prototypes/step_cut.py --cut-at 8 [shared_vs_ovr.py arguments]
    python docs/reproduce/prototypes/step_cut.py --no-cut [shared_vs_ovr.py arguments]

``--cut-at K`` cuts every head's base step 10x once, from DCA iteration K (0-based) on, to test
whether late annealing is what the shared model lacks; ``--no-cut`` keeps every head's step
where its first solve put it, to test how much one-vs-all owes to its cuts. Minibatch Adam only
(the step it carries between DCA iterations is what changes). The fits run in this process: the
patch does not reach the worker processes of ``--parallel-fits P`` with P > 1, which is refused.
Neither helped enough to become an option (docs/results.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.train import solvers  # noqa: E402

USAGE = "usage: step_cut.py --cut-at K | --no-cut [shared_vs_ovr.py arguments]"


def patched_resume(cut_at: int | None):
    """``InnerSolver._resume`` with a forced cut at DCA iteration ``cut_at``, or with none at all."""
    resume = solvers.InnerSolver._resume

    def resume_with_cut(self: solvers.InnerSolver, *args, **kwargs):
        # memory.t grows by n_iter per DCA iteration, so this holds in exactly one of them
        if self._memory.t // self.n_iter == cut_at:
            self._memory.rate /= 10
        return resume(self, *args, **kwargs)

    def resume_without_cut(self: solvers.InnerSolver, *args, **kwargs):
        rate = self._memory.rate.clone()
        result = resume(self, *args, **kwargs)
        self._memory.rate.copy_(rate)  # undo the rule's cut of heads that did not improve
        return result

    return resume_without_cut if cut_at is None else resume_with_cut


def main(argv: list[str]) -> int:
    if argv[:1] == ["--no-cut"]:
        cut_at, rest = None, argv[1:]
    elif len(argv) >= 2 and argv[0] == "--cut-at":
        cut_at, rest = int(argv[1]), argv[2:]
    else:
        raise SystemExit(USAGE)
    if shared_vs_ovr.parse_args(rest).parallel_fits > 1:
        raise SystemExit("step_cut.py: --parallel-fits above 1 would fit in other processes, unpatched")
    solvers.InnerSolver._resume = patched_resume(cut_at)
    return shared_vs_ovr.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
