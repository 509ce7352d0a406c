"""What a ``.tflite`` file says without an interpreter: its ``lastedge`` metadata, the widths of
the graph's input and output and the type of its weights, read from the flatbuffer directly
(:mod:`.flatbuffer`), after the checks ``lastedge.runtime.load`` makes before an interpreter sees
the file (``tflite_check``, then ``tflite_graph``).

For ``lastedge inspect`` on a device without ai-edge-litert or tflite-runtime, as ``onnx_metadata``
is for ``.onnx`` files.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import flatbuffer as fb
from .bounded import read_regular
from .files import FileSummary
from .tflite_graph import checked_tflite_header

EIGHT_BIT = (3, 9)  # TensorType UINT8, INT8


def read_tflite_summary(path: str | os.PathLike) -> FileSummary:
    """The metadata, input and output widths and precision of an exported ``.tflite`` file,
    checked as ``lastedge.runtime.load`` checks it. Raises ``ValueError`` naming the file and the
    problem for a truncated, malformed or foreign file."""
    path = Path(path)
    content = read_regular(path)
    if not content:
        raise ValueError(f"{path} is empty")
    header = checked_tflite_header(content, str(path))
    n_features, types = _graph(content)  # the checks above passed: every index is in range
    precision = header.precision or ("int8" if any(t in EIGHT_BIT for t in types) else "fp32")
    return FileSummary(header, n_features, header.n_outputs, precision)


def _graph(data: bytes) -> tuple[int, list[int]]:
    """The input's width and every tensor's type of the (one, checked) subgraph."""
    subgraph = fb.tables(data, fb.root(data), 2)[0]
    tensors = fb.tables(data, subgraph, 0)
    rows = tensors[fb.ints(data, subgraph, 1)[0]]
    return fb.ints(data, rows, 0)[-1], [fb.scalar(data, t, 1, "<b") for t in tensors]
