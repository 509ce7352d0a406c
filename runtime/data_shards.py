"""One block of the rows of a training data source, for each rank of a distributed ``lastedge
train`` (started by ``torchrun``): rank ``index`` of ``count`` reads rows ``row_block(n, index,
count)`` of each part, and no more where the format allows it.

- ``.npz``: the block of ``X_train`` (and ``X_test``) alone, memory-mapped where the archive
  stores the member uncompressed (``np.savez``), else decompressed up to the block's end, its
  earlier rows dropped as they are read; the labels are read whole and cut.
- CSV: the lines of the block are parsed, the others skipped (a file with quoted cells is parsed
  whole and cut); each rank splits its rows 75/25, stratified, as ``load_dataset`` splits a file.
- Other sources (digits, IDX and image folders) are read whole, then each part is cut.
"""

from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from .bounded import open_regular, npy_header
from .csv_rows import lines_of_block, load_csv
from .data import Dataset, _split, check_part, load_dataset
from .model import NPZ_ERRORS, ZIP_MAGIC

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip member's local header: signature ... name and extra lengths


def row_block(n_rows: int, index: int, count: int) -> slice:
    """Block ``index`` of ``count`` contiguous blocks of ``n_rows`` rows: in order they cover the
    rows, and their sizes differ by at most one."""
    if not 0 <= index < count:
        raise ValueError(f"block index must be in [0, {count}), got {index}")
    return slice(n_rows * index // count, n_rows * (index + 1) // count)


def load_dataset_block(source: str, index: int, count: int, *, label_column: str | int = -1,
                       test_size: float = 0.25, random_state: int = 0,
                       image_size: tuple[int, int] | None = None) -> Dataset:
    """Block ``index`` of ``count`` of each part of ``source`` (see the module docstring; the
    arguments as ``load_dataset``'s)."""
    path = Path(source)
    suffix = path.suffix.lower() if source != "digits" and path.is_file() else ""
    if suffix == ".npz" and image_size is None:
        block = _npz_block(path, index, count)
        if block is not None:
            return block
    if suffix == ".csv" and image_size is None:
        lines = lines_of_block(path, index, count)
        if lines is not None:
            stream = io.StringIO("".join(lines))
            stream.name = path.name
            X, y = load_csv(stream, label_column)
            return _split(X, y, path.stem, test_size, random_state)
        X, y = load_csv(path, label_column)
        rows = row_block(len(X), index, count)
        return _split(X[rows], y[rows], path.stem, test_size, random_state)
    data = load_dataset(source, label_column=label_column, test_size=test_size, random_state=random_state,
                        image_size=image_size)
    train, test = row_block(len(data.X_train), index, count), row_block(len(data.X_test), index, count)
    return replace(data, X_train=data.X_train[train], y_train=data.y_train[train], X_test=data.X_test[test],
                   y_test=data.y_test[test])


def _npz_block(path: Path, index: int, count: int) -> Dataset | None:
    """The block of each part of a data archive, or None where it cannot be read by rows (no zip,
    parts missing, Fortran order: ``load_dataset`` reads it, or says what is wrong)."""
    with open_regular(path) as f:
        if not f.read(4).startswith(ZIP_MAGIC):
            return None
        f.seek(0)
        try:
            with zipfile.ZipFile(f) as archive:
                names = {name.removesuffix(".npy") for name in archive.namelist()}
                test_parts = {"X_test", "y_test"} & names
                if not {"X_train", "y_train"} <= names or len(test_parts) == 1:
                    return None
                parts = {}
                for part in ("train", "test"):
                    if f"X_{part}" in names:
                        parts[part] = _part_block(f, archive, part, index, count)
        except NPZ_ERRORS as err:
            raise ValueError(f"cannot read the arrays of {path.name}: {err}") from None
    if any(block is None for block in parts.values()):
        return None
    X_train, y_train = parts["train"]
    empty = (np.empty((0, X_train.shape[1]), X_train.dtype), np.empty(0, y_train.dtype))
    X_test, y_test = parts.get("test", empty)
    for (X, y), part in ((parts["train"], "train"), ((X_test, y_test), "test")):
        check_part(X, y, f"{path.name} X_{part}/y_{part}")
    if X_test.shape[1] != X_train.shape[1]:
        raise ValueError(f"{path.name}: X_test has {X_test.shape[1]} features, X_train {X_train.shape[1]}")
    return Dataset(X_train, y_train, X_test, y_test, path.stem)


def _part_block(f, archive: zipfile.ZipFile, part: str, index: int,
                count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows block ``index`` of ``count`` of ``X_<part>`` and its labels (None: Fortran order)."""
    y = np.lib.format.read_array(archive.open(f"y_{part}.npy"), allow_pickle=False)
    info = archive.getinfo(f"X_{part}.npy")
    with archive.open(info) as member:
        shape, fortran, dtype = npy_header(member, info.filename)
        if fortran or len(shape) != 2 or shape[0] != len(y):
            return None
        rows = row_block(shape[0], index, count)
        start, size = member.tell() + rows.start * shape[1] * dtype.itemsize, (rows.stop - rows.start, shape[1])
        if info.compress_type == zipfile.ZIP_STORED and 0 not in size:
            X = np.array(np.memmap(f, dtype, "r", offset=_data_offset(f, info) + start, shape=size))
        else:
            member.seek(start)  # decompresses the rows before the block, a buffer at a time
            raw = member.read(size[0] * size[1] * dtype.itemsize)
            if len(raw) < size[0] * size[1] * dtype.itemsize:
                raise ValueError(f"X_{part}.npy is truncated")
            X = np.frombuffer(raw, dtype).reshape(size).copy()
    return X, y[rows]


def _data_offset(f, info: zipfile.ZipInfo) -> int:
    """Where the stored bytes of the member ``info`` start in the archive file ``f``."""
    f.seek(info.header_offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        raise ValueError(f"{info.filename} has no valid local zip header")
    return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
