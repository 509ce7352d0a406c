"""lastedge.export: write a trained ``runtime.Model`` as a minimal ONNX graph or TFLite flatbuffer.

``to_onnx`` and ``to_tflite`` write fp32 or int8 files atomically; ``assert_parity`` runs a file
in its real interpreter and proves it matches the Python model; ``describe`` lists a file's ops,
tensors and metadata; ``export_all`` writes and checks all six variants (the demo's table);
``to_c`` writes C99 for microcontrollers, compiled and proven on the host before it is kept;
``make_bundle`` writes the folder that carries a model to a device (``lastedge bundle``).
"""

from .bundle import make_bundle
from .c import to_c
from .describe import describe
from .onnx import to_onnx
from .parity import ParityError, assert_parity, measure_parity
from .tflite import to_tflite
from .variants import export_all

__all__ = ["ParityError", "assert_parity", "describe", "export_all", "make_bundle", "measure_parity", "to_c",
           "to_onnx", "to_tflite"]
