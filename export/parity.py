"""``assert_parity``: the exporter's proof that a file computes what the Python model computes.

The file runs in its real interpreter(s) (``backends``) on the same rows as ``Model``. A score
counts as matching when it is within tolerance of the Python model evaluated either as
``Model.decision_function`` does (float32) or exactly (float64, same float32 parameters and
preprocessed rows). Both are valid evaluations of one model: at MNIST size the float32 Python model
itself is ~1e-4 from the exact scores where large terms cancel, and an interpreter may round like
either one, so comparing with only one of them would test the BLAS libraries, not the export.
- fp32: the given rows plus probes (a zero row, rows exactly on an atom's threshold, large values);
  every score within ``rtol * (1 + sum_j |w_j| (|z| @ |d_j| + |alpha|))`` over the atoms at or
  above their threshold (the magnitudes of the terms both layers sum, so the bound scales with the
  model's constants; see ``_exact_scores_and_tolerance``), identical predictions wherever the
  Python model's decision is not itself a tie within that tolerance.
- int8: the given (held-out) rows; predictions agree with the Python model on at least
  ``min_agreement`` of them and, with labels ``y``, accuracy drops by at most ``max_accuracy_drop``
  (or one row, on fewer than ``1 / max_accuracy_drop`` rows). A dynamic int8 file must also be
  the dynamic quantization of the model: its 8-bit constants the model's, rounded to the finest
  grid, and its scores those of its integer graph evaluated in numpy, on any rows: to within one
  feature step for ONNX (``dynamic_graph``), to within the rounding that TFLite's hybrid kernels
  may do either way for TFLite (``hybrid_graph``).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from lastedge.runtime import Model, check_input
from lastedge.runtime.model import in_row_blocks

from . import backends as _backends
from .atom_rows import scorable, threshold_rows
from .atom_scaling import graph_parameters
from .calibration import clipped_fraction
from .describe import describe
from .dynamic_graph import DynamicGraph
from .hybrid_graph import HybridGraph
from .metadata import check_model, preprocess_spec

MIN_ROWS = 100


class ParityError(AssertionError):
    """An exported file disagrees with its Python model beyond the stated bounds."""


def probe_rows(model: Model, X: np.ndarray) -> np.ndarray:
    """Zeros, threshold rows, and large values (a thousand times some real rows); only those that
    stay within float32 and whose float32 scores do too (``atom_rows.scorable``): the Python model
    refuses rows whose scores overflow, so there is nothing to compare the file with."""
    return scorable(model, np.concatenate([np.zeros((1, model.n_features)), threshold_rows(model),
                                           1e3 * X[:8].astype(np.float64)]))


def _decisions(model: Model, scores: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predicted labels and whether each decision is clear of a tie by more than ``tol``."""
    if model.n_outputs == 1:
        return model.labels_from_scores(scores[:, 0]), np.abs(scores[:, 0]) > tol[:, 0]
    top2 = np.sort(scores, axis=1)[:, -2:]
    return model.labels_from_scores(scores), (top2[:, 1] - top2[:, 0]) > 2 * tol.max(axis=1)


