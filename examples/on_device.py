"""Classify rows on a device: load a model file, read rows from a CSV file or stdin, print labels.

    python on_device.py model.tflite rows.csv          # or model.onnx / model.npz
    cat rows.csv | python on_device.py model.tflite    # rows from stdin

Each CSV line is one sample: n_features numbers separated by commas (a first line of column
names, none of them a number, is a header and skipped). Rows are
classified as they arrive, so a sensor can pipe into it: one predicted label per line on stdout,
flushed at once, then a latency summary of the per-row calls on stderr (at the end of the rows,
or at Ctrl-C, which stops a stream that has none, with exit status 130). A line that is not a
valid row stops it with "line N: why" on stderr and exit status 1.
Needs numpy, plus ai-edge-litert (pip install "lastedge[tflite]") for .tflite files or
onnxruntime ("lastedge[onnx]") for .onnx files; .npz files run on numpy alone.
"""

import os
import sys
import time
from typing import BinaryIO

import numpy as np

from lastedge.runtime import Predictor, load


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        model = load(argv[0], threads=1)
        source = open(argv[1], "rb") if len(argv) == 2 else sys.stdin.buffer  # decoded line by line
    except (OSError, ValueError, ImportError) as err:  # no such file, a damaged model, no backend
        print(_one_line(err), file=sys.stderr)
        return 1
    if len(argv) == 1 and sys.stdin.isatty():  # else it waits silently, as if it hung
        print(f"reading rows from the terminal: {model.n_features} comma-separated numbers a line, Ctrl-D ends",
              file=sys.stderr, flush=True)

    latencies_us = []
    try:
        with source:
            status = classify(model, source, latencies_us)
    except BrokenPipeError:  # the reader stopped early (``... | head -1``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except KeyboardInterrupt:  # Ctrl-C: how a sensor's endless stream is stopped
        status = 130
    if status != 1 and latencies_us:
        p50, p99 = np.percentile(latencies_us, [50, 99])
        rows = f"{len(latencies_us)} row{'s' if len(latencies_us) > 1 else ''}"
        print(f"{rows} on {model.backend} ({model.precision}): "
              f"p50 {p50:.0f} us, p99 {p99:.0f} us, max {max(latencies_us):.0f} us per row",
              file=sys.stderr)
    return status


def _one_line(err: Exception) -> str:
    """The error as one line; a file that cannot be opened is named without its errno."""
    if isinstance(err, FileNotFoundError) and err.filename:
        return f"no such file: {err.filename}"
    if isinstance(err, OSError) and err.filename and err.strerror:
        return f"cannot open {err.filename}: {err.strerror}"
    return str(err)


def classify(model: Predictor, source: BinaryIO, latencies_us: list[float]) -> int:
    """Print each line's label as it arrives, recording each call's latency; 1 at a bad line."""
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8-sig")  # -sig: a spreadsheet's byte-order mark is no number
            if number == 1 and _is_header(text):
                continue
            row = np.array(text.split(","), dtype=np.float64)[None, :]
            start = time.perf_counter()
            label = model.predict(row)[0]  # one sample at a time, as a sensor delivers them
        except ValueError as err:  # not UTF-8 text, a bad number, the wrong width, NaN
            print(f"line {number}: {err}", file=sys.stderr)
            return 1
        latencies_us.append((time.perf_counter() - start) * 1e6)
        print(label, flush=True)
    return 0


def _is_header(text: str) -> bool:
    """Whether a CSV line names columns (a spreadsheet's first line): none of its fields is a number."""
    def is_number(field: str) -> bool:
        try:
            float(field)
        except ValueError:
            return False
        return True

    return not any(is_number(field) for field in text.split(","))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
