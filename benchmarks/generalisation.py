"""Generalisation suite (issue 55): LAST against its SGD baseline, an MLP, and SVMs on data nobody tuned for.

Prints one markdown table (accuracy mean ± std over seeds · MACs per sample · training seconds) with
a row per task and a column per method, then the issue's target rows; ``--out`` writes every fit and
the summary as JSON, ``--plot`` accuracy against MACs. Seeds run in the outer loop, so a
``--time-limit`` run has the first seeds of every task. ``--quick`` checks the plumbing in seconds
(moons and circles, one seed, short fits), not the accuracies.

    nice python benchmarks/generalisation.py --data ../shared/data --seeds 3 --out suite.json --plot suite.png
    nice python benchmarks/generalisation.py --quick
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC, LinearSVC

from generalisation_report import markdown, summarise
from generalisation_tasks import DEFAULT_DATA, TASKS, load
from lastedge.runtime.writing import write_atomically
from lastedge.train import LASTClassifier, LASTClassifierCV, SGDSoftThresholdClassifier

# "last-mu0": the paper's objective (mu = 0), LASTClassifier's default before issue 55
METHODS = ("last", "last-mu0", "last-cv", "sgd", "mlp", "svm-rbf", "svm-linear")
QUICK_TASKS = ("moons", "circles")


@dataclass(frozen=True)
class Budget:
    """How long the iterative methods run: the estimators' defaults, or ``--quick``'s short fits.

    The SGD baseline's default is the paper's 250000 steps of 10 rows after four step trials of
    50000 (450000 steps, 0.12-0.3 ms each on one core whatever the data: 1-2 minutes a fit;
    ``benchmarks/sgd_step.py``).
    """

    last: dict[str, Any]
    last_cv: dict[str, Any]
    sgd_iter: int
    svm_grid: dict[str, list]

    @classmethod
    def of(cls, quick: bool, sgd_iter: int | None, cv_time_budget: float | None = None) -> Budget:
        if quick:
            return cls({"max_dca_iter": 5, "inner_iter": 100}, {"mu": (0.0, 1.0), "time_budget": cv_time_budget or 5.0},
                       sgd_iter or 1000, {"C": [1, 10], "gamma": ["scale"]})
        return cls({}, {"time_budget": cv_time_budget}, sgd_iter or 250_000,
                   {"C": [0.1, 1, 10, 100], "gamma": ["scale", 0.01, 0.1, 1]})


def build(method: str, n_atoms: int, seed: int, budget: Budget) -> Any:
    """The estimator of ``method`` (atoms per head, or the MLP's width, ``n_atoms``)."""
    if method in ("last", "last-mu0"):
        mu = {"mu": 0.0} if method == "last-mu0" else {}
        return LASTClassifier(n_atoms=n_atoms, random_state=seed, verbose=0, **mu, **budget.last)
    if method == "last-cv":
        return LASTClassifierCV(n_atoms=n_atoms, random_state=seed, estimator_params=budget.last or None,
                                **budget.last_cv)
    if method == "sgd":
        return SGDSoftThresholdClassifier(n_atoms=n_atoms, random_state=seed, verbose=0, max_iter=budget.sgd_iter)
    if method == "mlp":
        return MLPClassifier(hidden_layer_sizes=(n_atoms,), early_stopping=True, random_state=seed)
    if method == "svm-rbf":
        return GridSearchCV(SVC(), budget.svm_grid, cv=3)
    if method == "svm-linear":
        return LinearSVC(dual="auto", random_state=seed)
    raise ValueError(f"unknown method {method!r}; choose from {METHODS}")


def macs(model: Any, n_features: int) -> int:
    """Multiply-accumulates of one prediction (an RBF kernel evaluation counts ``n_features``)."""
    model = getattr(model, "best_estimator_", model)  # LASTClassifierCV, GridSearchCV
    if hasattr(model, "model_"):
        return int(model.model_.macs_per_sample)
    if isinstance(model, MLPClassifier):
        return sum(w.size for w in model.coefs_)
    if isinstance(model, SVC):
        n_sv = len(model.support_vectors_)
        return n_sv * n_features + n_sv * model.dual_coef_.shape[0]
    return int(np.size(model.coef_))


def run_one(split: tuple, task: str, method: str, seed: int, n_atoms: int, budget: Budget) -> dict[str, Any]:
    """Fit ``method`` on the ``split`` of ``task``: test accuracy (%), MACs, training seconds."""
    X_train, y_train, X_test, y_test = split
    model = build(method, n_atoms, seed, budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of short fits: the table says enough
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
    accuracy = 100.0 * float(np.mean(model.predict(X_test) == y_test))
    return {"task": task, "method": method, "seed": seed, "accuracy": accuracy,
            "macs": macs(model, X_train.shape[1]), "seconds": seconds}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; ``--quick`` without ``--tasks``/``--seeds`` runs moons and circles once."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), help="default: all (--quick: moons circles)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--seeds", type=int, help="seeds 0..S-1 (default 3; --quick: 1)")
    parser.add_argument("--first-seed", type=int, default=0, metavar="F",
                        help="start at seed F: seeds F..F+S-1 (to add seeds to an earlier run)")
    parser.add_argument("--atoms", type=int, default=50, help="atoms per head (N); the MLP's width")
    parser.add_argument("--quick", action="store_true", help="short fits and a small SVM grid: a plumbing check")
    parser.add_argument("--sgd-iter", type=int, help="SGD baseline's max_iter (default: its own, 250000)")
    parser.add_argument("--cv-time-budget", type=float, help="LASTClassifierCV's time_budget in seconds "
                        "(default: none, every candidate)")
    parser.add_argument("--time-limit", type=float, help="seconds after which no further fit starts")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the texture/USPS/MNIST/CIFAR files")
    parser.add_argument("--out", type=Path, help="write the fits and the summary as JSON")
    parser.add_argument("--tables-from", nargs="+", type=Path, metavar="JSON",
                        help="no fits: the table and plot of earlier runs' --out files joined (e.g. runs of "
                             "different methods; a later file's fit of the same task, method and seed wins)")
    parser.add_argument("--plot", type=Path, help="write accuracy against MACs as a PNG")
    args = parser.parse_args(argv)
    args.tasks = args.tasks or list(QUICK_TASKS if args.quick else TASKS)
    args.seeds = args.seeds if args.seeds is not None else 1 if args.quick else 3
    if args.first_seed < 0:
        parser.error("--first-seed must be 0 or more")
    for name in ("seeds", "atoms", "sgd_iter", "time_limit", "cv_time_budget"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every (seed, task, method) fit, seeds outermost; after ``time_limit`` the rest are recorded
    as not run (accuracy None). None with ``--tables-from``."""
    if args.tables_from:
        return []
    budget, start, rows = Budget.of(args.quick, args.sgd_iter, args.cv_time_budget), time.perf_counter(), []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for task in args.tasks:
            split = None
            for method in args.methods:
                if args.time_limit is not None and time.perf_counter() - start > args.time_limit:
                    rows.append({"task": task, "method": method, "seed": seed, "accuracy": None,
                                 "macs": None, "seconds": None})
                    continue
                split = split or load(task, seed, args.data)
                rows.append(run_one(split, task, method, seed, args.atoms, budget))
                print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the suite, print the table; return the summary rows."""
    args = parse_args(argv)
    rows, methods = run(args), list(args.methods)
    if args.tables_from:
        joined = {(r["task"], r["method"], r["seed"]): r for path in args.tables_from
                  for r in json.loads(path.read_text())["rows"]}
        rows = list(joined.values())
        methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    summary = summarise(rows)
    print(markdown(summary, methods))
    skipped = sum(r["accuracy"] is None for r in rows)
    if skipped:
        print(f"\n{skipped} of {len(rows)} fits not run: the --time-limit was reached")
    if args.out:
        text = json.dumps({"args": vars(args), "rows": rows, "summary": summary}, indent=1, default=str)
        write_atomically(args.out, lambda file: file.write(text.encode()))
    if args.plot:
        from figures import accuracy_against_macs
        accuracy_against_macs(summary, args.plot)
    return summary


if __name__ == "__main__":
    main()
