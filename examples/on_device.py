"""Classify rows on a device: load a model file, read rows from a CSV file or stdin, print labels.

    python on_device.py model.tflite rows.csv          # or model.onnx / model.npz
    cat rows.csv | python on_device.py model.tflite    # rows from stdin

Each CSV line is one sample: n_features numbers separated by commas (no header). Rows are
classified as they arrive, so a sensor can pipe into it: one predicted label per line on stdout,
flushed at once, then a latency summary of the per-row calls on stderr. A line that is not a
valid row stops it with "line N: why" on stderr and exit status 1.
Needs numpy, plus ai-edge-litert (pip install "lastedge[tflite]") for .tflite files or
onnxruntime ("lastedge[onnx]") for .onnx files; .npz files run on numpy alone.
"""

import os
import sys
import time

import numpy as np

from lastedge.runtime import load


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        model = load(argv[0], threads=1)
        source = open(argv[1], "rb") if len(argv) == 2 else sys.stdin.buffer  # decoded line by line
    except (OSError, ValueError, ImportError) as err:  # no such file, a damaged model, no backend
        print(err, file=sys.stderr)
        return 1

    latencies_us = []
    try:
        with source:
            for number, line in enumerate(source, 1):
                if not line.strip():
                    continue
                try:
                    row = np.array(line.decode().split(","), dtype=np.float64)[None, :]
                    start = time.perf_counter()
                    label = model.predict(row)[0]  # one sample at a time, as a sensor delivers them
                except ValueError as err:  # not UTF-8 text, a bad number, the wrong width, NaN
                    print(f"line {number}: {err}", file=sys.stderr)
                    return 1
                latencies_us.append((time.perf_counter() - start) * 1e6)
                print(label, flush=True)
    except BrokenPipeError:  # the reader stopped early (``... | head -1``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0

    if latencies_us:
        p50, p99 = np.percentile(latencies_us, [50, 99])
        print(f"{len(latencies_us)} rows on {model.backend} ({model.precision}): "
              f"p50 {p50:.0f} us, p99 {p99:.0f} us, max {max(latencies_us):.0f} us per row",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
