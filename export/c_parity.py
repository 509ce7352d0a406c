"""Compile-and-compare: the exported C model built with the host's C compiler, run on rows, and
compared with the Python model (and, for int8, with its integer graph in numpy, bit for bit).

- fp32: the given rows plus the probes of ``parity.probe_rows``; every score within the bound
  of ``parity`` (``rtol * (1 + sum_j |w_j| (|z| @ |d_j| + |alpha|))``), identical predictions
  wherever the Python model's decision is clear of a tie by more than that.
- int8: on the given rows and the probes, the int8 input levels, the int32 scores and the
  predicted indices identical to :class:`.int8_reference.IntegerGraph`'s; on the given rows,
  predictions agreeing with the Python model on at least ``min_agreement`` of them and, with
  labels, accuracy dropping by at most ``max_accuracy_drop``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from lastedge.runtime import Model, check_input

from .c_preprocess import gains, preprocessed
from .parity import ParityError, _decisions, _exact_scores_and_tolerance, probe_rows

HOST_FLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off")

HARNESS = r"""#include <stdio.h>
#include "PREFIX.h"

int main(int argc, char **argv)
{
    float x[UPPER_N_FEATURES];
    SCORE scores[UPPER_N_OUTPUTS];
    FILE *in, *out;
    if (argc != 3 || !(in = fopen(argv[1], "rb")) || !(out = fopen(argv[2], "wb"))) return 2;
    while (fread(x, sizeof x, 1, in) == 1) {
        int32_t label;QUANTIZE
        PREFIX_scores(x, scores);
        label = PREFIX_predict(x);
        fwrite(scores, sizeof scores, 1, out);
        fwrite(&label, sizeof label, 1, out);
    }
    return (fclose(out) != 0 || ferror(in)) ? 1 : fclose(in);
}
"""

QUANTIZE = """
        UPPER_INPUT q[UPPER_N_FEATURES];
        PREFIX_quantize(x, q);
        fwrite(q, sizeof q, 1, out);"""


def compiler() -> str:
    """The host's C compiler: ``$CC``, else the first of cc, gcc, clang on the PATH."""
    for name in filter(None, (os.environ.get("CC"), "cc", "gcc", "clang")):
        if shutil.which(name):
            return name
    raise FileNotFoundError("no C compiler found (set CC, or install one: apt-get install gcc); "
                            "the C export's parity check compiles the files")


def harness(c_model: Any) -> str:
    """A host program that runs the model on float32 rows from a file, writing per row the
    int8 input (int8 models), the scores and the predicted index."""
    int8 = c_model.graph is not None
    return (HARNESS.replace("QUANTIZE", QUANTIZE if int8 else "")
            .replace("SCORE", "int32_t" if int8 else "float")
            .replace("UPPER", c_model.prefix.upper()).replace("PREFIX", c_model.prefix))


