"""Predictors: one loaded model file on one backend, all with the same face.

- ``NumpyPredictor``: a ``.npz`` model on numpy (the universal fallback, and the yardstick);
- ``OnnxPredictor``: a ``.onnx`` file on onnxruntime;
- ``TFLitePredictor``: a ``.tflite`` file on LiteRT (``ai_edge_litert``) or legacy ``tflite_runtime``.

Each has ``predict``, ``decision_function``, ``classes``, ``n_features``; each applies the
preprocessing recorded in the file unless the graph contains it; each accepts any real dtype and
any number of rows (zero included); full-integer TFLite files get their input quantized and their
scores dequantized with the scale and zero point stored in the file (dynamic-range int8 files take
and give float32: their kernels quantize each row as they run). Backend packages are passed in by
``loading.load``, which imports them lazily.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .blas import blas_threads, openblas
from .bounded import read_regular
from .cpu import read_cpuinfo, signed_weights_saturate
from .files import METADATA_KEY, parse_header
from .model import Model, check_input, check_scores, count_macs, in_row_blocks, labels_from_scores
from .native_log import without_native_lines
from .onnx_check import check_onnx_graph
from .preprocess import Preprocess
from .tflite_graph import checked_tflite_header


class Predictor:
    """A loaded model: ``predict(X)`` and ``decision_function(X)`` for raw inputs ``X`` [n, n_features].

    Attributes: ``path``, ``backend``, ``classes``, ``n_features``, ``n_outputs``, ``precision``
    (``"fp32"``, ``"int8"``, dynamic-range int8 files included, or ``"int16x8"``), ``threads``, ``n_atoms`` and
    ``macs_per_sample`` (None if the file does not record ``n_atoms``),
    ``preprocess``, ``preprocess_in_graph`` and ``image_shape`` ((H, W[, 3]) of the training
    images, None when the file does not record one).
    """

    backend = "abstract"

    def __init__(self, *, path: Path | None, classes: np.ndarray, n_features: int, n_outputs: int,
                 preprocess: Preprocess, preprocess_in_graph: bool, threads: int,
                 precision: str, n_atoms: int | None,
                 image_shape: tuple[int, ...] | None = None) -> None:
        self.path = path
        self.classes = classes
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        self.preprocess = preprocess
        self.preprocess_in_graph = preprocess_in_graph
        self.threads = threads
        self.precision = precision
        self.n_atoms = n_atoms
        self.image_shape = image_shape

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores: [n] for binary models (> 0 means ``classes[1]``), [n, n_classes] otherwise.

        ``X`` must be 2-D, real, finite (NaN/inf raise ``ValueError``), ``n_features`` wide.
        Large batches run in blocks of rows (``model.in_row_blocks``), one backend call each.
        """
        X = check_input(X, self.n_features)
        if len(X) == 0:
            scores = np.empty((0, self.n_outputs), dtype=np.float32)
        else:
            scores = check_scores(in_row_blocks(self._score_raw, X, max(self.n_features, self.n_atoms or 0)))
        return scores[:, 0] if self.n_outputs == 1 else scores

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels, [n]."""
        return labels_from_scores(self.classes, self.decision_function(X))

    def _score_raw(self, X: np.ndarray) -> np.ndarray:
        """Scores of raw rows: the file's preprocessing unless its graph holds it, one backend call
        whose scores must be [rows, n_outputs] (a graph can declare one shape and compute another)."""
        Z = X.astype(np.float32, copy=False) if self.preprocess_in_graph else self.preprocess.apply(X)
        scores = self._scores(np.ascontiguousarray(Z))
        if scores.shape != (len(X), self.n_outputs):
            raise ValueError(f"{self.path} gave scores of shape {scores.shape} for {len(X)} row(s), "
                             f"not ({len(X)}, {self.n_outputs})")
        return scores

    def _scores(self, Z: np.ndarray) -> np.ndarray:
        """Raw scores [n, n_outputs] of preprocessed float32 rows (n >= 1)."""
        raise NotImplementedError

    @property
    def macs_per_sample(self) -> int | None:
        """Multiply-accumulates of one inference, when the file records ``n_atoms``."""
        return None if self.n_atoms is None else count_macs(self.n_features, self.n_atoms, self.n_outputs)

    @property
    def file_size(self) -> int | None:
        """Size of the model file in bytes (None for a predictor built in memory)."""
        return os.path.getsize(self.path) if self.path is not None else None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({str(self.path)!r}, backend={self.backend!r}, "
                f"precision={self.precision!r}, threads={self.threads})")


class NumpyPredictor(Predictor):
    """A ``runtime.Model`` on numpy; ``threads`` caps numpy's OpenBLAS during each call."""

    backend = "numpy"

    def __init__(self, model: Model, *, path: Path | None = None, threads: int = 1) -> None:
        super().__init__(path=path, classes=model.classes, n_features=model.n_features,
                         n_outputs=model.n_outputs, preprocess=model.preprocess,
                         preprocess_in_graph=False, threads=threads, precision="fp32",
                         n_atoms=model.n_atoms, image_shape=model.image_shape)
        self.model = model

    def decision_function(self, X: Any) -> np.ndarray:
        blas = openblas()
        if blas is None or blas.get() == self.threads:  # the common case, kept cheap
            return self.model.decision_function(X)
        with blas_threads(self.threads):
            return self.model.decision_function(X)


