"""Labelled rows from a data source, for ``lastedge train`` and ``lastedge predict``: ``.npz``
(X_train, y_train, X_test, y_test), CSV with a label column, a folder of IDX files (MNIST's
format, ``runtime.idx``), an image folder (one subfolder per class, ``runtime.images``), or the built-in
``digits`` (scikit-learn's 8x8 digits, shipped with scikit-learn, no download).

Reading ``.npz``, CSV and IDX files needs numpy only, so ``predict`` runs on a device's base
install; scikit-learn is imported for ``digits`` and for splitting a source without a test part
into train and test parts, Pillow for image folders."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .bounded import NPY_HEADER_ERRORS, check_declared_sizes, open_regular
from .csv_rows import label_array, load_csv
from .idx import IDX_PARTS, idx_files, read_idx
from .images import image_split, read_image_folder
from .model import NPZ_ERRORS, ZIP_MAGIC

NPZ_KEYS = ("X_train", "y_train", "X_test", "y_test")


@dataclass
class Dataset:
    """A train/test split. ``X_test``/``y_test`` may be empty when the source has no test part."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str
    image_shape: tuple[int, ...] | None = None  # each row is an image of this shape (H, W[, 3])

    @property
    def has_test(self) -> bool:
        return len(self.X_test) > 0

    def with_test_part(self, test_size: float = 0.25, random_state: int = 0) -> "Dataset":
        """Itself, or its rows split into train and test (stratified, as CSV files are) when it has
        no test part, as an ``.npz`` or IDX folder may not."""
        if self.has_test:
            return self
        return _split(self.X_train, self.y_train, self.name, test_size, random_state, self.image_shape)


def load_dataset(source: str, *, label_column: str | int = -1, test_size: float = 0.25,
                 random_state: int = 0, image_size: tuple[int, int] | None = None) -> Dataset:
    """Read ``source``: ``"digits"``, a ``.npz`` archive, a ``.csv`` file, or a folder of IDX
    files or of images.

    ``.npz`` needs ``X_train`` and ``y_train``; ``X_test`` and ``y_test`` are optional (both or
    neither). An IDX folder needs the training images and labels, and may hold the test pair. An
    image folder holds one subfolder per class, or ``train/`` and ``test/`` each holding them.
    Sources without a test part (``digits``, CSV files, unsplit image folders) are split into
    train and test parts (``test_size``, ``random_state``; stratified unless a class is too small
    for that). ``image_size`` (height, width) scales an image folder's images to it.
    """
    path = Path(source)
    if image_size is not None and (source == "digits" or not path.is_dir()):
        raise ValueError(f"an image size applies to image folders only, not to {source!r}")
    if source == "digits":
        X, y = _scikit_learn("datasets", "reading digits").load_digits(return_X_y=True)
        return _split(X, y, "digits", test_size, random_state, image_shape=(8, 8))
    if path.is_dir():
        return _load_folder(path, test_size, random_state, image_size)
    if not path.is_file():
        if path.exists():
            open_regular(path).close()  # refuses a FIFO or device, naming it
        raise ValueError(f"data source {source!r} is neither 'digits' nor an existing file or folder")
    suffix = path.suffix.lower() or path.name.lower()  # Path(".csv").suffix is ""
    if suffix == ".npz":
        return _load_npz(path)
    if suffix == ".csv":
        X, y = load_csv(path, label_column)
        return _split(X, y, path.stem, test_size, random_state)
    raise ValueError(f"unsupported data file {path.name!r}: use .npz, .csv, a folder of IDX files "
                     "or of images, or 'digits'")


def is_image_folder(path: Path) -> bool:
    """A folder read as images (one subfolder per class): any folder without IDX files. Only its
    images can be scaled to an image size."""
    return path.is_dir() and not idx_files(path)


