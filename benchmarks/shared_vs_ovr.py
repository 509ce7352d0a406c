"""LAST with one shared dictionary against one-vs-all, at equal total atoms, on MNIST and USPS.

    python benchmarks/shared_vs_ovr.py [--datasets mnist,usps] [--total-atoms 100,200,...]
                                       [--train-rows N] [--max-dca-iter K] [--inner-solver S]
                                       [--batch-size B] [--n-jobs J] [--device D] [--tol TOL] [--mu MU]
                                       [--methods shared,ovr] [--shift-augment K]
                                       [--seed S | --seed A-B | --seed A,B,...] [--parallel-fits P]
                                       [--quick] [--json PATH] [--plot PATH] [--data ../shared/data]
    python benchmarks/shared_vs_ovr.py --merge A.json B.json ... [--plot PATH]

For each data set and each total atom count T: ``multiclass="shared"`` (one dictionary of T atoms,
each voting for or against one class, trained on the multi-class hinge plus one-vs-all's hinges) and
``multiclass="ovr"`` (T / 10 atoms per class, 10 heads, T in all).
Inputs centred and scaled to unit l2 norm per image (the paper's digits setting). Each model is
fitted once (timed), scored on the full test set, exported with ``to_model`` and saved to a
temporary ``.npz``, whose latency the runtime's numpy backend measures (``lastedge.runtime.bench``,
one thread, standard-normal rows) at batch 1 and batch 1000. Prints one Markdown table; ``--plot``
draws test error against multiply-accumulates per sample. ``--shift-augment K`` trains both
models also on copies of every training image moved 1..K pixels (their rows are labelled so).

Several seeds (``--seed 16-31``) repeat every fit per seed and add a summary: per method and total,
the median, mean and range of the test error over seeds and, seed by seed, its difference from
one-vs-all (mean +- standard error; seeds where it is ahead). The differences between the methods
at one total are a few test images, smaller than the spread between seeds, so they are judged
seed by seed. ``--parallel-fits P`` runs P fits at a time in joblib's worker processes (P x ``--n-jobs``
threads in all; on a GPU several small fits keep it busier than one). ``--merge`` joins the
``--json`` files of several runs (the same training budget per data set, any seeds) into one table,
summary and plot, running nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import train_test_split

import harness
import report
from lastedge.runtime import bench
from lastedge.train import LASTClassifier
from lastedge.train.curves import head_histories
from lastedge.train import selection
from figures import error_against_macs
from paper_data import digits_task
from shared_vs_ovr_args import MULTICLASS, parse_args

PREPROCESS = "center-l2"
# Arguments that must agree, per data set, between files joined by --merge (seeds may differ).
BUDGET_ARGS = ("train_rows", "max_dca_iter", "inner_iter", "inner_solver", "batch_size", "tol",
               "early_stopping")
# Timed calls per model: (batch size, runs); bench splits them into 10 alternating rounds.
LATENCY_RUNS = ((1, 300), (1000, 20))

COLUMNS: list[report.Column] = [
    ("data", "task", "{}"), ("method", "label", "{}"), ("total atoms", "total_atoms", "{}"),
    ("atoms/head", "atoms_per_head", "{}"), ("test error %", "error_pct", "{:.2f}"),
    ("MACs/sample", "macs_per_sample", "{:,}"), ("sparse MACs", "sparse_macs", "{:,}"),
    ("p50 us b=1", "p50_us_b1", "{:.1f}"), ("us/row b=1000", "us_per_row_b1000", "{:.2f}"),
    ("train s", "train_s", "{:.1f}"), ("zeros %", "zeros_pct", "{:.1f}"), ("seed", "seed", "{}"),
    ("fit", "notes", "{}"),
]
SUMMARY_COLUMNS: list[report.Column] = [
    ("data", "task", "{}"), ("method", "label", "{}"), ("total atoms", "total_atoms", "{}"),
    ("seeds", "n_seeds", "{}"), ("median %", "median_pct", "{:.3f}"), ("mean %", "mean_pct", "{:.3f}"),
    ("range %", "range_pct", "{}"), ("minus one-vs-all, mean +- s.e.", "minus_ovr", "{}"),
    ("seeds ahead of one-vs-all", "seeds_ahead", "{}"),
]


@dataclass(frozen=True)
class Fit:
    """One model to fit: a data set, a seed, a total atom count, a method and its weight decay."""

    task: str
    seed: int
    total_atoms: int
    multiclass: str
    mu: float


def stratified_rows(X: np.ndarray, y: np.ndarray, n: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` training rows drawn with class proportions kept (all rows when ``n`` is None or too big)."""
    if n is None or n >= len(y):
        return X, y
    X_sub, _, y_sub, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    return X_sub, y_sub


