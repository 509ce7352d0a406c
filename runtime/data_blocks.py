"""The rows ``lastedge predict --data`` classifies from a ``.npz`` archive or an IDX folder, read
block by block: the memory a prediction takes is a block's, whatever the data's size (a 3 MB
archive of deflated zeros declared 4.3 GB, and ``load_dataset`` would expand every part of it).

``held_out(source)`` reads the headers and the labels of the part ``predict`` classifies (the
test part, else the training rows) and checks them as ``load_dataset`` does; ``HeldOut.blocks()``
then reads the rows, a block at a time.
"""

from __future__ import annotations

import contextlib
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from .bounded import check_declared_sizes, npy_header, open_regular
from .data import check_idx_pair, check_part, folder_name, is_image_folder
from .idx import idx_files, open_idx, read_idx
from .model import NPZ_ERRORS, ZIP_MAGIC

BLOCK_VALUES = 1 << 21  # values read at a time (16 MiB of float64)
_PARTS = {"test": "held-out part", "train": "training rows"}


@dataclass(frozen=True)
class HeldOut:
    """A data file's part to classify: its labels, read, and its rows, read by ``blocks``."""

    path: Path
    member: str  # the .npz member or the IDX file holding the rows
    shape: tuple[int, ...]  # [rows, ...]: an IDX file's images keep their shape
    dtype: np.dtype
    labels: np.ndarray
    description: str  # what the summary calls it: "name, held-out part"

    @property
    def n_features(self) -> int:
        return math.prod(self.shape[1:])

    def blocks(self) -> Iterator[np.ndarray]:
        """The rows, [rows, n_features] a block at a time, in the file's dtype."""
        rows = max(1, BLOCK_VALUES // max(1, self.n_features))
        with self._values() as stream:
            for start in range(0, self.shape[0], rows):
                count = min(rows, self.shape[0] - start)
                raw = stream.read(count * self.n_features * self.dtype.itemsize)
                if len(raw) < count * self.n_features * self.dtype.itemsize:
                    raise ValueError(f"{self.member} is truncated: it holds fewer than its {self.shape[0]} rows")
                yield np.frombuffer(raw, self.dtype).reshape(count, self.n_features)

    @contextlib.contextmanager
    def _values(self):
        """The stream of the rows' values, past their header; reading faults as ``ValueError``."""
        if self.path.is_dir():
            with open_idx(self.path / self.member) as (stream, _, _):
                yield stream
            return
        try:
            with open_regular(self.path) as f, zipfile.ZipFile(f) as archive, archive.open(self.member) as stream:
                npy_header(stream, self.member)  # checked by held_out; read past
                yield stream
        except NPZ_ERRORS as err:
            raise ValueError(f"cannot read {self.member} of {self.path.name}: {err}") from None


def held_out(source: str) -> HeldOut | None:
    """The part of ``source`` that ``predict`` classifies, for a ``.npz`` archive or an IDX
    folder; None for any other source (read whole by ``load_dataset``)."""
    path = Path(source)
    if path.is_dir() and not is_image_folder(path):
        return _idx_part(path)
    if path.suffix.lower() == ".npz" and path.is_file():
        return _npz_part(path)
    return None


def _idx_part(folder: Path) -> HeldOut | None:
    found = idx_files(folder)
    part = "test" if ("test", "images") in found and ("test", "labels") in found else "train"
    if (part, "images") not in found or (part, "labels") not in found:
        return None  # load_dataset names what is missing
    images, labels = found[part, "images"], found[part, "labels"]
    with open_idx(images) as (_, shape, dtype):
        pass
    y = check_idx_pair(np.broadcast_to(np.zeros((), dtype), shape), read_idx(labels), images, labels)
    return HeldOut(folder, images.name, shape, dtype, y, f"{folder_name(folder)}, {_PARTS[part]}")


def _npz_part(path: Path) -> HeldOut | None:
    with open_regular(path) as f:
        if not f.read(4).startswith(ZIP_MAGIC):
            return None  # load_dataset says what it is
        f.seek(0)
        try:
            with zipfile.ZipFile(f) as archive:
                names = {info.filename.removesuffix(".npy") for info in archive.infolist()}
                part = "test" if {"X_test", "y_test"} <= names else "train"
                if not {f"X_{part}", f"y_{part}"} <= names:
                    return None
                check_declared_sizes(archive, None, (f"X_{part}",), copies=0)  # read in blocks
                check_declared_sizes(archive, None, (f"y_{part}",), copies=2)
                with archive.open(f"X_{part}.npy") as member:
                    shape, fortran, dtype = npy_header(member, f"X_{part}.npy")
                y = np.lib.format.read_array(archive.open(f"y_{part}.npy"), allow_pickle=False)
        except NPZ_ERRORS as err:
            raise ValueError(f"cannot read the arrays of {path.name}: {err}") from None
    if fortran:  # its values are columns after columns: no row can be read alone
        return None
    check_part(np.broadcast_to(np.zeros((), dtype), shape), y, f"{path.name} X_{part}/y_{part}")
    return HeldOut(path, f"X_{part}.npy", shape, dtype, y, f"{path.stem}, {_PARTS[part]}")
