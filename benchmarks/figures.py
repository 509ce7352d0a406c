"""The figures of the paper-reproduction benchmark: accuracy against N, objective against time,
atoms as images and the 2-atom feature plane.

Each function takes plain Python / numpy data, writes one PNG (dpi 120) and returns nothing. Figures
are drawn on the Agg canvas directly, without pyplot, so no display is needed and no global backend
is switched; each file is written to a temporary name in the same folder and then renamed, so a
reader never sees half a PNG.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lastedge.runtime.model import write_atomically

try:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import NullLocator
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("benchmarks/figures.py needs matplotlib: pip install 'lastedge[plot]'") from error

DPI = 120
COLOURS = tuple(f"C{i}" for i in range(10))
MARKERS = "osD^vP*Xd"  # 9 markers against 10 colours: the first 90 methods get distinct pairs
MAX_POINTS = 2000  # features_2d draws at most this many points
ATOMS_PER_ROW = 10
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
    fig = _figure((max(5.0 * len(tasks), 7.5), 4.4))  # one task: wide enough for the legend
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
    _save(fig, path)


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
    fig = _figure((6.4, 4.4))
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
    _save(fig, path)


def atoms_as_images(dictionaries: dict[str, np.ndarray], image_shape: tuple[int, ...], path: Path,
                    title: str, max_atoms: int = 30, *, channels_first: bool = False,
                    atom_titles: dict[str, list[str]] | None = None) -> None:
    """The atoms (columns) of each dictionary as small images, one block of rows per label.

    ``dictionaries`` maps a label to a dictionary [n_features, N]. ``image_shape`` is the shape
    shown: ``(H, W)`` grayscale or ``(H, W, 3)`` colour. With ``channels_first`` each atom is stored
    as ``(3, H, W)`` flattened (our CIFAR rows) and is transposed for display. Each atom is
    min-max scaled to [0, 1] on its own (a constant atom shows mid-grey); the first ``max_atoms``
    are shown, 10 to a row. ``atom_titles`` maps a label to one caption per atom (e.g. the output
    weight's sign), written under each image.
    """
    stored_shape = _stored_shape(image_shape, channels_first)
    if not dictionaries:
        raise ValueError("dictionaries is empty; expected at least one label")
    if max_atoms < 1:
        raise ValueError(f"max_atoms must be >= 1, got {max_atoms}")
    atom_titles = atom_titles or {}
    unknown = set(atom_titles) - set(dictionaries)
    if unknown:
        raise ValueError(f"atom_titles has labels {sorted(unknown)} that are not in dictionaries "
                         f"({sorted(dictionaries)})")
    shown = {label: _atom_images(label, D, stored_shape, channels_first, max_atoms)
             for label, D in dictionaries.items()}
    for label, captions in atom_titles.items():
        n_atoms = np.shape(dictionaries[label])[1]
        if len(captions) != n_atoms:
            raise ValueError(f"atom_titles[{label!r}] has {len(captions)} captions for {n_atoms} atoms")
    columns = min(ATOMS_PER_ROW, max(len(images) for images in shown.values()))
    grid_rows = [-(-len(images) // columns) for images in shown.values()]
    fig = _figure((1.1 * columns + 0.4, sum(1.25 * r + 0.35 for r in grid_rows) + 0.5))
    blocks = fig.subfigures(len(shown), 1, height_ratios=[1.25 * r + 0.35 for r in grid_rows],
                            squeeze=False)[:, 0]
    for block, n_rows, (label, images) in zip(blocks, grid_rows, shown.items()):
        n_atoms = np.shape(dictionaries[label])[1]
        more = f" (first {len(images)} of {n_atoms} atoms)" if len(images) < n_atoms else ""
        block.suptitle(label + more, fontsize=10)
        captions = atom_titles.get(label)
        for j, ax in enumerate(block.subplots(n_rows, columns, squeeze=False).ravel()):
            ax.set_xticks([])
            ax.set_yticks([])
            if j >= len(images):
                ax.set_visible(False)
                continue
            ax.imshow(images[j], cmap="gray" if images[j].ndim == 2 else None, vmin=0.0, vmax=1.0,
                      interpolation="nearest")
            if captions is not None:
                ax.set_xlabel(captions[j], fontsize=7, labelpad=1)
    fig.suptitle(title)
    _save(fig, path)


def _stored_shape(image_shape: tuple[int, ...], channels_first: bool) -> tuple[int, ...]:
    """The shape each atom has as stored; checks ``image_shape`` is grayscale or RGB."""
    shape = tuple(int(s) for s in image_shape)
    if not (len(shape) == 2 or (len(shape) == 3 and shape[2] == 3)) or min(shape) < 1:
        raise ValueError(f"image_shape must be (H, W) or (H, W, 3), got {image_shape}")
    if channels_first and len(shape) == 2:
        raise ValueError(f"channels_first needs a colour image_shape (H, W, 3), got {image_shape}")
    return (shape[2], shape[0], shape[1]) if channels_first else shape


def _atom_images(label: str, D: np.ndarray, stored_shape: tuple[int, ...], channels_first: bool,
                 max_atoms: int) -> list[np.ndarray]:
    """The first ``max_atoms`` columns of ``D`` as display images, each scaled to [0, 1]."""
    D = np.asarray(D, dtype=float)
    n_features = int(np.prod(stored_shape))
    if D.ndim != 2 or D.shape[0] != n_features:
        raise ValueError(f"dictionaries[{label!r}] must be [n_features, N] with n_features = "
                         f"{n_features} for image_shape; got shape {D.shape}")
    if D.shape[1] == 0:
        raise ValueError(f"dictionaries[{label!r}] has no atoms")
    images = []
    for atom in D[:, :max_atoms].T:
        image = atom.reshape(stored_shape)
        if channels_first:
            image = image.transpose(1, 2, 0)
        low, high = image.min(), image.max()
        images.append((image - low) / (high - low) if high > low else np.full_like(image, 0.5))
    return images


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
    fig = _figure((5.6, 5.6))
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
    _save(fig, path)


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


def _figure(size: tuple[float, float]) -> Figure:
    """A figure on the Agg canvas with constrained layout."""
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path | str) -> None:
    """Write ``fig`` as PNG atomically (temp file next to ``path``, then renamed into place)."""
    write_atomically(path, lambda file: fig.savefig(file, format="png", dpi=DPI))
