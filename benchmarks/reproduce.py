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
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import arguments
import figures
import harness
import report
from experiments import EXPERIMENT_NAMES, EXPERIMENTS, QUICK_ROWS, Experiment, load_tasks, plan_for, setting
from reproduce_merge import merge_rows, take_data_choice
from lastedge.runtime.model import check_output_path, write_atomically
from lastedge.train.curves import head_histories
from paper_data import DEFAULT_DATA, TEXTURE_SOURCES, TEXTURE_TASKS
from paper_results import PAPER_SPARSITY_PCT, paper_error

# MNIST LAST: the wall-clock budget; its learning curve is checked against these errors.
MNIST_BUDGET_S = 20 * 60
MILESTONES_PCT = (2.0, 1.5, 1.32)
# Options that narrow a run or choose its data: a merge runs nothing and takes its data from its files.
MERGE_REFUSES = ("tasks", "methods", "n_atoms", "texture_source")


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
                       extra={"last_budget": "per experiment, see experiments.EXPERIMENTS", **(runs or {})})


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
