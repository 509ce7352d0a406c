"""``lastedge export``: write a model as an ONNX or TFLite file and prove its parity."""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path
from typing import Any

from lastedge.export.describe import summary_lines
from lastedge.export.options import FORMATS, PRECISIONS, STATIC, ExportOptions, check_export_options

from .common import CommandError, json_text
from .export_c import C_PRECISIONS, check_c_options, run_export_c


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-commands to the ``lastedge`` parser."""
    p = subparsers.add_parser(
        "export", help="write a trained model (.npz) as an ONNX or TFLite file and prove its parity",
        description="Export a model to ONNX or TFLite (fp32, int8, int8-dynamic or int16x8), then "
                    "run the file in its interpreter and compare it with the Python model.",
    )
    p.add_argument("model", help="trained model file (.npz)")
    p.add_argument("--format", required=True, choices=(*FORMATS, "c"),
                   help="file format (c: C99 source for microcontrollers, docs/microcontrollers.md)")
    p.add_argument("--out", required=True, help="output file (.onnx or .tflite); for c a folder")
    p.add_argument("--precision", choices=dict.fromkeys((*PRECISIONS, *C_PRECISIONS)), default="fp32",
                   help="fp32 (default); int8: static, 8-bit weights and activations calibrated on "
                        "--calibration; int8-dynamic: 8-bit weights, activations quantized as the "
                        "file runs, no calibration data (TFLite: hybrid FULLY_CONNECTED kernels, "
                        "float input and output); int16x8: 8-bit weights, 16-bit activations "
                        "calibrated on --calibration (TFLite's 16x8 mode, ONNX QDQ at opset 21)")
    p.add_argument("--prefix", help="c: the C identifier before every name (default lastedge)")
    p.add_argument("--calibration", metavar="PATH|digits",
                   help="rows for int8 calibration and the parity check (.npz/.npy/.csv, a folder "
                        "of IDX files or images, or 'digits')")
    p.add_argument("--label-column", metavar="NAME|INDEX",
                   help="label column of a CSV --calibration file (default, when the file has one "
                        "column more than the model has features: the column the model was trained "
                        "with, which lastedge train records, else the last)")
    p.add_argument("--per-channel", action="store_true",
                   help="--precision int8: one weight scale per atom and per output (default: one "
                        "per tensor)")
    p.add_argument("--signed-weights", action="store_true",
                   help="ONNX int8 precisions: int8 (not uint8) weights, about twice as fast on CPUs "
                        "with VNNI (x86) but wrong on x86 CPUs without it")
    p.add_argument("--with-preprocessing", action="store_true",
                   help="ONNX: put the preprocessing in the graph so the file takes raw features")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_export)


def _check_options(args: argparse.Namespace) -> ExportOptions:
    """The export's options, checked as the library checks them and named as flags in errors.
    Only the static precisions (int8, int16x8) calibrate on --calibration: others check parity
    on its rows."""
    return check_export_options(
        args.format, args.precision, flags=True, per_channel=args.per_channel,
        calibration=args.calibration if args.precision in STATIC else None,
        signed_weights=args.signed_weights, with_preprocessing=args.with_preprocessing,
    )


def _export_checked(options: ExportOptions, model: Any, rows: Any, out: Path) -> dict[str, Any]:
    """Write the file beside ``out`` as ``STEM.rejected.SUFFIX``, prove its parity, and only then
    move it to ``out``: an existing ``out`` survives a file that fails, which stays for inspection
    under its ``rejected`` name (and is named in the error)."""

    from lastedge.export import ParityError, assert_parity
    from lastedge.export.variants import exporter

    candidate = out.with_name(f"{out.stem}.rejected{out.suffix}")
    exporter(options.format)(
        model, candidate, precision=options.precision, per_channel=options.per_channel,
        calibration=rows.calibration if options.precision in STATIC else None,
        signed_weights=options.signed_weights, with_preprocessing=options.with_preprocessing,
    )
    try:
        parity = assert_parity(model, candidate, rows.X_check, rows.y_check, min_rows=1,
                               min_agreement=None if rows.source == "synthetic" else 0.99)
    except ParityError as err:
        raise CommandError(f"parity check failed ({err}); {out} was not written, the rejected "
                           f"file is kept for inspection as {candidate}{_int8_hint(options)}") from None
    except BaseException:
        candidate.unlink(missing_ok=True)
        raise
    os.replace(candidate, out)
    return {**parity, "path": str(out)}


def _int8_hint(options: ExportOptions) -> str:
    """What to try when an int8 file fails its check: its 8-bit grid is too coarse for the model.
    A static file may pass with per-channel weights or 16-bit activations (int16x8); a TFLite one
    as dynamic (each row quantized over its own range), an ONNX one as dynamic TFLite
    (onnxruntime's dynamic files quantize a whole batch over one range). Signed weights fail on x86 CPUs without VNNI, where
    onnxruntime's int8 kernels saturate."""
    if options.precision == "fp32":
        return ""
    if options.signed_weights:
        from lastedge.runtime.cpu import read_cpuinfo, signed_weights_saturate

        if signed_weights_saturate(read_cpuinfo(), platform.machine()) is not False:
            return (" (onnxruntime's int8 kernels may saturate on this CPU, an x86 without VNNI or "
                    "one whose features cannot be read: drop --signed-weights)")
    if options.precision == "int16x8":
        return " (16-bit activations with 8-bit weights are too coarse for this model: export fp32)"
    tries = ["--per-channel"] if options.precision == "int8" and not options.per_channel else []
    if options.precision == "int8":
        tries.append("--precision int16x8")
    if options.format == "onnx":
        tries.append("--format tflite --precision int8-dynamic")
    elif options.precision == "int8":
        tries.append("--precision int8-dynamic")
    text = f"try {' or '.join(tries)}, or " if tries else ""
    return f" (int8 is too coarse for this model: {text}export fp32)"


def run_export(args: argparse.Namespace) -> int:
    """``lastedge export``: write the file, prove its parity, describe it, print the figures."""
    from lastedge.runtime import Model, check_output_path

    from lastedge.export import describe
    from lastedge.export.backends import onnxruntime_ops
    from lastedge.export.rows import load_rows

    check_c_options(args)
    options = None if args.format == "c" else _check_options(args)
    out = None if options is None else check_output_path(args.out, f".{args.format}", "--out")
    model = Model.load(args.model)
    shape = model.image_shape  # a model trained on images: scale calibration images the same way
    rows = load_rows(args.calibration, model, image_size=None if shape is None else shape[:2],
                     label_column=args.label_column)
    if options is None:
        return run_export_c(args, model, rows)
    parity = _export_checked(options, model, rows, out)
    parity.pop("per_backend")
    info = describe(out)
    if args.json:
        print(json_text({"file": info, "parity": parity, "check_rows": rows.source}))
        return 0
    print("\n".join(summary_lines(info)))
    if args.format == "onnx":
        print("onnxruntime runs: " + " -> ".join(onnxruntime_ops(out)))
    print(parity_line(parity, rows.source))
    return 0


def parity_line(parity: dict[str, Any], source: str) -> str:
    """One line of parity figures, as ``export`` and the demo print them."""
    text = (f"parity on {parity['rows']} rows ({source}) + {parity['probe_rows']} probes "
            f"({', '.join(parity['backends'])}): max score error {parity['max_score_error']:.3g}, "
            f"mean {parity['mean_score_error']:.3g}, agreement {parity['agreement']:.2%}")
    if "accuracy" in parity:
        text += (f", accuracy {parity['accuracy']:.2%} (Python {parity['reference_accuracy']:.2%}, "
                 f"drop {100 * parity['accuracy_drop']:.2f} points)")
    if "clipped" in parity:
        text += ", clipped " + " ".join(f"{k} {v:.2%}" for k, v in parity["clipped"].items())
    if "max_error_vs_integer_graph" in parity:
        text += f"; its integer graph's scores to within {parity['max_error_vs_integer_graph']:.3g}"
    return text
