"""What kind of model file is this, and what does its ``lastedge`` metadata say?

Pure Python and numpy: the file kind is told from its first bytes (so a file renamed to the wrong
extension is refused with a clear message), and the metadata of a ``.tflite`` file is read from
the flatbuffer directly, without the ``flatbuffers`` package.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import flatbuffer as fb
from .bounded import open_regular
from .model import FLOAT32_MAX, ZIP_MAGIC, check_classes, image_shape_of
from .preprocess import Preprocess

KINDS = {".npz": "npz", ".onnx": "onnx", ".tflite": "tflite"}
METADATA_KEY = "lastedge"
SUPPORTED_FORMAT_VERSION = 1


def sniff(path: str | os.PathLike) -> str:
    """Return ``"npz"``, ``"onnx"`` or ``"tflite"`` from the file's name and first bytes.

    Raises ``ValueError`` when the content is not a model file, or is of another kind than the
    extension says (e.g. a ``.tflite`` file renamed ``.onnx``).
    """
    path = Path(path)
    with open_regular(path) as f:  # a FIFO or device is refused, not read (it would block or never end)
        head = f.read(8)
    if not head:
        raise ValueError(f"{path} is empty")
    content = _kind_of(head)
    named = KINDS.get(path.suffix.lower())
    if content is None:
        expected = named or "model"
        raise ValueError(f"{path} is not a {expected} file (unrecognised content)")
    if named is not None and named != content:
        raise ValueError(
            f"{path} is named .{named} but holds a {content} model; rename it .{content}"
        )
    return content


def _kind_of(head: bytes) -> str | None:
    if head.startswith(ZIP_MAGIC):
        return "npz"
    if head[4:8] == b"TFL3":
        return "tflite"
    if head[:1] == b"\x08":  # protobuf field 1 (ModelProto.ir_version), varint
        return "onnx"
    return None


@dataclass(frozen=True)
class Header:
    """The ``lastedge`` metadata of an exported file: what the graph alone does not say."""

    classes: np.ndarray
    preprocess: Preprocess
    preprocess_in_graph: bool
    n_outputs: int
    alpha: float
    precision: str | None
    n_atoms: int | None
    weights: str | None  # int8 files' weight type, "uint8" or "int8"; None: fp32, or not recorded
    fields: dict[str, Any]

    def check_graph(self, n_features: int, n_outputs: Any, source: str) -> None:
        """Raise if the graph's input or output width disagrees with what the metadata says."""
        if n_outputs != self.n_outputs:
            raise ValueError(f"{source}: the graph gives {n_outputs} score(s) per row, its metadata "
                             f"{self.n_outputs} ({len(self.classes)} classes)")
        recorded = self.fields.get("n_features", n_features)  # files may leave it out
        if recorded != n_features:
            raise ValueError(f"{source}: the graph takes {n_features} features per row, its "
                             f"metadata {recorded!r}")
        try:
            self.preprocess.check_width(n_features)
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from None

    def image_shape(self, n_features: int) -> tuple[int, ...] | None:
        """The training images' shape the exporter recorded (optional field), else None."""
        return image_shape_of(self.fields.get("image_shape"), n_features)


@dataclass(frozen=True)
class FileSummary:
    """An exported file's ``lastedge`` metadata with what its graph says of the model, read from
    its bytes without an interpreter (``onnx_metadata``, ``tflite_summary``)."""

    header: Header
    n_features: int
    n_outputs: int
    precision: str  # the metadata's; else "int8" when a weight is 8-bit, "fp32" when all are float


def parse_header(text: str | bytes | None, source: str) -> Header:
    """Validate the ``lastedge`` metadata JSON of ``source``."""
    if text is None:
        raise ValueError(f"{source} has no '{METADATA_KEY}' metadata; was it exported by lastedge?")
    try:  # ValueError: bad JSON, bytes that are no UTF-8, an integer of over 4300 digits
        fields = json.loads(text)
    except (ValueError, RecursionError) as err:  # Recursion: nested too deep
        raise ValueError(f"{source}: the '{METADATA_KEY}' metadata is corrupt ({err})") from None
    if not isinstance(fields, dict):
        raise ValueError(f"{source}: the '{METADATA_KEY}' metadata must be a JSON object")
    try:
        return _header(fields)
    except (ValueError, TypeError, OverflowError) as err:  # e.g. an alpha of 1e400 written as an integer
        raise ValueError(f"{source}: metadata {err}") from None