def _load_folder(folder: Path, test_size: float, random_state: int,
                 image_size: tuple[int, int] | None) -> Dataset:
    """An IDX folder when it holds IDX files, else an image folder."""
    if not is_image_folder(folder):
        if image_size is not None:
            raise ValueError(f"{folder} holds IDX files; an image size applies to image folders only")
        return _load_idx(folder, idx_files(folder))
    parts, name = image_split(folder), folder_name(folder)
    if parts is None:
        X, names, shape = read_image_folder(folder, image_size)
        return _split(X, label_array(names), name, test_size, random_state, image_shape=shape)
    X_train, train_names, shape = read_image_folder(parts["train"], image_size)
    if "test" not in parts:
        return _split(X_train, label_array(train_names), name, test_size, random_state,
                      image_shape=shape)
    X_test, test_names, test_shape = read_image_folder(parts["test"], image_size)
    if test_shape != shape:
        raise ValueError(f"{folder}: test images have shape {test_shape}, training images {shape} "
                         "(height, width[, colour channels])")
    y = label_array(train_names + test_names)  # one rule for both parts' class names
    return Dataset(X_train, y[:len(X_train)], X_test, y[len(X_train):], name, image_shape=shape)


def folder_name(folder: Path) -> str:
    """The name a data folder is known by (printed, and recorded as a model's source): its own
    name, also when given as "." or ".." (whose ``Path.name`` is "" or ".."); "/" for the root."""
    if folder.name not in ("", ".."):
        return folder.name  # a symlink keeps the name the user gave it
    resolved = folder.resolve()
    return resolved.name or str(resolved)


def _load_idx(folder: Path, found: dict[tuple[str, str], Path]) -> Dataset:
    missing = [IDX_PARTS[key] for key in (("train", "images"), ("train", "labels")) if key not in found]
    if missing:
        raise ValueError(f"{folder} lacks the IDX file of the {' and '.join(missing)} "
                         "(e.g. train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz)")
    if (("test", "images") in found) != (("test", "labels") in found):
        raise ValueError(f"{folder} has only one of the test images and test labels (give both or neither)")
    parts, shapes = {}, {}
    for part in ("train", "test"):
        if (part, "images") not in found:
            continue
        images = read_idx(found[part, "images"])
        labels = check_idx_pair(images, read_idx(found[part, "labels"]), found[part, "images"], found[part, "labels"])
        parts[part] = (images.reshape(len(images), -1).astype(np.float32), labels)
        shapes[part] = images.shape[1:]
    if shapes.get("test", shapes["train"]) != shapes["train"]:
        raise ValueError(f"{folder}: test images are {'x'.join(map(str, shapes['test']))}, training "
                         f"images {'x'.join(map(str, shapes['train']))}")
    X_train, y_train = parts["train"]
    X_test, y_test = parts.get("test", (np.empty((0, X_train.shape[1]), np.float32), np.empty(0, np.int64)))
    image_shape = shapes["train"] if len(shapes["train"]) >= 2 else None
    return Dataset(X_train, y_train, X_test, y_test, folder_name(folder), image_shape=image_shape)


def check_idx_pair(images: np.ndarray, labels: np.ndarray, images_path: Path, labels_path: Path) -> np.ndarray:
    """The labels (int64) of IDX images [rows, ...] and labels [rows], at least one row, whole numbers."""
    if images.ndim < 2 or labels.ndim != 1 or len(images) != len(labels) or not len(images):
        raise ValueError(f"{images_path.name} / {labels_path.name}: expected images [rows, ...] and labels "
                         f"[rows], at least one row, got shapes {images.shape} and {labels.shape}")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels) & (labels == np.round(labels))):
        raise ValueError(f"{labels_path.name}: labels must be whole numbers")
    return labels.astype(np.int64)


def _load_npz(path: Path) -> Dataset:
    with open_regular(path) as f:
        head = f.read(6)
        if head == b"\x93NUMPY":  # read, numpy would allocate the shape its header declares
            raise ValueError(f"{path.name} is a single .npy array, not an .npz archive with "
                             f"{', '.join(NPZ_KEYS)}")
        if not head.startswith(ZIP_MAGIC):
            raise ValueError(f"cannot read {path.name} as .npz: it is no zip archive")
        f.seek(0)
        try:
            archive = np.load(f, allow_pickle=False)
        except NPZ_ERRORS as err:
            raise ValueError(f"cannot read {path.name} as .npz: {err}") from None
        return _read_npz(path, archive)


