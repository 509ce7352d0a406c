"""What ``LASTClassifier.fit`` does after each DCA iteration: progress, the hold-out score and
best iterate (``early_stopping``), and the user's monitor."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from . import distributed
# ``monitor(k, estimator)`` after DCA iteration k; returning True stops the fit there.
Monitor = Callable[[int, Any], bool | None]


class IterationTracker:
    """Runs after each DCA iteration; ``best`` holds the iterate of the best hold-out score.

    The estimator's ``model_`` is rebuilt from the iterate only when something needs to predict;
    the iterates are those of the rows divided by ``row_scale`` (see ``SoftThresholdBase._prepare``).
    """

    def __init__(self, estimator: Any, groups: np.ndarray, row_scale: float, start: float,
                 X_val: np.ndarray | None, y_val: np.ndarray | None, monitor: Monitor | None):
        self.estimator, self.groups, self.row_scale, self.start = estimator, groups, row_scale, start
        self.X_val, self.y_val, self.monitor = X_val, y_val, monitor
        # a distributed fit's hold-out: the rows every rank holds out (this rank's are X_val)
        self.hold_out = None if X_val is None else distributed.shard_of(len(X_val))
        self.best: tuple[np.ndarray, np.ndarray] | None = None
        self.best_score = -np.inf
        self.since_best = 0
        self.stopped = False
        estimator.validation_scores_ = [] if X_val is not None else None
        estimator.best_validation_score_ = None  # set by the first validation score, if any

    def hook(self, report: Callable[[int, torch.Tensor], None]):
        """``run_dca``'s ``on_iteration``, which also updates the progress bar's ``report``."""
        def on_iteration(k: int, objectives: torch.Tensor, U: torch.Tensor, v: torch.Tensor) -> bool:
            report(k, objectives)
            stop = False
            if self.X_val is not None or self.monitor is not None:
                est = self.estimator
                U_np, v_np = U.cpu().numpy(), v.cpu().numpy()
                est._store_solution(U_np, v_np, self.groups, time.perf_counter() - self.start, self.row_scale)
                stop = self._early_stop(U_np, v_np) if self.X_val is not None else False
                if self.monitor is not None and self.monitor(k, est):
                    stop = True
            stop = distributed.any_rank(stop)  # a distributed fit's ranks stop together
            self.stopped = self.stopped or stop
            return stop

        return on_iteration

    def _early_stop(self, U: np.ndarray, v: np.ndarray) -> bool:
        est = self.estimator
        model = est.model_
        correct = model.labels_from_scores(model.decision_function(self.X_val)) == est.classes_[self.y_val]
        score = distributed.mean(correct, self.hold_out)
        est.validation_scores_.append(score)
        if score > self.best_score:
            self.best, self.best_score, self.since_best = (U.copy(), v.copy()), score, 0
        else:
            self.since_best += 1
        est.best_validation_score_ = self.best_score
        return self.since_best >= est.n_iter_no_change