def build(multiclass: str, total_atoms: int, n_classes: int, args: argparse.Namespace,
          mu: float, image_side: int, seed: int) -> LASTClassifier:
    return LASTClassifier(harness.atoms_per_head(multiclass, total_atoms, n_classes), multiclass=multiclass,
                          preprocess=PREPROCESS,
                          shift_augment=args.shift_augment, image_shape=(image_side, image_side),
                          inner_solver=args.inner_solver, max_dca_iter=args.max_dca_iter,
                          inner_iter=args.inner_iter, batch_size=args.batch_size, n_jobs=args.n_jobs,
                          device=args.device, tol=args.tol, early_stopping=args.early_stopping, mu=mu,
                          random_state=seed, verbose=harness.PROGRESS)


def task_data(task: str, args: argparse.Namespace, seed: int) -> tuple[np.ndarray, ...]:
    """``(X, y, X_test, y_test)`` of a data set, its training rows subsampled with ``seed``."""
    X, y, X_test, y_test = digits_task(task, args.data)
    X, y = stratified_rows(X, y, args.train_rows, seed)
    return X, y, X_test, y_test


def choose_mu(multiclass: str, total_atoms: int, data: tuple[np.ndarray, ...],
              args: argparse.Namespace, seed: int) -> tuple[float, dict[float, float]]:
    """The weight decay in ``args.mu_grid`` whose model, fitted on 90 % of the training rows, is
    most accurate on the other 10 % (stratified; ties keep the smaller mu). The test set plays no part."""
    X_train, y_train = data[0], data[1]
    estimator = build(multiclass, total_atoms, len(np.unique(y_train)), args, mu=0.0,
                      image_side=image_side(X_train), seed=seed)
    best, scores = selection.choose_mu(estimator, args.mu_grid, X_train, y_train,
                                       selection.holdout_split(0.1, seed))
    print(f"  {multiclass} T={total_atoms} seed {seed}: hold-out accuracy % by mu: "
          + ", ".join(f"{mu:g}: {100 * score:.2f}" for mu, score in scores.items()), file=sys.stderr, flush=True)
    return best, scores


def latency(model, folder: Path) -> dict[str, float]:
    """p50 at batch 1 and p50 per row at batch 1000, microseconds, numpy backend, one thread."""
    path = model.save(folder / "model.npz")
    out = {}
    for batch, runs in LATENCY_RUNS:
        (row,) = bench([path], batch_sizes=(batch,), runs=runs, backend="numpy", threads=1)
        out[batch] = row["batches"][0]["p50_us"]
    return {"p50_us_b1": out[1], "p50_us_b1000": out[1000], "us_per_row_b1000": out[1000] / 1000}


def image_side(X: np.ndarray) -> int:
    """MNIST's and USPS's rows are square grey images: 28 and 16 pixels a side."""
    return int(round(np.sqrt(X.shape[1])))


def label(multiclass: str, shift_augment: int = 0) -> str:
    """Table and plot name of a method; models trained on shifted copies say so."""
    return MULTICLASS[multiclass] + (f", shifts <= {shift_augment} px" if shift_augment else "")


