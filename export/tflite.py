"""Write a ``Model`` as a TFLite flatbuffer without TensorFlow: two FULLY_CONNECTED ops.

``FULLY_CONNECTED(x, D^T, bias=-threshold, fused RELU) -> FULLY_CONNECTED(W^T, bias=0)``, fp32,
full int8 (int8 input and output with their scale/zero point in the file, symmetric int8 weights,
int32 biases) or dynamic-range int8 (the fp32 graph with symmetric per-tensor int8 weights: hybrid
kernels that quantize each float input row as they run, see ``hybrid_graph``). The batch is
dynamic: shape ``[1, n]`` with ``shape_signature [-1, n]``.

The schema comes from the ``tflite`` package (Python builders generated from TFLite's Apache-2.0
``schema.fbs``): pure Python, so the workstation needs no interpreter or TensorFlow to write files.
``schema.check_schema()`` guards against version drift.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lastedge.runtime import Model, check_output_path, write_atomically

from .atom_scaling import graph_parameters
from .calibration import DEFAULT_MARGIN, Ranges
from .metadata import METADATA_KEY, build_metadata, check_model, dumps
from .options import STATIC, ExportOptions, check_export_options
from .quantize import affine_params, int32_bias, relu_bias_floor, symmetric_weights
from .schema import check_schema

INPUT, OUTPUT = "input", "scores"
SIGNATURE_KEY = "serving_default"
_ALIGN = 16  # constant buffers are 16-byte aligned so interpreters can map them directly
# FULLY_CONNECTED versions (TFLite's op_version.cc): float 1, full int8 4, hybrid (float input,
# int8 weights) with asymmetric_quantize_inputs 9
# int8 weights, int16 activations 7
OP_VERSIONS = {"fp32": 1, "int8": 4, "int8-dynamic": 9, "int16x8": 7}


@dataclass
class _Tensor:
    """A tensor to write: name, shape, type, optional constant data and quantization."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "float32" | "int8" | "int32"
    data: np.ndarray | None = None
    scale: np.ndarray | None = None
    zero_point: np.ndarray | None = None
    dynamic_batch: bool = False


def _zeros(scales: np.ndarray) -> np.ndarray:
    """Zero points of symmetric weights: one 0 per scale."""
    return np.zeros(len(scales), dtype=np.int64)


def _layers(model: Model, options: ExportOptions, ranges: Ranges | None) -> list[_Tensor]:
    """The seven tensors: input, D^T, bias1, features, W^T, bias2, scores (in this order).

    "int8-dynamic": the float tensors of the fp32 file with D^T and W^T as symmetric per-tensor
    int8 (the hybrid FULLY_CONNECTED kernels' form: float input, output and bias, int8 weights)."""
    n, k, m = model.n_features, model.n_atoms, model.n_outputs
    int8 = options.precision != "fp32"
    D, threshold, W = (a.astype(np.float32) for a in graph_parameters(model, rescale=int8))
    bias1 = -threshold
    bias2 = np.zeros(m, dtype=np.float32)
    if options.precision != "int8":
        weights = {"dictionary": ("float32", D.T), "weights": ("float32", W.T)}
        if int8:
            for name, (_, values) in weights.items():
                q, scales = symmetric_weights(values, per_channel=False)
                weights[name] = ("int8", q, scales, _zeros(scales))
        return [
            _Tensor(INPUT, (1, n), "float32", dynamic_batch=True),
            _Tensor("dictionary", (k, n), *weights["dictionary"]),
            _Tensor("negative_threshold", (k,), "float32", bias1),
            _Tensor("features", (1, k), "float32", dynamic_batch=True),
            _Tensor("weights", (m, k), *weights["weights"]),
            _Tensor("output_bias", (m,), "float32", bias2),
            _Tensor(OUTPUT, (1, m), "float32", dynamic_batch=True),
        ]
    activations = [affine_params(*r) for r in (ranges.input, ranges.features, ranges.scores)]
    (s_x, z_x), (s_f, z_f), (s_o, z_o) = activations
    q_d, s_d = symmetric_weights(D.T, per_channel=options.per_channel)
    q_w, s_w = symmetric_weights(W.T, per_channel=options.per_channel)
    q_b1, s_b1 = int32_bias(bias1, s_x, s_d, lowest=relu_bias_floor(q_d, z_x))
    q_b2, s_b2 = int32_bias(bias2, s_f, s_w)

    def act(value: tuple[float, int]) -> dict[str, np.ndarray]:
        return {"scale": np.array([value[0]], np.float32), "zero_point": np.array([value[1]])}

    return [
        _Tensor(INPUT, (1, n), "int8", dynamic_batch=True, **act((s_x, z_x))),
        _Tensor("dictionary", (k, n), "int8", q_d, s_d, _zeros(s_d)),
        _Tensor("negative_threshold", (k,), "int32", q_b1, s_b1, _zeros(s_b1)),
        _Tensor("features", (1, k), "int8", dynamic_batch=True, **act((s_f, z_f))),
        _Tensor("weights", (m, k), "int8", q_w, s_w, _zeros(s_w)),
        _Tensor("output_bias", (m,), "int32", q_b2, s_b2, _zeros(s_b2)),
        _Tensor(OUTPUT, (1, m), "int8", dynamic_batch=True, **act((s_o, z_o))),
    ]