def run_c(c_model: Any, X: np.ndarray, flags: Sequence[str] = HOST_FLAGS) -> dict[str, np.ndarray]:
    """Compile ``c_model`` (a ``c.CModel``) with a harness and run it on rows ``X`` (as float32):
    ``{"scores", "labels"}`` and, for int8, ``"q"`` (the int8 input rows)."""
    X = np.ascontiguousarray(X, dtype="<f4")
    int8 = c_model.graph is not None
    fields = ([("q", c_model.graph.activation_dtype.newbyteorder("<"), (X.shape[1],))] if int8 else []) + [
        ("scores", "<i4" if int8 else "<f4", (c_model.model.n_outputs,)), ("labels", "<i4")]
    with tempfile.TemporaryDirectory(prefix="lastedge-c-") as folder:
        work = Path(folder)
        c_model.write(work)
        (work / "main.c").write_text(harness(c_model))
        build = subprocess.run([compiler(), *flags, "-o", "model", "main.c", f"{c_model.prefix}.c"],
                               cwd=work, capture_output=True, text=True)
        if build.returncode != 0:
            raise ParityError(f"the C model does not compile with {' '.join(flags)}:\n{build.stderr}")
        X.tofile(work / "rows.bin")
        run = subprocess.run([str(work / "model"), "rows.bin", "out.bin"], cwd=work,
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise ParityError(f"the compiled C model exited with status {run.returncode} {run.stderr}")
        out = np.fromfile(work / "out.bin", dtype=np.dtype(fields))
    if len(out) != len(X):
        raise ParityError(f"the compiled C model answered {len(out)} of {len(X)} rows")
    return {name: out[name] for name in out.dtype.names}


def integer_graph_figures(c_model: Any, rows: np.ndarray, got: dict[str, np.ndarray]) -> dict[str, Any]:
    """How the C's int8 input, int32 scores and predicted indices (``got``, from :func:`run_c`
    on float32 ``rows``) compare with the numpy integer graph's."""
    graph, model = c_model.graph, c_model.model
    q = graph.quantize(preprocessed(model, rows, gains(model, graph.input_scale)))
    scores = graph.scores(q)
    labels = (scores[:, 0] > 0).astype(np.int32) if model.n_outputs == 1 else np.argmax(scores, axis=1)
    return {"input_identical": bool(np.array_equal(got["q"], q)),
            "scores_identical": bool(np.array_equal(got["scores"], scores)),
            "labels_identical": bool(np.array_equal(got["labels"], labels)),
            "max_score_difference": int(np.abs(got["scores"].astype(np.int64) - scores).max())}


def _fp32_figures(model: Model, rows: np.ndarray, got: dict[str, np.ndarray], rtol: float) -> dict[str, Any]:
    """How far the C's float scores are from the Python model's (see ``parity``)."""
    expected, tol = _exact_scores_and_tolerance(model, rows, rtol)
    float32 = model.decision_function(rows).reshape(expected.shape).astype(np.float64)
    scores = got["scores"].astype(np.float64)
    error = np.minimum(np.abs(scores - expected), np.abs(scores - float32))
    reference, clear = _decisions(model, expected, tol)
    return {"max_score_error": float(error.max()), "within_tolerance": bool(np.all(error <= tol)),
            "clear_decisions_identical": bool(np.all((model.classes[got["labels"]] == reference)[clear]))}


def _problems(figures: dict[str, Any], min_agreement: float, max_accuracy_drop: float) -> list[str]:
    """Each bound the figures miss, in words."""
    problems = [f"{what} differ from the numpy integer graph's" for key, what in (
        ("input_identical", "int8 input levels"), ("scores_identical", "int32 scores"),
        ("labels_identical", "predicted indices")) if figures.get(key) is False]
    if figures.get("within_tolerance") is False:
        problems.append(f"max score error {figures['max_score_error']:.3g} exceeds the fp32 bound")
    if figures.get("clear_decisions_identical") is False:
        problems.append("predictions differ from the Python model's where its decision is clear")
    if figures["agreement"] < min_agreement:
        problems.append(f"predictions agree with the Python model on {figures['agreement']:.2%} "
                        f"of rows, need >= {min_agreement:.0%}")
    allowed = max(max_accuracy_drop, 1.0 / figures["rows"])  # one row: the finest step
    if figures.get("accuracy_drop", 0.0) > allowed + 1e-12:
        problems.append(f"accuracy drops by {100 * figures['accuracy_drop']:.2f} points, "
                        f"allowed {100 * allowed:.2f}")
    return problems


def measure_c_parity(c_model: Any, X: Any, y: Any = None, *, rtol: float = 1e-4,
                     min_agreement: float = 0.99, max_accuracy_drop: float = 0.005,
                     flags: Sequence[str] = HOST_FLAGS) -> dict[str, Any]:
    """Compile and run ``c_model`` (a ``c.CModel``) on raw rows ``X`` and the probes, and
    compare it with its model; out-of-bound figures are listed in ``problems``.

    Returns ``rows``, ``probe_rows``, ``agreement`` (with the Python model's predictions, on
    ``X``), accuracies with labels ``y``, and the fp32 or int8 figures of the module's docstring.
    """
    model = c_model.model
    X = check_input(X, model.n_features).astype(np.float32)
    if len(X) == 0:
        raise ValueError("the C parity check needs at least one row")
    if y is not None and np.shape(y) != (len(X),):
        raise ValueError(f"y must hold one label per row ({len(X)}), got shape {np.shape(y)}")
    rows = np.concatenate([X, probe_rows(model, X).astype(np.float32)])
    got = run_c(c_model, rows, flags)
    figures: dict[str, Any] = {"precision": c_model.precision,
                               "rows": len(X), "probe_rows": len(rows) - len(X)}
    figures.update(_fp32_figures(model, rows, got, rtol) if c_model.graph is None
                   else integer_graph_figures(c_model, rows, got))
    try:
        python = model.predict(X)
    except ValueError as err:  # scores beyond float32: nothing to compare with
        raise ValueError(f"the C parity check's rows: {err}") from None
    predicted = model.classes[got["labels"][:len(X)]]
    figures["agreement"] = float(np.mean(predicted == python))
    if y is not None:
        figures["accuracy"] = float(np.mean(predicted == y))
        figures["reference_accuracy"] = float(np.mean(python == y))
        figures["accuracy_drop"] = figures["reference_accuracy"] - figures["accuracy"]
    figures["problems"] = _problems(figures, min_agreement if c_model.graph is not None else 0.0,
                                    max_accuracy_drop if c_model.graph is not None else 1.0)
    return figures


def assert_c_parity(c_model: Any, X: Any, y: Any = None, **bounds: Any) -> dict[str, Any]:
    """``measure_c_parity``, raising ``ParityError`` that names every figure out of bounds."""
    figures = measure_c_parity(c_model, X, y, **bounds)
    if figures["problems"]:
        raise ParityError(f"the C model ({figures['precision']}): " + "; ".join(figures["problems"]))
    return figures
