"""Prototype behind one table of docs/results.md: MNIST test error after every DCA iteration.

One fit with the settings of the issue-6 tables (center-l2 rows, shifted copies, minibatches of
1000, 300 Adam steps per DCA iteration, one thread), for one-vs-all or the shared dictionary with
half its atoms against their class and one-vs-all's hinges ("signed"). After every DCA iteration
the fit's monitor scores the current iterate on the test set and on the first 20000 original
training rows and appends one JSON line to ``--out``; the last line holds the base steps. A
diagnosis, not a protocol: choosing the iteration count on the test set would be cheating.

    python docs/reproduce/prototypes/error_per_dca_iteration.py --method signed --atoms 4000 \\
        --max-dca-iter 20 --seed 0 --out docs/reproduce/shared_vs_ovr_mnist_4000_curve_seed0.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from paper_data import DEFAULT_DATA, digits_task  # noqa: E402
from shared_vs_ovr import PREPROCESS  # noqa: E402

from lastedge.train import LASTClassifier  # noqa: E402

TRAIN_ROWS_SCORED = 20000


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--method", choices=("signed", "ovr"), required=True)
    p.add_argument("--atoms", type=int, required=True, help="total atoms (one-vs-all: a tenth per class)")
    p.add_argument("--max-dca-iter", type=int, default=20)
    p.add_argument("--mu", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--out", type=Path, required=True, help="JSON lines are appended here")
    args = p.parse_args(argv)
    X, y, X_test, y_test = digits_task("mnist", args.data)
    options = ({"multiclass": "shared", "atoms_against": 0.5, "ovr_hinge_weight": 1.0} if args.method == "signed"
               else {"multiclass": "ovr"})
    clf = LASTClassifier(args.atoms if args.method == "signed" else args.atoms // 10, preprocess=PREPROCESS,
                         shift_augment=1, image_shape=(28, 28), max_dca_iter=args.max_dca_iter, inner_iter=300,
                         batch_size=1000, n_jobs=1, mu=args.mu, random_state=args.seed, verbose=0, **options)
    start = time.time()
    record = {"method": args.method, "seed": args.seed, "atoms": args.atoms, "mu": args.mu}

    def append(line: dict) -> None:
        with args.out.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def error_pct(model, rows: np.ndarray, labels: np.ndarray) -> float:
        return round(100 * float(np.mean(model.labels_from_scores(model.decision_function(rows)) != labels)), 3)

    def monitor(k: int, estimator: LASTClassifier) -> None:
        model = estimator.model_
        append({**record, "iteration": k + 1, "test_error_pct": error_pct(model, X_test, y_test),
                "train_error_pct_first_20000": error_pct(model, X[:TRAIN_ROWS_SCORED], y[:TRAIN_ROWS_SCORED]),
                "elapsed_s": round(time.time() - start, 1)})

    clf.fit(X, y, monitor=monitor)
    history = clf.history_ if isinstance(clf.history_[0], list) else [clf.history_]
    append({"method": args.method, "seed": args.seed, "final": True,
            "steps": [[r["step"] for r in head] for head in history], "fit_s": round(time.time() - start, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