def _exact_scores_and_tolerance(model: Model, rows: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact (float64) scores of raw ``rows`` and each score's tolerance, in blocks of rows.

    float32 rounding scales with the magnitudes of the terms a sum adds, not with the sum, which
    can be small where large terms cancel: a pre-activation ``z @ d_j - alpha`` adds
    ``reach_j = |z| @ |d_j| + |alpha|`` of them, and its error passes to the score times
    ``|w_j|``. So a score's tolerance is ``rtol * (1 + sum_j |w_j| reach_j)`` over the atoms at or
    above their threshold to within that rounding (an atom clearly below it is exactly 0 in every
    evaluation). It is at least ``rtol * (1 + sum_j |f_j w_j|)``, and scales with the weights.
    """
    D, threshold, W = graph_parameters(model)
    abs_D, abs_W, abs_threshold = np.abs(D), np.abs(W), np.abs(threshold)

    def both(block: np.ndarray) -> np.ndarray:
        Z = model.preprocess.apply(block).astype(np.float64)
        pre_activation = Z @ D - threshold
        reach = np.abs(Z) @ abs_D + abs_threshold
        counted = np.where(pre_activation > -rtol * reach, reach, 0.0)
        return np.hstack([np.maximum(pre_activation, 0) @ W, rtol * (1 + counted @ abs_W)])

    scores_and_tolerance = in_row_blocks(both, rows, model.row_width)
    return np.hsplit(scores_and_tolerance, 2)


def _compare(model: Model, info: dict[str, Any], backend: str, X: np.ndarray, y: Any,
             rtol: float, graph: DynamicGraph | HybridGraph | None) -> dict[str, Any]:
    fp32 = info["metadata"]["precision"] == "fp32"
    rows = np.concatenate([X, probe_rows(model, X)]) if fp32 else X
    in_graph = info["metadata"]["preprocess_in_graph"]
    fed = rows if in_graph else model.preprocess.apply(rows)
    got = _backends.run(backend, info["path"], fed, model.row_width)
    emulation = {} if graph is None else _against_emulation(
        model, graph, model.preprocess.apply(rows) if in_graph else fed, got)
    expected, tol = _exact_scores_and_tolerance(model, rows, rtol)
    if got.shape != expected.shape:
        raise ParityError(f"{info['path']} on {backend}: scores have shape {got.shape}, "
                          f"expected {expected.shape}")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused in words instead
        try:
            float32 = model.decision_function(rows).reshape(expected.shape)
        except ValueError as err:  # the probes never overflow: the given rows do
            raise ValueError(f"the parity check's rows: {err}") from None
    error = np.minimum(np.abs(got - expected), np.abs(got - float32.astype(np.float64)))
    labels, clear = _decisions(model, expected, tol)
    agree = model.labels_from_scores(got[:, 0] if model.n_outputs == 1 else got) == labels
    n = len(X)
    figures = {
        "backend": backend, "rows": n, "probe_rows": len(rows) - n,
        "max_score_error": float(error.max()), "mean_score_error": float(error[:n].mean()),
        "agreement": float(agree[:n].mean()),
        "within_tolerance": bool(np.all(error <= tol)),
        "clear_decisions_identical": bool(np.all(agree[clear])),
        **emulation,
    }
    if y is not None:
        figures["accuracy"] = float(np.mean(model.labels_from_scores(
            got[:n, 0] if model.n_outputs == 1 else got[:n]) == y))
        figures["reference_accuracy"] = float(np.mean(labels[:n] == y))
        figures["accuracy_drop"] = figures["reference_accuracy"] - figures["accuracy"]
    return figures


def _against_emulation(model: Model, graph: DynamicGraph | HybridGraph, preprocessed: np.ndarray,
                       got: np.ndarray) -> dict[str, Any]:
    """How far a dynamic int8 file's scores ``got`` are from its integer graph evaluated in numpy
    on the same blocks of (preprocessed) rows: each block's input range sets its quantization in
    an ONNX file (each row's own in a TFLite file)."""
    expected, tol = np.hsplit(in_row_blocks(graph.scores, preprocessed, model.row_width), 2)
    error = np.abs(got.astype(np.float64) - expected)
    return {"max_error_vs_integer_graph": float(error.max()),
            "within_integer_graph_tolerance": bool(np.all(error <= tol))}


def _failures(figures: dict[str, Any], precision: str, min_agreement: float | None,
              max_accuracy_drop: float, rtol: float,
              graph: DynamicGraph | HybridGraph | None) -> list[str]:
    if precision == "fp32":
        problems = []
        if not figures["within_tolerance"]:
            problems.append(f"max score error {figures['max_score_error']:.3g} exceeds "
                            f"{rtol:g} * (1 + sum_j |w_j| (|z| @ |d_j| + |alpha|)) "
                            "over atoms at or above their threshold")
        if not figures["clear_decisions_identical"]:
            problems.append("predictions differ from the Python model")
        return problems
    problems = []
    if graph is not None and not figures["within_integer_graph_tolerance"]:
        problems.append(f"scores differ from the file's own integer graph by up to "
                        f"{figures['max_error_vs_integer_graph']:.3g}, more than {graph.TOLERANCE}")
    if min_agreement is not None and figures["agreement"] < min_agreement:
        problems.append(f"predictions agree on {figures['agreement']:.2%} of rows, "
                        f"need >= {min_agreement:.0%}")
    # One row is the finest step an accuracy can take: on fewer than 1 / max_accuracy_drop rows a
    # tighter bound would forbid any change at all, which is not what the bound means.
    allowed = max(max_accuracy_drop, 1.0 / figures["rows"])
    if figures.get("accuracy_drop", 0.0) > allowed + 1e-12:
        problems.append(f"accuracy drops by {100 * figures['accuracy_drop']:.2f} points, "
                        f"allowed {100 * allowed:.2f}")
    return problems


def _check_rows(model: Model, X: Any, y: Any, min_rows: int) -> np.ndarray:
    """``X`` as given, as the runtime takes them (it preprocesses float64 rows in float64, where
    near 1e8 their digits matter; a file with the preprocessing in its graph reads float32), if
    there are enough of them and ``y`` holds one label per row."""
    X = check_input(X, model.n_features)
    if len(X) < max(min_rows, 1):  # no rows: no figures (NaN means, a reduction with no identity)
        raise ValueError(f"parity needs at least {max(min_rows, 1)} real rows, got {len(X)}")
    if y is not None and np.shape(y) != (len(X),):
        raise ValueError(f"y must hold one label per row ({len(X)}), got shape {np.shape(y)}")
    return X


def _describe_matching(model: Model, path: str | os.PathLike) -> dict[str, Any]:
    """``describe(path)``, if the file's metadata is the model's: the runtime labels and
    preprocesses rows as the metadata says, not as the graph alone would."""
    info = describe(path)
    metadata = info["metadata"]
    if metadata is None:
        raise ValueError(f"{path} has no lastedge metadata; was it written by lastedge.export?")
    expected = {"n_features": model.n_features, "n_outputs": model.n_outputs,
                "classes": model.classes.tolist(), "preprocess": preprocess_spec(model)}
    differ = [key for key, value in expected.items() if metadata.get(key) != value]
    if differ:
        raise ParityError(f"{path} does not match the model: its {', '.join(differ)} differ")
    return info


def measure_parity(
    model: Model,
    path: str | os.PathLike,
    X: Any,
    y: Any = None,
    *,
    rtol: float = 1e-4,
    min_agreement: float | None = 0.99,
    max_accuracy_drop: float = 0.005,
    backends: Sequence[str] | None = None,
    min_rows: int = MIN_ROWS,
) -> dict[str, Any]:
    """Run the exported file at ``path`` in its interpreter(s) and compare it with ``model``.

    Parameters
    ----------
    model : Model
        The model the file at ``path`` was exported from.
    X, y : array, and array or None
        Raw rows [n, n_features] held out from calibration (>= ``min_rows``) and their labels
        (for the int8 accuracy-drop check and the reported accuracy).
    min_agreement : float or None
        int8 predictions must agree with the model's on this share of ``X``; None reports it
        unbounded, for synthetic rows built around the atoms' thresholds (near-ties are common).
    backends : sequence of str, optional
        Interpreters to use; default every importable one for the file's format.

    Returns
    -------
    dict
        The worst backend's figures (``max_score_error``, ``mean_score_error``, ``agreement``,
        accuracies, calibrated int8's ``clipped`` fractions), ``per_backend``, and ``problems``:
        every figure out of bounds (empty when none), listed where ``assert_parity`` raises.
    """
    model = check_model(model)
    X = _check_rows(model, X, y, min_rows)
    info = _describe_matching(model, path)
    metadata = info["metadata"]
    names = list(backends) if backends is not None else _backends.available(info["format"])
    if not names:
        raise ImportError(f"no interpreter for {info['format']} files is installed: "
                          f"pip install 'lastedge[{info['format']}]'")
    quantization = metadata.get("quantization") or {}
    graph = None
    if quantization.get("mode") == "dynamic":
        graph = (DynamicGraph if info["format"] == "onnx" else HybridGraph).read(path)
    per_backend = {name: _compare(model, info, name, X, y, rtol, graph) for name in names}
    not_the_model = [] if graph is None else graph.problems(model)
    problems = [f"{path}: " + "; ".join(not_the_model)] if not_the_model else []
    problems += [f"{path} on {name}: " + "; ".join(found) for name, figures in per_backend.items()
                 if (found := _failures(figures, metadata["precision"], min_agreement,
                                        max_accuracy_drop, rtol, graph))]
    worst = max(per_backend.values(), key=lambda f: f["max_score_error"])
    result = {"path": str(path), "format": info["format"], "precision": metadata["precision"],
              "size_bytes": info["size_bytes"], "backends": names, **worst,
              "problems": problems, "per_backend": per_backend}
    if quantization.get("mode") == "static":
        result["clipped"] = clipped_fraction(model, X, quantization)
    return result


def assert_parity(model: Model, path: str | os.PathLike, X: Any, y: Any = None,
                  **bounds: Any) -> dict[str, Any]:
    """Run the exported file at ``path`` in its interpreter(s) and prove it matches ``model``.

    Takes ``measure_parity``'s arguments (``rtol``, ``min_agreement``, ``max_accuracy_drop``,
    ``backends``, ``min_rows``) and returns its figures; raises ``ParityError`` (an
    ``AssertionError``) naming the backend and every figure out of bounds.
    """
    figures = measure_parity(model, path, X, y, **bounds)
    if figures["problems"]:
        raise ParityError(" | ".join(figures["problems"]))
    return figures
