"""``benchmarks/onnx_node_times.py``: per-node times of real files, with either weight type."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from lastedge.runtime import Model  # noqa: E402


@pytest.fixture(scope="module")
def node_times(import_benchmark):
    return import_benchmark("onnx_node_times")


def has_signed_bytes(path) -> bool:
    """Whether the ONNX file at ``path`` stores any int8 initializer (its activations are uint8)."""
    return any(tensor.data_type == onnx.TensorProto.INT8 for tensor in onnx.load(path).graph.initializer)


@pytest.mark.parametrize("weights", ["uint8", "int8"])
def test_files_have_the_asked_weights_and_every_node_is_timed(node_times, tmp_path, weights):
    rng = np.random.default_rng(0)
    D = rng.standard_normal((16, 12)).astype(np.float32) / 4
    W = np.kron(np.eye(3), np.abs(rng.standard_normal((4, 1)))).astype(np.float32)
    node_times.write_files(tmp_path, Model(D, W, np.arange(3)), rng.uniform(0, 2, (600, 16)).astype(np.float32),
                           weights)
    assert not has_signed_bytes(tmp_path / "m.onnx")
    assert has_signed_bytes(tmp_path / "m-int8.onnx") == has_signed_bytes(tmp_path / "m-dyn.onnx") == (weights == "int8")
    wall, nodes = node_times.node_times(tmp_path / "m-int8.onnx", np.ones((8, 16), np.float32), runs=3, threads=1)
    ops = [op for op, _, _ in nodes]
    assert wall > 0 and "QGemm" in ops and all(seconds >= 0 for _, _, seconds in nodes)
    assert [seconds for _, _, seconds in nodes] == sorted((seconds for _, _, seconds in nodes), reverse=True)
