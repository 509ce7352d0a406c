"""Fixtures of the runtime tests: hard rows for a model, the runtime's own parity check, and the
fuzz harness (``fuzz.py`` and its modules, beside this file)."""

from __future__ import annotations

import sys
import gzip
from pathlib import Path

import numpy as np
import pytest

from lastedge.runtime import Model, load

# The fuzz harness's modules import each other by name, and its worker runs as a script from here.
sys.path.insert(0, str(Path(__file__).resolve().parent))


def build_hard_rows(model: Model, X: np.ndarray) -> np.ndarray:
    """Real rows plus zeros, atoms scaled so that (for preprocess "none") an atom's input is
    exactly alpha, and large values."""
    Z = X[: len(X) // 2]
    at_threshold = model.dictionary.T[:5] / np.float32(1.5**2)
    return np.vstack([Z, np.zeros((3, model.n_features)), at_threshold,
                      X[:5] * 1e3, np.full((2, model.n_features), 50.0)]).astype(np.float32)


def check_parity(reference: Model, path: Path, X: np.ndarray, backend: str | None = None) -> None:
    """fp32: scores within 1e-4 * (1 + |score|) and identical labels; int8: >= 95% agreement."""
    predictor = load(path, backend=backend)
    expected, got = reference.decision_function(X), predictor.decision_function(X)
    assert got.shape == expected.shape and got.dtype == np.float32
    if predictor.precision == "int8":
        agreement = np.mean(predictor.predict(X) == reference.predict(X))
        assert agreement >= 0.95, f"{path.name}: int8 agrees on {agreement:.1%}"
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(predictor.predict(X), reference.predict(X))


@pytest.fixture(scope="session")
def hard_rows():
    """``build_hard_rows``: real rows plus zeros, rows at the threshold and large values."""
    return build_hard_rows


@pytest.fixture(scope="session")
def assert_parity():
    """``check_parity``: a file's scores against the reference model (fp32 tight, int8 by agreement)."""
    return check_parity


@pytest.fixture(scope="session")
def fuzz():
    """``fuzz.py``: ``campaign``, ``run_cases`` and their ``Report``."""
    import fuzz

    return fuzz


@pytest.fixture(scope="session")
def fuzz_cases():
    """``fuzz_cases.py``: the files lastedge writes and the hostile ones."""
    import fuzz_cases

    return fuzz_cases


@pytest.fixture(scope="session")
def base_files(fuzz_cases, tmp_path_factory):
    """Every kind of model file lastedge writes here (``fuzz_cases.model_files``), by name."""
    return fuzz_cases.model_files(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def paths(blobs, export, prototype_model, tmp_path_factory):
    """A prototype model on blobs as .npz and every exported kind (the bad-input tests' files)."""
    X, y = blobs()
    return export(prototype_model(X, y), tmp_path_factory.mktemp("errors"), X)


IDX_CODES = {np.dtype("u1"): 0x08, np.dtype("i1"): 0x09, np.dtype(">i2"): 0x0B, np.dtype(">i4"): 0x0C,
             np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}


def build_idx_file(path, array: np.ndarray, *, gz: bool = False, extra: bytes = b"", cut: int = 0):
    """An IDX file as the MNIST family writes it (big-endian values); ``extra`` / ``cut`` damage it."""
    array = np.asarray(array)
    stored = array.astype(array.dtype.newbyteorder(">"))
    head = bytes([0, 0, IDX_CODES[stored.dtype], array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    data = (head + stored.tobytes() + extra)[:len(head) + stored.nbytes + len(extra) - cut]
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def build_digits_images():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return (X * 255 / 16).astype(np.uint8).reshape(-1, 8, 8), y


def build_mnist_like_folder(folder, *, gz: bool = True, test: bool = True):
    images, labels = build_digits_images()
    suffix = ".gz" if gz else ""
    build_idx_file(folder / f"train-images-idx3-ubyte{suffix}", images[:1400], gz=gz)
    build_idx_file(folder / f"train-labels-idx1-ubyte{suffix}", labels[:1400].astype(np.uint8), gz=gz)
    if test:
        build_idx_file(folder / f"t10k-images-idx3-ubyte{suffix}", images[1400:], gz=gz)
        build_idx_file(folder / f"t10k-labels-idx1-ubyte{suffix}", labels[1400:].astype(np.uint8), gz=gz)
    return folder


def build_image_folder(folder, images, labels, names=None):
    for i, (image, label) in enumerate(zip(images, labels)):
        sub = folder / (names[label] if names else str(label))
        sub.mkdir(parents=True, exist_ok=True)
        from PIL import Image

        Image.fromarray(image).save(sub / f"{i}.png")
    return folder


@pytest.fixture(scope="session")
def write_idx():
    """``build_idx_file``: an IDX file as the MNIST family writes it, optionally damaged."""
    return build_idx_file


@pytest.fixture(scope="session")
def digits_images():
    """``build_digits_images``: scikit-learn's digits as 8x8 uint8 images and their labels."""
    return build_digits_images


@pytest.fixture(scope="session")
def mnist_like_folder():
    """``build_mnist_like_folder``: digits as an MNIST-style IDX folder (train and t10k parts)."""
    return build_mnist_like_folder


@pytest.fixture(scope="session")
def image_folder():
    """``build_image_folder``: images as PNGs in one subfolder per class."""
    return build_image_folder
