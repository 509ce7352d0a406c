"""Bounded reads of files that may be hostile: regular files only, ``.npy`` headers whose every
error is a ``ValueError``, and declared sizes checked before anything is expanded.

A FIFO given where a file is expected would block for ever and a device (``/dev/zero``) never
end, so they are refused without being read. numpy parses an ``.npy`` header with Python's
tokenizer and ``ast``: two damaged bytes raised ``tokenize.TokenError`` or ``SyntaxError``, which
reached users as tracebacks. An archive member declares its shape before its data, so what it
would cost is known, and refused, before it is decompressed.
"""

from __future__ import annotations

import math
import os
import stat
import tokenize
import warnings
import zipfile
from pathlib import Path
from typing import IO, Collection

import numpy as np

# Every error numpy's header parser (``ast.literal_eval`` of a tokenized dict) was seen to raise.
NPY_HEADER_ERRORS = (ValueError, SyntaxError, TypeError, KeyError, OverflowError, RecursionError,
                     tokenize.TokenError)
MAX_NPY_HEADER = 10_000  # numpy's own limit of a trusted header's length


def open_regular(path: str | os.PathLike) -> IO[bytes]:
    """``path`` opened for binary reading; ``ValueError`` unless it is a regular file.

    Opened without blocking (a FIFO without a writer would block ``open`` itself), then checked
    with ``fstat`` on the open file, so what is read is what was checked.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path} is {_kind(mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def read_regular(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path`` (see ``open_regular``)."""
    with open_regular(path) as f:
        return f.read()


def npy_header(member: IO[bytes], name: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of the version 1.0 ``.npy`` header at the start of ``member``
    (what ``np.save`` writes for a model's arrays); any fault is a ``ValueError`` naming ``name``."""
    try:
        with warnings.catch_warnings():  # a damaged literal's SyntaxWarning would reach stderr
            warnings.simplefilter("ignore")
            if np.lib.format.read_magic(member) != (1, 0):
                raise ValueError("it is not a version 1.0 .npy entry")
            return np.lib.format.read_array_header_1_0(member, max_header_size=MAX_NPY_HEADER)
    except NPY_HEADER_ERRORS as err:
        raise ValueError(f"{name} has a corrupt .npy header ({type(err).__name__}: {err})") from None


def check_declared_sizes(archive: zipfile.ZipFile, max_bytes: int | None,
                         arrays: Collection[str] | None = None, *, max_ratio: float | None = None,
                         copies: int = 1) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The declared (shape, dtype) of each member, by array name, read from the headers alone.

    Refuses a member whose .npy header declares more data than it holds (numpy would allocate
    the declared size first: a few bytes of damage asked for 149 GiB) or elements of no size,
    arrays larger in all than ``max_bytes`` (None: no limit) or than ``copies`` of them fit in
    the memory available (0: they are read in blocks), and with ``max_ratio`` members that expand to more than that many
    times their stored bytes (a deflate bomb). ``arrays`` names the members to check (None: all).
    """
    infos = [info for info in archive.infolist()
             if arrays is None or info.filename.removesuffix(".npy") in arrays]
    if max_ratio is not None:
        _check_expansion(infos, max_ratio)
    declared, total = {}, 0
    for info in infos:
        with archive.open(info) as member:
            shape, _, dtype = npy_header(member, info.filename)
            if dtype.itemsize == 0:  # np.save writes none; 10**12 of them hold no bytes yet cost TiBs
                raise ValueError(f"{info.filename} declares elements of no size ({dtype})")
            size = math.prod(shape) * dtype.itemsize
            if size != info.file_size - member.tell():
                raise ValueError(f"{info.filename} declares shape {shape} of {dtype} "
                                 f"({size} bytes) but holds {info.file_size - member.tell()}")
        declared[info.filename.removesuffix(".npy")] = (shape, dtype)
        total += size
    if max_bytes is not None and total > max_bytes:
        raise ValueError(f"its arrays take {total} bytes, more than the {max_bytes} a model may")
    check_fits_memory(copies * total, f"its arrays ({total} bytes)")
    return declared


EXPANSION_SLACK = 16 << 20  # bytes any archive may expand to: small files compress well


def _check_expansion(infos: list[zipfile.ZipInfo], max_ratio: float) -> None:
    """Refuse members that expand to more than ``max_ratio`` times their stored bytes, and more
    than ``EXPANSION_SLACK`` in all (2 MB of deflated zeros declared 2.5 GB): known from the
    archive's directory, before anything is decompressed. np.savez stores (no compression)."""
    stored = sum(info.compress_size for info in infos)
    expanded = sum(info.file_size for info in infos)
    if expanded > max_ratio * stored + EXPANSION_SLACK:
        raise ValueError(f"its members expand {stored} stored bytes to {expanded}, more than "
                         f"{max_ratio:g} times: not what np.savez writes")


def available_memory() -> int | None:
    """Bytes this process may still allocate, as far as the system says: the least of the
    memory available (``MemAvailable``), the cgroup's remaining limit and the address-space
    limit (``RLIMIT_AS``) less what is mapped; None where none of them can be read."""
    limits = [_meminfo("/proc/meminfo", "MemAvailable"), _cgroup_headroom(), _address_space_headroom()]
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def check_fits_memory(needed: int, what: str) -> None:
    """Refuse reading ``what`` when it needs more than the memory available (see
    ``available_memory``), with both sizes in the message."""
    available = available_memory()
    if available is not None and needed > available:
        raise ValueError(f"{what} needs about {_size(needed)} of memory to read, more than the "
                         f"{_size(available)} available")


def _size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def _meminfo(path: str, key: str) -> int | None:
    """A ``/proc/meminfo``-style line's value in bytes (``kB`` units), or None."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name == key:
                    return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> int | None:
    """cgroup v2's ``memory.max`` less ``memory.current``, or None without a limit."""
    root = Path("/sys/fs/cgroup")
    try:
        limit = (root / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((root / "memory.current").read_text()))
    except (OSError, ValueError):
        return None


def _address_space_headroom() -> int | None:
    """``RLIMIT_AS`` less the address space already mapped (``VmSize``), or None without one."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = _meminfo("/proc/self/status", "VmSize")
    return None if mapped is None else max(0, soft - mapped)
