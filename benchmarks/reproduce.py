"""Reproduce the paper's experiments on its own data sets, side by side with its numbers.

    python benchmarks/reproduce.py EXPERIMENT [--data ../shared/data] [--out reproduce-results]
                                   [--quick] [--seed 0] [--n-atoms ...] [--methods ...]
                                   [--tasks ...] [--mnist-budget SECONDS] [--texture-source ...]
    python benchmarks/reproduce.py EXPERIMENT --merge RUN.json [RUN.json ...] [--out ...]

EXPERIMENT is one of ``textures``, ``deer-horse``, ``digits`` (MNIST and USPS), ``test-time``, or
``all``. Each prints a Markdown table with the paper's number beside ours and writes
``OUT/EXPERIMENT.json`` (rows are added as they finish, so a stopped run keeps what it measured)
and its figures ``OUT/*.png``. ``--quick`` runs every experiment on small subsets with tiny budgets
(a smoke test of the whole pipeline, not results). A narrowed run (``--tasks``, ``--methods``,
``--n-atoms``, ``--texture-source scan``) names every output after what narrowed it, so it never
overwrites another run's. ``--merge`` joins the JSON files of partial runs into one table and its
figures; the merged file records each file's run (its arguments, machine, versions), the files
must have run on the same data (texture source, ``--quick``), and the outputs are named for it.
Data set files and their provenance: ``../shared/data/SOURCES.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split

import figures
import arguments
import harness
import report
from lastedge.runtime.model import check_output_path, write_atomically
from lastedge.train.curves import head_histories
from paper_data import DEFAULT_DATA, TEXTURE_SOURCES, TEXTURE_TASKS, deer_horse_task, digits_task, texture_task
from paper_results import PAPER_SPARSITY_PCT, paper_error

Data = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
ATOM_FREE = None  # plan entry of a method without atoms: run once per task
QUICK_ROWS = {"train": 400, "test": 200}
QUICK_TEXTURE_PATCHES = 60  # per texture and split
QUICK_BUDGET = {"last": {"max_dca_iter": 2, "inner_iter": 30}}  # SGD's --quick budget: harness.Budget
# MNIST LAST: the wall-clock budget; its learning curve is checked against these errors.
MNIST_BUDGET_S = 20 * 60
MILESTONES_PCT = (2.0, 1.5, 1.32)
# What a results file records of the run that wrote it; a merged file holds a list of its files' values.
RUN_FIELDS = ("args", "machine", "versions", "sgd_iter")
# Options that narrow a run or choose its data: a merge runs nothing and takes its data from its files.
MERGE_REFUSES = ("tasks", "methods", "n_atoms", "texture_source")
DIGITS_TASKS = ("mnist", "usps")


@dataclass(frozen=True)
class Experiment:
    """One table of the paper: its tasks, preprocessing, and which methods run at which N."""

    name: str
    data_files: tuple[str, ...]
    load: Callable[[argparse.Namespace], dict[str, Data]]  # reads --data, --seed, --quick, ...
    preprocess: str
    plans: Callable[[str], dict[str, list[int] | None]]
    options: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # task -> method -> kwargs
    cv_rows: int | None = None
    caption: str = ""
    data_args: tuple[str, ...] = ()  # options that change the data: merged files must agree on them
    tasks: tuple[str, ...] = ()  # what --tasks may name


def subsample(data: Data, seed: int) -> Data:
    """The ``--quick`` subset: a few hundred stratified rows of each split."""
    X_train, y_train, X_test, y_test = data
    keep = []
    for X, y, n in ((X_train, y_train, QUICK_ROWS["train"]), (X_test, y_test, QUICK_ROWS["test"])):
        if n < len(y):
            X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
        keep += [X, y]
    return tuple(keep)


def _quick(tasks: dict[str, Data], args: argparse.Namespace) -> dict[str, Data]:
    return {task: subsample(data, args.seed) for task, data in tasks.items()} if args.quick else tasks


def _texture_tasks(args: argparse.Namespace) -> dict[str, Data]:
    # --quick cuts fewer patches rather than subsampling: patches come from disjoint image regions
    n_per_class = QUICK_TEXTURE_PATCHES if args.quick else 500
    return {task: texture_task(task, args.data, n_per_class=n_per_class, seed=args.seed,
                               source=args.texture_source)
            for task in TEXTURE_TASKS}


def _deer_horse_tasks(args: argparse.Namespace) -> dict[str, Data]:
    return _quick({"deer-horse": deer_horse_task(args.data)}, args)


def _digits_tasks(args: argparse.Namespace) -> dict[str, Data]:
    return _quick({name: digits_task(name, args.data) for name in DIGITS_TASKS}, args)


def _texture_plan(task: str) -> dict[str, list[int] | None]:
    every = [2, 5, 10, 25, 50, 100, 200, 400]
    # the targets first (LAST against the RBF SVM and SGD); last-mu's 3-fold CV costs 13 fits
    # (about 25 minutes a task at N = 400 on 2 cores); last-lbfgs, the full-batch default before
    # 2026-11-28, is kept beside it
    return {"last": every, "last-mu": every, "last-lbfgs": every, "rbf-svm": ATOM_FREE,
            "linear-svm": ATOM_FREE, "sgd": every, "sgd-adam": every, "random-svm": every,
            "kmeans-svm": every, "l1-svm": every, "sparse-coding": [50, 400], "centroid-nn": [50, 400]}


def _deer_horse_plan(task: str) -> dict[str, list[int] | None]:
    every = [2, 10, 30, 100, 400]
    return {"last": every, "last-mu": [400], "sgd": every, "sgd-adam": every, "random-svm": every,
            "kmeans-svm": every, "l1-svm": every, "sparse-coding": [10, 100], "centroid-nn": [10, 100],
            "linear-svm": ATOM_FREE, "rbf-svm": ATOM_FREE}


def _digits_plan(task: str) -> dict[str, list[int] | None]:
    n = {"mnist": [400], "usps": [200]}[task]
    # USPS: mu = 1 is set in its LAST options (a validated search over 30 DCA iterations costs too much)
    validated = {"last-mu": n} if task == "mnist" else {}
    return {"last": n, **validated, "sgd": n, "sgd-adam": n, "sparse-coding": n, "linear-svm": ATOM_FREE,
            "rbf-svm": ATOM_FREE, "knn": ATOM_FREE}


EXPERIMENTS: dict[str, Experiment] = {
    "textures": Experiment(
        "textures", ("brodatz_usc_sipi.npz",), _texture_tasks, "l2", _texture_plan,
        caption="Brodatz (USC-SIPI scans, halved and histogram-equalised unless --texture-source scan): "
                "500 + 500 training patches (12x12) per task from the top half of each image, 500 + 500 "
                "test patches from the bottom half; unit l2 norm.",
        data_args=("texture_source",), tasks=tuple(TEXTURE_TASKS)),
    "deer-horse": Experiment(
        "deer-horse", ("cifar10_deer_horse.npz",), _deer_horse_tasks, "none", _deer_horse_plan,
        options={"deer-horse": {"last": {"batch_size": 500, "inner_iter": 500, "max_dca_iter": 20,
                                         "n_jobs": 2},
                                # Raw pixels: rows have norm ~7000, so mu must be ~r^2 = 5e7 times the
                                # unit-norm data sets' to weigh the same; one 10 % hold-out (a fit at
                                # N = 400 takes 6-9 minutes, too slow for 3 folds x 4 candidates).
                                "last-mu": {"grid": (0.0, 4e6, 4e7, 4e8), "holdout": 0.1}}},
        cv_rows=2000,
        caption="CIFAR-10 deer vs horse (JPEG copy): 10000 train / 2000 test, raw pixels (3072).",
        tasks=("deer-horse",)),
    "digits": Experiment(
        "digits", ("mnist.npz", "usps.npz"), _digits_tasks, "center-l2", _digits_plan,
        options={"mnist": {"last": {"batch_size": 1000, "inner_iter": 300, "max_dca_iter": 100, "n_jobs": 2,
                                    "early_stopping": True},
                           # about 8 minutes a candidate; mu = 0.1 is next to nothing beside 54000 hinge terms
                           "last-mu": {"grid": (0.0, 1.0, 10.0)}},
                 # mu (weight decay on the atoms) chosen on a 10 % hold-out of the training rows among
                 # 0, 0.1, 1, 10 (hold-out errors 3.01, 1.64, 1.23, 1.64 %; docs/benchmarks.md, USPS)
                 "usps": {"last": {"batch_size": 500, "inner_iter": 300, "max_dca_iter": 30, "n_jobs": 2,
                                   "mu": 1.0}}},
        cv_rows=5000,
        caption="MNIST (60000 / 10000) and USPS (7291 / 2007), one-vs-all, zero mean and unit l2 "
                "norm per image.", tasks=DIGITS_TASKS),
}
EXPERIMENT_NAMES = (*EXPERIMENTS, "test-time")


# ------------------------------------------------------------------ runs
def load_tasks(experiment: Experiment, args: argparse.Namespace) -> dict[str, Data]:
    """The experiment's tasks (only those of ``--tasks`` when given), each as (X_train, y_train, X_test, y_test)."""
    tasks = experiment.load(args)
    return {task: data for task, data in tasks.items() if not args.tasks or task in args.tasks}


