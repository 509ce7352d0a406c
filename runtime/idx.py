"""IDX files, the format of MNIST and its kin (Fashion-MNIST, KMNIST, EMNIST), gzipped or not.

An IDX file is a 4-byte magic (two zero bytes, a type code, the number of dimensions), one
big-endian uint32 per dimension, then the values in row-major order. ``read_idx`` checks the
header against the bytes that follow before trusting it, so a truncated download or a stray file
gets a clear ``ValueError`` rather than a wrong array or a huge allocation.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import zlib
from pathlib import Path
from typing import IO, Iterator

import numpy as np

from .bounded import check_fits_memory, open_regular

# type code -> dtype of the values (big-endian, as the format stores them)
IDX_TYPES = {0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"),
             0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
MAX_IDX_BYTES = 4 << 30  # EMNIST's largest file holds 0.55 GB
DEFLATE_MAX_RATIO = 1032  # deflate never expands one stored byte to more than this many
MAX_IDX_DIMS = 32  # numpy 1's limit (numpy 2's is 64); MNIST's files have 1 or 3


def _most_value_bytes(path: Path, header_bytes: int, gzipped: bool) -> int:
    """The most bytes of values ``path`` can hold, from its size on disk: a header that declares
    more is refused before a buffer of its size is allocated."""
    stored = path.stat().st_size
    return stored * DEFLATE_MAX_RATIO if gzipped else stored - header_bytes


@contextlib.contextmanager
def open_idx(path: str | Path) -> Iterator[tuple[IO[bytes], tuple[int, ...], np.dtype]]:
    """``(stream, shape, dtype)`` of an IDX file (``.gz`` or plain): its values' stream, after a
    header checked against the file's size. A fault of reading is a ``ValueError`` naming it."""
    path = Path(path)
    gzipped = path.suffix.lower() == ".gz"
    try:
        with open_regular(path) as raw, (gzip.GzipFile(fileobj=raw) if gzipped else contextlib.nullcontext(raw)) as f:
            yield (f, *_header(f, path, gzipped))
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"cannot read {path.name} ({err})") from None


def _header(f: IO[bytes], path: Path, gzipped: bool) -> tuple[tuple[int, ...], np.dtype]:
    head = f.read(4)
    if len(head) < 4 or head[:2] != b"\0\0" or head[2] not in IDX_TYPES or head[3] == 0:
        raise ValueError(f"{path.name} is not an IDX file (its first bytes are {head.hex() or 'empty'})")
    dtype, ndim = IDX_TYPES[head[2]], head[3]
    dims = f.read(4 * ndim)
    if len(dims) < 4 * ndim:
        raise ValueError(f"{path.name} is truncated inside its header")
    shape = tuple(int(n) for n in np.frombuffer(dims, dtype=">u4"))
    size = math.prod(shape) * dtype.itemsize
    if size > MAX_IDX_BYTES:
        shown = f"shape {shape}" if ndim <= 4 else f"{ndim} dimensions"
        raise ValueError(f"{path.name} declares more values ({shown}) than the "
                         f"{MAX_IDX_BYTES >> 30} GiB limit")
    most = _most_value_bytes(path, 4 + 4 * ndim, gzipped)
    if size > most:
        raise ValueError(f"{path.name} is truncated: its header declares shape {shape} "
                         f"({size} bytes of values), the file can hold at most {most}")
    if ndim > MAX_IDX_DIMS:  # numpy could not shape the values
        raise ValueError(f"{path.name} declares {ndim} dimensions, more than the {MAX_IDX_DIMS} "
                         "an array may have")
    return shape, dtype


def read_idx(path: str | Path) -> np.ndarray:
    """The array an IDX file (``.gz`` or plain) holds, in native byte order."""
    path = Path(path)
    with open_idx(path) as (f, shape, dtype):
        size = math.prod(shape) * dtype.itemsize
        # the bytes, their array in native order, and the float32 rows a data set makes of it
        check_fits_memory(2 * size + 4 * math.prod(shape), f"{path.name} (shape {shape})")
        data = f.read(size)
        extra = len(f.read(1))
    if len(data) < size:
        raise ValueError(f"{path.name} is truncated: its header declares shape {shape} "
                         f"({size} bytes of values), the file holds {len(data)}")
    if extra:
        raise ValueError(f"{path.name} holds more bytes than its header declares (shape {shape})")
    return np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


IDX_PARTS = {("train", "images"): "training images", ("train", "labels"): "training labels",
             ("test", "images"): "test images", ("test", "labels"): "test labels"}


def idx_files(folder: Path) -> dict[tuple[str, str], Path]:
    """The IDX files of a data set in ``folder``, keyed ``(part, kind)``: part "train" or "test"
    (MNIST's "t10k"), kind "images" or "labels", told apart by their names as the MNIST family
    names them (``train-images-idx3-ubyte[.gz]``, ``emnist-letters-test-labels-idx1-ubyte``, ...).
    Where a file is there both gzipped and not, the plain copy is read."""
    found: dict[tuple[str, str], Path] = {}
    for path in sorted(folder.iterdir()):
        name = path.name.lower()
        if not path.is_file() or "idx" not in name:
            continue
        kind = "images" if "images" in name else "labels" if "labels" in name else None
        part = "train" if "train" in name else "test" if "t10k" in name or "test" in name else None
        if kind is None or part is None:
            continue
        key = (part, kind)
        if key in found:
            plain = {p.name.lower().removesuffix(".gz") for p in (path, found[key])}
            if len(plain) > 1:
                raise ValueError(f"{folder} has two files for the {IDX_PARTS[key]}: "
                                 f"{found[key].name} and {path.name}")
            if name.endswith(".gz"):
                continue
        found[key] = path
    return found
