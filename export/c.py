"""Write a ``Model`` as dependency-free C99 for microcontrollers: ``PREFIX.h`` and ``PREFIX.c``.

fp32 runs the model's own float32 constants; int8 runs the full-int8 TFLite file's integer graph
(int8 weights and activations, int32 accumulation, the hidden layer requantised by an integer
multiplier and shift; :mod:`.int8_reference` is its numpy twin, bit for bit). Both take raw float
rows and apply the model's preprocessing. With ``check_rows`` the files are compiled with the
host's C compiler and proven (:mod:`.c_parity`) before they are written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from lastedge.runtime import Model, write_atomically

from .c_source import PREFIX, render
from .calibration import DEFAULT_MARGIN
from .int8_reference import IntegerGraph
from .metadata import check_model

PRECISIONS = ("fp32", "int8", "int16x8")


class CModel(NamedTuple):
    """An exported C model: its texts and, once written, where they are."""

    header: str
    source: str
    prefix: str
    model: Model
    graph: IntegerGraph | None  # the integer graph of an int8 or int16x8 model

    @property
    def precision(self) -> str:
        """"fp32", "int8" or "int16x8"."""
        return "fp32" if self.graph is None else {1: "int8", 2: "int16x8"}[self.graph.activation_dtype.itemsize]

    def write(self, out_dir: str | os.PathLike) -> tuple[Path, Path]:
        """Write ``PREFIX.h`` and ``PREFIX.c`` into ``out_dir`` (created if missing), atomically."""
        out = Path(out_dir)
        if out.exists() and not out.is_dir():
            raise ValueError(f"the output folder {out} is a file")
        out.mkdir(parents=True, exist_ok=True)
        paths = out / f"{self.prefix}.h", out / f"{self.prefix}.c"
        for path, text in zip(paths, (self.header, self.source)):
            write_atomically(path, lambda f, text=text: f.write(text.encode("utf-8")))
        return paths


def build_c(model: Any, *, precision: str = "fp32", calibration: Any = None,
            prefix: str = "lastedge", margin: float = DEFAULT_MARGIN) -> CModel:
    """The C texts of ``model`` (see :func:`to_c`), in memory."""
    model = check_model(model)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS} for C, got {precision!r}")
    if not isinstance(prefix, str) or not PREFIX.match(prefix):
        raise ValueError(f"prefix must be a C identifier (a letter, then letters, digits or _), "
                         f"got {prefix!r}")
    graph = None
    if precision != "fp32":
        graph = IntegerGraph.build(model, calibration, margin=margin, precision=precision)
    elif calibration is not None:
        raise ValueError("calibration applies to integer exports only (precision='int8' or 'int16x8')")
    description = (f"{model.n_features} features, {model.n_atoms} atoms, "
                   f"{model.n_outputs} output(s), {precision}")
    return CModel(*render(model, prefix, graph, description), prefix, model, graph)


def to_c(
    model: Any,
    out_dir: str | os.PathLike,
    *,
    precision: str = "fp32",
    calibration: Any = None,
    prefix: str = "lastedge",
    margin: float = DEFAULT_MARGIN,
    check_rows: Any = None,
    check_labels: Any = None,
) -> tuple[Path, Path]:
    """Export ``model`` as C99 files ``out_dir/PREFIX.h`` and ``out_dir/PREFIX.c``; return their paths.

    Parameters
    ----------
    model : Model (or a fitted estimator with ``to_model()``)
    out_dir : folder for the two files (created if missing); existing files of the same names
        are replaced atomically.
    precision : "fp32" (float32 constants, about 4 bytes a weight), "int8" (1 byte a weight,
        integer arithmetic after the input's preprocessing; the int8 TFLite file's numbers) or
        "int16x8" (int8 weights, int16 activations: TFLite's 16x8 mode, for low-margin models).
    calibration : integer precisions only: raw rows [n_rows, n_features] that set the activation ranges, as
        for ``to_tflite(..., precision="int8")``, >= 20 rows.
    prefix : the C identifier before every external name (``PREFIX_predict``, ...), so that two
        models link into one program.
    margin : integer precisions only: widen each calibrated range by this fraction of its width.
    check_rows, check_labels : held-out raw rows (and their labels) on which the files are
        compiled with the host's C compiler and compared with the model before they are
        written (``c_parity.assert_c_parity``); a failed check raises ``ParityError`` and
        writes nothing.
    """
    c_model = build_c(model, precision=precision, calibration=calibration, prefix=prefix, margin=margin)
    if check_rows is not None:
        from .c_parity import assert_c_parity

        assert_c_parity(c_model, check_rows, check_labels)
    return c_model.write(out_dir)

