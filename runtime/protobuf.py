"""Read protobuf's wire format (an ONNX file) without the ``protobuf`` package, bounds-checked.

Positions are absolute byte offsets into ``data`` (``bytes`` or a memory map). Every length is
checked against the bytes left in its message before anything is read, a varint is at most 10
bytes and every field read moves forward, so a truncated or hostile file raises ``ValueError`` at
once: no allocation beyond the file, no endless loop.
"""

from __future__ import annotations

from typing import Iterator, Union

# Protobuf wire types (groups, 3 and 4, are deprecated and never written by onnx).
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
FIXED_BYTES = {FIXED64: 8, FIXED32: 4}
MAX_VARINT_BYTES = 10  # 64 bits, 7 per byte

Span = tuple[int, int]  # [start, end) of a length-delimited field
Value = Union[int, Span]  # a varint's value, or the span of a field's bytes


def fields(data, start: int, end: int) -> Iterator[tuple[int, int, Value]]:
    """(field number, wire type, value) of each field of the message in ``data[start:end]``: a
    varint's value, or the span of a length-delimited or fixed-size field's bytes."""
    pos = start
    while pos < end:
        at = pos
        key, pos = varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError(f"field number 0 at byte {at}")
        if wire == VARINT:
            value, pos = varint(data, pos, end)
            yield number, wire, value
            continue
        if wire == LENGTH:
            size, pos = varint(data, pos, end)
        elif wire in FIXED_BYTES:
            size = FIXED_BYTES[wire]
        else:
            raise ValueError(f"field {number} at byte {at} has wire type {wire}, which onnx does not write")
        if size > end - pos:
            raise ValueError(f"field {number} at byte {at} claims {size} bytes, {end - pos} remain "
                             "(truncated or corrupt)")
        yield number, wire, (pos, pos + size)
        pos += size


def varint(data, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    value = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= end:
            raise ValueError(f"a number at byte {pos} runs past the end of its message (truncated)")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos + i + 1
    raise ValueError(f"the number at byte {pos} is longer than {MAX_VARINT_BYTES} bytes")


def span(number: int, wire: int, value: Value) -> Span:
    """The span of a length-delimited field, refusing one of another wire type."""
    if wire != LENGTH:
        raise ValueError(f"field {number} has wire type {wire}, expected {LENGTH} (length-delimited)")
    return value  # type: ignore[return-value]  # a span for LENGTH


def integer(number: int, wire: int, value: Value) -> int:
    """The value of a varint field, refusing one of another wire type."""
    if wire != VARINT:
        raise ValueError(f"field {number} has wire type {wire}, expected {VARINT} (varint)")
    return value  # type: ignore[return-value]  # an int for VARINT


def signed(value: int) -> int:
    """A varint read as int64 (protobuf writes a negative int64 as its two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def text(data, where: Span) -> bytes:
    """The bytes of a length-delimited field."""
    return bytes(data[where[0]:where[1]])


def integers(data, number: int, wire: int, value: Value) -> list[int]:
    """The values of a repeated integer field, packed (one length-delimited run) or not (one varint)."""
    if wire == VARINT:
        return [value]  # type: ignore[list-item]
    start, end = span(number, wire, value)
    values = []
    while start < end:
        item, start = varint(data, start, end)
        values.append(item)
    return values