def plan_for(experiment: Experiment, task: str, args: argparse.Namespace) -> dict[str, list[int] | None]:
    """The experiment's plan, narrowed by ``--methods`` / ``--n-atoms`` and by ``--quick``.

    A method named in ``--methods`` but not in the plan (a LAST variant such as ``last-lbfgs``)
    runs at the plan's LAST sizes."""
    plan = experiment.plans(task)
    if args.methods:
        extra = {key: plan["last"] if harness.METHODS[key].uses_atoms else ATOM_FREE
                 for key in args.methods if key not in plan}
        plan = {**{key: atoms for key, atoms in plan.items() if key in args.methods}, **extra}
    for key, atoms in plan.items():
        if atoms is ATOM_FREE:
            continue
        if args.n_atoms:
            plan[key] = list(args.n_atoms)
        elif args.quick:
            plan[key] = [n for n in atoms if n <= 10][:2] or [10]
    return {key: atoms for key, atoms in plan.items() if atoms is ATOM_FREE or atoms}


def setting(experiment: Experiment, task: str, n_atoms: int, n_heads: int,
            args: argparse.Namespace) -> harness.Setting:
    options = {key: dict(value) for key, value in experiment.options.get(task, {}).items()}
    budget = harness.Budget(args.quick)
    if args.quick:
        options["last"] = {**options.get("last", {}), **QUICK_BUDGET["last"]}
    return harness.Setting(n_atoms, n_heads, experiment.preprocess, args.seed, budget, options,
                           cv_rows=min(experiment.cv_rows or 10**9, 300) if args.quick else experiment.cv_rows)


