"""Compression bombs for the fuzz harness: archives of a few hundred KB that expand to gigabytes.

The deflate stream of N x 16 MiB of zeros is one 16 KB block (compressed once, after a full
flush it depends on no history) repeated N times, so a 2.5 GB bomb is built in about a second
(its CRC is the slow part) without holding 2.5 GB. Archives are written by hand (``zip_file``,
``gzip_file``) since ``zipfile`` cannot store data compressed elsewhere.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np

CHUNK = 16 << 20  # zeros per repeated block
_ZEROS = bytes(CHUNK)
_FINAL = b"\x03\x00"  # an empty final deflate block


def _block(data: bytes) -> bytes:
    """``data`` as raw deflate blocks that need no history and do not end the stream."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


_ZERO_BLOCK = _block(_ZEROS)


def deflated(prefix: bytes, chunks: int) -> tuple[bytes, int, int]:
    """(raw deflate stream, CRC-32, size) of ``prefix`` followed by ``chunks`` x 16 MiB of zeros."""
    crc = zlib.crc32(prefix)
    for _ in range(chunks):
        crc = zlib.crc32(_ZEROS, crc)
    return _block(prefix) + _ZERO_BLOCK * chunks + _FINAL, crc, len(prefix) + chunks * CHUNK


def npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    """The bytes ``np.save`` writes before an array of ``shape``."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": dtype, "fortran_order": False, "shape": shape})
    return out.getvalue()


def zip_file(members: dict[str, bytes], bombs: dict[str, tuple[bytes, int]]) -> bytes:
    """A zip archive: ``members`` stored as they are, ``bombs`` (name -> (prefix, chunks of
    zeros)) deflated. Sizes must stay below 4 GiB (no zip64)."""
    entries = [(name, 0, data, zlib.crc32(data), len(data)) for name, data in members.items()]
    entries += [(name, 8, *deflated(prefix, chunks)) for name, (prefix, chunks) in bombs.items()]
    local, central = io.BytesIO(), io.BytesIO()
    for name, method, data, crc, size in entries:
        offset, encoded = local.tell(), name.encode()
        fields = (20, 0, method, 0, 0x21, crc, len(data), size, len(encoded))
        local.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + encoded + data)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0, 0, offset)
                      + encoded)
    directory = central.getvalue()
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(directory),
                      local.tell(), 0)
    return local.getvalue() + directory + end


def gzip_file(prefix: bytes, chunks: int) -> bytes:
    """A gzip file of ``prefix`` followed by ``chunks`` x 16 MiB of zeros."""
    stream, crc, size = deflated(prefix, chunks)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + stream + struct.pack("<II", crc, size & 0xFFFFFFFF)


def npy_members(arrays: dict[str, np.ndarray]) -> dict[str, bytes]:
    """The members ``np.savez(**arrays)`` stores, name -> bytes (for ``zip_file``)."""
    members = {}
    for name, array in arrays.items():
        out = io.BytesIO()
        np.save(out, array)
        members[f"{name}.npy"] = out.getvalue()
    return members
