"""Classify rows on a device: load a model file, read rows from a CSV file or stdin, print labels.

    python on_device.py model.tflite rows.csv          # or model.onnx / model.npz
    cat rows.csv | python on_device.py model.tflite    # rows from stdin

Each CSV line is one sample: n_features numbers separated by commas (no header). Prints one
predicted label per line, then a latency summary of the per-row calls on stderr.
Needs numpy, plus ai-edge-litert (pip install "lastedge[tflite]") for .tflite files or
onnxruntime ("lastedge[onnx]") for .onnx files; .npz files run on numpy alone.
"""

import sys
import time

import numpy as np

from lastedge.runtime import load


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    model = load(argv[0], threads=1)
    rows = np.loadtxt(argv[1] if len(argv) == 2 else sys.stdin, delimiter=",", ndmin=2)

    latencies_us = []
    for row in rows:
        start = time.perf_counter()
        label = model.predict(row[None, :])[0]  # one sample at a time, as a sensor would deliver
        latencies_us.append((time.perf_counter() - start) * 1e6)
        print(label)

    if latencies_us:
        p50, p99 = np.percentile(latencies_us, [50, 99])
        print(f"{len(rows)} rows on {model.backend} ({model.precision}): "
              f"p50 {p50:.0f} us, p99 {p99:.0f} us, max {max(latencies_us):.0f} us per row",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