def run_one(fit: Fit, data: tuple[np.ndarray, ...], args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Fit, score, export and time one model: one row of the table."""
    multiclass, total_atoms, mu = fit.multiclass, fit.total_atoms, fit.mu
    X_train, y_train, X_test, y_test = data
    n_classes = len(np.unique(y_train))
    clf = build(multiclass, total_atoms, n_classes, args, mu, image_side(X_train), fit.seed)
    row: dict[str, Any] = {"task": fit.task, "method": multiclass, "seed": fit.seed,
                           "label": label(multiclass, args.shift_augment),
                           "total_atoms": total_atoms, "atoms_per_head": clf.n_atoms, "mu": mu,
                           "shift_augment": args.shift_augment,
                           "n_train": len(y_train), "n_test": len(y_test)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            clf.fit(X_train, y_train)
        except Exception as error:  # one failed fit should not lose the other rows
            row.update(train_s=time.perf_counter() - start, notes=f"FAILED: {type(error).__name__}: {error}",
                       warnings=sorted({f"{w.category.__name__}: {w.message}" for w in caught}))
            return row
        row["train_s"] = time.perf_counter() - start
    row["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    row["error_pct"] = 100.0 * float(np.mean(clf.predict(X_test) != y_test))
    row["zeros_pct"] = 100.0 * clf.feature_sparsity(X_test)
    row["notes"] = f"mu={mu:g}, " * bool(mu) + harness._notes(clf)
    row["dca_steps"] = [[record["step"] for record in head] for head in head_histories(clf.history_)]
    model = clf.to_model()
    row["model_atoms"] = model.n_atoms
    row["macs_per_sample"] = model.macs_per_sample
    # What a runtime exploiting W's zeros would do (shared: one vote per atom; OvA: block diagonal).
    row["sparse_macs"] = model.n_features * model.n_atoms + int(np.count_nonzero(model.weights))
    row.update(latency(model, folder))
    return row


def merge_rows(paths: list[Path]) -> list[dict[str, Any]]:
    """The rows of several runs' ``--json`` files as one table, ordered by data set, method, total, seed.

    A later file's row replaces an earlier one for the same data set, method (its label), total
    and seed; files that trained one data set with different budgets are refused.
    """
    merged: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    budgets: dict[str, tuple[Any, ...]] = {}
    for path in paths:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read results file {path}: {error}") from None
        if not isinstance(record, dict) or record.get("benchmark") != "shared_vs_ovr":
            raise ValueError(f"{path} holds no results of shared_vs_ovr.py")
        budget = tuple(record["args"].get(name) for name in BUDGET_ARGS)
        for row in record["results"]:
            if budgets.setdefault(row["task"], budget) != budget:
                raise ValueError(f"{path} trained {row['task']} with other budgets than the files before it "
                                 f"({', '.join(BUDGET_ARGS)})")
            row = {"seed": record["args"]["seed"], **row}  # files before --seed took lists: one int
            merged[row["task"], row["label"], row["total_atoms"], row["seed"]] = row
    if not merged:
        raise ValueError(f"{', '.join(map(str, paths))} hold(s) no result rows")
    tasks, methods = list(budgets), list(MULTICLASS)

    def order(key: tuple[str, str, int, int]) -> tuple[int, int, str, int, int]:
        task, label, total, seed = key
        return tasks.index(task), methods.index(merged[key]["method"]), label, total, seed

    return [merged[key] for key in sorted(merged, key=order)]


def seed_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per data set, method and total: test error over seeds and, seed by seed, minus one-vs-all's.

    A model is paired with the one-vs-all fit of the same data set, total, seed and shifted copies;
    a difference below zero means it is ahead. Failed fits are left out.
    """
    done = [r for r in rows if r.get("error_pct") is not None]
    ovr = {(r["task"], r["total_atoms"], r.get("shift_augment", 0), r["seed"]): r["error_pct"]
           for r in done if r["method"] == "ovr"}
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in done:
        groups.setdefault((r["task"], r["label"], r["total_atoms"]), []).append(r)
    summary = []
    for (task, label, total), members in groups.items():
        errors = np.array([r["error_pct"] for r in members])
        line: dict[str, Any] = {"task": task, "label": label, "total_atoms": total, "n_seeds": len(members),
                                "median_pct": float(np.median(errors)), "mean_pct": float(errors.mean()),
                                "min_pct": float(errors.min()), "max_pct": float(errors.max()),
                                "range_pct": f"{errors.min():.2f}-{errors.max():.2f}"}
        if members[0]["method"] != "ovr":
            line.update(_minus_ovr(members, ovr))
        summary.append(line)
    return summary


def _minus_ovr(members: list[dict[str, Any]], ovr: dict[tuple[str, int, int, int], float]) -> dict[str, str]:
    """Summary cells of a model's errors minus one-vs-all's, seed by seed (none without a pair)."""
    keys = [(r["task"], r["total_atoms"], r.get("shift_augment", 0), r["seed"]) for r in members]
    diffs = np.array([r["error_pct"] - ovr[key] for r, key in zip(members, keys) if key in ovr])
    if not len(diffs):
        return {}
    level = np.isclose(diffs, 0.0)
    se = f" +- {diffs.std(ddof=1) / np.sqrt(len(diffs)):.3f}" if len(diffs) > 1 else ""
    return {"minus_ovr": f"{diffs.mean():+.3f}{se}",
            "seeds_ahead": (f"{int(np.sum((diffs < 0) & ~level))} of {len(diffs)}"
                            + f" ({int(level.sum())} level)" * bool(level.any()))}


def write_json(args: argparse.Namespace, rows: list[dict[str, Any]], selections: list[dict[str, Any]]) -> None:
    report.write_json(args.json, "shared_vs_ovr", args, rows,
                       extra={"mu_selection": selections,
                              "last_budget": {"max_dca_iter": args.max_dca_iter, "inner_iter": args.inner_iter,
                                              "inner_solver": args.inner_solver},
                              "sgd_iter": None, "latency_runs": LATENCY_RUNS})


def print_table(rows: list[dict[str, Any]], parallel_fits: int = 1) -> None:
    print(report.markdown_table(rows, COLUMNS))
    print("\nNotes: MACs/sample is the runtime's count (n x T + T x 10, dense weights); sparse MACs counts "
          "only W's non-zeros (shared: one per atom). Latency: lastedge.runtime.bench on the saved .npz, "
          f"numpy backend, one thread, p50 of {LATENCY_RUNS[0][1]} calls at batch 1 and "
          f"{LATENCY_RUNS[1][1]} at batch 1000 (per row)"
          + f", measured beside up to {parallel_fits - 1} other fits" * (parallel_fits > 1)
          + ". Train time is one fit; test error on the full test set.")
    if len({row["seed"] for row in rows}) > 1:
        print("\nOver seeds (test error %; minus one-vs-all: the same seed's one-vs-all fit of the same "
              "total and copies subtracted, below zero is ahead):\n")
        print(report.markdown_table(seed_summary(rows), SUMMARY_COLUMNS))


def planned_fits(args: argparse.Namespace) -> tuple[list[Fit], list[dict[str, Any]]]:
    """Every fit these arguments ask for, in table order, and the ``--mu-grid`` choices behind them
    (made here, per data set, seed and method, at the first total)."""
    fits, selections = [], []
    for task in args.datasets:
        for seed in args.seed:
            mus = {multiclass: args.mu for multiclass in args.methods}
            for multiclass in args.methods if args.mu_grid else ():
                mus[multiclass], scores = choose_mu(multiclass, args.total_atoms[0], task_data(task, args, seed),
                                                    args, seed)
                selections.append({"task": task, "method": multiclass, "seed": seed,
                                   "total_atoms": args.total_atoms[0], "holdout_accuracy": scores,
                                   "mu": mus[multiclass]})
            fits += [Fit(task, seed, total, multiclass, mus[multiclass])
                     for total in args.total_atoms for multiclass in args.methods]
    return fits, selections


def _fit_alone(index: int, fit: Fit, args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """One fit in a worker process of ``--parallel-fits``, which loads its own data."""
    with tempfile.TemporaryDirectory() as tmp:
        return index, run_one(fit, task_data(fit.task, args, fit.seed), args, Path(tmp))


def run_fits(fits: list[Fit], args: argparse.Namespace) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index in fits, row)`` as each fit ends: in this process one after another, or
    ``--parallel-fits`` at a time through joblib (each loads its own data)."""
    if args.parallel_fits == 1:
        data_key, data = None, ()
        with tempfile.TemporaryDirectory() as tmp:
            for index, fit in enumerate(fits):
                if data_key != (fit.task, fit.seed):
                    data_key, data = (fit.task, fit.seed), task_data(fit.task, args, fit.seed)
                yield index, run_one(fit, data, args, Path(tmp))
        return
    # joblib's process workers (loky: started fresh, never forked, so CUDA works in them); the
    # backend chosen with joblib.parallel_config (e.g. "dask") runs them on a cluster instead.
    yield from Parallel(n_jobs=min(args.parallel_fits, len(fits)), return_as="generator_unordered")(
        delayed(_fit_alone)(index, fit, args) for index, fit in enumerate(fits))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.merge:
        try:
            rows = merge_rows(args.merge)
        except ValueError as error:
            print(f"shared_vs_ovr.py: error: {error}", file=sys.stderr)
            return 2
        print_table(rows)
        if args.plot:
            error_against_macs(rows, seed_summary(rows), args.plot)
        return 0
    fits, selections = planned_fits(args)
    finished: dict[int, dict[str, Any]] = {}
    for index, row in run_fits(fits, args):
        finished[index] = row
        fit = fits[index]
        err = "failed" if row.get("error_pct") is None else f"{row['error_pct']:.2f} % error"
        print(f"  [{len(finished)}/{len(fits)}] {fit.task}: {fit.multiclass} T={fit.total_atoms} seed {fit.seed}: "
              f"{err}, {row['train_s']:.1f} s", file=sys.stderr, flush=True)
        if args.json:  # after every fit: a run stopped by a timeout keeps what it measured
            write_json(args, [finished[i] for i in sorted(finished)], selections)
    rows = [finished[i] for i in sorted(finished)]
    n_train = ", ".join(f"{t} {r['n_train']} train / {r['n_test']} test"
                        for t, r in {r["task"]: r for r in rows}.items())
    print(f"Shared dictionary vs one-vs-all LAST at equal total atoms ({n_train}; {PREPROCESS}; "
          f"inner solver {args.inner_solver}, max {args.max_dca_iter} DCA iterations, inner iterations "
          f"{args.inner_iter or 'default'})" + ("; QUICK budgets, not results" if args.quick else "") + ".\n")
    print_table(rows, args.parallel_fits)
    notes = report.warning_lines([{**r, "n_atoms": f"{r['total_atoms']}, seed {r['seed']}"} for r in rows])
    if notes:
        print("\nWarnings during fit:\n" + "\n".join(notes))
    if args.plot:
        error_against_macs(rows, seed_summary(rows), args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
