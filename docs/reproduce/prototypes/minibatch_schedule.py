"""Prototype behind one table of docs/results.md: LAST's minibatch schedule, the paper's against ours.

One fit of ``LASTClassifier`` on a paper data set with a minibatch schedule, scoring the test set
after every DCA iteration (a diagnosis: the fit itself never sees the test set), printed as one
JSON line with each head's objective of (P) per DCA iteration (``docs/reproduce/minibatch_defaults.jsonl``
holds the lines behind the table; ``stop_rule_replay.py`` reads the objectives):

    python docs/reproduce/prototypes/minibatch_schedule.py usps paper 0
    python docs/reproduce/prototypes/minibatch_schedule.py deer-horse b500t300 0
    python docs/reproduce/prototypes/minibatch_schedule.py mnist:20000 b500t300 0   # first 20000 rows

Data: ``usps`` (200 atoms per head) and ``mnist`` (100) with center-l2 rows, ``deer-horse`` (100
atoms, raw pixels), from ``../shared/data``; one thread, every other setting the estimator's default.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from lastedge.train import LASTClassifier
from lastedge.train.curves import head_histories
from paper_data import deer_horse_task, digits_task

SCHEDULES = {"paper": {"batch_size": 200, "inner_iter": 5000},
             "b500t300": {"batch_size": 500, "inner_iter": 300},
             "b1000t300": {"batch_size": 1000, "inner_iter": 300}}


def main(data: str, schedule: str, seed: int) -> None:
    if data == "deer-horse":
        X, y, X_test, y_test = deer_horse_task()
        n_atoms, preprocess = 100, "none"
    else:
        name, _, rows = data.partition(":")
        X, y, X_test, y_test = digits_task(name)
        X, X_test = X.reshape(len(X), -1).astype(np.float32), X_test.reshape(len(X_test), -1).astype(np.float32)
        if rows:
            X, y = X[:int(rows)], y[:int(rows)]
        n_atoms, preprocess = (200 if name == "usps" else 100), "center-l2"
    clf = LASTClassifier(n_atoms, preprocess=preprocess, random_state=seed, n_jobs=1, verbose=0,
                         **SCHEDULES[schedule])
    curve = []
    start = time.perf_counter()

    def monitor(iteration: int, estimator: LASTClassifier) -> bool:
        error = 100 * (1 - float(np.mean(estimator.predict(X_test) == y_test)))
        curve.append((round(time.perf_counter() - start, 1), round(error, 2)))
        return False

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_dca_iter
        clf.fit(X, y, monitor=monitor)
    history = head_histories(clf.history_)
    print(json.dumps({"data": data, "schedule": schedule, "seed": seed, "n_atoms": n_atoms,
                      "test_error_pct": round(100 * (1 - clf.score(X_test, y_test)), 2),
                      "train_error_pct": round(100 * (1 - clf.score(X, y)), 2),
                      "fit_s": round(time.perf_counter() - start, 1), "n_iter": int(clf.n_iter_), "n_rows": len(X),
                      "curve": curve, "objective": [[round(r["objective"], 2) for r in head] for head in history]}),
          flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[2] not in SCHEDULES:
        raise SystemExit(f"usage: minibatch_schedule.py DATA[:ROWS] {'|'.join(SCHEDULES)} SEED")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
