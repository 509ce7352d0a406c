"""Figures a user looks at rather than reads: a model's atoms as images (``lastedge inspect --atoms``),
the latency chart (``lastedge bench --plot``), the confusion matrix (``lastedge predict --plot``),
and the canvas and atomic writing that every lastedge figure shares.

Figures are drawn on the Agg canvas directly, without pyplot, so no display is needed and no global
backend is switched; each file is written to a temporary name in the same folder and renamed, so a
reader never sees half a file. matplotlib (``lastedge[plot]``) is imported when a figure is drawn.
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lastedge.runtime.model import Model, check_output_path, write_atomically

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import PathCollection
    from matplotlib.figure import Figure

DPI = 120
FORMATS = ("png", "pdf", "svg")
ATOMS_PER_ROW = 10
MIN_ATOMS_WIDTH = 4.0  # inches: room for the titles above a single column of atoms
# The atoms figure's geometry, in inches: a cell per atom (an image with its caption under it),
# a title above each label's block of rows and one above all.
ATOM_CELL = (1.1, 1.25)
ATOM_SIZE, ATOM_MARGIN, ATOM_CAPTION = 0.9, 0.1, 0.3
BLOCK_TITLE, FIGURE_TITLE = 0.35, 0.5
CAPTION_POINTS = 7
ATOM_BOX_PIXELS = 32  # an atom's box in its block's mosaic: at least this many pixels a side


def new_figure(size: tuple[float, float], layout: str = "constrained") -> Figure:
    """A figure on the Agg canvas with constrained layout, or none (``layout="none"``) for one
    placed by hand: a layout engine, even one switched off later, makes ``savefig`` draw twice."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("figures need matplotlib: pip install 'lastedge[plot]'") from None
    fig = Figure(figsize=size, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def check_figure_path(path: str | os.PathLike) -> Path:
    """``path`` if a figure can be written there: a .png/.pdf/.svg name in an existing folder, and
    matplotlib installed. Commands call it before long work, so a typo does not lose the work."""
    path = check_output_path(path, tuple(f".{f}" for f in FORMATS), "the figure")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("figures need matplotlib: pip install 'lastedge[plot]'") from None
    return path


def save_figure(fig: Figure, path: str | os.PathLike) -> Path:
    """Write ``fig`` atomically in the format its suffix names (.png, .pdf or .svg). It is drawn in
    memory first: drawing many atoms takes a while, and a process killed meanwhile leaves no file."""
    path = check_figure_path(path)
    drawn = io.BytesIO()
    fig.savefig(drawn, format=path.suffix.lower().lstrip("."), dpi=DPI)
    write_atomically(path, lambda file: file.write(drawn.getvalue()))
    return path


def atoms_as_images(dictionaries: dict[str, np.ndarray], image_shape: tuple[int, ...], path: Path,
                    title: str, max_atoms: int = 30, *, channels_first: bool = False,
                    atom_titles: dict[str, list[str]] | None = None) -> Path:
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
    width = max(MIN_ATOMS_WIDTH, ATOM_CELL[0] * columns + 0.4)
    height = sum(ATOM_CELL[1] * r + BLOCK_TITLE for r in grid_rows) + FIGURE_TITLE
    fig = new_figure((width, height), layout="none")  # placed by hand: constrained layout took 90 s for 62 classes
    left, top = (width - ATOM_CELL[0] * columns) / 2, height - FIGURE_TITLE  # inches
    for n_rows, (label, images) in zip(grid_rows, shown.items()):
        n_atoms = np.shape(dictionaries[label])[1]
        more = f" (first {len(images)} of {n_atoms} atoms)" if len(images) < n_atoms else ""
        fig.text(0.5, (top - BLOCK_TITLE / 2) / height, label + more, fontsize=10, ha="center", va="center")
        block_top = top - BLOCK_TITLE
        ax = fig.add_axes((left / width, (block_top - n_rows * ATOM_CELL[1]) / height,
                           columns * ATOM_CELL[0] / width, n_rows * ATOM_CELL[1] / height))
        _draw_block(ax, images, columns, atom_titles.get(label))
        top = block_top - n_rows * ATOM_CELL[1]
    fig.suptitle(title, y=1 - FIGURE_TITLE / 2 / height, va="center")
    return save_figure(fig, path)


def _draw_block(ax: Axes, images: list[np.ndarray], columns: int, captions: list[str] | None) -> None:
    """One label's atoms on ``ax``, which spans their grid of cells: the images as one mosaic, each
    framed, with its caption under it. Three artists whatever the count: an Axes per atom was
    far slower to draw for models of thousands of atoms."""
    from matplotlib.collections import PolyCollection

    grid = _CellGrid.of(images[0].shape, columns)
    mosaic = grid.mosaic(images)
    ax.imshow(mosaic, interpolation="nearest", aspect="auto", extent=(0, mosaic.shape[1], mosaic.shape[0], 0))
    ax.set_axis_off()
    corners = [grid.image_corners(j) for j in range(len(images))]
    ax.add_collection(PolyCollection([[(x0, y0), (x1, y0), (x1, y1), (x0, y1)] for x0, y0, x1, y1 in corners],
                                     facecolors="none", edgecolors="black", linewidths=0.8))
    if captions:
        ax.add_collection(_captions(ax, captions[:len(images)], [((x0 + x1) / 2, y1) for x0, _, x1, y1 in corners]))


def _captions(ax: Axes, captions: list[str], anchors: list[tuple[float, float]]) -> PathCollection:
    """``captions`` as one artist, each centred 1 point under its anchor (data coordinates): the
    outline of each distinct text is laid out once (a Text per atom was slow to draw). Blank
    captions draw nothing (an outline of no glyph is no path at all)."""
    from matplotlib.collections import PathCollection
    from matplotlib.path import Path as Outline
    from matplotlib.textpath import TextPath
    from matplotlib.transforms import Affine2D

    shown = [(text, anchor) for text, anchor in zip(captions, anchors) if text.strip()]
    outlines = {}
    for text in {text for text, _ in shown}:  # in points, moved so that (0, 0) is the middle of its top
        outline = TextPath((0, 0), text, size=CAPTION_POINTS)
        box = outline.get_extents()
        outlines[text] = Outline(outline.vertices - ((box.x0 + box.x1) / 2, box.y1 + 1), outline.codes)
    points = Affine2D().scale(1 / 72) + ax.figure.dpi_scale_trans
    return PathCollection([outlines[text] for text, _ in shown], offsets=[anchor for _, anchor in shown] or None,
                          offset_transform=ax.transData, transform=points, facecolors="black", edgecolors="none")


@dataclass(frozen=True)
class _CellGrid:
    """Where atoms go in a block's mosaic, in its pixels: ``columns`` cells of the inch grid
    (``ATOM_CELL``) a row, each atom enlarged ``zoom`` times and centred in a square box of
    ``ATOM_SIZE`` inches, ``ATOM_MARGIN`` from its cell's left and ``ATOM_CAPTION`` above its bottom."""

    shape: tuple[int, ...]  # an atom's image: (H, W) or (H, W, 3)
    columns: int
    zoom: int
    per_inch: float

    @classmethod
    def of(cls, shape: tuple[int, ...], columns: int) -> "_CellGrid":
        """The grid whose boxes are at least ``ATOM_BOX_PIXELS`` wide, atoms enlarged a whole
        number of times (each of an atom's pixels the same size on the page)."""
        zoom = -(-ATOM_BOX_PIXELS // max(shape[:2]))
        return cls(tuple(shape), columns, zoom, zoom * max(shape[:2]) / ATOM_SIZE)

    @property
    def cell(self) -> tuple[int, int]:
        """(height, width) of a cell."""
        return round(ATOM_CELL[1] * self.per_inch), round(ATOM_CELL[0] * self.per_inch)

    def image_corners(self, j: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of atom ``j``'s image."""
        (cell_h, cell_w), box = self.cell, round(ATOM_SIZE * self.per_inch)
        h, w = self.zoom * self.shape[0], self.zoom * self.shape[1]
        row, column = divmod(j, self.columns)
        left = column * cell_w + round(ATOM_MARGIN * self.per_inch) + (box - w) // 2
        top = (row + 1) * cell_h - round(ATOM_CAPTION * self.per_inch) - box + (box - h) // 2
        return left, top, left + w, top + h

    def mosaic(self, images: list[np.ndarray]) -> np.ndarray:
        """The images placed in their cells as one RGBA array of bytes, clear between them."""
        (cell_h, cell_w), rows = self.cell, -(-len(images) // self.columns)
        stack = np.stack(images)
        if stack.ndim == 3:  # grayscale: the same value in R, G and B
            stack = np.repeat(stack[..., None], 3, axis=3)
        stack = np.round(255 * stack.repeat(self.zoom, axis=1).repeat(self.zoom, axis=2)).astype(np.uint8)
        left, top, right, bottom = self.image_corners(0)
        cells = np.zeros((rows * self.columns, cell_h, cell_w, 4), np.uint8)
        cells[:len(images), top:bottom, left:right, :3] = stack
        cells[:len(images), top:bottom, left:right, 3] = 255
        return cells.reshape(rows, self.columns, cell_h, cell_w, 4).transpose(0, 2, 1, 3, 4).reshape(
            rows * cell_h, self.columns * cell_w, 4)


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


def parse_image_shape(text: str) -> tuple[tuple[int, ...], bool]:
    """``"28x28"`` (grayscale), ``"32x32x3"`` (colour, channels last) or ``"3x32x32"`` (colour,
    channels first, as CIFAR rows are stored) -> ``(image_shape (H, W[, 3]), channels_first)``."""
    try:
        sizes = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        sizes = ()
    if len(sizes) == 2 and min(sizes) >= 1:
        return sizes, False
    if len(sizes) == 3 and min(sizes) >= 1 and 3 in (sizes[0], sizes[2]):
        return ((sizes[1], sizes[2], 3), True) if sizes[2] != 3 else (sizes, False)
    raise ValueError(f"image shape must be HxW, HxWx3 or 3xHxW (e.g. 28x28), got {text!r}")


def strongest_atoms(model: Model, per_output: int) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """For each output, its ``per_output`` atoms with the largest ``|w| * ||d||`` (their scale in
    the score), as ``{label: dictionary columns}`` and ``{label: captions}`` (the weight's sign)."""
    if per_output < 1:
        raise ValueError(f"atoms per output must be >= 1, got {per_output}")
    scale = np.abs(model.weights) * np.linalg.norm(model.dictionary, axis=0)[:, None]
    names = ([f"score (> 0: class {model.classes[1]})"] if model.n_outputs == 1
             else [f"class {label}" for label in model.classes])
    dictionaries, captions = {}, {}
    for column, name in enumerate(names):
        used = np.flatnonzero(model.weights[:, column])
        if not len(used):
            continue
        atoms = used[np.argsort(-scale[used, column], kind="stable")][:per_output]
        label = f"{name}: {len(atoms)} of its {len(used)} atoms"
        dictionaries[label] = model.dictionary[:, atoms]
        captions[label] = ["for" if w > 0 else "against" for w in model.weights[atoms, column]]
    return dictionaries, captions


def model_atoms(model: Model, path: str | os.PathLike, image_shape: tuple[int, ...] | None = None,
                channels_first: bool = False, per_output: int = ATOMS_PER_ROW) -> Path:
    """Draw each output's strongest atoms (largest ``|w| * ||d||``) as images, one row per class,
    each captioned with whether it votes for or against the class; return the figure's path.

    Parameters
    ----------
    model : Model
        The trained model.
    path : str or os.PathLike
        A ``.png``, ``.pdf`` or ``.svg`` file, written atomically.
    image_shape : tuple of int, optional
        ``(H, W)`` or ``(H, W, 3)``; default: the shape the training images had (recorded by
        ``lastedge train``), else a square grayscale image when the feature count is a square.
    channels_first : bool, default=False
        Each atom is stored as ``(3, H, W)`` flattened (CIFAR's rows) rather than channels last.
    per_output : int
        Atoms drawn per output.
    """
    image_shape = image_shape or model.image_shape
    if image_shape is None:
        side = math.isqrt(model.n_features)
        if side * side != model.n_features:
            raise ValueError(f"{model.n_features} features are not a square image; give the image shape "
                             f"(--image-shape HxW, e.g. 32x32x3 or 3x32x32 for colour, or "
                             f"1x{model.n_features} to draw each atom as a strip of its features)")
        image_shape = (side, side)
    if math.prod(image_shape) != model.n_features:
        raise ValueError(f"an image of shape {'x'.join(map(str, image_shape))} has {math.prod(image_shape)} "
                         f"values; the model has {model.n_features} features")
    dictionaries, captions = strongest_atoms(model, per_output)
    if not dictionaries:  # every output's weights are zero: no atom takes part in a score
        raise ValueError("the model has no atom with a non-zero weight to draw: all its weights are zero")
    return atoms_as_images(dictionaries, image_shape, path, f"strongest atoms per output ({model.n_atoms} in all)",
                           max_atoms=per_output, channels_first=channels_first, atom_titles=captions)


def latency_chart(rows: list[dict], path: str | os.PathLike) -> Path:
    """Draw ``lastedge bench`` results to ``path``: per batch size, each file's median call time as
    a bar, with a tick at its p90 and a line out to its p99; ``rows`` as ``bench`` returns them."""
    if not rows:
        raise ValueError("no bench results to draw")
    batch_sizes = sorted({b["batch_size"] for row in rows for b in row["batches"]})
    names = [f"{Path(row['file']).name}\n{row['backend']} {row['precision']}, {row['threads']} thr" for row in rows]
    fig = new_figure((4.2 * len(batch_sizes) + 1.6, 0.55 * len(rows) + 1.6))
    axes = np.atleast_1d(fig.subplots(1, len(batch_sizes), sharey=True))
    for ax, size in zip(axes, batch_sizes):
        for y, row in enumerate(rows):
            timing = next((b for b in row["batches"] if b["batch_size"] == size), None)
            if timing is None:
                continue
            p50, p90, p99 = timing["p50_us"], timing["p90_us"], timing["p99_us"]
            ax.barh(y, p50, color=f"C{y % 10}", alpha=0.8)
            ax.plot([p50, p99], [y, y], color="black", linewidth=1)
            ax.plot([p90], [y], marker="|", color="black", markersize=10)
            ax.annotate(f"{p50:.3g}", (p50, y), xytext=(3, 6), textcoords="offset points", fontsize=7)
        ax.set_title(f"batch {size}", fontsize=10)
        ax.set_xlabel("us per call: p50 bar, p90 tick, line to p99")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)), names, fontsize=8)
    axes[0].invert_yaxis()
    machine = rows[0].get("machine", {})
    fig.suptitle(f"latency on {machine.get('cpu', 'this machine')} "
                 f"({machine.get('usable_cores', '?')} of {machine.get('cores', '?')} cores usable)", fontsize=10)
    return save_figure(fig, path)


def confusion_chart(matrix: np.ndarray, labels: list, path: str | os.PathLike, title: str = "") -> Path:
    """Draw a confusion matrix to ``path``: rows are true labels and columns predicted ones (one
    per entry of ``labels``), coloured by each true label's share, with the counts written in the
    cells (up to 20 labels)."""
    matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.shape != (len(labels), len(labels)):
        raise ValueError(f"matrix must be {len(labels)} x {len(labels)} for {len(labels)} labels, "
                         f"got shape {matrix.shape}")
    shares = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
    side = min(1.6 + 0.45 * len(labels), 14)
    fig = new_figure((side + 1.2, side))
    ax = fig.subplots()
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    fig.colorbar(image, ax=ax, label="share of the true label's rows", shrink=0.8)
    ticks = range(len(labels))
    ax.set_xticks(ticks, [str(label) for label in labels], rotation=90 if len(labels) > 10 else 0)
    ax.set_yticks(ticks, [str(label) for label in labels])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    if len(labels) <= 20:
        for (i, j), count in np.ndenumerate(matrix):
            if count:
                ax.text(j, i, str(count), ha="center", va="center", fontsize=7,
                        color="white" if shares[i, j] > 0.5 else "black")
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)
