"""``lastedge export --format c``: write a model as C99 files for microcontrollers, proven first.

The files are compiled with the host's C compiler and run on the check rows before they are
written (``lastedge.export.to_c(..., check_rows=...)``): int8 scores bit for bit those of the
model's integer graph, predictions agreeing with the Python model.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import CommandError, json_text

C_PRECISIONS = ("fp32", "int8", "int16x8")
NOT_FOR_C = ("--per-channel", "--signed-weights", "--with-preprocessing")


def check_c_options(args: argparse.Namespace) -> None:
    """Refuse the options that do not apply to C, and --prefix without it."""
    if args.format != "c":
        if args.prefix is not None:
            raise ValueError("--prefix applies to --format c only")
        return
    if args.precision not in C_PRECISIONS:
        raise ValueError(f"--format c takes --precision {', '.join(C_PRECISIONS)}, got {args.precision}")
    for flag in NOT_FOR_C:
        if getattr(args, flag[2:].replace("-", "_")):
            raise ValueError(f"{flag} does not apply to --format c")
    if args.precision != "fp32" and args.calibration is None:
        raise ValueError(f"--precision {args.precision} needs --calibration PATH|digits")


def run_export_c(args: argparse.Namespace, model: Any, rows: Any) -> int:
    """Write ``PREFIX.h`` and ``PREFIX.c`` into the ``--out`` folder once they are proven."""
    from lastedge.export import ParityError
    from lastedge.export.c import build_c
    from lastedge.export.c_parity import assert_c_parity

    out = Path(args.out)
    precision = args.precision
    c_model = build_c(model, precision=precision, prefix=args.prefix or "lastedge",
                      calibration=rows.calibration if precision != "fp32" else None)
    try:
        parity = assert_c_parity(c_model, rows.X_check, rows.y_check,
                                 min_agreement=0.0 if rows.source == "synthetic" else 0.99)
    except ParityError as err:
        raise CommandError(f"parity check failed ({err}); nothing was written to {out}") from None
    header, source = c_model.write(out)
    if args.json:
        print(json_text({"files": [str(header), str(source)], "precision": precision,
                         "parity": parity, "check_rows": rows.source}))
        return 0
    print(f"wrote {header} and {source} ({precision}, {source.stat().st_size / 1024:.1f} KiB of C)")
    print(c_parity_line(parity, rows.source))
    return 0


def c_parity_line(parity: dict[str, Any], source: str) -> str:
    """One line of the C check's figures."""
    if parity["precision"] != "fp32":
        exact = "bit-exact" if parity["scores_identical"] and parity["input_identical"] else "DIFFERENT"
        text = f"{parity['precision']} scores {exact} with the integer graph"
    else:
        text = f"max score error {parity['max_score_error']:.3g}"
    text = (f"C parity on {parity['rows']} rows ({source}) + {parity['probe_rows']} probes (host "
            f"compiler): {text}, agreement {parity['agreement']:.2%}")
    if "accuracy" in parity:
        text += (f", accuracy {parity['accuracy']:.2%} (Python {parity['reference_accuracy']:.2%}, "
                 f"drop {100 * parity['accuracy_drop']:.2f} points)")
    return text
