"""Fixtures every part's tests share: the digits split, a tiny trained LAST model, models built
without training (``prototype_model``), files of every kind (``export``), and the CLI runner."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from lastedge.runtime import Model, Preprocess

# Trains in about a second; accuracy is poor (~70 %) but every code path runs.
TINY_LAST = dict(n_atoms=4, max_dca_iter=2, inner_iter=30, preprocess="center-l2", verbose=0,
                 random_state=0)

# (file name, exporter keyword arguments) of what ``export`` writes
EXPORTED_FILES = [
    ("m.onnx", dict()),
    ("m-pre.onnx", dict(with_preprocessing=True)),
    ("m-int8.onnx", dict(precision="int8")),
    ("m.tflite", dict()),
    ("m-int8.tflite", dict(precision="int8")),
]


@pytest.fixture(scope="session")
def digits_data():
    """scikit-learn digits split 75/25 (stratified, seed 0) as a ``runtime.data.Dataset``."""
    from lastedge.runtime.data import load_dataset

    return load_dataset("digits")


@pytest.fixture(scope="session")
def tiny_last(digits_data):
    """A ``LASTClassifier`` fitted with ``TINY_LAST`` on the digits training part."""
    from sklearn.exceptions import ConvergenceWarning

    from lastedge.train import LASTClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LASTClassifier(**TINY_LAST).fit(digits_data.X_train, digits_data.y_train)


@pytest.fixture(scope="session")
def tiny_model_file(tiny_last, tmp_path_factory):
    """``tiny_last`` saved as a ``.npz`` model file."""
    return tiny_last.to_model().save(tmp_path_factory.mktemp("models") / "tiny.npz")


def build_blobs(n_classes: int = 3, n_features: int = 24, rows: int = 300, seed: int = 0):
    """Gaussian blobs around random centres, raw features in roughly [-6, 6]."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, (n_classes, n_features))
    y = rng.integers(0, n_classes, rows)
    return (centres[y] + rng.normal(0, 1, (rows, n_features))).astype(np.float32), y


def build_prototype_model(X: np.ndarray, y: np.ndarray, *, preprocess: str = "center-l2",
                    atoms_per_class: int = 8, seed: int = 0) -> Model:
    """A working soft-threshold classifier without training: atoms are preprocessed training rows
    scaled to norm 1.5 (so an atom fires when the cosine exceeds 2/3), weights one-hot per class
    (binary: +1 for classes[1], -1 for classes[0])."""
    rng = np.random.default_rng(seed)
    step = Preprocess.fit(preprocess, X)
    classes = np.unique(y)
    picks = np.concatenate([rng.choice(np.flatnonzero(y == c), atoms_per_class, replace=False)
                            for c in classes])
    atoms = step.apply(X[picks]).astype(np.float64)
    atoms *= 1.5 / np.maximum(np.linalg.norm(atoms, axis=1, keepdims=True), 1e-12)
    owner = np.repeat(np.arange(len(classes)), atoms_per_class)
    if len(classes) == 2:
        W = np.where(owner == 1, 1.0, -1.0)[:, None]
    else:
        W = np.eye(len(classes))[owner]
    return Model(atoms.T, W, classes, alpha=1.0, preprocess=step)


def export_every_kind(model: Model, folder: Path, X_cal: np.ndarray) -> dict[str, Path]:
    """Write ``model`` as .npz and as every file in ``EXPORTED_FILES``."""
    lastedge_export = pytest.importorskip("lastedge.export")
    paths = {"m.npz": model.save(folder / "m.npz")}
    for name, kwargs in EXPORTED_FILES:
        writer = getattr(lastedge_export, "to_onnx" if name.endswith(".onnx") else "to_tflite")
        if kwargs.get("precision") == "int8":
            kwargs = {**kwargs, "calibration": X_cal}
        writer(model, folder / name, **kwargs)
        paths[name] = folder / name
    return paths


@pytest.fixture(scope="session")
def blobs():
    """``build_blobs``: Gaussian blobs, raw features in roughly [-6, 6]."""
    return build_blobs


@pytest.fixture(scope="session")
def prototype_model():
    """``build_prototype_model``: a working classifier built from rows, without training."""
    return build_prototype_model


@pytest.fixture(scope="session")
def export():
    """``export_every_kind``: a model as .npz and every exported file kind."""
    return export_every_kind


@pytest.fixture()
def run(capsys):
    """``run(*argv) -> (status, stdout, stderr)``: the ``lastedge`` command in this process."""
    from lastedge.cli import main

    def run_command(*argv) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run_command
