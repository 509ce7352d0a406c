"""The TFLite schema used to write and read ``.tflite`` files: the ``tflite`` package's builders.

Why this one: it is pure Python generated from TFLite's Apache-2.0 ``schema.fbs`` and published on
its own, so writing a file needs neither TensorFlow nor an interpreter (ai-edge-litert's private
``schema_py_generated`` would tie export to an interpreter wheel that some workstations lack).
Drift guard: the schema is append-only, and ``check_schema`` verifies that every enum value this
writer relies on still has its documented number and every builder it calls still exists, so a
changed package fails loudly at export time instead of writing a wrong file.
"""

from __future__ import annotations

from typing import Any

# Enum values written into files: fixed by TFLite's schema.fbs since TF 2.x.
_EXPECTED = {
    ("BuiltinOperator", "FULLY_CONNECTED"): 9,
    ("BuiltinOptions", "FullyConnectedOptions"): 8,
    ("ActivationFunctionType", "NONE"): 0,
    ("ActivationFunctionType", "RELU"): 1,
    ("TensorType", "FLOAT32"): 0,
    ("TensorType", "INT32"): 2,
    ("TensorType", "INT8"): 9,
}
_BUILDERS = (
    "ModelStart", "ModelAddSignatureDefs", "ModelAddMetadata", "SubGraphStart", "TensorStart",
    "TensorAddShapeSignature", "QuantizationParametersAddQuantizedDimension", "BufferAddData",
    "OperatorCodeAddBuiltinCode", "OperatorCodeAddDeprecatedBuiltinCode", "SignatureDefStart",
    "TensorMapStart", "MetadataStart", "FullyConnectedOptionsStart",
    "FullyConnectedOptionsAddAsymmetricQuantizeInputs", "FullyConnectedOptions", "Model",
)


def check_schema() -> Any:
    """Import the ``tflite`` schema package and verify the parts this exporter uses."""
    try:
        import tflite
    except ImportError:
        raise ModuleNotFoundError("TFLite export needs the tflite schema package: "
                                  "pip install 'lastedge[export]'", name="tflite") from None
    for (enum, name), value in _EXPECTED.items():
        if getattr(getattr(tflite, enum, None), name, None) != value:
            raise ImportError(f"tflite {getattr(tflite, '__version__', '?')} has an unexpected "
                              f"schema ({enum}.{name} != {value}); install tflite>=2.18,<3")
    missing = [name for name in _BUILDERS if not hasattr(tflite, name)]
    if missing:
        raise ImportError(f"tflite {getattr(tflite, '__version__', '?')} lacks {', '.join(missing)}; "
                          "install tflite>=2.18,<3")
    return tflite
