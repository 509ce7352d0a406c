"""``export_all``: write a model in every format x precision and measure each file's parity."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lastedge.runtime import Model

from .metadata import check_model
from .onnx import to_onnx
from .parity import assert_parity, measure_parity
from .tflite import to_tflite

FORMATS = {"onnx": to_onnx, "tflite": to_tflite}
# int8: static, ranges from the calibration rows; int8-dynamic: weights only, inputs quantized as it runs
PRECISIONS = ("fp32", "int8", "int8-dynamic")


def exporter(fmt: str) -> Any:
    """The export function for ``fmt`` (``"onnx"`` or ``"tflite"``)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt]


def export_all(model: Model, folder: str | os.PathLike, calibration: Any, X_check: Any,
               y_check: Any = None, *, stem: str = "model",
               strict: bool = True) -> list[dict[str, Any]]:
    """Export ``model`` as ONNX and TFLite, fp32, static int8 and dynamic int8, into ``folder``;
    check each file.

    ``calibration``: raw rows for the static int8 ranges; ``X_check``/``y_check``: held-out rows (and
    labels) for ``assert_parity``. Returns one row per file: format, precision, path, size_bytes,
    max_score_error, mean_score_error, agreement, accuracy figures, backend, problems. With
    ``strict`` a file out of bounds raises ``ParityError``; without, it is listed in ``problems``.
    """
    model = check_model(model)
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"export folder {folder} does not exist")
    rows = []
    for fmt in FORMATS:
        for precision in PRECISIONS:
            path = folder / f"{stem}-{precision}.{fmt}"
            static = precision == "int8"
            exporter(fmt)(model, path, int8=precision != "fp32", calibration=calibration if static else None,
                          dynamic=precision == "int8-dynamic")
            figures = (assert_parity if strict else measure_parity)(model, path, X_check, y_check)
            figures.pop("per_backend")
            # the variant's name last: the figures' own "precision" is the file's, "int8" for both int8 files
            rows.append({"format": fmt, **figures, "precision": precision})
    return rows
