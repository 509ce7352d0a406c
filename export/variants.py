"""``export_all``: write a model in every format x precision and measure each file's parity."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from lastedge.runtime import Model

from .metadata import check_model
from .onnx import to_onnx
from .options import FORMATS, PRECISIONS, STATIC, check_export_options
from .parity import assert_parity, measure_parity
from .tflite import to_tflite

WRITERS = {"onnx": to_onnx, "tflite": to_tflite}


def exporter(fmt: str) -> Any:
    """The export function for ``fmt`` (``"onnx"`` or ``"tflite"``); both take the same options."""
    return WRITERS[check_export_options(fmt).format]


def export_all(model: Model, folder: str | os.PathLike, calibration: Any, X_check: Any,
               y_check: Any = None, *, stem: str = "model", formats: Sequence[str] = FORMATS,
               precisions: Sequence[str] = PRECISIONS, strict: bool = True,
               **bounds: Any) -> list[dict[str, Any]]:
    """Export ``model`` in each of ``formats`` (ONNX and TFLite) and ``precisions`` (fp32, int8,
    int8-dynamic, int16x8) into ``folder`` as ``STEM-PRECISION.FORMAT``; check each file.

    ``calibration``: raw rows for the static precisions' ranges ("int8", "int16x8");
    ``X_check``/``y_check``: held-out rows (and labels) for ``assert_parity``. Returns one row per file: format, precision, path, size_bytes,
    max_score_error, mean_score_error, agreement, accuracy figures, backend, problems. With
    ``strict`` a file out of bounds raises ``ParityError``; without, it is listed in ``problems``.
    ``bounds``: ``assert_parity``'s (``min_rows``, ``min_agreement``, ...).
    """
    model = check_model(model)
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"export folder {folder} does not exist")
    if isinstance(formats, str) or isinstance(precisions, str):
        raise TypeError(f"formats and precisions take sequences of names, e.g. ('onnx',), got "
                        f"{formats!r} and {precisions!r}")
    variants = [(fmt, precision) for fmt in formats for precision in precisions]
    for fmt, precision in variants:  # every name checked before the first file is written
        check_export_options(fmt, precision, calibration=calibration if precision in STATIC else None)
    rows = []
    for fmt, precision in variants:
        path = folder / f"{stem}-{precision}.{fmt}"
        exporter(fmt)(model, path, precision=precision,
                      calibration=calibration if precision in STATIC else None)
        figures = (assert_parity if strict else measure_parity)(model, path, X_check, y_check, **bounds)
        figures.pop("per_backend")
        # the variant's name last: the figures' own "precision" is the file's, "int8" for both int8 files
        rows.append({"format": fmt, **figures, "precision": precision})
    return rows
