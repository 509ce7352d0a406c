"""Load training data: ``.npz`` (X_train, y_train, X_test, y_test), CSV with a label column, or the
built-in ``digits`` (scikit-learn's 8x8 digits, shipped with scikit-learn, no download)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NPZ_KEYS = ("X_train", "y_train", "X_test", "y_test")


@dataclass
class Dataset:
    """A train/test split. ``X_test``/``y_test`` may be empty when the source has no test part."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str

    @property
    def has_test(self) -> bool:
        return len(self.X_test) > 0


def load_dataset(source: str, *, label_column: str | int = -1, test_size: float = 0.25,
                 random_state: int = 0) -> Dataset:
    """Read ``source``: ``"digits"``, a ``.npz`` archive or a ``.csv`` file.

    ``.npz`` needs ``X_train`` and ``y_train``; ``X_test``/``y_test`` are optional. ``digits`` and
    CSV files are split into train and test parts (stratified, ``test_size``, ``random_state``).
    """
    if source == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return _split(X, y, "digits", test_size, random_state)
    path = Path(source)
    if not path.is_file():
        raise ValueError(f"data source {source!r} is neither 'digits' nor an existing file")
    if path.suffix == ".npz":
        return _load_npz(path)
    if path.suffix == ".csv":
        X, y = load_csv(path, label_column)
        return _split(X, y, path.stem, test_size, random_state)
    raise ValueError(f"unsupported data file {path.name!r}: use .npz, .csv or 'digits'")


def _load_npz(path: Path) -> Dataset:
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in NPZ_KEYS[:2] if k not in archive.files]
            if missing:
                raise ValueError(f"{path.name} lacks {', '.join(missing)} (needs {', '.join(NPZ_KEYS)})")
            arrays = {k: archive[k] for k in NPZ_KEYS if k in archive.files}
    except (OSError, EOFError) as err:
        raise ValueError(f"cannot read {path.name} as .npz: {err}") from None
    n_features = arrays["X_train"].shape[1] if arrays["X_train"].ndim == 2 else 0
    X_test = arrays.get("X_test", np.empty((0, n_features)))
    y_test = arrays.get("y_test", np.empty(0, dtype=arrays["y_train"].dtype))
    return Dataset(arrays["X_train"], arrays["y_train"], X_test, y_test, path.stem)


def load_csv(path: str | Path, label_column: str | int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a CSV file as ``(X float64 [m, n], y labels [m])``.

    A header row is detected when its cells are not all numbers. ``label_column`` is a column
    name (with a header) or index (negative counts from the end). Labels stay strings unless every
    label is an integer.
    """
    with open(path, newline="") as f:
        rows = [row for row in csv.reader(f) if row and any(cell.strip() for cell in row)]
    if not rows:
        raise ValueError(f"{Path(path).name} has no rows")
    header = None if all(_is_number(cell) for cell in rows[0]) else rows.pop(0)
    widths = {len(row) for row in rows}
    if len(widths) != 1:
        raise ValueError(f"{Path(path).name}: rows have different numbers of columns {sorted(widths)}")
    if not rows:
        raise ValueError(f"{Path(path).name} has a header but no data rows")
    column = _column_index(label_column, header, widths.pop())
    labels = [row[column].strip() for row in rows]
    try:
        X = np.array([[float(c) for i, c in enumerate(row) if i != column] for row in rows])
    except ValueError as err:
        raise ValueError(f"{Path(path).name}: a feature cell is not a number ({err})") from None
    y = np.array([int(v) for v in labels]) if all(_is_int(v) for v in labels) else np.array(labels)
    return X, y


def _column_index(label_column: str | int, header: list[str] | None, width: int) -> int:
    if isinstance(label_column, str) and not _is_int(label_column):
        if header is None or label_column not in header:
            raise ValueError(f"label column {label_column!r} not found in the CSV header")
        return header.index(label_column)
    index = int(label_column)
    if not -width <= index < width:
        raise ValueError(f"label column {index} is out of range for {width} columns")
    return index % width


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_int(text: str) -> bool:
    return text.strip().lstrip("+-").isdigit()


def _split(X: np.ndarray, y: np.ndarray, name: str, test_size: float, random_state: int) -> Dataset:
    from sklearn.model_selection import train_test_split

    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=random_state, stratify=y)
    return Dataset(X_train, y_train, X_test, y_test, name)
