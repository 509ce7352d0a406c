"""What a graph that lastedge writes may hold, shared by the ONNX and TFLite checks.

A lastedge graph takes rows [batch, n_features], computes features [batch, n_atoms] and scores
[batch, n_outputs], with constants no larger than the dictionary [n_features, n_atoms]. So every
tensor in it is either a block of rows (its first dimension the batch, its other one of those
widths) or no larger than the largest constant in the file: nothing in it can grow beyond the
file and the rows it is given, whatever the interpreter. The checks refuse, before any
interpreter sees the file, any graph that does not keep to that (a loop, a FILL of a size read
from the file, a shape op, a recursion through subgraphs) with this module's ``refusal``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .files import Header

BATCH = "batch"  # the symbolic first dimension of blocks of rows
KINDS = ("fp32", "int8", "int8-dynamic", "int16x8")


def refusal(source: str, where: str, why: str) -> ValueError:
    """The error that refuses ``source``, naming the first offending op (``where``)."""
    return ValueError(f"{source} is not a graph lastedge writes: {where}: {why} (load(path, "
                      "trust=True) runs a file of your own without this check)")


def precision_kinds(header: Header, source: str) -> tuple[str, ...]:
    """The kinds of graph (``KINDS``) the metadata allows: one when it records the precision and
    the quantization mode; several for files that predate those fields."""
    mode = (header.fields.get("quantization") or {}).get("mode")
    if header.precision is None:
        return KINDS[:3]  # files that predate the field predate int16x8 too
    if header.precision in ("fp32", "int16x8"):
        return (header.precision,)
    if header.precision != "int8":
        raise refusal(source, "its metadata", f"precision {header.precision!r} is none of fp32, "
                      "int8, int16x8")
    return {"static": ("int8",), "dynamic": ("int8-dynamic",)}.get(mode, KINDS[1:3])


@dataclass(frozen=True)
class Widths:
    """The sizes a graph's tensors may have besides the batch: 1 and the model's widths."""

    n_features: int
    n_atoms: int
    n_outputs: int
    largest_constant: int  # values of the largest constant in the file

    @property
    def allowed(self) -> frozenset[int]:
        return frozenset((1, self.n_features, self.n_atoms, self.n_outputs))

    def problem(self, shape: tuple) -> str | None:
        """What is wrong with a tensor of ``shape`` (dims: ints, or ``BATCH`` first), or None."""
        if len(shape) > 2 or BATCH in shape[1:]:
            return f"shape {list(shape)} is no block of rows [batch, width] (rank 2 at most)"
        sizes = [d for d in shape if d != BATCH]
        if any(d not in self.allowed for d in sizes):
            return (f"shape {list(shape)} has a size other than 1, n_features {self.n_features}, "
                    f"n_atoms {self.n_atoms} or n_outputs {self.n_outputs}")
        if BATCH not in shape and math.prod(sizes) > self.largest_constant:
            return f"shape {list(shape)} is larger than any constant in the file"
        return None


def atoms(header: Header, candidates: set[int], source: str) -> int:
    """n_atoms: the metadata's, or (files that predate it) the one width the dictionary's shape
    [n_features, n_atoms] can give."""
    if header.n_atoms is not None:
        return header.n_atoms
    if len(candidates) != 1:
        raise refusal(source, "its constants", f"no single dictionary [n_features, n_atoms] (widths "
                      f"{sorted(candidates)}) and no n_atoms in its metadata")
    return candidates.pop()
