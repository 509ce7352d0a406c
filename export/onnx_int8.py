"""int8 ONNX files through ``onnxruntime.quantization``: static QDQ on the Gemm graph, or dynamic.

Static: the Gemm form (bias ``C = -threshold``) lets onnxruntime fuse ``DQ -> Gemm -> Relu -> Q``
into ``QGemm`` kernels, so the whole chain runs in integer arithmetic. The ranges come from
``calibration.Ranges`` (the same ones the TFLite writer uses), passed as tensor overrides.

Activations are uint8. Weights are uint8 by default (dynamic files' too, which took the digits
model's worst score error from 3.4 to 0.37): per-tensor weights (the default, and dynamic files')
asymmetric, per-channel ones (static files with ``per_channel``) symmetric about zero point 128.
onnxruntime's x86 kernels for int8 weights add pairs of 8-bit products in 16 bits, which saturates
on CPUs without VNNI (AVX2 only): measured on an AMD EPYC, a digits model's fused int8 graph
agreed with the float model on 94.8 % of the rows against 100 % for the same file unfused. With
uint8 weights the fused graph gives the unfused graph's scores on such a CPU too, and the weights
keep all 8 bits (7-bit int8 weights, onnxruntime's other remedy, left the demo's model at
98.89 % agreement).

``signed_weights=True`` stores them as int8 (symmetric, zero point 0) instead: on CPUs with an
8-bit dot-product instruction (x86 VNNI; see ``runtime.cpu``) onnxruntime's int8 kernels are
about twice as fast as its uint8 ones, and exact; elsewhere on x86 they saturate as above.
"""

from __future__ import annotations

import logging
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .calibration import Ranges

_BATCH = 64


def _quantization():
    try:
        from onnxruntime import quantization
    except ImportError:
        raise ImportError(
            "int8 ONNX export needs onnxruntime: pip install 'lastedge[export]'"
        ) from None
    return quantization


@contextmanager
def _quiet_workdir() -> Iterator[Path]:
    """A temp folder for the quantizer's files, with its advisory log messages silenced."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory(prefix="lastedge-quant-") as folder:
            yield Path(folder)
    finally:
        root.setLevel(level)


def _rows_reader(quantization: Any, input_name: str, rows: np.ndarray) -> Any:
    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self._batches = iter(range(0, len(rows), _BATCH))

        def get_next(self) -> dict[str, np.ndarray] | None:
            start = next(self._batches, None)
            return None if start is None else {input_name: rows[start:start + _BATCH]}

    return Reader()


def _weight_type(quantization: Any, signed_weights: bool) -> Any:
    return quantization.QuantType.QInt8 if signed_weights else quantization.QuantType.QUInt8


def quantize_static(proto: Any, rows: np.ndarray, ranges: Ranges, *, per_channel: bool,
                    signed_weights: bool = False, int16: bool = False) -> Any:
    """QDQ of the Gemm graph from ``onnx.build_graph(form="gemm")``: uint8 activations, uint8
    weights (int8 if ``signed_weights``); with ``int16``, int16 activations (symmetric) and int8
    weights, the precision "int16x8": the quantizer raises the opset to 21, the first whose
    QuantizeLinear and DequantizeLinear take int16 (onnxruntime runs them unfused, the products
    in float32 between them).

    ``rows`` are what the graph's input receives (preprocessed unless preprocessing is in the graph).
    """
    import onnx

    quantization = _quantization()
    gemms = [node for node in proto.graph.node if node.op_type == "Gemm"]
    overrides = {
        gemms[0].input[0]: ranges.input,
        "pre_activation": ranges.features,
        "features": ranges.features,
        gemms[1].output[0]: ranges.scores,
    }
    with _quiet_workdir() as folder:
        source, target = folder / "float.onnx", folder / "int8.onnx"
        onnx.save(proto, source)
        quantization.quantize_static(
            source, target, _rows_reader(quantization, proto.graph.input[0].name, rows),
            quant_format=quantization.QuantFormat.QDQ,
            op_types_to_quantize=["Gemm", "Relu"],
            per_channel=per_channel,
            activation_type=quantization.QuantType.QInt16 if int16 else quantization.QuantType.QUInt8,
            weight_type=_weight_type(quantization, signed_weights or int16),
            extra_options={"ActivationSymmetric": int16, "TensorQuantOverrides": {
                name: [{"rmin": np.float32(lo), "rmax": np.float32(hi)}]
                for name, (lo, hi) in overrides.items()
            }},
        )
        return _check_biases(onnx.load(target))


def _check_biases(proto: Any) -> Any:
    """``proto``, unless onnxruntime clipped a bias to int32's largest value (it says so only in a
    log). A bias clipped to the lowest is harmless before the ReLU (the feature stays 0, see
    ``quantize.relu_bias_floor``); one clipped to the highest changes the feature (an atom with a
    negative threshold on inputs of a much narrower range), so it is refused, as TFLite's is."""
    from onnx import TensorProto, numpy_helper

    for tensor in proto.graph.initializer:
        if tensor.data_type == TensorProto.INT32 and np.any(
                numpy_helper.to_array(tensor) == np.iinfo(np.int32).max):
            raise ValueError("a bias does not fit in int32 at this quantization scale")
    return proto


def quantize_dynamic(proto: Any, *, signed_weights: bool = False) -> Any:
    """8-bit weights (uint8 over their range, or symmetric int8 if ``signed_weights``), activations
    quantized on the fly (for users without calibration data)."""
    import onnx

    quantization = _quantization()
    with _quiet_workdir() as folder:
        source, target = folder / "float.onnx", folder / "int8.onnx"
        onnx.save(proto, source)
        quantization.quantize_dynamic(source, target, op_types_to_quantize=["MatMul"],
                                      weight_type=_weight_type(quantization, signed_weights),
                                      extra_options={"WeightSymmetric": signed_weights})
        return onnx.load(target)
