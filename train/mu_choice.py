"""``mu="auto"``: the weight decay chosen on held-out training rows before a full-batch fit.

The weight decay is per unit of the training rows' mean squared norm (the same classifier for rows
of any scale). With none (``mu=0``, the paper's objective, the former default) full-batch Adam's
300 decaying steps per DCA iteration under-fitted raw texture patches (training accuracy 88 %) and
L-BFGS, which fits them, over-fitted equalised ones; a decay with L-BFGS (``settings.resolve``'s
rule) was better on the generalisation suite as a whole. But no one value suits every data set
(docs/generalisation.md): raw texture patches, whose unit-norm rows nearly all point one way,
trained best at 0.1 (0.3 lost 2.6-2.7 points there), while other pairs gained up to 2.3 points at
0.3. Where a fit is cheap (binary or one-vs-all heads in full batch, whose sub-problems L-BFGS
solves) each candidate is therefore fitted on 80 % of the training rows and scored on the rest,
and the better is fitted on all rows: about 2.6 times one fit. The split is stratified with a fixed
seed and draws nothing from the fit's random state, so a fit that keeps the first candidate is the
fit of that weight decay. Ties keep the first (0.1, the former fixed value). Minibatch and
distributed fits and shared dictionaries keep the first candidate; warm starts the one they had.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedShuffleSplit

CANDIDATES = (0.1, 0.3)  # weight decay per unit of the training rows' mean squared norm
HOLDOUT_FRACTION = 0.2
MIN_ROWS = 200  # fewer training rows: too few held out to tell the candidates apart
SEED = 0  # the split is a property of the data, as preprocess_choice's subsample


def applies(estimator: Any, solver: str, n_rows: int, distributed: bool) -> bool:
    """Whether a fresh fit of ``estimator`` chooses its weight decay on a hold-out: ``mu="auto"``,
    more than one candidate, L-BFGS sub-problems (binary or one-vs-all heads in full batch), at
    least ``MIN_ROWS`` rows, on one process."""
    chooses = isinstance(estimator.mu, str) and estimator.mu == "auto"
    return chooses and len(CANDIDATES) > 1 and solver == "lbfgs" and n_rows >= MIN_ROWS and not distributed


def choose(estimator: Any, X: np.ndarray, y_index: np.ndarray, kind: str,
           monitor: Callable[[int, Any], bool | None] | None = None) -> tuple[float, dict[float, float] | None]:
    """``(factor, {factor: held-out accuracy})``: the candidate whose fit on 80 % of ``X`` (class
    indices ``y_index`` into ``estimator.classes_``, preprocessing ``kind``) is most accurate on the
    rest. Rows a stratified split cannot hold out (a class of one row) keep the first candidate,
    with no scores (None). The fit's ``monitor`` watches the candidates' fits too: when it stops
    one (Ctrl-C) the choice stops there, the best of the candidates fitted before it kept (none:
    the first candidate)."""
    split = StratifiedShuffleSplit(n_splits=1, test_size=HOLDOUT_FRACTION, random_state=SEED)
    try:
        fit_rows, held_rows = next(split.split(X, y_index))
    except ValueError:
        return CANDIDATES[0], None
    labels = estimator.classes_[y_index]
    if estimator.verbose:
        print(f"LAST: mu='auto': fitting {len(CANDIDATES)} weight decays on {len(fit_rows)} rows to score them on "
              f"{len(held_rows)} held out", file=sys.stderr, flush=True)
    scores: dict[float, float] = {}
    stopped = []

    def watched(k: int, fitted: Any) -> bool:
        stopped.append(bool(monitor is not None and monitor(k, fitted)))
        return stopped[-1]

    for factor in CANDIDATES:
        candidate = clone(estimator).set_params(preprocess=kind, mu_factor=factor, verbose=0, warm_start=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the final fit reports its own
            candidate._fit(X[fit_rows], labels[fit_rows], monitor=None if monitor is None else watched)
        if any(stopped):
            break
        scores[factor] = float(np.mean(candidate.predict(X[held_rows]) == labels[held_rows]))
        if estimator.verbose:
            print(f"LAST: mu='auto' candidate {factor:g} x the rows' mean squared norm: "
                  f"{scores[factor]:.2%} on {len(held_rows)} held-out rows", file=sys.stderr, flush=True)
    if not scores:
        return CANDIDATES[0], None
    return max(scores, key=scores.__getitem__), scores  # max keeps the first of equals
