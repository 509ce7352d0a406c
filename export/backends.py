"""Run an exported file in its real interpreter: onnxruntime, ai-edge-litert, legacy tflite-runtime.

Each runner takes the rows the file's input expects (float32) and returns float32 scores
[n, n_outputs], running them in blocks of rows as the runtime does; int8 TFLite inputs and outputs
are (de)quantized with the parameters stored in the file. Interpreters are imported lazily;
``available(fmt)`` lists those that can be imported here.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

import numpy as np

from lastedge.runtime.backends import dequantize, quantize
from lastedge.runtime.model import in_row_blocks
from lastedge.runtime.native_log import without_native_lines

Runner = Callable[[str, np.ndarray], np.ndarray]

# backend name -> (format, module providing it)
BACKENDS = {
    "onnxruntime": ("onnx", "onnxruntime"),
    "ai-edge-litert": ("tflite", "ai_edge_litert.interpreter"),
    "tflite-runtime": ("tflite", "tflite_runtime.interpreter"),
}


def file_format(path: str | Path) -> str:
    """``"onnx"`` or ``"tflite"`` from the file name; ``ValueError`` for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".onnx", ".tflite"):
        raise ValueError(f"unknown model file format {suffix or Path(path).name!r}; "
                         "expected .onnx or .tflite")
    return suffix[1:]


def available(fmt: str) -> list[str]:
    """Names of the importable backends for ``fmt``."""
    names = []
    for name, (backend_format, module) in BACKENDS.items():
        if backend_format != fmt:
            continue
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        names.append(name)
    return names


def _run_onnxruntime(path: str, rows: np.ndarray, width: int) -> np.ndarray:
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return in_row_blocks(lambda block: session.run(None, {name: block})[0], rows, width)


def _run_tflite(module: str, path: str, rows: np.ndarray, width: int) -> np.ndarray:
    with without_native_lines():
        interpreter = importlib.import_module(module).Interpreter(model_path=path)
        inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
        interpreter.allocate_tensors()

    def scores(block: np.ndarray) -> np.ndarray:
        if tuple(interpreter.get_input_details()[0]["shape"]) != block.shape:  # first and last blocks
            with without_native_lines():
                interpreter.resize_tensor_input(inp["index"], list(block.shape))
                interpreter.allocate_tensors()
        interpreter.set_tensor(inp["index"], quantize(block, inp))
        interpreter.invoke()
        return dequantize(interpreter.get_tensor(out["index"]), out)

    return in_row_blocks(scores, rows, width)


def run(backend: str, path: str | Path, rows: np.ndarray, width: int | None = None) -> np.ndarray:
    """Scores [n, n_outputs] of the file at ``path`` for ``rows`` on ``backend``.

    ``width`` sizes the blocks of rows: the widest per-row intermediate (``Model.row_width``),
    the rows' own width when not given.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    fmt = BACKENDS[backend][0]
    if file_format(path) != fmt:  # its interpreter would call the file garbled
        raise ValueError(f"backend {backend!r} reads .{fmt} files, not .{file_format(path)} ({path})")
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    width = rows.shape[1] if width is None else width
    if backend == "onnxruntime":
        return np.asarray(_run_onnxruntime(str(path), rows, width), dtype=np.float32)
    return np.asarray(_run_tflite(BACKENDS[backend][1], str(path), rows, width), dtype=np.float32)


def onnxruntime_ops(path: str | Path) -> list[str]:
    """The ops onnxruntime actually runs for an ONNX file, after its graph optimizations
    (``ORT_ENABLE_EXTENDED``, which fuses QDQ pairs into integer kernels such as ``QGemm``)."""
    import tempfile

    import onnx
    import onnxruntime

    with tempfile.TemporaryDirectory(prefix="lastedge-ort-") as folder:
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(Path(folder) / "optimized.onnx")
        onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return [node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node]
