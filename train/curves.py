"""A fitted estimator's training curve: as rows (``lastedge train --json``) and as a figure (``--plot``).

LAST records one point per DCA iteration (the objective of (P) on the training rows, summed over
heads, and the hold-out accuracy when ``early_stopping``); SGD / Adam record checkpoints of the
same objective every few thousand steps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lastedge.runtime.figures import new_figure, save_figure

from .last import LASTClassifier
from .sgd import SGDSoftThresholdClassifier


def head_histories(history: list) -> list[list[dict[str, Any]]]:
    """A LAST ``history_`` as one list of per-iteration records per head (binary and shared models
    record a single head as a plain list)."""
    return history if isinstance(history[0], list) else [history]


def training_curve(estimator: LASTClassifier | SGDSoftThresholdClassifier) -> list[dict[str, Any]]:
    """Rows ``{"iteration", "time_s", "objective"[, "validation_accuracy"]}`` of a fitted estimator.

    For LAST, ``iteration`` counts DCA iterations; a one-vs-all head that stopped early keeps
    its last objective in the sum. For SGD / Adam it counts minibatch steps of the final run.
    """
    history = getattr(estimator, "history_", None)
    if not history:
        raise ValueError(f"{type(estimator).__name__} has no training history; fit it first")
    if not isinstance(estimator, LASTClassifier):
        return [{"iteration": r["iteration"], "time_s": r["time"], "objective": r["objective"]}
                for r in history]
    heads = head_histories(history)
    validation = estimator.validation_scores_ or []
    rows = []
    for k in range(max(len(head) for head in heads)):
        row = {"iteration": k + 1,
               "time_s": max(head[k]["time"] for head in heads if len(head) > k),
               "objective": sum(head[min(k, len(head) - 1)]["objective"] for head in heads)}
        if k < len(validation):
            row["validation_accuracy"] = validation[k]
        rows.append(row)
    return rows


def plot_training_curve(estimator: LASTClassifier | SGDSoftThresholdClassifier,
                        path: str | os.PathLike) -> Path:
    """Draw the objective (log scale) against iterations, with the hold-out accuracy when there
    is one, and write the figure atomically to ``path`` (.png, .pdf or .svg)."""
    rows = training_curve(estimator)
    steps = [row["iteration"] for row in rows]
    fig = new_figure((6.4, 4.2))
    ax = fig.subplots()
    ax.plot(steps, [row["objective"] for row in rows], marker="o", markersize=3, color="C0",
            markevery=max(1, len(rows) // 25))
    ax.set_yscale("log")
    ax.set_xlabel("DCA iteration" if isinstance(estimator, LASTClassifier) else "minibatch step")
    ax.set_ylabel("training objective (log scale)", color="C0")
    ax.grid(True, which="both", alpha=0.3)
    scored = [row for row in rows if "validation_accuracy" in row]
    if scored:
        accuracy = ax.twinx()
        accuracy.plot([row["iteration"] for row in scored],
                      [100 * row["validation_accuracy"] for row in scored], marker="s", markersize=3,
                      color="C1")
        best = max(scored, key=lambda row: row["validation_accuracy"])
        accuracy.axvline(best["iteration"], color="C1", linestyle=":", label="kept iterate")
        accuracy.set_ylabel("hold-out accuracy %", color="C1")
        accuracy.legend(loc="center right", fontsize=8)
    ax.xaxis.get_major_locator().set_params(integer=True)  # iterations and steps: no 1.5
    # two lines: one would run past the figure's edge for SGDSoftThresholdClassifier
    ax.set_title(f"{type(estimator).__name__}\n{estimator.model_.n_atoms} atoms in all, "
                 f"{rows[-1]['time_s']:.1f} s to the last point")
    return save_figure(fig, path)