class OnnxPredictor(Predictor):
    """A ``.onnx`` file on onnxruntime (``threads`` = intra-op threads). Unless ``trust``, its
    graph is checked to be one lastedge writes (``onnx_check``) before onnxruntime reads it."""

    backend = "onnxruntime"

    def __init__(self, path: Path, ort: ModuleType, *, threads: int = 1, trust: bool = False) -> None:
        content = read_regular(path)  # checked, then handed over: what runs is what was checked
        if not trust:
            check_onnx_graph(content, str(path))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 4  # errors are raised (and reported once) by us
        self._errors = _onnxruntime_errors(ort)
        try:
            # onnxruntime prints its provider fallback for a broken file on stdout (it would spoil
            # a command's --json output); the error that follows is raised here either way
            with contextlib.redirect_stdout(io.StringIO()):
                session = ort.InferenceSession(content, options, providers=["CPUExecutionProvider"])
            metadata = session.get_modelmeta().custom_metadata_map.get(METADATA_KEY)
        except (*self._errors, UnicodeDecodeError) as err:
            raise ValueError(f"{path} is not a readable ONNX model ({_first_line(err)})") from None
        header = parse_header(metadata, str(path))
        if header.weights == "int8":
            _warn_if_signed_weights_saturate(path)
        inputs, outputs = session.get_inputs(), session.get_outputs()
        n_features = inputs[0].shape[-1] if len(inputs) == 1 and inputs[0].shape else None
        if not isinstance(n_features, int) or inputs[0].type != "tensor(float)":
            raise ValueError(f"{path}: expected one float input [batch, n_features], got "
                             f"{[(i.name, i.type, i.shape) for i in inputs]}")
        header.check_graph(n_features, outputs[0].shape[-1] if outputs and outputs[0].shape else None,
                           str(path))
        super().__init__(path=path, classes=header.classes, n_features=n_features,
                         n_outputs=header.n_outputs, preprocess=header.preprocess,
                         preprocess_in_graph=header.preprocess_in_graph, threads=threads,
                         precision=header.precision or "unknown",
                         n_atoms=header.n_atoms,
                         image_shape=header.image_shape(n_features))
        self.session = session
        self._input, self._output = inputs[0].name, outputs[0].name

    def _scores(self, Z: np.ndarray) -> np.ndarray:
        try:
            return self.session.run([self._output], {self._input: Z})[0]
        except self._errors as err:  # a damaged graph can load and fail only when run
            raise ValueError(f"{self.path} cannot be run ({_first_line(err)})") from None


class SignedWeightsWarning(UserWarning):
    """An ONNX file with int8 (signed) weights loaded on a CPU whose onnxruntime kernels for them
    may saturate (x86 without VNNI), or on one whose features cannot be read."""


def _warn_if_signed_weights_saturate(path: Path) -> None:
    saturate = signed_weights_saturate(read_cpuinfo(), platform.machine())
    if saturate is False:
        return
    why = ("this x86 CPU has no VNNI" if saturate else
           "cannot tell whether this x86 CPU has VNNI")
    warnings.warn(f"{path} has signed int8 weights and {why}: onnxruntime's int8 kernels may "
                  "saturate and give wrong scores; check its accuracy here ('lastedge predict' on "
                  "labelled rows) or re-export without --signed-weights", SignedWeightsWarning,
                  stacklevel=3)


