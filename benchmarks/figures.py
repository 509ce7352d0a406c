"""The figures of the paper-reproduction benchmark: accuracy against N, objective against time and
the 2-atom feature plane; atoms as images come from the product (``lastedge.runtime.figures``).

Each function takes plain Python / numpy data and writes one PNG through ``lastedge.runtime.figures``
(Agg canvas, no pyplot; written to a temporary name and renamed, so a reader never sees half a PNG).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lastedge.runtime.figures import atoms_as_images, new_figure, save_figure

try:
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch
    from matplotlib.ticker import NullLocator
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("benchmarks/figures.py needs matplotlib: pip install 'lastedge[plot]'") from error

__all__ = ["accuracy_vs_atoms", "atoms_as_images", "features_2d", "method_styles", "objective_vs_time"]

COLOURS = tuple(f"C{i}" for i in range(10))
MARKERS = "osD^vP*Xd"  # 9 markers against 10 colours: the first 90 methods get distinct pairs
MAX_POINTS = 2000  # features_2d draws at most this many points
CLASS_COLOURS = ("tab:blue", "tab:orange")


def accuracy_vs_atoms(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Test accuracy against atoms N (log x), one subplot per task, one line per method.

    ``rows`` are result rows (keys ``task``, ``method``, ``label``, ``n_atoms``, ``error_pct`` and
    optionally ``paper_error_pct``). Methods without atoms (``n_atoms`` None) are dashed horizontal
    lines; failed runs (``error_pct`` None) are left out, and a method with no run left on a task
    is listed as failed. The paper's LAST errors, on rows whose method starts with ``last``, are
    hollow black markers. Colours and markers follow the method across subplots.
    """
    _check_rows(rows)
    methods = list(dict.fromkeys(row["method"] for row in rows))
    style = method_styles(methods)
    tasks = list(dict.fromkeys(row["task"] for row in rows))
    fig = new_figure((max(5.0 * len(tasks), 7.5), 4.4))  # one task: wide enough for the legend
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, task in zip(axes, tasks):
        task_rows = [row for row in rows if row["task"] == task]
        for key in dict.fromkeys(row["method"] for row in task_rows):
            _draw_method(ax, [row for row in task_rows if row["method"] == key], *style[key])
        _draw_paper_last(ax, task_rows)
        ns = sorted({row["n_atoms"] for row in task_rows if row["n_atoms"] is not None})
        ax.set_xscale("log")
        if ns:
            ax.set_xticks(ns, labels=[str(n) for n in ns])
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("atoms N (log scale)")
        ax.set_ylabel("test accuracy %")
        ax.set_title(task)
        ax.grid(True, alpha=0.3)
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", fontsize=8,
               ncol=min(3 if len(tasks) > 1 else 2, len(handles)), frameon=False)
    fig.suptitle(title)
    save_figure(fig, path)


def method_styles(methods: list[str]) -> dict[str, tuple[str, str]]:
    """A (colour, marker) pair per method, distinct for up to 90 methods (colours and markers wrap
    at different lengths, so the 11th method does not repeat the 1st)."""
    return {key: (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]) for i, key in enumerate(methods)}


def _check_rows(rows: list[dict[str, Any]]) -> None:
    if not rows:
        raise ValueError("rows is empty; expected at least one result row")
    required = ("task", "method", "label", "n_atoms", "error_pct")
    for i, row in enumerate(rows):
        missing = [key for key in required if key not in row]
        if missing:
            raise ValueError(f"rows[{i}] lacks {missing}; every row needs {list(required)}")


def _draw_method(ax, rows: list[dict[str, Any]], colour: str, marker: str) -> None:
    """One method on one task: a line against N, a dashed level without atoms, or a failed entry."""
    label = rows[0]["label"]
    done = [row for row in rows if row["error_pct"] is not None]
    if not done:
        ax.plot([], [], " ", label=f"{label} (failed)")
    elif done[0]["n_atoms"] is None:
        ax.axhline(100.0 - done[0]["error_pct"], color=colour, linestyle="--", label=label)
    else:
        done.sort(key=lambda row: row["n_atoms"])
        ax.plot([row["n_atoms"] for row in done], [100.0 - row["error_pct"] for row in done],
                color=colour, marker=marker, label=label)


def _draw_paper_last(ax, rows: list[dict[str, Any]]) -> None:
    """The paper's LAST accuracies, once per N even when several LAST variants carry them."""
    paper = {row["n_atoms"]: row["paper_error_pct"] for row in rows
             if row["method"].startswith("last") and row.get("paper_error_pct") is not None
             and row["n_atoms"] is not None}
    if paper:
        ns = sorted(paper)
        ax.plot(ns, [100.0 - paper[n] for n in ns], linestyle="none", marker="o", markersize=9,
                markerfacecolor="none", markeredgecolor="black", zorder=3, label="paper LAST")


