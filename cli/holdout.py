"""Two controls of a ``lastedge train`` run: the hold-out grid of ``--mu A,B,...`` (each candidate
fitted on most of the training rows, scored on the rest), and Ctrl-C, which stops a grid or a fit
at its next stopping point and keeps the work so far."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

SELECTION_HOLDOUT = 0.1  # share of the training rows that judges each candidate of a --mu grid


def choose_on_holdout(estimator: Any, grid: Any, X: np.ndarray, y: np.ndarray,
                      seed: int, monitor: Callable[[int, Any], bool | None] | None = None,
                      n_jobs: int | None = None) -> dict[str, Any]:
    """``{"chosen": {name: value}, "holdout_fraction", "candidates": [{name: value, ...,
    "holdout_accuracy"}]}``: each candidate of ``grid`` (a mapping's combinations, or a sequence of
    parameter dicts; :func:`~lastedge.train.selection.candidate_grid`) fitted on
    ``1 - SELECTION_HOLDOUT`` of the rows (stratified) and scored on the rest. ``monitor`` may stop
    the grid after a candidate (see :func:`~lastedge.train.selection.choose_params`); then
    ``"skipped"`` lists those not fitted.
    ``n_jobs`` fits the candidates through joblib (see ``choose_params``)."""
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    from lastedge.train.selection import candidate_grid, choose_params, holdout_split

    candidates = candidate_grid(grid)
    for params in candidates:  # a bad value is named before any fit, not after some
        clone(estimator).set_params(**params)._check_params()
    if min(np.unique(y, return_counts=True)[1]) < 2:
        names = dict.fromkeys(name for params in candidates for name in params)
        raise ValueError(f"choosing {', '.join(names)} needs a {SELECTION_HOLDOUT:.0%} hold-out with every "
                         "class, and a class has only 1 training row")
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):  # progress, not output
        warnings.simplefilter("ignore", ConvergenceWarning)  # the final fit reports its own
        best, scored = choose_params(estimator, candidates, X, y, holdout_split(SELECTION_HOLDOUT, seed),
                                     verbose=estimator.verbose, monitor=monitor, n_jobs=n_jobs)
    selection = {"chosen": best, "holdout_fraction": SELECTION_HOLDOUT,
                 "candidates": [{**params, "holdout_accuracy": score} for params, score in scored]}
    skipped = candidates[len(scored):]
    if skipped:
        selection["skipped"] = skipped
    return selection


def search_jobs(jobs: int, cluster: str | None) -> int | None:
    """``n_jobs`` of a hold-out search for ``--jobs`` and ``--cluster``: every worker of a cluster
    (-1), else ``jobs`` processes (None for 1: one candidate at a time, in this process)."""
    return -1 if cluster else None if jobs == 1 else jobs


@contextlib.contextmanager
def cluster_backend(address: str | None) -> Iterator[None]:
    """joblib's ``"dask"`` backend on the Dask scheduler at ``address`` (``--cluster``) while the
    grid runs; nothing when None. A missing dask or an unreachable scheduler is a ValueError."""
    if address is None:
        yield
        return
    try:
        import joblib
        from distributed import Client
    except ImportError:
        raise ValueError("--cluster needs dask.distributed: pip install 'lastedge[cluster]'") from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise ValueError(f"--cluster: cannot reach the Dask scheduler at {address}: {err}") from None
    with client, joblib.parallel_config(backend="dask"):
        yield


class StopOnInterrupt:
    """A monitor that makes Ctrl-C stop a fit (LAST's, SGD's) or a hold-out grid at its next
    stopping point, so that the work so far is kept rather than lost; a second Ctrl-C interrupts
    at once. ``stopping`` is what the first Ctrl-C prints it will do."""

    def __init__(self, stopping: str, verbose: int = 0):
        self.verbose = verbose
        self.stopping = stopping
        self.requested = False
        self.stopped_after: int | None = None  # the monitor's steps (DCA iterations, ...) done when it stopped

    def __call__(self, iteration: int, estimator: Any) -> bool:
        if self.requested:
            self.stopped_after = iteration + 1  # the hook counts from 0
        return self.requested

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Catch SIGINT while the block runs (in the main thread only, where signals arrive)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT) or signal.default_int_handler  # None: set outside Python

        def request_stop(signum: int, frame: Any) -> None:
            self.requested = True
            signal.signal(signal.SIGINT, previous)
            below_bar = "\n" if self.verbose else ""
            print(f"{below_bar}lastedge train: {self.stopping} (Ctrl-C again to stop at once)",
                  file=sys.stderr, flush=True)

        signal.signal(signal.SIGINT, request_stop)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
