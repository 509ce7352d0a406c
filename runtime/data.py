"""Labelled rows from a data source, for ``lastedge train`` and ``lastedge predict``: ``.npz``
(X_train, y_train, X_test, y_test), CSV with a label column, a folder of IDX files (MNIST's
format, ``runtime.idx``), an image folder (one subfolder per class, ``runtime.images``), or the built-in
``digits`` (scikit-learn's 8x8 digits, shipped with scikit-learn, no download).

Reading ``.npz``, CSV and IDX files needs numpy only, so ``predict`` runs on a device's base
install; scikit-learn is imported for ``digits`` and for splitting a source without a test part
into train and test parts, Pillow for image folders."""

from __future__ import annotations

import contextlib
import csv
import difflib
import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .bounded import NPY_HEADER_ERRORS, check_declared_sizes, open_regular
from .idx import IDX_PARTS, idx_files, read_idx
from .images import image_split, read_image_folder
from .model import NPZ_ERRORS, ZIP_MAGIC

NPZ_KEYS = ("X_train", "y_train", "X_test", "y_test")
MAX_COLUMNS_SHOWN = 8  # of a CSV header, in an error naming a label column it lacks


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


def load_csv(path: str | Path | TextIO,
             label_column: str | int | None = -1) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of a CSV file (or an open text stream such as ``sys.stdin``) as
    ``(X float64 [m, n], y labels [m])``; ``y`` is None when ``label_column`` is None (every column
    is a feature).

    Cells are separated by commas, or by semicolons or tabs when the first line has them and no
    comma outside a decimal-comma number (as spreadsheets in many locales save CSV files: ``1,5;2``
    is 1.5 and 2). In such a file, numbers written with a decimal comma are read as such, unless
    others have a decimal point, which is refused as ambiguous (a thousands separator?); a
    comma-separated file never has decimal commas. The first row is a header when it has a name
    where the next row has a number, or, in a file of one row, when it has no number at all.
    ``label_column`` is a column name (with a header) or index (negative counts from the end).
    Labels are read by ``label_array``. A bad row is named by its line in the file.
    """
    stream = not isinstance(path, (str, Path))
    name = getattr(path, "name", "the stream") if stream else Path(path).name
    try:
        with contextlib.nullcontext(path) if stream else open(path, newline="", encoding="utf-8-sig") as f:
            lines = list(f)
            delimiter = _delimiter(lines, name)
            plain = _plain_numbers(lines, delimiter, label_column)
            if plain is not None:
                return plain
            # strict: a quote left open is an error, not every later row swallowed into one cell
            reader = csv.reader(lines, delimiter=delimiter, strict=True)
            numbered = [(reader.line_num, row) for row in reader if row and any(cell.strip() for cell in row)]
    except (UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"{name} is not a readable CSV text file ({err})") from None
    if not numbered:
        raise ValueError(f"{name} has no rows")
    line_numbers, rows = (list(part) for part in zip(*numbered))
    if delimiter != "," and any("," in line for line in lines):
        rows = _read_decimal_commas(rows, line_numbers, name)
    if rows[0][0].startswith("\ufeff"):  # a byte-order mark (a stream is not read as utf-8-sig)
        rows[0][0] = rows[0][0][1:]
    header = rows.pop(0) if _has_header(rows) else None
    first_line = line_numbers.pop(0) if header else line_numbers[0]
    width = len(header) if header else len(rows[0])
    for line, row in zip(line_numbers, rows):
        if len(row) != width:
            raise ValueError(f"{name}: line {line} has {len(row)} columns, line {first_line} has {width}")
    if not rows:
        raise ValueError(f"{name} has a header but no data rows")
    column = None if label_column is None else _column_index(label_column, header, width)
    if width - (column is not None) < 1:
        raise ValueError(f"{name} has no feature columns besides the label column")
    try:
        X = np.array([[float(c) for i, c in enumerate(row) if i != column] for row in rows])
    except ValueError:
        X = None
    if X is None or not np.isfinite(X).all():
        raise ValueError(f"{name}: {_bad_cell(rows, line_numbers, header, column)}")
    if column is None:
        return X, None
    return X, label_array([row[column].strip() for row in rows])


def _plain_numbers(lines: list[str], delimiter: str,
                   label_column: str | int | None) -> tuple[np.ndarray, np.ndarray | None] | None:
    """What ``load_csv`` returns, read by numpy's C parser, for the common large file: no
    quotes, no decimal commas, every row as wide as the first and every feature cell a finite
    number numpy reads (a subset of what ``float`` reads, to the same value). None for any other
    file, which the cell-by-cell reader then reads and whose faults it names. A 20000 x 785 MNIST
    CSV: 0.9 s and about 0.3 GB at most, against 4.8 s and 1.25 GB cell by cell."""
    if any('"' in line for line in lines) or (delimiter != "," and any("," in line for line in lines)):
        return None
    body = [line.rstrip("\r\n") for line in lines if line.strip()]
    if len(body) < 2:
        return None
    body[0] = body[0].removeprefix("\ufeff")  # a byte-order mark (a stream is not read as utf-8-sig)
    first_rows = [line.split(delimiter) for line in body[:2]]
    header = first_rows[0] if _has_header(first_rows) else None
    rows = body[1:] if header else body
    width = len(first_rows[0])
    if not rows or not all(line.count(delimiter) == width - 1 for line in rows):
        return None
    try:
        column = None if label_column is None else _column_index(label_column, header, width)
        features = [i for i in range(width) if i != column]
        if not features:
            return None
        X = np.loadtxt(rows, delimiter=delimiter, usecols=features, comments=None, dtype=np.float64, ndmin=2)
    except ValueError:
        return None
    if not np.isfinite(X).all():
        return None
    if column is None:
        return X, None
    if column <= width // 2:  # split no further than the label cell, from the nearer end
        labels = [line.split(delimiter, column + 1)[column] for line in rows]
    else:
        labels = [line.rsplit(delimiter, width - column)[1] for line in rows]
    return X, label_array([label.strip() for label in labels])


def _delimiter(lines: list[str], name: str) -> str:
    """The semicolon or tab that separates the cells of the first line, when it has one and its
    commas (if any) are decimal commas of numbers in those cells; else a comma. A first line with
    semicolons and other commas (quoted text aside) is refused: either may separate its cells.
    A tab beside such commas is whitespace (a comma, a tab, then a number), as ``float`` takes it."""
    first = re.sub(r'"[^"]*"', "", next((line for line in lines if line.strip()), ""))
    if ";" not in first and "\t" not in first:
        return ","
    delimiter = max((";", "\t"), key=first.count)
    if all("," not in cell or DECIMAL_COMMA.fullmatch(cell.strip()) for cell in first.split(delimiter)):
        return delimiter
    if ";" in first:
        raise ValueError(f"{name}: its first line has semicolons and commas that are not decimal commas, "
                         "so either may separate the cells: use one separator (quote cells that hold "
                         "the other)")
    return ","


# A decimal number written with a decimal comma ("1,5", "-0,25", ",5", "1,5e-3").
DECIMAL_COMMA = re.compile(r"[+-]?[0-9]*,[0-9]+([eE][+-]?[0-9]+)?")


def _read_decimal_commas(rows: list[list[str]], lines: list[int], name: str) -> list[list[str]]:
    """``rows`` (of a file separated by semicolons or tabs) with numbers written with a decimal
    comma as Python reads them ("1,5" -> "1.5"); refused when other numbers have a decimal point,
    as "1.500" may then be a thousands separator (1500) as well as a decimal point."""
    comma = next(((line, cell) for line, row in zip(lines, rows) for cell in row
                  if "," in cell and DECIMAL_COMMA.fullmatch(cell.strip())), None)
    if comma is None:
        return rows
    point = next(((line, cell) for line, row in zip(lines, rows) for cell in row
                  if "." in cell and DECIMAL.fullmatch(cell.strip())), None)
    if point is not None:
        raise ValueError(f"{name} mixes decimal commas (line {comma[0]}: {comma[1].strip()!r}) and decimal "
                         f"points (line {point[0]}: {point[1].strip()!r}): write every number one way")
    return [[cell.replace(",", ".") if "," in cell and DECIMAL_COMMA.fullmatch(cell.strip()) else cell
             for cell in row] for row in rows]


def _bad_cell(rows: list[list[str]], lines: list[int], header: list[str] | None,
              label_column: int | None) -> str:
    """Where the first feature cell that is not a finite number is (columns by name, or by index
    as ``label_column`` counts them), and what may fix it: a column of text is most likely the
    labels, in another column than the one read as such."""
    for line, row in zip(lines, rows):
        for index, cell in enumerate(row):
            if index == label_column or (_is_number(cell) and np.isfinite(float(cell))):
                continue
            column = repr(header[index]) if header else str(index)
            if not cell.strip():
                return f"line {line}, column {column} is empty (a missing value): fill it in or drop the row"
            what = f"line {line}, column {column} holds {cell.strip()[:40]!r}, not a finite number"
            if ";" in cell or "\t" in cell:
                return f"{what} (cells are split on commas, as the first line has commas that are " \
                       "not decimal commas)"
            if any(_is_number(other[index]) for other in rows[:10]):
                return what
            return f"{what}; if that column holds the labels, name it as the label column " \
                   f"(--label-column {header[index] if header else index})"
    raise AssertionError("no bad cell")  # called only when there is one


def label_array(labels: list[str]) -> np.ndarray:
    """Labels read as text (CSV cells, folder names): integers when every one is a whole number
    ("7", "7.0", "7e0") and no two different texts name the same one ("1" and "01" stay two
    classes, as strings), else strings."""
    numbers = [float(v) for v in labels if DECIMAL.fullmatch(v.strip())]
    if len(numbers) != len(labels) or not all(v.is_integer() and abs(v) < 2**53 for v in numbers):
        return np.array(labels)
    integers = [int(v) for v in numbers]
    return np.array(integers) if len(set(integers)) == len(set(labels)) else np.array(labels)


# A decimal number written with ASCII digits (float() also takes "nan", "1_0" and other scripts' digits).
DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _has_header(rows: list[list[str]]) -> bool:
    """A header has a name (a non-empty cell that is not a number) above a number; a file of one
    row is a header when none of its cells is a number. A string label column alone is no header,
    nor is an empty cell (a missing value, refused as such)."""
    if len(rows) == 1:
        return not any(_is_number(cell) for cell in rows[0])
    return any(top.strip() and not _is_number(top) and _is_number(below)
               for top, below in zip(rows[0], rows[1]))


def _column_index(label_column: str | int, header: list[str] | None, width: int) -> int:
    if isinstance(label_column, str) and not _is_int(label_column):
        if header is None or label_column not in header:
            raise ValueError(f"label column {label_column!r} not found ({_columns_known(label_column, header)})")
        return header.index(label_column)
    index = int(label_column)
    if not -width <= index < width:
        raise ValueError(f"label column {index} is out of range for {width} columns")
    return index % width


def _columns_known(name: str, header: list[str] | None) -> str:
    """What a label column name not in ``header`` may have meant: the nearest names (``Kind`` for
    ``kind``), else the first and last columns (a row of 784 pixel names is no help)."""
    if header is None:
        return "the file has no header"
    near = difflib.get_close_matches(name.lower(), [h.lower() for h in header], n=3, cutoff=0.6)
    if near:
        return "did you mean " + " or ".join(repr(h) for h in header if h.lower() in near) + "?"
    shown = header if len(header) <= MAX_COLUMNS_SHOWN else [*header[:5], "...", *header[-2:]]
    return f"its {len(header)} columns are {', '.join(shown)}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _scikit_learn(module: str, what: str) -> Any:
    """``sklearn.<module>``, or an ImportError saying that ``what`` needs scikit-learn alone: on a
    device the runtime has no scikit-learn, and the extra that installs it for training
    (``lastedge[train]``, named by the CLI's generic hint) would pull torch in too."""
    try:
        return importlib.import_module(f"sklearn.{module}")
    except ImportError:
        raise ImportError(f"{what} needs scikit-learn: pip install scikit-learn") from None


def _is_int(text: str) -> bool:
    return re.fullmatch(r"[+-]?[0-9]+", text.strip()) is not None


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
