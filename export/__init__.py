"""lastedge.export: write a trained ``runtime.Model`` as a minimal ONNX graph or TFLite flatbuffer."""
