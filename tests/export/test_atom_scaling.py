"""int8 graphs rescale each atom (unit dictionary columns): same scores, and int8 survives
dictionaries whose columns are orders of magnitude apart (what LAST's thresholds near eps give)."""

import numpy as np
import pytest


from lastedge.export.atom_scaling import graph_parameters
from lastedge.runtime import Model


def uneven_model(digits_case, factor: float = 1e3) -> tuple[Model, np.ndarray, np.ndarray, np.ndarray]:
    """The digits model with every other atom's column scaled up by ``factor`` (its weight down)."""
    model, X_train, y_train, X_test, y_test = digits_case()
    scale = np.where(np.arange(model.n_atoms) % 2 == 0, factor, 1.0)
    uneven = Model(model.dictionary * scale, model.weights / scale[:, None], model.classes,
                   model.alpha, model.preprocess)
    return uneven, X_train, X_test, y_test


def test_graph_parameters_give_the_same_scores_with_unit_columns(digits_case):
    model, _, X_test, _ = uneven_model(digits_case)
    D, threshold, W = graph_parameters(model)
    np.testing.assert_allclose(np.linalg.norm(D, axis=0), 1.0)
    Z = model.preprocess.apply(X_test).astype(np.float64)
    np.testing.assert_allclose(np.maximum(Z @ D - threshold, 0) @ W, model.decision_function(X_test),
                               rtol=1e-4, atol=1e-4)


def test_a_zero_column_is_left_alone(digits_case):
    model, *_ = digits_case()
    D = model.dictionary.copy()
    D[:, 0] = 0
    graph_D, threshold, W = graph_parameters(Model(D, model.weights, model.classes, 1.0, model.preprocess))
    assert np.all(graph_D[:, 0] == 0) and threshold[0] == 1.0 and np.all(np.isfinite(graph_D))


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_int8_keeps_parity_with_uneven_atoms(digits_case, tmp_path, fmt):
    model, X_train, X_test, y_test = uneven_model(digits_case)
    if fmt == "onnx":
        pytest.importorskip("onnxruntime")
        from lastedge.export import to_onnx as write
    else:
        pytest.importorskip("ai_edge_litert")
        from lastedge.export import to_tflite as write
    from lastedge.export import measure_parity

    path = write(model, tmp_path / f"q.{fmt}", precision="int8", calibration=X_train)
    # measured: 98.9-99.4 % with the rescaling; 0 % without it (the small atoms' features round to 0)
    assert measure_parity(model, path, X_test, y_test)["agreement"] >= 0.98
