"""Product figures (``lastedge.runtime.figures``): atoms as images, a model's strongest atoms, atomic writing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="the figures need the plot extra")

from lastedge.runtime.figures import (_atom_images, atoms_as_images, confusion_chart, latency_chart, model_atoms,
                              parse_image_shape, strongest_atoms)
from lastedge.runtime import Model

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    assert list(path.parent.glob(".*.tmp")) == []  # the temporary file was renamed, not left behind


def one_vs_all_model(n_features: int = 16) -> Model:
    """Three classes' heads of three atoms each, with weights of both signs and sizes."""
    D = np.random.default_rng(0).normal(size=(n_features, 9)).astype(np.float32)
    W = np.zeros((9, 3), np.float32)
    W[:3, 0], W[3:6, 1], W[6:, 2] = [-1.0, 3.0, 2.0], [1.0, -5.0, 0.5], [2.0, -2.0, 1.0]
    return Model(D, W, np.array(["cat", "dog", "eel"]))


@pytest.mark.parametrize(("text", "shape", "channels_first"), [
    ("28x28", (28, 28), False), ("32x32x3", (32, 32, 3), False), ("3x32x32", (32, 32, 3), True),
    ("16X8", (16, 8), False),
])
def test_image_shapes(text, shape, channels_first):
    assert parse_image_shape(text) == (shape, channels_first)


@pytest.mark.parametrize("text", ["28", "28x", "0x5", "4x4x4", "axb", "2x2x2x3"])
def test_bad_image_shapes(text):
    with pytest.raises(ValueError, match="image shape must be HxW, HxWx3 or 3xHxW"):
        parse_image_shape(text)


def test_strongest_atoms_rank_each_outputs_atoms_by_their_scale_in_the_score():
    model = one_vs_all_model()
    norms = np.linalg.norm(model.dictionary, axis=0)
    dictionaries, captions = strongest_atoms(model, per_output=2)
    assert list(dictionaries) == [f"class {c}: 2 of its 3 atoms" for c in ("cat", "dog", "eel")]
    for column, label in enumerate(dictionaries):
        head = np.arange(3 * column, 3 * column + 3)
        expected = head[np.argsort(-np.abs(model.weights[head, column]) * norms[head])[:2]]
        np.testing.assert_array_equal(dictionaries[label], model.dictionary[:, expected])
        assert captions[label] == ["for" if model.weights[j, column] > 0 else "against" for j in expected]


def test_binary_model_has_one_row_named_after_its_positive_class():
    D = np.eye(4, 3, dtype=np.float32)
    model = Model(D, np.array([[1.0], [-2.0], [0.0]], np.float32), np.array(["no", "yes"]))
    _, captions = strongest_atoms(model, per_output=5)
    assert captions == {"score (> 0: class yes): 2 of its 2 atoms": ["against", "for"]}


def test_model_atoms_of_a_model_whose_weights_are_all_zero_say_so(tmp_path):
    """It said "dictionaries is empty; expected at least one label", the drawing code's words."""
    model = one_vs_all_model()
    model = Model(model.dictionary, np.zeros_like(model.weights), model.classes)
    with pytest.raises(ValueError, match="^the model has no atom with a non-zero weight to draw: all its weights are zero$"):
        model_atoms(model, tmp_path / "atoms.png")
    assert list(tmp_path.iterdir()) == []


def test_model_atoms_figure(tmp_path):
    assert_png(model_atoms(one_vs_all_model(), tmp_path / "atoms.png"))  # 16 features: 4x4 images
    with pytest.raises(ValueError, match="12 features are not a square image"):
        model_atoms(one_vs_all_model(12), tmp_path / "bad.png")
    assert_png(model_atoms(one_vs_all_model(12), tmp_path / "wide.png", image_shape=(3, 4)))
    with pytest.raises(ValueError, match="the figure must be a .png, .pdf, .svg file"):
        model_atoms(one_vs_all_model(), tmp_path / "atoms.gif")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atoms.png", "wide.png"]


def test_atoms_as_images_grayscale_with_captions(tmp_path):
    rng = np.random.default_rng(0)
    dictionaries = {"LAST": rng.normal(size=(144, 12)), "SGD": rng.normal(size=(144, 2))}
    dictionaries["SGD"][:, 1] = 1.0  # a constant atom must not divide by zero
    captions = {"LAST": ["+", "-"] * 6}
    atoms_as_images(dictionaries, (12, 12), tmp_path / "atoms.png", "Atoms", atom_titles=captions)
    assert_png(tmp_path / "atoms.png")


def test_one_atom_leaves_room_for_the_titles(tmp_path):
    from PIL import Image

    from lastedge.runtime.figures import DPI, MIN_ATOMS_WIDTH

    atoms_as_images({"class 0: 1 of its 3 atoms": np.ones((64, 1))}, (8, 8), tmp_path / "one.png",
                    "strongest atoms per output")
    with Image.open(tmp_path / "one.png") as image:
        assert image.width >= MIN_ATOMS_WIDTH * DPI * 0.9  # savefig trims nothing: the canvas is the figure