class TFLitePredictor(Predictor):
    """A ``.tflite`` file on a TFLite interpreter class (``threads`` = ``num_threads``). Unless
    ``trust``, its graph is checked to be one lastedge writes (``tflite_graph``) before the
    interpreter reads it; its structure always is (``tflite_check``)."""

    def __init__(self, path: Path, interpreter: type, backend: str, *, threads: int = 1,
                 trust: bool = False) -> None:
        content = read_regular(path)  # checked, then handed over: what runs is what was checked
        header = checked_tflite_header(content, str(path), trust)
        if backend == "tflite_runtime" and header.precision == "int16x8":
            raise ValueError(f"{path} is an int16x8 file, which tflite-runtime 2.14 computes differently "
                             "from LiteRT (80 % of digits predictions agreed): run it on LiteRT "
                             "(pip install ai-edge-litert) or export int8")
        try:
            with without_native_lines():  # the interpreter's XNNPACK INFO line at every load
                interp = interpreter(model_content=content, num_threads=threads)
                interp.allocate_tensors()
            inputs, outputs = interp.get_input_details(), interp.get_output_details()
        except (ValueError, RuntimeError, SystemError, IndexError) as err:
            raise ValueError(f"{path} is not a readable TFLite model ({_first_line(err)})") from None
        except MemoryError:  # the legacy interpreter's, for a tensor larger than memory
            raise ValueError(f"{path} needs more memory than there is to load") from None
        self._in, self._out = _feedable(path, inputs, outputs)
        self.backend = backend
        self._interp = interp
        n_features = int(self._in["shape"][-1])
        header.check_graph(n_features, int(self._out["shape"][-1]) if len(self._out["shape"]) else None,
                           str(path))
        super().__init__(path=path, classes=header.classes, n_features=n_features,
                         n_outputs=header.n_outputs, preprocess=header.preprocess,
                         preprocess_in_graph=header.preprocess_in_graph, threads=threads,
                         precision=header.precision or _tflite_precision(interp),
                         n_atoms=header.n_atoms,
                         image_shape=header.image_shape(n_features))
        self._batch = int(self._in["shape"][0])

    def _scores(self, Z: np.ndarray) -> np.ndarray:
        try:
            if len(Z) != self._batch:
                self._interp.resize_tensor_input(self._in["index"], [len(Z), self.n_features])
                self._interp.allocate_tensors()
                self._batch = len(Z)
            self._interp.set_tensor(self._in["index"], quantize(Z, self._in))
            self._interp.invoke()
        except RuntimeError as err:  # a damaged graph can load and fail only when run
            raise ValueError(f"{self.path} cannot be run ({_first_line(err)})") from None
        except MemoryError:  # the legacy interpreter's (a file loaded with trust=True)
            raise ValueError(f"{self.path} needs more memory than there is to run") from None
        return dequantize(self._interp.get_tensor(self._out["index"]), self._out)


def _tflite_precision(interpreter: Any) -> str:
    """What a TFLite file without a recorded precision is: ``"int8"`` when any tensor is 8-bit
    (full-integer files, and dynamic-range ones whose float input meets int8 weights, which is
    what ONNX dynamic files are called too), else ``"fp32"``."""
    integers = (np.int8, np.uint8)
    return "int8" if any(d["dtype"] in integers for d in interpreter.get_tensor_details()) else "fp32"


def _feedable(path: Path, inputs: list[dict], outputs: list[dict]) -> tuple[dict, dict]:
    """The details of a TFLite graph's one input [batch, n_features] and of its first output, each
    float32 or integers with a positive finite scale. The legacy interpreter loads what LiteRT
    refuses: a scalar input (IndexError), an input scale of 0 (every row quantized alike)."""
    if len(inputs) != 1 or len(inputs[0]["shape"]) != 2 or not outputs:
        raise ValueError(f"{path}: expected one input [batch, n_features], got "
                         f"{[(i['name'], i['shape'].tolist()) for i in inputs]}")
    for role, detail in (("input", inputs[0]), ("output", outputs[0])):
        if detail["dtype"] == np.float32:
            continue
        scale = detail["quantization"][0]
        if not np.issubdtype(detail["dtype"], np.integer) or not 0 < scale < np.inf:
            raise ValueError(f"{path}: the {role} tensor is {np.dtype(detail['dtype'])} with scale "
                             f"{scale}; expected float32, or integers with a positive finite scale")
    return inputs[0], outputs[0]


def quantize(Z: np.ndarray, detail: dict) -> np.ndarray:
    """Float32 rows to the tensor's dtype with its (scale, zero_point); float tensors pass through."""
    dtype = detail["dtype"]
    if dtype == np.float32:
        return Z
    scale, zero_point = detail["quantization"]
    info = np.iinfo(dtype)
    return np.clip(np.round(Z / np.float32(scale)) + zero_point, info.min, info.max).astype(dtype)


def dequantize(Q: np.ndarray, detail: dict) -> np.ndarray:
    """Integer scores back to float32 with the tensor's (scale, zero_point)."""
    if Q.dtype == np.float32:
        return Q
    scale, zero_point = detail["quantization"]
    return (Q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)


def _onnxruntime_errors(ort: ModuleType) -> tuple[type[BaseException], ...]:
    """The exceptions onnxruntime raises for a file it cannot load (they derive from Exception)."""
    state = ort.capi.onnxruntime_pybind11_state
    names = ("InvalidProtobuf", "InvalidGraph", "InvalidArgument", "Fail", "NotImplemented",
             "RuntimeException")
    return (RuntimeError, *(getattr(state, name) for name in names if hasattr(state, name)))


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
