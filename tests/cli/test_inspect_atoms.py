"""``lastedge inspect --atoms`` on models with many atoms: each class's atoms are one mosaic, the
figure is drawn once, and every atom lands in its cell of the inch grid."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="the figures need the plot extra")


import lastedge.runtime.figures as figures
from lastedge.runtime import Model


def ovr_model(n_classes: int, per_class: int, n_features: int = 16) -> Model:
    """One-vs-all: class c's head is atoms c*per_class ... (c+1)*per_class - 1, weights of both signs."""
    rng = np.random.default_rng(0)
    n_atoms = n_classes * per_class
    W = np.zeros((n_atoms, n_classes), np.float32)
    W[np.arange(n_atoms), np.arange(n_atoms) // per_class] = rng.normal(size=n_atoms)
    return Model(rng.normal(size=(n_features, n_atoms)), W, np.arange(n_classes))


def test_inspect_draws_many_atoms_with_an_artist_per_class_not_per_atom(run, capsys, tmp_path, monkeypatch):
    """An Axes per atom took 11 ms each (10 classes of 1,000 atoms: over 2 minutes of CPU), and
    savefig drew the figure twice (a layout engine switched off is still one)."""
    path = ovr_model(3, 40).save(tmp_path / "m.npz")
    drawn = []
    save = figures.save_figure

    def counting_save(fig, out):
        draw = fig.draw
        fig.draw = lambda renderer: (drawn.append(len(fig.axes)), draw(renderer))
        return save(fig, out)

    monkeypatch.setattr(figures, "save_figure", counting_save)
    code, out, err = run("inspect", path, "--atoms", tmp_path / "atoms.png", "--per-class", "40")
    assert code == 0, err
    assert drawn == [3]  # one draw, one Axes per class (was 120 Axes, drawn twice)
    assert (tmp_path / "atoms.png").read_bytes()[:4] == b"\x89PNG"


def test_mosaic_puts_each_atom_enlarged_in_its_cell_and_nothing_between():
    images = [np.full((2, 3), value) for value in (0.0, 0.5, 1.0)]
    images[0][1, 2] = 1.0
    grid = figures._CellGrid.of((2, 3), columns=2)
    mosaic = grid.mosaic(images)
    cell_h, cell_w = grid.cell
    assert grid.zoom == 11 and mosaic.shape == (2 * cell_h, 2 * cell_w, 4) and mosaic.dtype == np.uint8
    covered = np.zeros(mosaic.shape[:2], bool)
    for j, image in enumerate(images):
        left, top, right, bottom = grid.image_corners(j)
        assert (right - left, bottom - top) == (33, 22)  # 3 x 2 pixels, 11 times
        expected = np.round(255 * np.kron(image, np.ones((11, 11))))
        np.testing.assert_array_equal(mosaic[top:bottom, left:right, :3], np.repeat(expected[..., None], 3, axis=2))
        covered[top:bottom, left:right] = True
        assert (row := j // 2) * cell_h <= top and bottom <= (row + 1) * cell_h  # inside its cell
    np.testing.assert_array_equal(mosaic[..., 3], np.where(covered, 255, 0))  # clear between the atoms


def test_each_atom_is_drawn_where_the_inch_grid_puts_it(tmp_path):
    """One atom, black on its left half and white on its right: its box spans ATOM_SIZE inches,
    ATOM_MARGIN from its cell's left and ATOM_CAPTION above its bottom, the cell centred."""
    from PIL import Image

    path = figures.atoms_as_images({"one": np.array([[0.0], [1.0], [0.0], [1.0]])}, (2, 2),
                                   tmp_path / "one.png", "title", atom_titles={"one": ["for"]})
    height = figures.ATOM_CELL[1] + figures.BLOCK_TITLE + figures.FIGURE_TITLE  # inches
    box_left = (figures.MIN_ATOMS_WIDTH - figures.ATOM_CELL[0]) / 2 + figures.ATOM_MARGIN
    row = round((height - figures.ATOM_CAPTION - figures.ATOM_SIZE / 2) * figures.DPI)
    with Image.open(path) as image:
        grey = np.asarray(image.convert("L"))
    quarter = figures.ATOM_SIZE / 4
    assert grey[row, round((box_left + quarter) * figures.DPI)] == 0
    assert grey[row, round((box_left + 3 * quarter) * figures.DPI)] == 255
    assert grey[row, round((box_left - quarter) * figures.DPI)] == 255  # the page around it


def test_captions_are_those_of_the_atoms_shown_and_blank_ones_draw_nothing(tmp_path, monkeypatch):
    from matplotlib.collections import PathCollection

    figures_saved = []
    save = figures.save_figure
    monkeypatch.setattr(figures, "save_figure", lambda fig, out: (figures_saved.append(fig), save(fig, out))[1])
    captions = [""] * 5 + ["for", "against"] * 5 + ["never shown"] * 25  # 40 atoms, the first 15 drawn
    figures.atoms_as_images({"a": np.random.default_rng(0).normal(size=(16, 40))}, (4, 4), tmp_path / "a.png",
                            "t", max_atoms=15, atom_titles={"a": captions})
    (ax,) = figures_saved[0].axes
    (texts,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(texts.get_paths()) == len(texts.get_offsets()) == 10  # a blank caption was a crash in TextPath
