"""Set the thread count of the OpenBLAS that numpy uses, for the numpy backend's ``threads=``.

numpy has no API for this; the OpenBLAS its wheels bundle exports ``*_set_num_threads``. We find
the loaded library in ``/proc/self/maps`` (Linux) and call it through ctypes. Where no OpenBLAS is
found (macOS Accelerate, another BLAS), ``openblas()`` is None and thread counts are left to the BLAS.
"""

from __future__ import annotations

import ctypes
import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

# (prefix, suffix) of the symbols: numpy >= 2 wheels (scipy-openblas, 64-bit ints), older wheels,
# and a plain system OpenBLAS.
_NAMES = (("scipy_openblas_", "64_"), ("scipy_openblas_", ""), ("openblas_", "64_"), ("openblas_", ""))


class OpenBLASThreads:
    """Get and set OpenBLAS's thread count (``get()``, ``set(n)``) through ctypes."""

    def __init__(self, library: ctypes.CDLL, prefix: str, suffix: str) -> None:
        self._get = getattr(library, f"{prefix}get_num_threads{suffix}")
        self._set = getattr(library, f"{prefix}set_num_threads{suffix}")
        self._get.restype = ctypes.c_int
        self._set.argtypes = [ctypes.c_int]

    def get(self) -> int:
        return int(self._get())

    def set(self, n: int) -> None:
        self._set(int(n))


MAPS = Path("/proc/self/maps")  # Linux: the files mapped into this process


@functools.cache
def openblas() -> OpenBLASThreads | None:
    """numpy's OpenBLAS thread control, or None where none is found (looked up once)."""
    np.dot(np.ones((2, 2)), np.ones((2, 2)))  # make sure numpy's BLAS is loaded
    if not MAPS.exists():
        return None
    for path in sorted(mapped_openblas(MAPS.read_text())):
        try:
            library = ctypes.CDLL(path)
        except OSError:  # no longer loadable by that name: look further
            continue
        for prefix, suffix in _NAMES:
            if hasattr(library, f"{prefix}set_num_threads{suffix}"):
                return OpenBLASThreads(library, prefix, suffix)
    return None


def mapped_openblas(maps: str) -> set[str]:
    """The paths of the OpenBLAS files in a ``/proc/<pid>/maps`` text. A line is ``address perms
    offset device inode path``, and the path may hold spaces (a venv in "My Projects" broke every
    numpy prediction); a file deleted since it was mapped ("... (deleted)") is another file now."""
    paths = set()
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and "openblas" in fields[5] and not fields[5].endswith(" (deleted)"):
            paths.add(fields[5])
    return paths


@contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """Run the block with numpy's OpenBLAS on ``threads`` threads, then restore its setting
    (a no-op where no OpenBLAS is found)."""
    blas = openblas()
    before = blas.get() if blas is not None else threads
    if before != threads:
        blas.set(threads)
    try:
        yield
    finally:
        if before != threads:
            blas.set(before)
