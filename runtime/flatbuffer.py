"""Read a flatbuffer (a TFLite file) without the ``flatbuffers`` package, bounds-checked.

Positions are absolute byte offsets into ``data``. Every read checks that it stays inside the
file, every table that its vtable and the fields it lists do, every vector that its elements do;
a violation raises ``IndexError`` (``struct.error`` for a short read), which callers turn into a
``ValueError`` naming the file.
"""

from __future__ import annotations

import struct


def read(fmt: str, data: bytes, pos: int) -> int:
    """One ``struct`` value at ``pos``."""
    if pos < 0 or pos + struct.calcsize(fmt) > len(data):
        raise IndexError(f"offset {pos} outside the {len(data)}-byte file")
    return struct.unpack_from(fmt, data, pos)[0]


def u32(data: bytes, pos: int) -> int:
    return read("<I", data, pos)


def root(data: bytes) -> int:
    """The root table (a TFLite ``Model``), checked."""
    return table(data, u32(data, 0))


def table(data: bytes, pos: int) -> int:
    """``pos`` after checking that the table there, its vtable and every field it lists lie inside ``data``."""
    vtable = pos - read("<i", data, pos)
    vt_size, table_size = read("<H", data, vtable), read("<H", data, vtable + 2)
    if vt_size < 4 or vt_size % 2 or vtable + vt_size > len(data) or pos + table_size > len(data):
        raise IndexError(f"table at {pos} runs outside the file")
    if any(offset >= table_size for offset in struct.unpack_from(f"<{vt_size // 2 - 2}H", data, vtable + 4)):
        raise IndexError(f"a field of the table at {pos} lies outside it")
    return pos


def field(data: bytes, pos: int, index: int) -> int | None:
    """Absolute position of field ``index`` of the table at ``pos``, or None if absent."""
    vtable = pos - read("<i", data, pos)
    if 4 + 2 * index >= read("<H", data, vtable):
        return None
    offset = read("<H", data, vtable + 4 + 2 * index)
    return pos + offset if offset else None


def scalar(data: bytes, pos: int, index: int, fmt: str) -> int:
    """A scalar field (0, the schema default, if absent)."""
    at = field(data, pos, index)
    return read(fmt, data, at) if at is not None else 0


def vector(data: bytes, pos: int, index: int, element_bytes: int = 1) -> tuple[int, int]:
    """(start, length) of a vector field whose elements lie inside ``data``; (0, 0) if absent."""
    at = field(data, pos, index)
    if at is None:
        return 0, 0
    start = at + u32(data, at)
    length = u32(data, start)
    if start + 4 + length * element_bytes > len(data):
        raise IndexError(f"vector at {start} runs past the end of the file")
    return start + 4, length


def tables(data: bytes, pos: int, index: int) -> list[int]:
    """The tables of a vector-of-tables field, each checked."""
    start, length = vector(data, pos, index, 4)
    return [table(data, start + 4 * i + u32(data, start + 4 * i)) for i in range(length)]


def ints(data: bytes, pos: int, index: int) -> list[int]:
    """An ``[int]`` field's values (empty if absent)."""
    start, length = vector(data, pos, index, 4)
    return list(struct.unpack_from(f"<{length}i", data, start)) if length else []


def byte_vector(data: bytes, pos: int, index: int) -> bytes:
    """A ``[ubyte]`` or string field's bytes (empty if absent)."""
    start, length = vector(data, pos, index, 1)
    return data[start:start + length]


def buffer(data: bytes, pos: int) -> bytes:
    """A TFLite ``Buffer`` table's bytes: inline ``data``, or ``offset``/``size`` past the flatbuffer."""
    offset, size = scalar(data, pos, 1, "<Q"), scalar(data, pos, 2, "<Q")
    if offset > 1:  # large models keep buffers after the flatbuffer
        if offset + size > len(data):
            raise IndexError("buffer runs past the end of the file")
        return data[offset:offset + size]
    return byte_vector(data, pos, 0)
