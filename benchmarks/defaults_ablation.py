"""Why did default LAST lose to its SGD baseline on texture-like tasks? (issue 55 item 2)

Fits LASTClassifier variants that change ONE thing of the former default fit (mu = 0): the start,
the scale of the objective, the majoriser, the inner solver and its step rule, the stopping rule,
the weight decay; and the SGD baseline on a few tasks of the generalisation suite over several seeds, and prints per
variant: test accuracy (mean +- std over seeds), training accuracy, the final objective of (P) per
training row, DCA iterations and seconds; and the test accuracy after DCA iterations 1, 3, 10 and
the last (does the test accuracy peak early: over-fitting, or climb slowly: under-optimisation?).

    nice python benchmarks/defaults_ablation.py --data ../shared/data --tasks bark-woodgrain-12 \
        --variants former-default sgd tight early-stopping --seeds 2
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np

import generalisation_tasks
from lastedge.runtime.writing import write_atomically
from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train import last as last_module
from lastedge.train import mu_choice
from lastedge.train import problem

# Each variant changes one thing of the fit that was LASTClassifier's default before issue 55
# ("former-default": mu = 0, the paper's objective, whose full-batch sub-problems Adam solves): its
# parameters, FitSettings overrides (settings.resolve's result) and the start's active fraction
# (problem.INIT_ACTIVE_FRACTION; None: the paper's unscaled samples). "mu-0.1" is the new default
# on unit-norm rows (mu="auto").
BASE = "former-default"
VARIANTS: dict[str, dict[str, Any]] = {
    BASE: {},
    "paper-start": {"start": None},
    "start-20%": {"start": 0.2},
    "tight": {"settings": {"surrogate": "tight"}},
    "lbfgs": {"params": {"inner_solver": "lbfgs"}},
    "adam-fixed-0.01": {"params": {"step_sizes": (0.01,)}, "settings": {"fixed_step": True}},
    "dca-30x300-fixed": {"params": {"step_sizes": (0.01,), "max_dca_iter": 30, "tol": 0.0},
                         "settings": {"fixed_step": True}},
    "adam-1000": {"params": {"inner_iter": 1000}},
    "tol-0": {"params": {"tol": 0.0}},
    "iter-10": {"params": {"max_dca_iter": 10}},
    "early-stopping": {"params": {"early_stopping": True}},
    "minibatch-100": {"params": {"batch_size": 100}},
    "mu-0.1": {"params": {"mu": 0.1}},
    "mu-0.1-adam": {"params": {"mu": 0.1, "inner_solver": "adam"}},
    "mu-0.3": {"params": {"mu": 0.3}},
    "mu-1": {"params": {"mu": 1.0}},
    # mu="auto" with these candidates (each a weight decay per unit of the rows' mean squared norm)
    "auto-mu-0.1": {"params": {"mu": "auto"}, "auto_mu": (0.1,)},  # the default before the hold-out choice
    "auto-mu-0.3": {"params": {"mu": "auto"}, "auto_mu": (0.3,)},
    "auto": {"params": {"mu": "auto"}},  # the default: 0.1 or 0.3 chosen on a hold-out
    "nu-0.1": {"params": {"nu": 0.1}},
    "nu-10": {"params": {"nu": 10.0}},
    "nu-m": {"params": {"nu": "m"}},  # the regulariser not divided by m: (P) / m with nu = 1
    "beta-10": {"params": {"beta": 10.0}},
    "sgd": {},
}
CURVE_AT = (1, 3, 10)  # DCA iterations after which the test accuracy is reported


@contextlib.contextmanager
def patched(variant: dict[str, Any]) -> Iterator[None]:
    """The variant's start and FitSettings overrides in place for the duration of a fit."""
    resolve, fraction, candidates = last_module.resolve, problem.INIT_ACTIVE_FRACTION, mu_choice.CANDIDATES
    overrides = dict(variant.get("settings", {}))
    fixed_step = overrides.pop("fixed_step", False)
    t0 = {}

    def patched_resolve(*args, **kwargs):
        settings = dataclasses.replace(resolve(*args, **kwargs), **overrides)
        if fixed_step:  # no decay rho * t0 / t: t0 as long as the solve
            t0["n"] = settings.inner_iter
        return settings

    original_make = last_module.make_inner_solver

    def make(*args, **kwargs):
        solver = original_make(*args, **kwargs)
        if fixed_step:
            solver.t0 = t0["n"]
            solver.max_extensions = 0
        return solver

    last_module.resolve, last_module.make_inner_solver = patched_resolve, make
    mu_choice.CANDIDATES = variant.get("auto_mu", candidates)
    if "start" in variant:
        problem.INIT_ACTIVE_FRACTION = variant["start"]
        _paper_start(variant["start"] is None)
    try:
        yield
    finally:
        last_module.resolve, last_module.make_inner_solver = resolve, original_make
        problem.INIT_ACTIVE_FRACTION = fraction
        mu_choice.CANDIDATES = candidates
        _paper_start(False)


_activation_scale = problem._activation_scale


def _paper_start(unscaled: bool) -> None:
    """The paper's start (atoms = training samples as they are) or the default scaled one."""
    problem._activation_scale = (lambda responses, fraction: np.ones(responses.shape[1], np.float32)) \
        if unscaled else _activation_scale