def objective_vs_time(curves: dict[str, list[tuple[float, float]]], path: Path, title: str, *,
                      ylabel: str = "objective of (P)", log_y: bool = True) -> None:
    """A value against elapsed seconds, one line per label: by default the objective of (P), log y.

    ``curves`` maps a label to its ``(elapsed seconds, value)`` points; with ``log_y`` values must
    be positive. Long curves get at most about 20 markers so the lines stay readable.
    """
    if not curves:
        raise ValueError("curves is empty; expected at least one label with points")
    fig = new_figure((6.4, 4.4))
    ax = fig.subplots()
    for i, (label, points) in enumerate(curves.items()):
        values = np.asarray(points, dtype=float)
        if values.ndim != 2 or values.shape[1] != 2 or len(values) == 0:
            raise ValueError(f"curves[{label!r}] must be a non-empty list of (seconds, objective) "
                             f"pairs; got an array of shape {values.shape}")
        if log_y and not np.all(values[:, 1] > 0):
            raise ValueError(f"curves[{label!r}] has objectives <= 0 (min {values[:, 1].min():g}); "
                             "the y axis is logarithmic, so objectives must be positive")
        ax.plot(values[:, 0], values[:, 1], marker=MARKERS[i % len(MARKERS)], markersize=4,
                markevery=max(1, len(values) // 20), label=label)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("elapsed time (s)")
    ax.set_ylabel(ylabel + (" (log scale)" if log_y else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    save_figure(fig, path)


def features_2d(features: np.ndarray, labels: np.ndarray, weights: np.ndarray, path: Path, title: str,
                class_names: tuple[str, str] = ("class 0", "class 1")) -> None:
    """The two soft-threshold features of a 2-atom model, by class, with the decision line.

    ``features`` [m, 2] are non-negative, ``labels`` [m] in {0, 1}, ``weights`` [2] the output
    weights: a point is class 1 where ``weights @ f > 0``. At most 2000 points are drawn (a fixed
    random subsample). The class-1 side of the first quadrant is shaded; the line ``w^T f = 0`` is
    drawn where it crosses the quadrant, and the legend says when it is an axis or absent. The
    title says how many points sit at the origin (both features zero), where they all overlap.
    """
    features, labels, weights = _check_features(features, labels, weights)
    at_origin = int(np.sum(~features.any(axis=1)))
    subtitle = f"{at_origin} of {len(features)} points at f = 0"
    if len(features) > MAX_POINTS:
        keep = np.random.default_rng(0).choice(len(features), MAX_POINTS, replace=False)
        features, labels = features[keep], labels[keep]
        subtitle += f"; {MAX_POINTS} drawn at random"
    fig = new_figure((5.6, 5.6))
    ax = fig.subplots()
    for k in (0, 1):
        f = features[labels == k]
        ax.scatter(f[:, 0], f[:, 1], s=8, alpha=0.5, color=CLASS_COLOURS[k], label=class_names[k])
    highest = features.max(axis=0)
    limits = np.where(highest > 0, 1.05 * highest, 1.0)
    shading = _shade_class_1(ax, weights, limits)
    _draw_decision_line(ax, weights, limits)
    # A small margin below zero keeps the many points with a zero feature (and an axis line) visible.
    ax.set_xlim(-0.02 * limits[0], limits[0])
    ax.set_ylim(-0.02 * limits[1], limits[1])
    ax.set_xlabel("feature of atom 1 (f1)")
    ax.set_ylabel("feature of atom 2 (f2)")
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles + [shading], names + [shading.get_label()], loc="outside lower center",
               fontsize=8, ncol=2, frameon=False)
    ax.set_title(f"{title}\n({subtitle})", fontsize=10)
    save_figure(fig, path)


def _check_features(features: np.ndarray, labels: np.ndarray,
                    weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    features = np.asarray(features, dtype=float)
    labels = np.asarray(labels)
    weights = np.asarray(weights, dtype=float)
    if features.ndim != 2 or features.shape[1] != 2 or len(features) == 0:
        raise ValueError(f"features must be [m, 2] with m >= 1, got shape {features.shape}")
    if not np.all(np.isfinite(features)) or features.min() < 0:
        raise ValueError("features must be finite and non-negative (soft-threshold features); "
                         f"min is {np.nanmin(features):g}")
    if labels.shape != (len(features),):
        raise ValueError(f"labels must be [m] = [{len(features)}], got shape {labels.shape}")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"labels must be 0 or 1, got values {np.unique(labels)[:10]}")
    if weights.shape != (2,) or not np.all(np.isfinite(weights)):
        raise ValueError(f"weights must be 2 finite numbers, got {weights!r}")
    return features, labels.astype(int), weights


def _shade_class_1(ax, weights: np.ndarray, limits: np.ndarray) -> Patch:
    """Lightly colour where ``weights @ f > 0`` inside the plotted quadrant; returns its legend key."""
    x, y = np.meshgrid(np.linspace(0, limits[0], 300), np.linspace(0, limits[1], 300))
    image = np.zeros(x.shape + (4,))
    image[weights[0] * x + weights[1] * y > 0] = to_rgba(CLASS_COLOURS[1], alpha=0.12)
    ax.imshow(image, origin="lower", extent=(0, limits[0], 0, limits[1]), aspect="auto", zorder=0)
    return Patch(color=CLASS_COLOURS[1], alpha=0.12, label=r"predicted class 1 ($w^\top f > 0$)")


def _draw_decision_line(ax, weights: np.ndarray, limits: np.ndarray) -> None:
    """The line ``w^T f = 0`` in the first quadrant, or a legend entry saying where it is."""
    w1, w2 = weights
    line = {"color": "black", "linewidth": 1.5}
    if w1 == 0 and w2 == 0:
        ax.plot([], [], " ", label="w = 0: no decision line, every point is class 0")
    elif w1 == 0 or w2 == 0:
        axis = "f1 axis (f2 = 0)" if w1 == 0 else "f2 axis (f1 = 0)"
        ends = ([0, limits[0]], [0, 0]) if w1 == 0 else ([0, 0], [0, limits[1]])
        ax.plot(*ends, clip_on=False, label=f"decision line: the {axis}", **line)
    elif np.sign(w1) == np.sign(w2):
        side = 1 if w1 > 0 else 0
        ax.plot([], [], " ", label=f"no decision line in the quadrant (w has equal signs): "
                                   f"every f != 0 is class {side}")
    else:
        # f2 = -w1 / w2 * f1 rises through the origin; stop at whichever edge it meets first.
        slope = -w1 / w2
        x_end = min(limits[0], limits[1] / slope)
        ax.plot([0, x_end], [0, slope * x_end], label=r"decision line $w^\top f = 0$", **line)


def error_against_macs(rows: list[dict[str, Any]], summary: list[dict[str, Any]], path: Path) -> None:
    """Test error against MACs per sample, a subplot per data set, a line per method (its median over
    seeds, bars: range; ``summary`` is ``shared_vs_ovr.seed_summary(rows)``); failed fits are left
    out. ``shared_vs_ovr.py --plot``."""
    from matplotlib.ticker import NullFormatter

    done = [row for row in rows if row.get("error_pct") is not None]
    tasks = list(dict.fromkeys(row["task"] for row in rows))
    style = method_styles(list(dict.fromkeys(row["label"] for row in done)))
    macs_of = {(r["task"], r["total_atoms"]): r["macs_per_sample"] for r in done}
    several = len({r["seed"] for r in rows}) > 1
    fig = new_figure((5.5 * len(tasks), 4.2))
    for ax, task in zip(fig.subplots(1, len(tasks), squeeze=False)[0], tasks):
        for name, (colour, marker) in style.items():
            points = sorted((point for point in summary if point["task"] == task and point["label"] == name),
                            key=lambda point: point["total_atoms"])
            if not points:
                continue
            x = [macs_of[task, point["total_atoms"]] for point in points]
            y = [point["median_pct"] for point in points]
            spread = [[m - point["min_pct"] for m, point in zip(y, points)],
                      [point["max_pct"] - m for m, point in zip(y, points)]]
            ax.errorbar(x, y, yerr=spread if several else None, color=colour,
                        marker=marker, capsize=3, label=name)
            for point, xs, ys in zip(points, x, y):
                ax.annotate(str(point["total_atoms"]), (xs, ys), textcoords="offset points", xytext=(4, 4),
                            fontsize=7)
        ax.set_xscale("log")
        macs = sorted({m for (t, _), m in macs_of.items() if t == task})
        ax.set_xticks(macs, [f"{m / 1000:,.0f}k" for m in macs])  # the measured sizes, not powers of 10
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("multiply-accumulates per sample")
        ax.set_ylabel("test error %" + " (median over seeds; bars: range)" * several)
        ax.set_title(f"{task.upper()} (labels: total atoms)")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    save_figure(fig, path)


def accuracy_against_macs(summary: list[dict[str, Any]], path: Path) -> None:
    """Mean test accuracy against MACs per sample, a point per (task, method), a colour per method
    (bars: std over seeds); unavailable methods are left out. ``generalisation.py --plot``."""
    done = [s for s in summary if s["accuracy"] is not None and s["macs"]]
    style = method_styles(list(dict.fromkeys(s["method"] for s in done)))
    fig = new_figure((6.5, 4.5))
    ax = fig.subplots()
    for name, (colour, marker) in style.items():
        points = [s for s in done if s["method"] == name]
        ax.errorbar([s["macs"] for s in points], [s["accuracy"] for s in points],
                    yerr=[s["std"] for s in points], color=colour, marker=marker, linestyle="none",
                    capsize=2, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("MACs per sample")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize=8)
    save_figure(fig, path)