class LearningCurve:
    """``LASTClassifier.fit`` monitor: the test error after every DCA iteration, and a time budget.

    Reporting only: training stops on the wall-clock budget, never on the test error.
    """

    def __init__(self, X_test: np.ndarray, y_test: np.ndarray, budget_s: float | None):
        self.X_test, self.y_test, self.budget_s = X_test, y_test, budget_s
        self.points: list[dict[str, float]] = []
        self.start = time.perf_counter()

    def __call__(self, k: int, estimator) -> bool:
        elapsed = time.perf_counter() - self.start
        error = 100.0 * float(np.mean(estimator.predict(self.X_test) != self.y_test))
        self.points.append({"iteration": k + 1, "time": elapsed, "error_pct": error})
        print(f"    DCA {k + 1}: {elapsed:.0f} s, test error {error:.2f} %", file=sys.stderr, flush=True)
        return self.budget_s is not None and elapsed >= self.budget_s

    def milestones(self) -> dict[str, float | None]:
        """Seconds until the test error first reached each of ``MILESTONES_PCT`` (None: never)."""
        return {f"{m:g}": next((p["time"] for p in self.points if p["error_pct"] <= m), None)
                for m in MILESTONES_PCT}


def run_experiment(experiment: Experiment, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    kept: dict[tuple[str, str, int | None], Any] = {}
    json_path = args.out / f"{output_name(experiment.name, args)}.json"
    tasks = load_tasks(experiment, args)
    for task, data in tasks.items():
        n_classes = len(np.unique(data[1]))
        n_heads = 1 if n_classes == 2 else n_classes
        for key, atoms in plan_for(experiment, task, args).items():
            for n in (atoms or [None]):
                fit_params = {}
                if key in ("last", "last-mu") and n_heads > 1:
                    def new_curve(data=data, task=task):
                        return LearningCurve(data[2], data[3], args.mnist_budget if task == "mnist" else None)
                    fit_params = {"monitor": new_curve()} if key == "last" else {"monitor_factory": new_curve}
                row, model = harness.run_method(key, setting(experiment, task, n or 0, n_heads, args), data, task,
                                                fit_params)
                row["paper_error_pct"] = paper_error(task, key, n)
                row.update(_training_record(model, fit_params.get("monitor", getattr(model, "monitor_", None))))
                print(f"  {task}: {key} N={n or '-'}: {row['error_pct']:.2f} % error "
                      f"(paper {row['paper_error_pct'] or '-'}), {row['train_s']:.1f} s",
                      file=sys.stderr, flush=True)
                rows.append(row)
                kept[task, key, n] = model
                if task == "mnist" and key in ("last", "last-mu"):
                    model.to_model().save(args.out / f"mnist_{key}.npz")
                write_json(json_path, experiment.name, args, rows)
    make_figures(experiment, rows, kept, {task: data[2:] for task, data in tasks.items()}, args)
    return rows


def output_name(experiment: str, args: argparse.Namespace) -> str:
    """File stem of an experiment's outputs: ``digits``, or e.g. ``digits-mnist-knn-n50_100`` when
    ``--tasks mnist --methods knn --n-atoms 50,100`` narrow the run (so a narrowed run never
    overwrites a full one)."""
    scan = ["scan"] if experiment == "textures" and args.texture_source == "scan" else []
    sizes = [f"n{'_'.join(map(str, args.n_atoms))}"] if args.n_atoms else []
    return "-".join([experiment, *scan, *(args.tasks or []), *(args.methods or []), *sizes])


def run_tag(experiment: str, args: argparse.Namespace) -> str:
    """What ``output_name`` adds to the experiment's name, e.g. ``"scan_"`` or ``"mnist-knn_"`` (""
    for a full run): the figures not named after the output add it, so no run overwrites another's."""
    extra = output_name(experiment, args)[len(experiment) + 1:]
    return f"{extra}_" if extra else ""


def _training_record(model, curve: LearningCurve | None) -> dict[str, Any]:
    """The objective-against-time history of LAST and SGD fits, and LAST's learning curve."""
    record: dict[str, Any] = {}
    history = getattr(model, "history_", None)
    if history:
        heads = head_histories(history)
        # One-vs-all heads share the clock; the figure wants the summed objective per iteration.
        n = min(len(h) for h in heads)
        record["history"] = [{"time": heads[0][i]["time"],
                              "objective": sum(h[i]["objective"] for h in heads)} for i in range(n)]
    if curve is not None:
        record["learning_curve"] = curve.points
        record["seconds_to_error_pct"] = curve.milestones()
    return record


def merge_rows(experiment: Experiment, paths: list[Path]) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
    """The rows of several (partial) runs' JSON files of one experiment, as one table, and what the
    files record of the runs that made them (``RUN_FIELDS``, their arguments included: each distinct
    value once, in file order; a merged file's list counts as its runs'), which the merged file
    keeps: the merge itself ran none of them.

    A later file's row replaces an earlier one for the same task, method and N; rows are ordered
    by task (as first seen), then by the experiment's plan, then by N. Files whose runs differ in
    the data (``data_args``, ``--quick``'s subsets) are refused.
    """
    merged: dict[tuple[str, str, int | None], dict[str, Any]] = {}
    runs: dict[str, list[Any]] = {name: [] for name in RUN_FIELDS}
    for path in paths:
        record = _results_file(experiment, path)
        for name in RUN_FIELDS:
            runs[name] += [value for value in _run_values(record, name) if value not in runs[name]]
        if len({data_choice(experiment, args) for args in runs["args"]}) > 1:
            options = ", ".join("--" + name.replace("_", "-") for name in (*experiment.data_args, "quick"))
            raise ValueError(f"{path} ran with other {options} than the files before it")
        for row in record["results"]:
            merged[row["task"], row["method"], row["n_atoms"]] = row
    if not merged:
        raise ValueError(f"{', '.join(map(str, paths))} hold(s) no result rows")
    tasks = list(dict.fromkeys(task for task, _, _ in merged))

    def order(key: tuple[str, str, int | None]) -> tuple[int, int, int]:
        task, method, n = key
        methods = list(experiment.plans(task))
        rank = methods.index(method) if method in methods else len(methods)
        return tasks.index(task), rank, -1 if n is None else n

    return [merged[key] for key in sorted(merged, key=order)], runs


def _results_file(experiment: Experiment, path: Path) -> dict[str, Any]:
    """The record in ``path``; a ValueError naming the file if it is not the experiment's results."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read results file {path}: {error}") from None
    if not isinstance(record, dict) or record.get("benchmark") != f"reproduce {experiment.name}":
        raise ValueError(f"{path} holds no results of reproduce.py {experiment.name}")
    rows = record.get("results")
    if not isinstance(rows, list) or not all(isinstance(row, dict) and {"task", "method", "n_atoms"} <= row.keys()
                                             for row in rows):
        raise ValueError(f"{path} holds no list of result rows (each with task, method and n_atoms)")
    return record


def _run_values(record: dict[str, Any], name: str) -> list[Any]:
    """``record[name]`` as a list of runs' values: a run's own value is never a list, a merged
    file's is one value per run it joined."""
    value = record.get(name)
    return [] if value is None else value if isinstance(value, list) else [value]


def data_choice(experiment: Experiment, args: dict[str, Any]) -> tuple[Any, ...]:
    """What a run's arguments (a results file's ``args``) chose of the data: the experiment's
    ``data_args`` and ``--quick`` (subsets of the data, tiny budgets)."""
    return (*(args.get(name) for name in experiment.data_args), bool(args.get("quick")))


# ---------------------------------------------------------------- figures
def make_figures(experiment: Experiment, rows: list[dict[str, Any]], kept: dict,
                 test_data: dict[str, tuple[np.ndarray, np.ndarray]], args: argparse.Namespace) -> None:
    """The experiment's figures, from its result rows and the models kept in memory."""
    out, tag = args.out, run_tag(experiment.name, args)
    if experiment.name in ("textures", "deer-horse"):
        figures.accuracy_vs_atoms(rows, out / f"{output_name(experiment.name, args)}_accuracy.png",
                                  f"{experiment.name}: test accuracy against atoms N")
    if experiment.name == "textures":
        n = _closest([r["n_atoms"] for r in rows if r["method"] == "last"], 50)
        for task in TEXTURE_TASKS:
            # the "-mu" methods' objective adds (mu/2)||U||^2: not (P), so not on this figure
            curves = {r["label"]: [(p["time"], p["objective"]) for p in r["history"]]
                      for r in rows if r["task"] == task and r["n_atoms"] == n and r.get("history")
                      and not r["method"].endswith("-mu")}
            if curves:
                figures.objective_vs_time(curves, out / f"objective_vs_time_{tag}{task}.png",
                                          f"{task}, N = {n}: objective of (P) against training time")
    if experiment.name == "deer-horse":
        atoms = _closest([n for (_, key, n) in kept if key == "last"], 30)
        dictionaries = {}
        if ("deer-horse", "kmeans-svm", atoms) in kept:
            dictionaries["k-means"] = kept["deer-horse", "kmeans-svm", atoms].atoms_
        if ("deer-horse", "last", atoms) in kept:
            dictionaries["LAST"] = kept["deer-horse", "last", atoms].dictionary_
        if dictionaries:
            figures.atoms_as_images(dictionaries, (32, 32, 3), out / f"deer_horse_{tag}atoms.png",
                                    f"deer vs horse: atoms, N = {atoms}", channels_first=True)
        if ("deer-horse", "last", 2) in kept:
            model = kept["deer-horse", "last", 2]
            X_test, y_test = test_data["deer-horse"]
            figures.features_2d(model.transform(X_test), y_test, model.coef_[:, 0],
                                out / f"deer_horse_{tag}features_n2.png",
                                "deer vs horse, LAST N = 2: test features and decision line",
                                class_names=("deer", "horse"))
    if experiment.name == "digits":
        curves = {r["task"].upper(): [(p["time"], p["error_pct"]) for p in r["learning_curve"]]
                  for r in rows if r.get("learning_curve")}
        if curves:
            figures.objective_vs_time(curves, out / f"{output_name(experiment.name, args)}_last_learning_curve.png",
                                      "LAST one-vs-all: test error against training time",
                                      ylabel="test error %", log_y=False)


def _closest(values: list[int | None], target: int) -> int | None:
    values = [v for v in values if v is not None]
    return min(values, key=lambda v: abs(v - target)) if values else None


# ------------------------------------------------------------------ output
COLUMNS: list[report.Column] = [
    ("task", "task", "{}"), ("method", "label", "{}"), ("N", "n_atoms", "{}"),
    ("test error %", "error_pct", "{:.2f}"), ("paper error %", "paper_error_pct", "{:.2f}"),
    ("train s", "train_s", "{:.1f}"), ("predict ms", "predict_ms", "{:.1f}"),
    ("zeros %", "zeros_pct", "{:.1f}"), ("chosen", "notes", "{}"),
]


def write_json(path: Path, name: str, args: argparse.Namespace, rows: list[dict[str, Any]],
               runs: dict[str, list[Any]] | None = None) -> None:
    """``report.write_json``; a merge passes ``runs``, its files' ``RUN_FIELDS`` and the files
    (``merged_from``), to record them in place of its own arguments, machine, versions and SGD budget."""
    report.write_json(path, f"reproduce {name}", args, rows,
                       extra={"last_budget": "per experiment, see reproduce.EXPERIMENTS", **(runs or {})})


def error_by_atoms(rows: list[dict[str, Any]], task: str) -> str:
    """One task's test error % as the paper's tables show it: a row per method, a column per N
    (and one for methods without atoms); the paper's number, where it has one, in brackets."""
    rows = [r for r in rows if r["task"] == task]
    sizes = sorted({r["n_atoms"] for r in rows if r["n_atoms"] is not None})
    columns: list[int | None] = [*sizes, None] if any(r["n_atoms"] is None for r in rows) else sizes
    cells = {(r["label"], r["n_atoms"]): f"{r['error_pct']:.2f}" + (
        f" ({r['paper_error_pct']:.2f})" if r.get("paper_error_pct") is not None else "") for r in rows}
    lines = [f"| {task}: test error % (paper) | " + " | ".join(
                 "no atoms" if n is None else f"N = {n}" for n in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for label in dict.fromkeys(r["label"] for r in rows):
        lines.append(f"| {label} | " + " | ".join(cells.get((label, n), "") for n in columns) + " |")
    return "\n".join(lines)


def summary(experiment: Experiment, rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [f"### {experiment.name}" + (" (QUICK: tiny subsets and budgets, not results)" if args.quick else ""),
             "", experiment.caption, ""]
    for task in dict.fromkeys(r["task"] for r in rows):
        lines += [error_by_atoms(rows, task), ""]
    lines.append(report.markdown_table(rows, COLUMNS))
    for row in rows:
        if row["task"] == "mnist" and row.get("seconds_to_error_pct"):  # MILESTONES_PCT are MNIST's
            reached = ", ".join(f"{m} %: " + ("not reached" if t is None else f"{t:.0f} s")
                                for m, t in row["seconds_to_error_pct"].items())
            lines.append(f"\n{row['task']} {row['label']} time to test error: {reached}.")
        if row["task"] in PAPER_SPARSITY_PCT and row["method"] in ("last", "last-mu") and row.get("zeros_pct") is not None:
            lines.append(f"{row['task']} {row['label']} feature sparsity: {row['zeros_pct']:.1f} % zeros "
                         f"(paper {PAPER_SPARSITY_PCT[row['task']]} %).")
    lines.append("\n" + harness.notes(harness.Budget(args.quick)))
    warned = report.warning_lines(rows)
    if warned:
        lines.append("\nWarnings during fit:\n" + "\n".join(warned))
    return "\n".join(lines)


# --------------------------------------------------------------------- CLI
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment", choices=[*EXPERIMENT_NAMES, "all"], help="which table to reproduce")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA,
                   help="folder holding the data set files (default ../shared/data from the repo)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for the JSON results and figures (default ./reproduce-results, "
                        "./reproduce-results-quick with --quick, so a smoke test keeps real results)")
    p.add_argument("--quick", action="store_true",
                   help=f"every experiment on {QUICK_ROWS['train']} training rows with tiny budgets: "
                        "checks the pipeline in minutes, gives no results")
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help="random_state of every model and subset (default 0)")
    p.add_argument("--n-atoms", type=arguments.atom_counts, default=None,
                   help="only these N (default: the paper's grid of each experiment)")
    p.add_argument("--methods", type=harness._method_list, default=None,
                   help=f"only these methods, comma separated, from {','.join(harness.METHODS)}")
    p.add_argument("--tasks", type=lambda text: [t.strip() for t in text.split(",") if t.strip()],
                   default=None, help="only these tasks of the experiment, e.g. mnist or pigskin-pressedcl "
                                      "(outputs are then named EXPERIMENT-TASKS.*)")
    p.add_argument("--texture-source", choices=sorted(TEXTURE_SOURCES), default=None,
                   help="textures: each scan halved and histogram-equalised, like the paper's 32-texture "
                        "set (default), or the USC-SIPI scan as stored (outputs named textures-scan.*)")
    p.add_argument("--mnist-budget", type=float, default=MNIST_BUDGET_S, metavar="SECONDS",
                   help=f"wall-clock budget of LAST on MNIST (default {MNIST_BUDGET_S} s, the issue's)")
    p.add_argument("--merge", type=Path, nargs="+", metavar="JSON",
                   help="run nothing: merge these results files of the experiment (later rows replace "
                        "earlier ones of the same task, method and N) into OUT/EXPERIMENT.json, .md and figures; "
                        "the files' runs give the texture source and --quick")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = Path("reproduce-results-quick" if args.quick else "reproduce-results")
    names = [n for n in EXPERIMENT_NAMES if args.experiment in (n, "all")]
    if args.merge:
        if args.experiment not in EXPERIMENTS:
            p.error(f"--merge takes one of {', '.join(EXPERIMENTS)}, not {args.experiment}")
        missing = [str(path) for path in args.merge if not path.is_file()]
        if missing:
            p.error(f"--merge: no such file: {', '.join(missing)}")
        given = ["--" + name.replace("_", "-") for name in MERGE_REFUSES if getattr(args, name) is not None]
        if given:
            p.error(f"--merge joins whole files and takes its data from them: drop {', '.join(given)}")
        args.experiments = names
        return args
    args.texture_source = args.texture_source or "equalized"
    if args.tasks:
        names = _narrow_to_tasks(p, names, args.tasks)
    for name in names:
        files = EXPERIMENTS[name].data_files if name in EXPERIMENTS else ("mnist.npz",)
        missing = [f for f in files if not (args.data / f).is_file()]
        if missing:
            p.error(f"{name} needs {', '.join(missing)} in {args.data}; pass --data")
    args.experiments = names
    return args


def _narrow_to_tasks(p: argparse.ArgumentParser, names: list[str], tasks: list[str]) -> list[str]:
    """The experiments of ``names`` that have one of ``tasks`` (test-time, which has none, stays);
    exits with a usage error if a task is in none of them."""
    known = {task: name for name in names if name in EXPERIMENTS for task in EXPERIMENTS[name].tasks}
    unknown = [task for task in tasks if task not in known]
    if unknown and known:
        p.error(f"--tasks: no task {', '.join(unknown)} in {' or '.join(dict.fromkeys(known.values()))}; "
                f"choose from {','.join(known)}")
    return [name for name in names if name not in EXPERIMENTS or set(tasks) & set(EXPERIMENTS[name].tasks)]


def take_data_choice(experiment: Experiment, args: argparse.Namespace, runs_args: list[dict[str, Any]]) -> None:
    """A merge's data options (the texture source, ``--quick``) as its files' runs chose them
    (they agree: ``merge_rows``), so that its outputs are named and captioned for that data."""
    choice = data_choice(experiment, runs_args[0] if runs_args else {})
    for name, value in zip((*experiment.data_args, "quick"), choice):
        setattr(args, name, value)


def check_out(args: argparse.Namespace) -> None:
    """Make ``--out`` and check that it takes new files, before any work (ValueError otherwise)."""
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out} is a file; give a folder")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot make --out {args.out}: {error.strerror or error}") from None
    check_output_path(args.out / f"{output_name(args.experiments[0], args)}.json", ".json", "--out")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_out(args)
    except ValueError as error:
        print(f"reproduce.py: error: {error}", file=sys.stderr)
        return 2
    for name in args.experiments:
        started = time.perf_counter()
        if name == "test-time":
            import mnist_test_time

            text = mnist_test_time.run(args)
        elif args.merge:
            experiment = EXPERIMENTS[name]
            try:
                rows, runs = merge_rows(experiment, args.merge)
            except ValueError as error:
                print(f"reproduce.py: error: {error}", file=sys.stderr)
                return 2
            take_data_choice(experiment, args, runs["args"])
            write_json(args.out / f"{output_name(name, args)}.json", name, args, rows,
                       {**runs, "merged_from": [str(path) for path in args.merge]})
            make_figures(experiment, rows, {}, {}, args)
            text = summary(experiment, rows, args)
        else:
            experiment = EXPERIMENTS[name]
            text = summary(experiment, run_experiment(experiment, args), args)
        print(text + f"\n\n({name}: {time.perf_counter() - started:.0f} s wall)\n", flush=True)
        markdown = (text + "\n").encode()
        write_atomically(args.out / f"{output_name(name, args)}.md", lambda file: file.write(markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
