"""``load(path)``: any file lastedge produced, as a ``Predictor`` on the lightest backend available.

The file kind comes from its name and first bytes; backend packages are imported here, lazily,
and a missing one raises ``ImportError`` naming the extra to install.

Threads default to 1: these models are one small pair of matrix products per sample, so a second
thread buys little and, when another process wants that core, stalls the calls. Measure a device
with ``lastedge bench --threads N`` before raising it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from .backends import NumpyPredictor, OnnxPredictor, Predictor, TFLitePredictor
from .files import sniff
from .model import Model

# Backends that can run each kind of file, in order of preference.
BACKENDS = {"npz": ("numpy",), "onnx": ("onnxruntime",), "tflite": ("litert", "tflite_runtime")}
DEFAULT_THREADS = 1

_EXTRA = {
    "onnxruntime": 'onnxruntime is not installed: pip install "lastedge[onnx]"',
    "litert": 'ai-edge-litert is not installed: pip install "lastedge[tflite]"',
    "tflite_runtime": "tflite-runtime is not installed: pip install tflite-runtime "
                      "(the legacy interpreter, for 32-bit Arm; needs numpy<2)",
}


def load(path: str | os.PathLike, *, backend: str | None = None,
         threads: int | None = None, trust: bool = False) -> Predictor:
    """Load a ``.npz``, ``.onnx`` or ``.tflite`` model file as a ``Predictor``.

    Parameters
    ----------
    path : str or os.PathLike
        The model file; its kind is read from its name and checked against its content.
    backend : str, optional
        ``"numpy"`` (``.npz``), ``"onnxruntime"`` (``.onnx``), ``"litert"`` or
        ``"tflite_runtime"`` (``.tflite``); default: the first installed of ``BACKENDS[kind]``.
    threads : int, optional
        Intra-op threads of onnxruntime, ``num_threads`` of the TFLite interpreter, numpy's
        OpenBLAS threads during a call; default 1 (see the module docstring).
    trust : bool, default=False
        Skip the check that an ``.onnx`` or ``.tflite`` graph is one lastedge writes (the
        operators, shapes and precision its exporter produces, see ``graph_rules``), for a graph
        of your own. Without it, a file from elsewhere can hold a loop or an allocation of a size
        it chooses, which hang or exhaust the device (the interpreters check neither).

    Returns
    -------
    Predictor
        The file on its backend, with ``predict`` and ``decision_function``.

    Raises
    ------
    ValueError
        The file is not a model lastedge wrote, or it is damaged, or ``backend`` cannot run it.
    ImportError
        No interpreter for the file is installed; the message names the extra to install.
    """
    path = Path(path)
    kind = sniff(path)
    threads = _check_threads(threads)
    if backend is None:
        backend = _first_installed(kind)
    elif backend not in BACKENDS[kind]:
        raise ValueError(f"backend {backend!r} cannot run a .{kind} file; "
                         f"choose one of {BACKENDS[kind]}")
    if backend == "numpy":
        return NumpyPredictor(Model.load(path), path=path, threads=threads)
    if backend == "onnxruntime":
        return OnnxPredictor(path, _import(backend), threads=threads, trust=trust)
    return TFLitePredictor(path, _import(backend).Interpreter, backend, threads=threads, trust=trust)


def max_threads() -> int:
    """The most threads lastedge asks a backend (or torch) for: 64 per core, at least 256.
    Oversubscribing is allowed (a process may share a machine, or its cores be counted differently);
    the bound refuses only the absurd, which the backends do not: 2**31 reached onnxruntime and
    LiteRT as a multi-line pybind TypeError and wrapped to a negative count for OpenBLAS."""
    return max(256, 64 * (os.cpu_count() or 1))


def _check_threads(threads: int | None) -> int:
    if threads is None:
        return DEFAULT_THREADS
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= max_threads():
        raise ValueError(f"threads must be a positive integer, at most {max_threads()} (64 per "
                         f"core, at least 256), got {threads!r}")
    return threads


# Machines that ai-edge-litert has no wheels for, where tflite-runtime is the interpreter to install.
ARM_32_BIT = ("armv6l", "armv7l")


def _first_installed(kind: str) -> str:
    installed = installed_backends(kind)
    if installed:
        return installed[0]
    if kind == "tflite" and platform.machine() in ARM_32_BIT:  # "lastedge[tflite]" fails to install
        raise ImportError(f"no TFLite interpreter is installed: pip install tflite-runtime 'numpy<2' "
                          f"(ai-edge-litert has no wheels for 32-bit Arm, {platform.machine()}; "
                          "Python <= 3.11), or run the .npz model on numpy")
    raise ImportError(_EXTRA[BACKENDS[kind][0]])


def installed_backends(kind: str) -> list[str]:
    """The backends of ``BACKENDS[kind]`` (``kind``: "npz", "onnx", "tflite") installed here."""
    return [backend for backend in BACKENDS[kind] if backend == "numpy" or _installed(backend)]


def _installed(backend: str) -> bool:
    try:
        _import(backend)
    except ImportError:
        return False
    return True


def _import(backend: str):
    """The module that runs ``backend``: onnxruntime, or the module holding ``Interpreter``."""
    try:
        if backend == "onnxruntime":
            import onnxruntime as module
        elif backend == "litert":
            from ai_edge_litert import interpreter as module
        else:
            from tflite_runtime import interpreter as module
    except ImportError:
        raise ImportError(_EXTRA[backend]) from None
    return module
