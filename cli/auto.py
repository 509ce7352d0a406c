"""``lastedge train --auto``: choose LAST's preprocessing and weight decay on a hold-out of the
training rows within a time budget, as :class:`lastedge.train.LASTClassifierCV` does, then refit.

Settings given explicitly are fixed, not searched: ``--preprocess P`` keeps P, ``--mu M`` keeps M
and ``--mu A,B,...`` searches those values only. Without them it tries LASTClassifierCV's
candidates, in its order (:func:`lastedge.train.model_search.settings_candidates`).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .holdout import StopOnInterrupt, choose_on_holdout, cluster_backend, search_jobs



def add_auto_options(p: argparse.ArgumentParser) -> None:
    """``--auto`` and ``--time-budget``."""
    p.add_argument("--auto", action="store_true",
                   help="LAST only: choose --preprocess among l2/standardize and the weight decay among "
                        "0.1/0.3/0/1 x the preprocessed rows' mean squared norm (the default's unit) on 10%% "
                        "of the training rows (settings given explicitly are kept, not searched), then refit "
                        "the best on all rows; with a --budget-* option, for the atoms and form the budget "
                        "search chose, on the same rows")
    p.add_argument("--time-budget", type=float, default=None, metavar="S",
                   help="--auto and budgets: start no further candidate after S seconds, keep the best so far "
                        "(a budget with --auto or a --mu grid: no further atoms/form candidate after S/2) "
                        "(default: none, every candidate; Ctrl-C also stops after the candidate under way)")


def auto_grid(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The ``--auto`` candidates, in the order they are tried: LASTClassifierCV's (each weight
    decay, each preprocessing for each), less what the command line fixed."""
    from lastedge.train.model_search import DEFAULT_PREPROCESS, settings_candidates  # torch: at fit time only

    return settings_candidates([args.preprocess] if args.preprocess else DEFAULT_PREPROCESS, args.mu or "auto")


def choose_auto(estimator: Any, args: argparse.Namespace, data: Any) -> dict[str, Any] | None:
    """The ``--auto`` hold-out choice (see :func:`~.holdout.choose_on_holdout`), stopped after the
    candidate (or round of ``--jobs`` candidates) under way when the time budget is spent (``"over_budget"`` lists those not fitted) or
    on Ctrl-C (``"skipped"``); None when a second Ctrl-C stopped it before any refit."""
    if args.method != "last":
        raise ValueError("--auto applies to --method last only")
    budget = args.time_budget
    if budget is not None and not budget > 0:
        raise ValueError(f"--time-budget must be positive seconds, got {args.time_budget}")
    grid_stop = StopOnInterrupt("stopping the search after this candidate fit, then fitting the best so far "
                                "on all rows", estimator.verbose)
    started = time.perf_counter()

    def monitor(k: int, fitted: Any) -> bool:
        return grid_stop(k, fitted) or (budget is not None and time.perf_counter() - started >= budget)

    try:
        with grid_stop.installed(), cluster_backend(args.cluster):
            selection = choose_on_holdout(estimator, auto_grid(args), data.X_train, data.y_train, args.seed,
                                          monitor=monitor, n_jobs=search_jobs(args.jobs, args.cluster))
    except KeyboardInterrupt:
        print("lastedge train: interrupted during the --auto search: nothing trained", file=sys.stderr)
        return None
    if "skipped" in selection and not grid_stop.requested:
        selection["over_budget"] = selection.pop("skipped")
    selection["time_budget_s"] = budget
    return selection
