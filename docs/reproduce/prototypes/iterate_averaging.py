"""Prototype behind one table of docs/results.md: averaging the last DCA iterates.

At MNIST's 4000 atoms the shared model's test error jumps more from one DCA iteration to the next
than one-vs-all's (docs/results.md, "20 DCA iterations instead of 12"). Consecutive iterates are
close, so their mean (stochastic weight averaging over DCA iterations, in the trained variables
``U = w d`` and ``v = w``) may be a steadier model. This fits the models
``benchmarks/shared_vs_ovr.py`` would fit with the same arguments (its own ``build``; the last
iterate is the benchmark's model) and, after every DCA iteration K, scores on the test set the
iterate and, for each A in ``--average-after``, the mean of iterates A+1..K; one JSON line per
iteration is appended to ``--out``, and a last line per fit holds its base steps:

    python docs/reproduce/prototypes/iterate_averaging.py --out avg.jsonl --average-after 4,6,8,10 \\
        --datasets mnist --total-atoms 4000 --methods shared --atoms-against 0.5 \\
        --ovr-hinge-weight 1 --mu 0 --shift-augment 1 --batch-size 1000 --inner-iter 300 \\
        --max-dca-iter 12 --n-jobs 2 --seed 16

A diagnosis: the windows are compared on the test set, so a window picked by its test error would
be cheating; a window fixed beforehand (the last four iterates) is the variant under test. The
iterates are scored with torch on the training device; the last line's ``test_error_pct`` is the
runtime's score of the fitted model (on a GPU the two differed by one test image in one of 58 fits).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.train import LASTClassifier, last  # noqa: E402
from lastedge.train.curves import head_histories  # noqa: E402


def _usage() -> SystemExit:
    return SystemExit("usage: iterate_averaging.py --out PATH --average-after A,A,... [shared_vs_ovr.py arguments]")


class _Averager:
    """Running sums of the iterates after each window start; test error of the iterate and means."""

    def __init__(self, clf: LASTClassifier, starts: list[int], X_test: np.ndarray, y_test: np.ndarray,
                 report: Callable[[int, dict[str, float]], None]):
        self.clf, self.starts, self.report = clf, starts, report
        self.X_test, self.y_test = X_test, y_test
        self.sums: dict[int, list] = {}
        self.groups, self.row_scale = None, 1.0
        self.Z_test: torch.Tensor | None = None  # preprocessed test rows, on the training device
        store = clf._store_solution

        def store_and_keep_groups(U, v, groups, seconds, row_scale=1.0):  # the estimator's own call
            self.groups, self.row_scale = groups, row_scale
            return store(U, v, groups, seconds, row_scale)

        clf._store_solution = store_and_keep_groups

    def _store(self, U: torch.Tensor, v: torch.Tensor) -> None:
        self.clf._store_solution(U.cpu().numpy(), v.cpu().numpy(), self.groups, 0.0, self.row_scale)

    def _test_error(self, device: torch.device) -> float:
        """Test error % of the estimator's stored model, scored on ``device``."""
        model = self.clf.model_
        if self.Z_test is None:  # the preprocessing is fitted once, before DCA
            self.Z_test = torch.as_tensor(model.preprocess.apply(self.X_test), dtype=torch.float32, device=device)
        D = torch.as_tensor(model.dictionary, device=device)
        W = torch.as_tensor(model.weights, device=device)
        scores = torch.relu(self.Z_test @ D - model.alpha) @ W
        predicted = model.classes[scores.argmax(dim=1).cpu().numpy()]
        return round(100 * float(np.mean(predicted != self.y_test)), 3)

    def wrap(self, on_iteration):
        def hook(k: int, objectives: torch.Tensor, U: torch.Tensor, v: torch.Tensor):
            stop = on_iteration(k, objectives, U, v)  # stores the iterate: the groups are known
            errors = {"iterate": self._test_error(U.device)}
            for start in self.starts:
                if k + 1 <= start:
                    continue
                if start not in self.sums:
                    self.sums[start] = [U.clone(), v.clone(), 1]
                else:
                    total = self.sums[start]
                    total[0] += U
                    total[1] += v
                    total[2] += 1
                U_sum, v_sum, n = self.sums[start]
                self._store(U_sum / n, v_sum / n)
                errors[f"mean_after_{start}"] = self._test_error(U.device)
            if len(errors) > 1:  # a mean replaced the stored iterate: put it back
                self._store(U, v)
            self.report(k, errors)
            return stop

        return hook


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--out" or argv[2] != "--average-after":
        raise _usage()
    out = Path(argv[1])
    starts = [int(a) for a in argv[3].split(",")]
    args = shared_vs_ovr.parse_args(argv[4:])

    def append(line: dict) -> None:
        with out.open("a") as f:
            f.write(json.dumps(line) + "\n")

    run_dca = last.run_dca
    for task, (X, y, X_test, y_test), total, multiclass, clf in shared_vs_ovr.unfitted_models(args):
        record = {"task": task, "method": multiclass, "total_atoms": total, "mu": args.mu,
                  "atoms_against": args.atoms_against, "ovr_hinge_weight": args.ovr_hinge_weight,
                  "seed": clf.random_state, "device": args.device}
        start = time.time()

        def report(k: int, errors: dict[str, float]) -> None:
            append({**record, "iteration": k + 1, "test_error_pct": errors,
                    "elapsed_s": round(time.time() - start, 1)})

        averager = _Averager(clf, starts, X_test, y_test, report)

        def run_dca_averaging(data, U, v, settings, seed, on_iteration=None):
            return run_dca(data, U, v, settings, seed, averager.wrap(on_iteration))

        last.run_dca = run_dca_averaging
        try:  # a monitor makes the estimator store every iterate (the averager needs its groups)
            clf.fit(X, y, monitor=lambda k, estimator: None)
        finally:
            last.run_dca = run_dca
        history = head_histories(clf.history_)
        final_error = round(100 * float(np.mean(clf.predict(X_test) != y_test)), 3)
        append({**record, "final": True, "test_error_pct": final_error,
                "steps": [[r["step"] for r in head] for head in history],
                "fit_s": round(time.time() - start, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
