"""A large batch in one backend call against the runtime's blocks of rows, side by side.

    python benchmarks/row_blocks.py [--rows 10000] [--repeats 3] [--calls 3] [--threads 1]

The MNIST-shaped model of ``latency.py`` (n = 784, 10 heads x 400 atoms) as .npz, .onnx and
.tflite, fp32 and int8. For each file, "one call" hands the whole preprocessed batch to the backend
at once (for the .npz file, the bare expression ``np.maximum(X @ D - 1, 0) @ W`` with the same
BLAS thread cap), and "blocks" is
``predictor.decision_function``, which scores at most ``runtime.model.BLOCK_ROWS`` rows per call.
Each (file, way) runs in a fresh process, ``--repeats`` times in alternating order: the peak
resident memory it gains over the loaded, warmed-up predictor, and the median seconds per batch.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from arguments import positive_int
from latency import bare_predictor, mnist_model, write_files
from lastedge.runtime import load
from lastedge.runtime.model import BLOCK_ROWS

WAYS = ("one call", "blocks")


def measure(path: str, way: str, rows: int, calls: int, threads: int) -> tuple[float, float]:
    """(median seconds per batch, peak RSS gained in MiB) of ``rows`` rows, in this process."""
    predictor = load(path, threads=threads)
    X = np.random.default_rng(1).random((rows, predictor.n_features), dtype=np.float32)
    X *= 2  # in place: no transient copy raises the peak before it is read
    if way == "blocks":
        score = predictor.decision_function
    elif predictor.backend == "numpy":
        score = bare_predictor(predictor.model, threads).decision_function
    else:
        score = predictor._scores  # the whole batch in one backend call (no preprocessing here)
    score(X[:1])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        score(X)
        seconds.append(time.perf_counter() - start)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return float(np.median(seconds)), grown / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=positive_int, default=10000, help="rows per batch")
    parser.add_argument("--repeats", type=positive_int, default=3, help="fresh processes per file and way")
    parser.add_argument("--calls", type=positive_int, default=3, help="timed batches per process")
    parser.add_argument("--threads", type=int, default=1, help="backend threads")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model, X = mnist_model(np.random.default_rng(0))
        paths = write_files(model, X, Path(tmp))
        with context.Pool(1, maxtasksperchild=1) as pool:
            for repeat in range(args.repeats):
                for name, path in paths.items():
                    for way in WAYS if repeat % 2 == 0 else WAYS[::-1]:
                        results.setdefault((name, way), []).append(pool.apply(
                            measure, (str(path), way, args.rows, args.calls, args.threads)))
    print(f"{args.rows} rows, {args.threads} thread(s), blocks of {BLOCK_ROWS} rows; "
          f"medians over {args.repeats} processes x {args.calls} batches")
    print(f"{'file':15} {'one call s':>10} {'blocks s':>9} {'speed-up':>8} "
          f"{'one call MiB':>12} {'blocks MiB':>10}")
    for name in paths:
        (one_s, one_mib), (blocks_s, blocks_mib) = (np.median(results[name, way], axis=0) for way in WAYS)
        print(f"{name:15} {one_s:10.3f} {blocks_s:9.3f} {one_s / blocks_s:7.2f}x "
              f"{one_mib:12.0f} {blocks_mib:10.0f}")


if __name__ == "__main__":
    main()