def fit_variant(name: str, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                n_atoms: int, seed: int, sgd_iter: int) -> dict[str, Any]:
    """One fit of variant ``name``: accuracies (%), objective per row, iterations, seconds, curve."""
    if name == "sgd":
        model = SGDSoftThresholdClassifier(n_atoms=n_atoms, random_state=seed, verbose=0, max_iter=sgd_iter)
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        return _row(model, X, y, X_test, y_test, seconds, model.history_[-1]["objective"], 0, {})
    variant = VARIANTS[name]
    params = {"mu": 0.0, **variant.get("params", {})}
    if params.get("nu") == "m":
        params["nu"] = float(len(X))
    model = LASTClassifier(n_atoms=n_atoms, random_state=seed, verbose=0, **params)
    curve: dict[int, float] = {}

    def monitor(k: int, estimator: LASTClassifier) -> bool:
        if k + 1 in CURVE_AT:
            curve[k + 1] = 100.0 * float(np.mean(estimator.predict(X_test) == y_test))
        return False

    with patched(variant), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, y, monitor=monitor)
        seconds = time.perf_counter() - start
    history = model.history_ if isinstance(model.history_[0], dict) else model.history_[0]
    return _row(model, X, y, X_test, y_test, seconds, history[-1]["objective"], model.n_iter_, curve)


def _row(model, X, y, X_test, y_test, seconds, final_objective, n_iter, curve) -> dict[str, Any]:
    return {"test": 100.0 * model.score(X_test, y_test), "train": 100.0 * model.score(X, y),
            "objective": float(final_objective) / len(X), "n_iter": n_iter, "seconds": seconds,
            "curve": curve}


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: a row per (task, variant), mean +- std over seeds."""
    lines = ["| task | variant | test % | train % | (P) / m | DCA iter | s | test % after 1 / 3 / 10 iter |",
             "|---|---|---|---|---|---|---|---|"]
    for key in dict.fromkeys((r["task"], r["variant"]) for r in rows):
        group = [r for r in rows if (r["task"], r["variant"]) == key]
        stat = {f: np.array([r[f] for r in group]) for f in ("test", "train", "objective", "n_iter", "seconds")}
        spread = f" ± {stat['test'].std(ddof=1):.1f}" if len(group) > 1 else ""
        curve = " / ".join(f"{np.mean([r['curve'][k] for r in group]):.1f}" if all(k in r["curve"] for r in group)
                           else "-" for k in CURVE_AT)
        lines.append(f"| {key[0]} | {key[1]} | {stat['test'].mean():.1f}{spread} | {stat['train'].mean():.1f} | "
                     f"{stat['objective'].mean():.4f} | {stat['n_iter'].mean():.0f} | "
                     f"{stat['seconds'].mean():.0f} | {curve} |")
    return "\n".join(lines)


def against_base(rows: list[dict[str, Any]]) -> str:
    """Markdown: per variant, the mean over tasks of its test accuracy less the former default's
    (same seeds), and on how many tasks it is better / worse by more than one s.e. of that difference."""
    lines = ["| variant | tasks | mean gain over former-default (points) | better / worse beyond 1 s.e. |",
             "|---|---|---|---|"]
    test = {(r["task"], r["variant"], r["seed"]): r["test"] for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    for variant in dict.fromkeys(r["variant"] for r in rows if r["variant"] != BASE):
        gains, better, worse = [], 0, 0
        for task in dict.fromkeys(r["task"] for r in rows if r["variant"] == variant):
            diff = np.array([test[(task, variant, s)] - test[(task, BASE, s)] for s in seeds
                             if (task, BASE, s) in test and (task, variant, s) in test])
            if not len(diff):
                continue
            se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else 0.0
            gains.append(diff.mean())
            better, worse = better + (diff.mean() > se), worse + (diff.mean() < -se)
        if gains:
            lines.append(f"| {variant} | {len(gains)} | {np.mean(gains):+.1f} | {better} / {worse} |")
    return "\n".join(lines)


def read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    """Rows from earlier runs (their ``--out`` JSON or printed JSON lines); a (task, variant, seed)
    met twice keeps its last row."""
    rows: dict[tuple, dict[str, Any]] = {}
    for path in paths:
        text = path.read_text()
        found = json.loads(text) if text.lstrip().startswith("[") else \
            [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        for row in found:
            row["curve"] = {int(k): value for k, value in row["curve"].items()}  # JSON keys are strings
            rows[(row["task"], row["variant"], row["seed"])] = row
    return list(rows.values())


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run every (task, seed, variant), print the tables; return the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["bark-woodgrain-12"], choices=sorted(generalisation_tasks.TASKS))
    parser.add_argument("--variants", nargs="+", default=[BASE, "sgd"], choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--atoms", type=int, default=50)
    parser.add_argument("--sgd-iter", type=int, default=25_000, help="SGD baseline's max_iter")
    parser.add_argument("--data", type=Path, default=generalisation_tasks.DEFAULT_DATA)
    parser.add_argument("--out", type=Path, help="also write the rows as JSON")
    parser.add_argument("--tables-from", nargs="+", type=Path, help="no fits: the tables of earlier runs' "
                        "--out JSON or printed lines")
    args = parser.parse_args(argv)
    if args.tables_from:
        rows = read_rows(args.tables_from)
        print(table(rows) + "\n\n" + against_base(rows))
        return rows
    rows = []
    for task in args.tasks:
        for seed in range(args.seeds):
            split = generalisation_tasks.load(task, seed, args.data)
            for name in args.variants:
                row = fit_variant(name, *split, args.atoms, seed, args.sgd_iter)
                rows.append({"task": task, "variant": name, "seed": seed, **row})
                print(json.dumps(rows[-1]), flush=True)
    print(table(rows) + "\n\n" + against_base(rows))
    if args.out:
        text = json.dumps(rows, indent=1)
        write_atomically(args.out, lambda file: file.write(text.encode()))
    return rows


if __name__ == "__main__":
    main()