def _file_tensors(model: Model, options: ExportOptions, ranges: Ranges | None) -> list[_Tensor]:
    """The seven tensors of a file of ``options.precision`` (int16x8: ``int16x8.tensors``)."""
    if options.precision == "int16x8":
        from .int16x8 import tensors  # it lays out its tensors with this module's

        return tensors(model, ranges)
    return _layers(model, options, ranges)


class _Writer:
    """Serialises tensors, two FULLY_CONNECTED ops, a signature and metadata into one flatbuffer."""

    def __init__(self, tfl: Any) -> None:
        import flatbuffers

        self.tfl = tfl
        self.b = flatbuffers.Builder(1024)
        self.buffers: list[bytes] = [b""]  # buffer 0 stays empty, by convention

    def _vector(self, start: Any, offsets: list[int]) -> int:
        start(self.b, len(offsets))
        for offset in reversed(offsets):
            self.b.PrependUOffsetTRelative(offset)
        return self.b.EndVector()

    def _ints(self, values: Any, dtype: Any) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, dtype=dtype))

    def _buffer(self, data: bytes) -> int:
        tfl, b = self.tfl, self.b
        vector = None
        if data:
            b.Prep(_ALIGN, len(data))
            vector = b.CreateNumpyVector(np.frombuffer(data, dtype=np.uint8))
        tfl.BufferStart(b)
        if vector is not None:
            tfl.BufferAddData(b, vector)
        return tfl.BufferEnd(b)

    def _quantization(self, t: _Tensor) -> int | None:
        if t.scale is None:
            return None
        tfl, b = self.tfl, self.b
        scale, zero_point = self._ints(t.scale, "<f4"), self._ints(t.zero_point, "<i8")
        tfl.QuantizationParametersStart(b)
        tfl.QuantizationParametersAddScale(b, scale)
        tfl.QuantizationParametersAddZeroPoint(b, zero_point)
        tfl.QuantizationParametersAddQuantizedDimension(b, 0)
        return tfl.QuantizationParametersEnd(b)

    def _tensor(self, t: _Tensor) -> int:
        tfl, b = self.tfl, self.b
        buffer_index = 0
        if t.data is not None:
            little_endian = np.dtype(t.dtype).newbyteorder("<")
            self.buffers.append(np.ascontiguousarray(t.data, dtype=little_endian).tobytes())
            buffer_index = len(self.buffers) - 1
        name, shape = b.CreateString(t.name), self._ints(t.shape, "<i4")
        signature = self._ints((-1, *t.shape[1:]), "<i4") if t.dynamic_batch else None
        quantization = self._quantization(t)
        tfl.TensorStart(b)
        tfl.TensorAddShape(b, shape)
        if signature is not None:
            tfl.TensorAddShapeSignature(b, signature)
        tfl.TensorAddType(b, getattr(tfl.TensorType, t.dtype.upper()))
        tfl.TensorAddBuffer(b, buffer_index)
        tfl.TensorAddName(b, name)
        if quantization is not None:
            tfl.TensorAddQuantization(b, quantization)
        return tfl.TensorEnd(b)

    def _fully_connected(self, inputs: tuple[int, int, int], output: int, activation: int,
                         asymmetric_inputs: bool) -> int:
        tfl, b = self.tfl, self.b
        tfl.FullyConnectedOptionsStart(b)
        tfl.FullyConnectedOptionsAddFusedActivationFunction(b, activation)
        if asymmetric_inputs:  # hybrid kernels: each float input row quantized over [min, max]
            tfl.FullyConnectedOptionsAddAsymmetricQuantizeInputs(b, True)
        options = tfl.FullyConnectedOptionsEnd(b)
        ins, outs = self._ints(inputs, "<i4"), self._ints([output], "<i4")
        tfl.OperatorStart(b)
        tfl.OperatorAddOpcodeIndex(b, 0)
        tfl.OperatorAddInputs(b, ins)
        tfl.OperatorAddOutputs(b, outs)
        tfl.OperatorAddBuiltinOptionsType(b, tfl.BuiltinOptions.FullyConnectedOptions)
        tfl.OperatorAddBuiltinOptions(b, options)
        return tfl.OperatorEnd(b)

    def _signature(self) -> int:
        tfl, b = self.tfl, self.b
        maps = []
        for name, index in ((INPUT, 0), (OUTPUT, 6)):
            text = b.CreateString(name)
            tfl.TensorMapStart(b)
            tfl.TensorMapAddName(b, text)
            tfl.TensorMapAddTensorIndex(b, index)
            maps.append(tfl.TensorMapEnd(b))
        inputs = self._vector(tfl.SignatureDefStartInputsVector, maps[:1])
        outputs = self._vector(tfl.SignatureDefStartOutputsVector, maps[1:])
        key = b.CreateString(SIGNATURE_KEY)
        tfl.SignatureDefStart(b)
        tfl.SignatureDefAddInputs(b, inputs)
        tfl.SignatureDefAddOutputs(b, outputs)
        tfl.SignatureDefAddSignatureKey(b, key)
        tfl.SignatureDefAddSubgraphIndex(b, 0)
        return tfl.SignatureDefEnd(b)

    def _subgraph(self, tensors: list[_Tensor], asymmetric_inputs: bool) -> int:
        tfl, b = self.tfl, self.b
        tensor_offsets = [self._tensor(t) for t in tensors]
        operators = [self._fully_connected((0, 1, 2), 3, tfl.ActivationFunctionType.RELU, asymmetric_inputs),
                     self._fully_connected((3, 4, 5), 6, tfl.ActivationFunctionType.NONE, asymmetric_inputs)]
        tensor_vector = self._vector(tfl.SubGraphStartTensorsVector, tensor_offsets)
        operator_vector = self._vector(tfl.SubGraphStartOperatorsVector, operators)
        inputs, outputs = self._ints([0], "<i4"), self._ints([6], "<i4")
        name = b.CreateString("main")
        tfl.SubGraphStart(b)
        tfl.SubGraphAddTensors(b, tensor_vector)
        tfl.SubGraphAddInputs(b, inputs)
        tfl.SubGraphAddOutputs(b, outputs)
        tfl.SubGraphAddOperators(b, operator_vector)
        tfl.SubGraphAddName(b, name)
        return tfl.SubGraphEnd(b)

    def _operator_code(self, version: int) -> int:
        tfl, b = self.tfl, self.b
        code = tfl.BuiltinOperator.FULLY_CONNECTED
        tfl.OperatorCodeStart(b)
        tfl.OperatorCodeAddDeprecatedBuiltinCode(b, code)  # read by runtimes before TF 2.4
        tfl.OperatorCodeAddBuiltinCode(b, code)
        tfl.OperatorCodeAddVersion(b, version)
        return tfl.OperatorCodeEnd(b)

    def write(self, tensors: list[_Tensor], metadata_json: str, description: str, op_version: int,
              asymmetric_inputs: bool = False) -> bytes:
        tfl, b = self.tfl, self.b
        subgraph = self._subgraph(tensors, asymmetric_inputs)
        self.buffers.append(metadata_json.encode("utf-8"))
        metadata_name = b.CreateString(METADATA_KEY)
        tfl.MetadataStart(b)
        tfl.MetadataAddName(b, metadata_name)
        tfl.MetadataAddBuffer(b, len(self.buffers) - 1)
        metadata = tfl.MetadataEnd(b)
        vectors = {
            "codes": self._vector(tfl.ModelStartOperatorCodesVector, [self._operator_code(op_version)]),
            "subgraphs": self._vector(tfl.ModelStartSubgraphsVector, [subgraph]),
            "signatures": self._vector(tfl.ModelStartSignatureDefsVector, [self._signature()]),
            "metadata": self._vector(tfl.ModelStartMetadataVector, [metadata]),
            "buffers": self._vector(tfl.ModelStartBuffersVector,
                                    [self._buffer(data) for data in self.buffers]),
        }
        text = b.CreateString(description)
        tfl.ModelStart(b)
        tfl.ModelAddVersion(b, 3)
        tfl.ModelAddOperatorCodes(b, vectors["codes"])
        tfl.ModelAddSubgraphs(b, vectors["subgraphs"])
        tfl.ModelAddDescription(b, text)
        tfl.ModelAddBuffers(b, vectors["buffers"])
        tfl.ModelAddMetadata(b, vectors["metadata"])
        tfl.ModelAddSignatureDefs(b, vectors["signatures"])
        b.Finish(tfl.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def to_tflite(
    model: Model,
    path: str | os.PathLike,
    *,
    precision: str = "fp32",
    calibration: Any = None,
    per_channel: bool = False,
    margin: float = DEFAULT_MARGIN,
    signed_weights: bool = False,
    with_preprocessing: bool = False,
) -> Path:
    """Export ``model`` to a TFLite file at ``path`` (written atomically) and return the path.

    The file takes preprocessed input; the preprocessing is recorded in its ``lastedge`` metadata.

    Parameters
    ----------
    model : Model
        The model (or a fitted estimator with ``to_model()``).
    path : str or os.PathLike
        Destination ending in ``.tflite``.
    precision : {"fp32", "int8", "int8-dynamic", "int16x8"}
        "int8": full integer (int8 input and output, symmetric int8 weights) calibrated on
        ``calibration``; "int16x8": the same with int16 activations (symmetric, zero point 0)
        and int64 biases, TFLite's 16x8 mode (``int16x8``), for models whose decisions have
        little margin; "int8-dynamic": int8 weights and float32 input, output and thresholds,
        each FULLY_CONNECTED a hybrid kernel that quantizes its input row as it runs (over the
        row's own range), no calibration data.
    calibration : array, "int8" and "int16x8" only
        Raw rows [n_rows, n_features] (before preprocessing; a batch of images
        [n_rows, H, W(, 3)] is flattened), >= 20 rows.
    per_channel : bool, "int8" only
        One weight scale per atom and per output, not one per tensor. "int8-dynamic" files are
        per-tensor: hybrid kernels take per-channel scales from FULLY_CONNECTED version 12, which
        the legacy tflite-runtime 2.14 lacks.
    margin : float, "int8" and "int16x8" only
        Widen each calibrated range by this fraction of its width.
    signed_weights, with_preprocessing : bool
        ONNX only; True raises ``ValueError`` (the options of both writers are one set, checked
        by ``options``).
    """
    options = check_export_options("tflite", precision, calibration=calibration, per_channel=per_channel,
                                   margin=margin, signed_weights=signed_weights,
                                   with_preprocessing=with_preprocessing)
    tfl = check_schema()
    model = check_model(model)
    path = check_output_path(path, ".tflite", "the output")
    ranges = Ranges.measure(model, options.calibration, options.margin) if precision in STATIC else None
    metadata = build_metadata(model, precision=options.file_precision, preprocess_in_graph=False,
                              quantization=options.quantization("int8", ranges))
    description = (f"lastedge soft-threshold classifier: {model.n_features} features, "
                   f"{model.n_atoms} atoms, {model.n_outputs} output(s), {precision}")
    data = _Writer(tfl).write(_file_tensors(model, options, ranges), dumps(metadata), description,
                              op_version=OP_VERSIONS[precision],
                              asymmetric_inputs=precision == "int8-dynamic")
    write_atomically(path, lambda f: f.write(data))
    return path
