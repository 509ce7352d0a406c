"""The options every exporter shares, checked in one place for ``to_onnx``, ``to_tflite``,
``export_all`` and ``lastedge export``.

``precision`` names the kind of file, the same in every format: ``"fp32"``; ``"int8"``, static:
8-bit weights and activations whose ranges are calibrated on ``calibration`` rows;
``"int8-dynamic"``: 8-bit weights, each input quantized as the file runs, no calibration data;
``"int16x8"``: 8-bit weights, 16-bit activations (TFLite's 16x8 mode; ONNX QDQ with int16
activations, opset 21), calibrated.
The file's metadata records ``precision`` "fp32" or "int8" and ``quantization.mode`` "static" or
"dynamic" (docs/DESIGN.md). Options that do not apply to a format or precision are refused, not
ignored, so that a file is never silently other than asked.

Every shared option has one default in both formats. ``per_channel=False``: one weight scale per
tensor is valid in every precision of both formats (dynamic files are per-tensor in both, the
legacy tflite-runtime 2.14 has no per-channel hybrid kernel) and what microcontroller runtimes
take; int8 files' atoms are unit columns (``atom_scaling``), so per-channel scales add little.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .calibration import DEFAULT_MARGIN, Ranges, check_margin

FORMATS = ("onnx", "tflite")
PRECISIONS = ("fp32", "int8", "int8-dynamic", "int16x8")  # every format's
STATIC = ("int8", "int16x8")  # calibrated on rows; int16x8: 16-bit activations
ONNX_ONLY = ("signed_weights", "with_preprocessing")


@dataclass(frozen=True)
class ExportOptions:
    """One export's checked options (``check_export_options`` builds it)."""

    format: str
    precision: str
    calibration: Any = None
    per_channel: bool = False
    margin: float = DEFAULT_MARGIN
    signed_weights: bool = False
    with_preprocessing: bool = False

    @property
    def file_precision(self) -> str:
        """The metadata's ``precision``: "fp32", "int8" (static or dynamic) or "int16x8"."""
        return self.precision if self.precision in ("fp32", "int16x8") else "int8"

    def quantization(self, weights: str, ranges: Ranges | None = None) -> dict[str, Any] | None:
        """The metadata's ``quantization`` entry (None for fp32); ``weights``: the stored weight
        type ("int8" or "uint8"), ``ranges``: the calibrated ranges of a static file."""
        if self.precision == "fp32":
            return None
        if self.precision == "int8-dynamic":
            return {"mode": "dynamic", "weights": weights}
        return {"mode": "static", "per_channel": self.per_channel, "weights": weights,
                **ranges.describe()}


def _named(name: str, value: Any, flags: bool) -> str:
    """How an error names an option and its value: ``precision='int8'``, or as the command's
    flag (``--precision int8``; ``--per-channel`` for a switch that is on); the name alone for
    ``value=None``."""
    flag = "--" + name.replace("_", "-") if flags else name
    if value is None or (flags and value is True):
        return flag
    return f"{flag} {value}" if flags else f"{name}={value!r}"


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def _switch(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _refuse_unused(options: ExportOptions, flags: bool) -> None:
    """Raise for the first option given where it does not apply, naming the format or precision
    that rules it out."""
    def refuse(name: str, value: Any, where: str, got: str) -> None:
        raise ValueError(f"{_named(name, value, flags)} applies to {where} only, got {got}")

    fmt = _named("format", options.format, flags)
    precision = _named("precision", options.precision, flags)
    for name in ONNX_ONLY:
        if getattr(options, name) and options.format != "onnx":
            refuse(name, True, _named("format", "onnx", flags), fmt)
    if options.signed_weights and options.precision not in ("int8", "int8-dynamic"):
        refuse("signed_weights", True, "the int8 precisions ('int8', 'int8-dynamic')", precision)
    static = _named("precision", "int8", flags) + " (static)"
    if options.per_channel and options.precision != "int8":
        refuse("per_channel", True, static, precision)
    if options.precision not in STATIC:
        static += " or " + _named("precision", "int16x8", flags)
        if options.calibration is not None:
            refuse("calibration", None, static, precision)
        if options.margin != DEFAULT_MARGIN:
            refuse("margin", options.margin, static, precision)


def check_export_options(format: str, precision: str = "fp32", *, calibration: Any = None,
                         per_channel: bool = False, margin: float = DEFAULT_MARGIN,
                         signed_weights: bool = False, with_preprocessing: bool = False,
                         flags: bool = False) -> ExportOptions:
    """Check one export's options and return them normalised; raise for anything else.

    Each error names the option, what it allows and what it got: ``ValueError`` for an unknown
    format or precision, static int8 without calibration rows and an option given where it does
    not apply (``_refuse_unused``), ``TypeError`` for a switch that is not a bool. ``flags``
    names the options as ``lastedge export``'s flags. The calibration rows themselves are checked
    against the model where they are used (``calibration.check_calibration``).
    """
    options = ExportOptions(
        format=_choice(_named("format", None, flags), format, FORMATS),
        precision=_choice(_named("precision", None, flags), precision, PRECISIONS),
        calibration=calibration, margin=check_margin(margin),
        per_channel=_switch("per_channel", per_channel),
        signed_weights=_switch("signed_weights", signed_weights),
        with_preprocessing=_switch("with_preprocessing", with_preprocessing),
    )
    if options.precision in STATIC and calibration is None:
        hint = ("--calibration PATH|digits (or --precision int8-dynamic, which needs none)" if flags
                else "calibration rows (a few hundred typical inputs): pass calibration=X, or "
                     "precision='int8-dynamic', which needs none")
        raise ValueError(f"{_named('precision', options.precision, flags)} needs {hint}")
    _refuse_unused(options, flags)
    return options
