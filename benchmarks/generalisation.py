"""Generalisation suite (issue 55): LAST against its SGD baseline, an MLP, and SVMs on data nobody tuned for.

Prints one markdown table (accuracy mean +- std over seeds, MACs per sample, training seconds) per
task and method; ``--out`` writes the rows as JSON, ``--plot`` accuracy against MACs.

    nice python benchmarks/generalisation.py --quick --tasks moons circles
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC, LinearSVC

from generalisation_tasks import TASKS
from lastedge.runtime.writing import write_atomically
from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier

METHODS = ("last", "last-cv", "sgd", "mlp", "svm-rbf", "svm-linear")


def _last_cv(n_atoms: int, seed: int) -> Any:
    """``LASTClassifierCV`` (built on another branch); ``None`` until it can be imported."""
    try:
        from lastedge.train import LASTClassifierCV
    except ImportError:
        return None
    return LASTClassifierCV(n_atoms=n_atoms, random_state=seed)


def build(method: str, n_atoms: int, seed: int, quick: bool) -> Any:
    """The estimator of ``method`` (``None`` when it is not available in this checkout)."""
    if method == "last":
        return LASTClassifier(n_atoms=n_atoms, random_state=seed, verbose=0,
                              **({"max_dca_iter": 5} if quick else {}))
    if method == "last-cv":
        return _last_cv(n_atoms, seed)
    if method == "sgd":
        return SGDSoftThresholdClassifier(n_atoms=n_atoms, random_state=seed)
    if method == "mlp":
        return MLPClassifier(hidden_layer_sizes=(n_atoms,), early_stopping=True, random_state=seed)
    if method == "svm-rbf":
        grid = {"C": [1, 10] if quick else [0.1, 1, 10, 100], "gamma": ["scale"] if quick else ["scale", 0.01, 0.1, 1]}
        return GridSearchCV(SVC(), grid, cv=3)
    if method == "svm-linear":
        return LinearSVC(dual="auto", random_state=seed)
    raise ValueError(f"unknown method {method!r}; choose from {METHODS}")


def macs(model: Any, n_features: int) -> int:
    """Multiply-accumulates of one prediction (kernel evaluations count ``n_features`` each)."""
    if hasattr(model, "model_"):
        value = model.model_.macs_per_sample
        return int(value() if callable(value) else value)
    model = getattr(model, "best_estimator_", model)
    if isinstance(model, MLPClassifier):
        return sum(w.size for w in model.coefs_)
    if isinstance(model, SVC):
        n_sv = len(model.support_vectors_)
        return n_sv * n_features + n_sv * model.dual_coef_.shape[0]
    return int(np.size(model.coef_))


def run_one(task: str, method: str, seed: int, n_atoms: int, quick: bool,
            tasks: dict[str, Callable] = TASKS) -> dict[str, Any]:
    """Fit ``method`` on ``task`` with ``seed``: accuracy (%), MACs, training seconds (NaN if unavailable)."""
    X_train, y_train, X_test, y_test = tasks[task](seed)
    model = build(method, n_atoms, seed, quick)
    row: dict[str, Any] = {"task": task, "method": method, "seed": seed}
    if model is None:
        return {**row, "accuracy": float("nan"), "macs": None, "seconds": float("nan")}
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    accuracy = 100.0 * float(np.mean(model.predict(X_test) == y_test))
    return {**row, "accuracy": accuracy, "macs": macs(model, X_train.shape[1]), "seconds": seconds}


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, method): mean and std of accuracy over seeds, mean MACs and seconds."""
    keys = list(dict.fromkeys((r["task"], r["method"]) for r in rows))
    out = []
    for task, method in keys:
        group = [r for r in rows if (r["task"], r["method"]) == (task, method)]
        acc = np.array([r["accuracy"] for r in group])
        available = not np.isnan(acc).any()
        out.append({"task": task, "method": method, "n_seeds": len(group),
                    "accuracy": float(acc.mean()) if available else None,
                    "std": float(acc.std(ddof=1)) if available and len(acc) > 1 else 0.0 if available else None,
                    "macs": group[0]["macs"],
                    "seconds": float(np.mean([r["seconds"] for r in group])) if available else None})
    return out


def markdown(summary: list[dict[str, Any]], methods: list[str]) -> str:
    """Tasks as rows, methods as columns: ``acc +- std (MACs, s)``; ``n/a`` where a method is unavailable."""
    cell = {(s["task"], s["method"]): s for s in summary}
    lines = ["| task | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for task in dict.fromkeys(s["task"] for s in summary):
        cells = []
        for method in methods:
            s = cell[(task, method)]
            cells.append("n/a" if s["accuracy"] is None else
                         f"{s['accuracy']:.1f} ± {s['std']:.1f} ({s['macs']} MACs, {s['seconds']:.1f} s)")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: tasks, methods, seeds, atoms, quick, out, plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds (0, 1, ...)")
    parser.add_argument("--atoms", type=int, default=50, help="atoms per head (N); the MLP's width")
    parser.add_argument("--quick", action="store_true", help="5 DCA iterations, a small SVM grid")
    parser.add_argument("--out", type=Path, help="write the rows and summary as JSON")
    parser.add_argument("--plot", type=Path, help="write accuracy against MACs as a PNG")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.atoms < 1:
        parser.error("--seeds and --atoms must be at least 1")
    return args


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the suite, print the table; return the summary rows."""
    args = parse_args(argv)
    rows = [run_one(task, method, seed, args.atoms, args.quick)
            for task in args.tasks for seed in range(args.seeds) for method in args.methods]
    summary = summarise(rows)
    print(markdown(summary, args.methods))
    if args.out:
        text = json.dumps({"rows": rows, "summary": summary}, indent=1)
        write_atomically(args.out, lambda file: file.write(text.encode()))
    if args.plot:
        from figures import accuracy_against_macs
        accuracy_against_macs(summary, args.plot)
    return summary


if __name__ == "__main__":
    main()
