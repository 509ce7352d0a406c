"""Prototype behind one table of docs/results.md: where minibatch DCA's stopping rule would stop.

Reads fits recorded by ``minibatch_schedule.py`` or ``error_per_dca_iteration.py`` (JSON lines with
each head's objective of (P) per DCA iteration and the number of rows it sums over) and prints, for
each ``tol`` and patience, the DCA iteration at which each head would stop under the rule of
``train/dca.py`` (run by the trainer's own ``_ProgressTracker``): the objective per row has not
fallen below its best by more than ``tol`` for ``patience`` iterations in a row. A fit is the same
up to the iteration where a head stops (a head's solves do not depend on the others'), so one long
fit answers every setting. The start point's objective is not recorded, so the first iteration
always counts as progress here:

    python docs/reproduce/prototypes/stop_rule_replay.py FITS.jsonl [--tol 1e-3,1e-4] [--patience 3]
"""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace

import torch
from lastedge.train.dca import _ProgressTracker


def stop_iteration(objectives: list[float], tol: float, patience: int, n_rows: int) -> int | None:
    """The 1-based DCA iteration at which the trainer's rule stops this head, or None if it never does."""
    settings = SimpleNamespace(tol=tol, n_iter_no_change=patience)
    tracker = _ProgressTracker(torch.tensor([float("inf")], dtype=torch.float64), n_rows, settings)
    head = torch.tensor([0])
    for k, value in enumerate(objectives, start=1):
        if bool(tracker.stalled(head, torch.tensor([value], dtype=torch.float64))):
            return k
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("fits", help="JSON lines; those with an 'objective' field are read")
    p.add_argument("--tol", type=lambda text: [float(t) for t in text.split(",")], default=[1e-3, 1e-4])
    p.add_argument("--patience", type=lambda text: [int(t) for t in text.split(",")], default=[3])
    args = p.parse_args()
    with open(args.fits) as f:
        fits = [fit for fit in map(json.loads, f) if "objective" in fit]
    for fit in fits:
        name = " ".join(str(fit.get(key)) for key in ("data", "task", "method", "total_atoms", "seed") if key in fit)
        ran = max(len(head) for head in fit["objective"])
        for tol in args.tol:
            for patience in args.patience:
                stops = [stop_iteration(head, tol, patience, fit["n_rows"]) for head in fit["objective"]]
                shown = ["-" if stop is None else str(stop) for stop in stops]
                print(f"{name} (ran {ran}): tol {tol:g}, patience {patience}: stops at {' / '.join(shown)}")


if __name__ == "__main__":
    main()
