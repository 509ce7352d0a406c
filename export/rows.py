"""Rows for the ``export`` command: calibration rows and held-out check rows from a file or digits.

A source is ``digits`` (scikit-learn's 8x8 digits) or a path: ``.npz`` with ``X_train`` and
``X_test`` (and ``y_test``), or ``X`` (and ``y``); ``.npy`` (one 2-D array); ``.csv`` (numbers
only, one row per line); a folder of IDX files or of images (``lastedge.runtime.data``). With a
train/test split, calibration uses training rows and parity the test rows; with one array, the
first 70 % calibrate and the rest are held out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from lastedge.runtime import check_input
from lastedge.runtime.data import is_image_folder, load_dataset
from lastedge.runtime.model import NPZ_ERRORS

MAX_CALIBRATION_ROWS = 5000
MAX_CHECK_ROWS = 10000
SYNTHETIC_ROWS = 512


class Rows(NamedTuple):
    calibration: np.ndarray | None
    X_check: np.ndarray
    y_check: np.ndarray | None
    source: str


def _read(source: str, image_size: tuple[int, int] | None
          ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(X_train, X_test, y_test, y_all) from ``source``; missing parts are None."""
    if source == "digits":
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            raise ImportError("--calibration digits needs scikit-learn: "
                              "pip install 'lastedge[train]'") from None
        X, y = load_digits(return_X_y=True)
        return X, None, None, y
    path = Path(source)
    if path.is_dir():  # IDX files or images, read as `lastedge train` reads them
        data = load_dataset(source, image_size=image_size if is_image_folder(path) else None)
        return (data.X_train, data.X_test if data.has_test else None,
                data.y_test if data.has_test else None, None)
    if not path.is_file():
        raise FileNotFoundError(f"no such data file or folder: {path} (or use 'digits')")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return np.loadtxt(path, delimiter=",", ndmin=2), None, None, None
    if suffix not in (".npz", ".npy"):
        raise ValueError(f"data files must be .npz, .npy or .csv, got {path.name!r}")
    try:
        data = np.load(path, allow_pickle=False)
        if suffix == ".npy":
            return data, None, None, None
        with data:
            if "X_train" in data.files and "X_test" in data.files:
                return data["X_train"], data["X_test"], data.get("y_test"), None
            if "X" in data.files:
                return data["X"], None, None, data.get("y")
    except NPZ_ERRORS as err:
        raise ValueError(f"{path} is not a readable {suffix} file ({err})") from None
    raise ValueError(f"{path} has neither X_train/X_test nor X arrays (has {', '.join(data.files)})")


def _flat(X: np.ndarray, n_features: int, source: str) -> np.ndarray:
    """Rows as the model reads them (images flattened), checked like any input."""
    try:
        return check_input(X, n_features).astype(np.float32)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{source}: {err}") from None


def load_rows(source: str | None, n_features: int, model_preprocess: Any = None,
              image_size: tuple[int, int] | None = None) -> Rows:
    """Calibration and check rows from ``source``; with no source, synthetic check rows only.
    Images of an image folder are scaled to ``image_size`` (height, width) when given."""
    if source is None:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((SYNTHETIC_ROWS, n_features)).astype(np.float32)
        if model_preprocess is not None and model_preprocess.mean is not None:
            X = X * model_preprocess.scale + model_preprocess.mean
        return Rows(None, X, None, "synthetic")
    X_train, X_test, y_test, y_all = _read(source, image_size)
    X_train = _flat(X_train, n_features, source)
    if X_test is None:
        cut = int(0.7 * len(X_train))
        X_train, X_test = X_train[:cut], X_train[cut:]
        y_test = None if y_all is None else y_all[cut:]
    X_test = _flat(X_test, n_features, source)
    pick = np.random.default_rng(0).permutation(len(X_train))[:MAX_CALIBRATION_ROWS]
    return Rows(X_train[np.sort(pick)], X_test[:MAX_CHECK_ROWS],
                None if y_test is None else np.asarray(y_test)[:MAX_CHECK_ROWS],
                f"held out from {source}")