def test_atoms_as_images_channels_first_colour(tmp_path):
    D = np.random.default_rng(0).normal(size=(3 * 8 * 8, 40))
    atoms_as_images({"LAST": D}, (8, 8, 3), tmp_path / "cifar.png", "CIFAR", max_atoms=15,
                            channels_first=True)
    assert_png(tmp_path / "cifar.png")


def test_atoms_as_images_transposes_channels_first():
    # Channel c of pixel (i, j) is stored at c * H * W + i * W + j; it must land at [i, j, c].
    D = np.arange(3 * 2 * 4, dtype=float)[:, None]
    (image,) = _atom_images("a", D, (3, 2, 4), True, 1)
    expected = np.arange(24.0).reshape(3, 2, 4).transpose(1, 2, 0) / 23.0
    np.testing.assert_allclose(image, expected)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"dictionaries": {"LAST": np.zeros((100, 4))}}, r"n_features = 144 .* got shape \(100, 4\)"),
    ({"dictionaries": {"LAST": np.zeros(144)}}, r"must be \[n_features, N\]"),
    ({"image_shape": (12, 12, 2)}, r"\(H, W\) or \(H, W, 3\)"),
    ({"channels_first": True}, "channels_first needs a colour image_shape"),
    ({"max_atoms": 0}, "max_atoms must be >= 1"),
    ({"dictionaries": {}}, "dictionaries is empty"),
    ({"atom_titles": {"SGD": ["+"] * 4}}, r"labels \['SGD'\] that are not in dictionaries"),
    ({"atom_titles": {"LAST": ["+"] * 3}}, "has 3 captions for 4 atoms"),
])
def test_atoms_as_images_rejects_bad_input(tmp_path, kwargs, match):
    arguments = {"dictionaries": {"LAST": np.zeros((144, 4))}, "image_shape": (12, 12),
                 "path": tmp_path / "atoms.png", "title": "bad", **kwargs}
    with pytest.raises(ValueError, match=match):
        atoms_as_images(**arguments)


def bench_row(name: str, batches: dict[int, tuple[float, float, float]]) -> dict:
    return {"file": f"/models/{name}", "backend": "numpy", "precision": "fp32", "threads": 1,
            "machine": {"cpu": "test CPU", "cores": 4, "usable_cores": 1},
            "batches": [{"batch_size": size, "p50_us": p50, "p90_us": p90, "p99_us": p99}
                        for size, (p50, p90, p99) in batches.items()]}


def test_latency_chart(tmp_path):
    rows = [bench_row("a.npz", {1: (10, 12, 30), 64: (100, 120, 300)}),
            bench_row("b.tflite", {1: (8, 9, 11)})]  # not measured at batch 64: left empty there
    assert_png(latency_chart(rows, tmp_path / "latency.png"))
    with pytest.raises(ValueError, match="no bench results to draw"):
        latency_chart([], tmp_path / "empty.png")


def test_confusion_chart(tmp_path):
    matrix = np.array([[5, 1, 0], [0, 4, 2], [0, 0, 0]])  # a label with no rows gets an empty row
    assert_png(confusion_chart(matrix, ["cat", "dog", "owl"], tmp_path / "c.png", "3 labels"))
    with pytest.raises(ValueError, match="matrix must be 2 x 2 for 2 labels"):
        confusion_chart(matrix, ["cat", "dog"], tmp_path / "bad.png")
    assert not (tmp_path / "bad.png").exists()


def test_a_figure_is_drawn_before_its_temporary_file_exists(tmp_path):
    """A process killed while drawing (SIGTERM; many atoms take minutes) leaves no temporary file."""
    from lastedge.runtime.figures import new_figure, save_figure

    fig = new_figure((2.0, 2.0))
    fig.subplots().plot([0, 1])
    draw, files_while_drawing = fig.savefig, []
    fig.savefig = lambda *args, **kwargs: (files_while_drawing.append(list(tmp_path.iterdir())), draw(*args, **kwargs))
    assert_png(save_figure(fig, tmp_path / "f.png"))
    assert files_while_drawing == [[]]


def test_atoms_placed_by_hand_keep_the_page_of_the_inch_grid(tmp_path):
    """The atoms are placed by hand (constrained layout took 16 s for 40 labels, 90 s for 62
    classes), on the page it had: a cell per atom, a title per label, one above all."""
    import struct

    from lastedge.runtime.figures import ATOM_CELL, BLOCK_TITLE, DPI, FIGURE_TITLE, MIN_ATOMS_WIDTH

    dictionaries = {f"class {i}": np.random.default_rng(i).normal(size=(16, 1 + i % 3)) for i in range(40)}
    path = atoms_as_images(dictionaries, (4, 4), tmp_path / "many.png", "atoms")
    assert_png(path)
    width, height = struct.unpack(">II", path.read_bytes()[16:24])  # the PNG header's IHDR size
    assert width == round(max(MIN_ATOMS_WIDTH, 3 * ATOM_CELL[0] + 0.4) * DPI)
    assert height == round((40 * (ATOM_CELL[1] + BLOCK_TITLE) + FIGURE_TITLE) * DPI)
