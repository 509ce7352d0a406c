"""``lastedge bundle MODEL --target T --out DIR``: one folder to copy to a board, with the model
in the formats it runs, lastedge's wheel, ``on_device.py``, an ``install.sh`` that ends with a
self-test against scores computed here, and a README (``lastedge.export.bundle``)."""

from __future__ import annotations

import argparse
import tempfile

from lastedge.export.bundle_scripts import TARGETS

from .common import json_text


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``bundle`` to the ``lastedge`` parser."""
    p = subparsers.add_parser(
        "bundle", help="write a folder to copy to a device: model files, wheel, install.sh, self-test",
        description="Export a trained model in the formats a board runs (parity-checked), and write "
                    "them with lastedge's wheel, on_device.py, self-test rows and an install.sh "
                    "that installs the board's interpreter and runs the self-test (docs/arm.md).")
    p.add_argument("model", help="trained model file (.npz)")
    p.add_argument("--target", required=True, choices=tuple(TARGETS),
                   help="pi64: 64-bit Pi OS (.tflite on LiteRT, .onnx, .npz); pi32: 32-bit Pi OS "
                        "(.tflite on tflite-runtime 2.14, .npz); pi-armv6: Pi Zero/Pi 1 (.npz on "
                        "numpy); generic: every format")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle's folder (new, or empty)")
    p.add_argument("--data", metavar="PATH|digits",
                   help="rows for int8 calibration, the parity check and the self-test (as export's "
                        "--calibration); without it: synthetic rows and no static int8 file")
    p.add_argument("--wheel", metavar="WHL",
                   help="lastedge wheel to bundle (default: built from this checkout with "
                        "pip wheel --no-deps)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_bundle)


def run_bundle(args: argparse.Namespace) -> int:
    """``lastedge bundle``: build the wheel unless given, write the bundle, list what it holds."""
    from lastedge.export.bundle import build_wheel, make_bundle
    from lastedge.export.rows import load_rows
    from lastedge.runtime import Model

    model = Model.load(args.model)
    shape = model.image_shape
    rows = load_rows(args.data, model, image_size=None if shape is None else shape[:2])
    with tempfile.TemporaryDirectory() as scratch:
        wheel = args.wheel or build_wheel(scratch)
        info = make_bundle(model, args.out, args.target, rows.calibration, rows.X_check, rows.y_check,
                           wheel=wheel, synthetic=rows.source == "synthetic")
    if args.json:
        print(json_text({**info, "check_rows": rows.source}))
        return 0
    print(f"bundle {info['path']} for {info['board']}:")
    for entry, figures in zip(info["files"], [None] + info["parity"]):
        checked = "" if figures is None else (f"parity max score error {figures['max_score_error']:.3g}, "
                                              f"agreement {figures['agreement']:.2%}")
        print(f"  {entry['file']:<32} {entry['precision']:<13} {checked}")
    print(f"  {info['wheel']}, on_device.py, install.sh, README.txt; self-test: {info['selftest_rows']} rows "
          f"({rows.source}) with the scores computed here")
    print(f"on the device: sh {info['path']}/install.sh")
    return 0