def _header(fields: dict[str, Any]) -> Header:
    """The header of valid metadata fields; errors name the field, the caller the file."""
    missing = [k for k in ("classes", "preprocess", "n_outputs") if k not in fields]
    if missing:
        raise ValueError(f"lacks {', '.join(missing)}")
    version = fields.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"format_version must be an integer, got {version!r}")
    if version > SUPPORTED_FORMAT_VERSION:
        raise ValueError(f"format_version {version} is newer than this lastedge reads "
                         f"(<= {SUPPORTED_FORMAT_VERSION}): upgrade lastedge")
    if version < 1:
        raise ValueError(f"format_version must be at least 1, got {version}")
    classes = np.asarray(fields["classes"])
    check_classes(classes)
    n_outputs = fields["n_outputs"]
    if n_outputs != (1 if len(classes) == 2 else len(classes)):
        raise ValueError(f"n_outputs {n_outputs!r} does not match {len(classes)} classes")
    in_graph = fields.get("preprocess_in_graph", False)
    if not isinstance(in_graph, bool):
        raise ValueError(f"preprocess_in_graph must be true or false, got {in_graph!r}")
    spec = fields["preprocess"]
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError("preprocess must be an object with a 'kind'")
    preprocess = Preprocess(spec["kind"], spec.get("mean"), spec.get("scale"))
    precision = fields.get("precision")
    if precision is not None and not isinstance(precision, str):
        raise ValueError(f"precision must be text (\"fp32\", \"int8\"), got {precision!r}")
    n_atoms = fields.get("n_atoms")
    if n_atoms is not None and not _is_positive_int(n_atoms):
        raise ValueError(f"n_atoms must be a positive integer, got {n_atoms!r}")
    return Header(classes, preprocess, in_graph, int(n_outputs), _alpha(fields.get("alpha", 1.0)),
                  precision, n_atoms, _weights(fields.get("quantization")), fields)


def _weights(quantization: Any) -> str | None:
    """The weight type ``quantization`` records (files before it was recorded: None)."""
    if quantization is None:
        return None
    if not isinstance(quantization, dict):
        raise ValueError(f"quantization must be an object or null, got {quantization!r}")
    weights = quantization.get("weights")
    if weights not in (None, "uint8", "int8"):
        raise ValueError(f"quantization.weights must be \"uint8\" or \"int8\", got {weights!r}")
    return weights


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _alpha(value: Any) -> float:
    """The recorded threshold: a number (not text or true/false) that float32, in which the graph
    holds it, keeps finite; ``float`` raises ``OverflowError`` for an integer beyond float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"alpha must be a number, got {value!r}")
    alpha = float(value)
    if not -FLOAT32_MAX <= alpha <= FLOAT32_MAX:  # NaN fails both comparisons
        raise ValueError(f"alpha must be finite in float32 (within +-3.4e38), got {alpha!r}")
    return alpha


def tflite_metadata(data: bytes, name: str = METADATA_KEY) -> bytes | None:
    """The bytes of the metadata entry ``name`` of a TFLite flatbuffer, or None if absent.

    Walks ``Model.metadata`` (field 6: tables ``{name: string, buffer: uint}``) and
    ``Model.buffers`` (field 4: tables ``{data: [ubyte], offset: ulong, size: ulong}``).
    Raises ``ValueError`` on a truncated or malformed flatbuffer.
    """
    try:
        model = fb.root(data)
        for entry in fb.tables(data, model, 6):
            if fb.byte_vector(data, entry, 0) == name.encode():
                return fb.buffer(data, fb.tables(data, model, 4)[fb.scalar(data, entry, 1, "<I")])
        return None
    except (struct.error, IndexError) as err:
        raise ValueError(f"truncated or malformed TFLite flatbuffer ({err})") from None
