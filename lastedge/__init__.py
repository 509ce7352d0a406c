"""lastedge: train LAST soft-thresholding classifiers, export them, run them on small devices.

The package is three parts, one folder each: ``lastedge.train`` (workstation, torch),
``lastedge.export`` (ONNX / TFLite writers) and ``lastedge.runtime`` (numpy inference and
device backends). ``runtime.Model`` is the one in-memory form of a trained model.
"""

__version__ = "0.1.0"
