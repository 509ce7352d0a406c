"""Rows for the ``export`` command: calibration rows and held-out check rows from a data source.

- Labelled sources, read by ``lastedge.runtime.data`` as ``lastedge train`` reads them: ``digits``,
  a folder of IDX files or of images, an ``.npz`` with ``X_train``/``y_train`` only, a CSV with a
  label column. Calibration takes the training part, the check the test part (or the part that
  ``train --seed 0`` holds out), with its labels; a source that ``train`` does not split (an
  ``.npz`` or IDX folder without a test part) is split as rows alone are, below.
- An ``.npz`` with ``X_train`` and ``X_test`` (``y_test`` optional): calibrate on the first, check
  the second.
- Rows alone (``.npy``, one 2-D array; an ``.npz`` with ``X``, ``y`` optional; a CSV of feature
  columns, a header row optional; a folder holding only images): the first 70 % calibrate and the
  rest are checked.

With no source, the check runs on synthetic rows built from the model's atoms (:mod:`.atom_rows`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from lastedge.runtime import Model, check_input
from lastedge.runtime.csv_rows import load_csv
from lastedge.runtime.data import is_image_folder, load_dataset
from lastedge.runtime.images import class_folders, image_files, read_images
from lastedge.runtime.model import NPZ_ERRORS, check_declared_sizes

from .atom_rows import synthetic_rows

MAX_CALIBRATION_ROWS = 5000
MAX_CHECK_ROWS = 10000
SYNTHETIC_ROWS = 512
CALIBRATION_SHARE = 0.7  # of rows without a test part


class Rows(NamedTuple):
    calibration: np.ndarray | None
    X_check: np.ndarray
    y_check: np.ndarray | None
    source: str


class _Parts(NamedTuple):
    """What a source holds: a training (calibration) part and, when it has one, a test part."""

    X_train: np.ndarray
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    y_train: np.ndarray | None = None  # labels of rows without a test part, split with them


def _labelled(source: str, image_size: tuple[int, int] | None, label_column: str | int = -1) -> _Parts:
    """A labelled source, read and split as ``lastedge train`` reads it."""
    image_size = image_size if Path(source).is_dir() and is_image_folder(Path(source)) else None
    data = load_dataset(source, label_column=label_column, image_size=image_size)
    if not data.has_test:
        return _Parts(data.X_train, y_train=data.y_train)
    return _Parts(data.X_train, data.X_test, data.y_test)


def _read_folder(path: Path, image_size: tuple[int, int] | None) -> _Parts:
    """A folder of IDX files or of images in class subfolders, or one holding only images (a
    camera's frames, rows without labels, read as ``lastedge predict`` reads them)."""
    frames = [] if class_folders(path) else image_files(path)
    if not frames:
        return _labelled(str(path), image_size)
    return _Parts(read_images(frames, path, image_size)[0])


def _read_npz(path: Path) -> _Parts:
    """An ``.npz`` with ``X_train`` and ``X_test`` (``y_test`` optional), with ``X_train`` and
    ``y_train`` only (read by ``lastedge.runtime.data``), or with ``X`` (``y`` optional)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            names = data.files
            check_declared_sizes(data.zip, None, ("X_train", "X_test", "y_test", "X", "y"))
            if "X_train" in names and "X_test" in names:
                return _Parts(data["X_train"], data["X_test"], data.get("y_test"))
            if "X" in names:
                return _Parts(data["X"], y_train=data.get("y"))
    except (*NPZ_ERRORS, ValueError) as err:  # ValueError: a pickled array
        raise ValueError(f"{path} is not a readable .npz file ({err})") from None
    if "X_train" in names and "y_train" in names:
        return _labelled(str(path), None)
    raise ValueError(f"{path} has neither X_train/X_test, X_train/y_train nor X arrays "
                     f"(has {', '.join(names) or 'none'})")


def _read_npy(path: Path) -> _Parts:
    """One 2-D array of rows."""
    try:
        return _Parts(np.load(path, allow_pickle=False))
    except (*NPZ_ERRORS, ValueError) as err:  # ValueError: a pickled array
        raise ValueError(f"{path} is not a readable .npy file ({err})") from None


def _read_csv(path: Path, n_features: int, label_column: str | int | None,
              trained_label_column: str | int) -> _Parts:
    """A CSV of feature columns only, or with a label column: the one named, else, when the file
    has one column more than the model has features (or a column of text), the one the model was
    trained with (``trained_label_column``: ``lastedge train`` records it, -1 otherwise)."""
    if label_column is None:
        try:
            X, _ = load_csv(path, None)
        except ValueError:  # e.g. a text label column; read as labelled below
            X = None
        if X is not None and X.shape[1] != n_features + 1:
            return _Parts(X)
    return _labelled(str(path), None, trained_label_column if label_column is None else label_column)


def _read(source: str, n_features: int, image_size: tuple[int, int] | None,
          label_column: str | int | None, trained_label_column: str | int) -> _Parts:
    """The parts of ``source`` (see the module's docstring)."""
    path = Path(source)
    if source == "digits":
        return _labelled(source, None)
    if path.is_dir():
        return _read_folder(path, image_size)
    if not path.is_file():
        raise FileNotFoundError(f"no such data file or folder: {path} (or use 'digits')")
    readers = {".npz": _read_npz, ".npy": _read_npy}
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_csv(path, n_features, label_column, trained_label_column)
    if suffix not in readers:
        raise ValueError(f"data files must be .npz, .npy or .csv, got {path.name!r}")
    return readers[suffix](path)


def _flat(X: np.ndarray, n_features: int, source: str) -> np.ndarray:
    """Rows as the model reads them (images flattened), checked like any input; in their own
    dtype, as ``lastedge predict`` passes them on (float64 rows are preprocessed in float64)."""
    try:
        return check_input(X, n_features)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{source}: {err}") from None


def _with_test_part(parts: _Parts) -> _Parts:
    """Rows without a test part split: the first ``CALIBRATION_SHARE`` calibrate."""
    if parts.X_test is not None:
        return parts
    cut = int(CALIBRATION_SHARE * len(parts.X_train))
    y = parts.y_train
    return _Parts(parts.X_train[:cut], parts.X_train[cut:], None if y is None else np.asarray(y)[cut:])


def _trained_label_column(model: Model) -> str | int:
    """The CSV label column ``lastedge train`` recorded in the model's metadata, else -1 (the
    last); a recorded value that is no column name or index is ignored (metadata is the file's)."""
    data = model.meta.get("data")
    column = data.get("label_column") if isinstance(data, dict) else None
    return column if isinstance(column, (str, int)) and not isinstance(column, bool) else -1


def load_rows(source: str | None, model: Model, image_size: tuple[int, int] | None = None,
              label_column: str | int | None = None) -> Rows:
    """Calibration and check rows from ``source``; with no source, synthetic check rows only.
    Images of an image folder are scaled to ``image_size`` (height, width) when given;
    ``label_column`` names a CSV file's label column (by default the one the model was trained
    with, when the file has one)."""
    if label_column is not None and not (source or "").lower().endswith(".csv"):
        raise ValueError("--label-column applies to CSV calibration files only")
    if source is None:
        return Rows(None, synthetic_rows(model, SYNTHETIC_ROWS), None, "synthetic")
    parts = _with_test_part(_read(source, model.n_features, image_size, label_column,
                                  _trained_label_column(model)))
    X_train = _flat(parts.X_train, model.n_features, source)
    X_test = _flat(parts.X_test, model.n_features, source)
    pick = np.random.default_rng(0).permutation(len(X_train))[:MAX_CALIBRATION_ROWS]
    return Rows(X_train[np.sort(pick)], X_test[:MAX_CHECK_ROWS],
                None if parts.y_test is None else np.asarray(parts.y_test)[:MAX_CHECK_ROWS],
                f"held out from {source}")
