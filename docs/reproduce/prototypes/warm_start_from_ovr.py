"""Prototype behind a row of docs/results.md: a shared head started from a fitted one-vs-all model.

A one-vs-all model is already a shared-dictionary model: head c's atoms with a positive weight
vote for class c, those with a negative weight vote against it, and each atom has one non-zero
output weight. So the shared option's loss (multi-class hinge plus one-vs-all's hinges x1) can
start from one-vs-all's solution instead of from samples, keeping every atom's class and sign:

    python docs/reproduce/prototypes/warm_start_from_ovr.py --seed 16 --out F.jsonl

fits one-vs-all (MNIST, 400 atoms per class, shifted copies, minibatches of 1000, 300 Adam steps,
12 DCA iterations, ``mu`` = 0, one thread: the 4000-atom command of docs/results.md), then runs
``--fine-tune-iter`` DCA iterations of the shared loss from it, and appends to ``F`` one JSON line
with the test error of one-vs-all and after every fine-tune iteration. The test set chooses
nothing: the result is the last iterate. ``--quick`` runs a smoke test on 3000 rows and 20 atoms
per class. It did not help (docs/results.md), so it is not an option of the estimator.
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

from lastedge.runtime import Preprocess  # noqa: E402
from lastedge.train import LASTClassifier  # noqa: E402
from lastedge.train.objective import atom_votes  # noqa: E402


class SharedFromOneVsAll(LASTClassifier):
    """A shared head whose atoms, classes, signs and thresholds start as a one-vs-all model's."""

    def start_from(self, dictionary: np.ndarray, coef: np.ndarray) -> SharedFromOneVsAll:
        """Take a fitted one-vs-all model's ``dictionary_`` [n, C*N] and ``coef_`` [C*N, C]."""
        atom_class = np.abs(coef).argmax(axis=1)
        weight = coef[np.arange(len(coef)), atom_class]
        groups = np.eye(coef.shape[1], dtype=np.float32)[atom_class]
        groups[weight < 0] = 1.0 - groups[weight < 0]  # an atom against class c sits in every other group
        if not np.allclose(atom_votes(groups) * np.abs(weight)[:, None], coef, atol=1e-6):
            raise ValueError("coef must hold one non-zero per atom, as one-vs-all's does")
        v = np.abs(weight).astype(np.float32)
        self._start = (groups[None], (dictionary * v).astype(np.float32)[None], v[None])
        return self

    def _prepare(self, X: np.ndarray, y_index: np.ndarray, rng: np.random.RandomState):
        """The base class's preparation with the stored start, drawing no start atoms from ``rng``."""
        self.preprocess_ = Preprocess.fit(self.preprocess, X)
        groups, U0, v0 = self._start
        return self.preprocess_.apply(X), 1.0, y_index[None, :].astype(np.int64), groups, U0, v0  # rows as given


def error_pct(model, X: np.ndarray, y: np.ndarray) -> float:
    return 100 * float(np.mean(model.predict(X) != y))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--fine-tune-iter", type=int, default=6)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--out", type=Path, required=True, help="JSON lines file to append to")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    X, y, X_test, y_test = digits_task("mnist", args.data)
    if args.quick:
        X, y, X_test, y_test = X[:3000], y[:3000], X_test[:2000], y_test[:2000]
    per_class = 20 if args.quick else 400
    common = {"preprocess": "center-l2", "shift_augment": 1, "image_shape": (28, 28), "inner_iter": 300,
              "batch_size": 1000, "n_jobs": 1, "mu": 0.0, "tol": 0.001, "random_state": args.seed,
              "verbose": 0}
    start = time.perf_counter()
    ovr = LASTClassifier(per_class, multiclass="ovr", max_dca_iter=2 if args.quick else 12, **common).fit(X, y)
    ovr_s, ovr_error = time.perf_counter() - start, error_pct(ovr, X_test, y_test)
    print(f"seed {args.seed}: one-vs-all {ovr_error:.2f} % in {ovr_s:.0f} s", flush=True)

    errors: list[float] = []

    def monitor(k: int, estimator: LASTClassifier) -> None:
        errors.append(error_pct(estimator, X_test, y_test))
        print(f"seed {args.seed}: fine-tune iteration {k}: {errors[-1]:.2f} %", flush=True)

    start = time.perf_counter()
    tuned = SharedFromOneVsAll(ovr.coef_.shape[0], multiclass="shared", ovr_hinge_weight=1.0,
                               max_dca_iter=args.fine_tune_iter, **common)
    tuned.start_from(ovr.dictionary_, ovr.coef_).fit(X, y, monitor=monitor)
    row = {"seed": args.seed, "quick": args.quick, "ovr_error_pct": ovr_error,
           "ovr_s": round(ovr_s, 1), "fine_tune_error_pct_by_iter": errors,
           "fine_tune_error_pct": errors[-1],  # the last iterate: no early stopping
           "fine_tune_s": round(time.perf_counter() - start, 1),
           "fine_tune_objective_by_iter": [h["objective"] for h in tuned.history_]}
    with args.out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
