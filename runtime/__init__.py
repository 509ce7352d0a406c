"""lastedge.runtime: run trained soft-threshold classifiers with numpy (and optional device backends).

Imports numpy only; onnxruntime or a TFLite interpreter is imported lazily when a file of that kind
is loaded.
"""

__version__ = "0.1.0"  # the distribution's version (pyproject.toml reads it from here)

from .backends import Predictor, SignedWeightsWarning
from .bench import bench, format_table
from .loading import load
from .model import Model, check_input, check_output_path, write_atomically
from .preprocess import Preprocess

__all__ = ["Model", "Predictor", "Preprocess", "SignedWeightsWarning", "bench", "check_input",
           "check_output_path", "format_table", "load", "write_atomically"]
