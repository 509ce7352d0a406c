"""Prototype behind one table of docs/results.md: test error after every DCA iteration.

Fits the models ``benchmarks/shared_vs_ovr.py`` would fit with the same arguments (its own
``build``), but after every DCA iteration scores the current iterate on the test set and on the
first 20000 original training rows, appending one JSON line to ``--out``; each fit's last line
holds its base steps and each head's objective of (P) per DCA iteration (for ``stop_rule_replay.py``). A diagnosis, not a protocol: choosing the iteration count on the test set
would be cheating.

    python docs/reproduce/prototypes/error_per_dca_iteration.py --out curve.jsonl \\
        --datasets mnist --total-atoms 4000 --methods shared --atoms-against 0.5 \\
        --ovr-hinge-weight 1 --mu 0 --shift-augment 1 --batch-size 1000 --inner-iter 300 \\
        --max-dca-iter 20 --n-jobs 1 --seed 0

(and ``--methods ovr`` without the two shared-model options). In ``docs/reproduce/shared_vs_ovr_mnist_4000_curve_seed0.jsonl``, written
by an earlier scratch copy of this loop with the same estimator settings, method "signed" is the
shared model with atoms against.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.train import LASTClassifier  # noqa: E402
from lastedge.train.curves import head_histories  # noqa: E402

TRAIN_ROWS_SCORED = 20000


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--out":
        raise SystemExit("usage: error_per_dca_iteration.py --out PATH [shared_vs_ovr.py arguments]")
    out = Path(argv[1])
    args = shared_vs_ovr.parse_args(argv[2:])

    def append(line: dict) -> None:
        with out.open("a") as f:
            f.write(json.dumps(line) + "\n")

    for task, (X, y, X_test, y_test), total, multiclass, clf in shared_vs_ovr.unfitted_models(args):
        record = {"task": task, "method": multiclass, "total_atoms": total, "mu": args.mu,
                  "seed": clf.random_state}
        start = time.time()

        def monitor(k: int, estimator: LASTClassifier) -> None:
            append({**record, "iteration": k + 1,
                    "test_error_pct": round(100 * float(np.mean(estimator.predict(X_test) != y_test)), 3),
                    "train_error_pct_first_20000": round(100 * float(np.mean(
                        estimator.predict(X[:TRAIN_ROWS_SCORED]) != y[:TRAIN_ROWS_SCORED])), 3),
                    "elapsed_s": round(time.time() - start, 1)})

        clf.fit(X, y, monitor=monitor)
        history = head_histories(clf.history_)
        append({**record, "final": True, "steps": [[r["step"] for r in head] for head in history],
                "objective": [[round(r["objective"], 2) for r in head] for head in history],
                "n_rows": len(X) * (1 + 4 * args.shift_augment), "fit_s": round(time.time() - start, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