def _read_npz(path: Path, archive: np.lib.npyio.NpzFile) -> Dataset:
    """The parts of an open data archive, each checked against the memory available before it
    is read (a few MB of deflated zeros can declare gigabytes)."""
    with archive:
        missing = [k for k in NPZ_KEYS[:2] if k not in archive.files]
        if missing:
            raise ValueError(f"{path.name} lacks {', '.join(missing)} (needs X_train and y_train; "
                             "X_test and y_test are optional)")
        if ("X_test" in archive.files) != ("y_test" in archive.files):
            raise ValueError(f"{path.name} has only one of X_test and y_test (give both or neither)")
        try:  # read, and converted to float later: twice their size
            check_declared_sizes(archive.zip, None, NPZ_KEYS, copies=2)
            arrays = {k: archive[k] for k in NPZ_KEYS if k in archive.files}
        except (*NPZ_ERRORS, *NPY_HEADER_ERRORS) as err:
            raise ValueError(f"cannot read the arrays of {path.name}: {err}") from None
    check_part(arrays["X_train"], arrays["y_train"], f"{path.name} X_train/y_train")
    if not len(arrays["X_train"]):
        raise ValueError(f"{path.name}: X_train has no rows")
    n_features = arrays["X_train"].shape[1]
    X_test = arrays.get("X_test", np.empty((0, n_features)))
    y_test = arrays.get("y_test", np.empty(0, dtype=arrays["y_train"].dtype))
    check_part(X_test, y_test, f"{path.name} X_test/y_test")
    if X_test.shape[1] != n_features:
        raise ValueError(f"{path.name}: X_test has {X_test.shape[1]} features, X_train {n_features}")
    return Dataset(arrays["X_train"], arrays["y_train"], X_test, y_test, path.stem)


def check_part(X: np.ndarray, y: np.ndarray, what: str) -> None:
    """Features [rows, features] of numbers and as many labels, numbers (finite) or strings."""
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"{what} must be [rows, features] and [rows], "
                         f"got shapes {X.shape} and {y.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what}: features must be numbers, got dtype {X.dtype}")
    if y.dtype.kind not in "biufU":  # what a model's classes may be (bytes, dates, complex are not)
        raise ValueError(f"{what}: labels must be numbers or strings, got dtype {y.dtype}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{what}: a label is NaN or infinite")


def _scikit_learn(module: str, what: str) -> Any:
    """``sklearn.<module>``, or an ImportError saying that ``what`` needs scikit-learn alone: on a
    device the runtime has no scikit-learn, and the extra that installs it for training
    (``lastedge[train]``, named by the CLI's generic hint) would pull torch in too."""
    try:
        return importlib.import_module(f"sklearn.{module}")
    except ImportError:
        raise ImportError(f"{what} needs scikit-learn: pip install scikit-learn") from None


def _split(X: np.ndarray, y: np.ndarray, name: str, test_size: float, random_state: int,
           image_shape: tuple[int, ...] | None = None) -> Dataset:
    """Stratified train/test split; unstratified when a class has too few rows to stratify."""
    train_test_split = _scikit_learn("model_selection", f"splitting {name} into training and test "
                                     "parts").train_test_split
    if len(X) < 2:
        raise ValueError(f"{name} has {len(X)} row(s); a train/test split needs at least 2")
    _, counts = np.unique(y, return_counts=True)
    n_test = int(np.ceil(test_size * len(y)))
    can_stratify = counts.min() >= 2 and min(n_test, len(y) - n_test) >= len(counts)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=random_state, stratify=y if can_stratify else None)
    return Dataset(X_train, y_train, X_test, y_test, name, image_shape)
