"""``reproduce.py --merge``: join the JSON results of partial runs of one experiment into one table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reproduce import Experiment

# What a results file records of the run that wrote it; a merged file holds a list of its files' values.
RUN_FIELDS = ("args", "machine", "versions", "sgd_iter")


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


def take_data_choice(experiment: Experiment, args: argparse.Namespace, runs_args: list[dict[str, Any]]) -> None:
    """A merge's data options (the texture source, ``--quick``) as its files' runs chose them
    (they agree: ``merge_rows``), so that its outputs are named and captioned for that data."""
    choice = data_choice(experiment, runs_args[0] if runs_args else {})
    for name, value in zip((*experiment.data_args, "quick"), choice):
        setattr(args, name, value)
