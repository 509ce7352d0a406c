"""Where onnxruntime spends a large batch: each node's time in the fp32, static and dynamic int8 files.

    python benchmarks/onnx_node_times.py [--batch 10000] [--runs 5] [--threads 1] [--weights uint8]

The MNIST-shaped random model of ``benchmarks/latency.py`` (784 features, 10 heads x 400 atoms),
exported as ``latency.py`` does; each file runs ``--runs`` timed calls after one warm-up with
onnxruntime's profiler on, and prints its median wall time per call and the median kernel time of
every node, slowest first.

``--weights int8`` writes the int8 files with signed weights (``to_onnx(signed_weights=True)``,
``lastedge export --signed-weights``) instead of the default uint8 ones, to measure what the
default costs on this CPU. uint8 weights keep every x86 CPU's answers right (see
``export/onnx_int8.py``), but leave MLAS no VNNI kernel (VNNI multiplies unsigned by signed bytes).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from arguments import positive_int
from latency import mnist_model
from lastedge.export import to_onnx
from lastedge.runtime import Model

FILES = ("m.onnx", "m-int8.onnx", "m-dyn.onnx")


def write_files(folder: Path, model: Model, X: np.ndarray, weights: str) -> None:
    """``FILES`` in ``folder``: ``model`` in fp32, static int8 (calibrated on 500 rows of ``X``) and
    dynamic int8, whose weights are ``weights`` ("uint8" as exported, or "int8")."""
    signed = weights == "int8"
    to_onnx(model, folder / "m.onnx")
    to_onnx(model, folder / "m-int8.onnx", precision="int8", calibration=X[:500], signed_weights=signed)
    to_onnx(model, folder / "m-dyn.onnx", precision="int8-dynamic", signed_weights=signed)


def node_times(path: Path, batch: np.ndarray, runs: int, threads: int) -> tuple[float, list[tuple[str, str, float]]]:
    """(median seconds a call, [(op type, node name, median kernel seconds)] slowest first)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.enable_profiling = True
    options.profile_file_prefix = str(path.with_suffix(""))
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: batch}
    session.run(None, feed)  # warm-up: its kernel times are dropped below
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        session.run(None, feed)
        walls.append(time.perf_counter() - started)
    kernels = defaultdict(list)
    for event in json.loads(Path(session.end_profiling()).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            kernels[(event["args"]["op_name"], event["name"].removesuffix("_kernel_time"))].append(event["dur"])
    nodes = [(op, name, float(np.median(durations[1:])) / 1e6) for (op, name), durations in kernels.items()]
    return float(np.median(walls)), sorted(nodes, key=lambda node: -node[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=10000, help="rows a call")
    parser.add_argument("--runs", type=positive_int, default=5, help="timed calls a file")
    parser.add_argument("--threads", type=positive_int, default=1, help="onnxruntime's intra-op threads")
    parser.add_argument("--weights", choices=("uint8", "int8"), default="uint8",
                        help="the int8 files' weight type (uint8: what the exporter writes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model, X = mnist_model(np.random.default_rng(0))
        write_files(folder, model, X, args.weights)
        batch = np.ascontiguousarray(np.resize(X, (args.batch, X.shape[1])))
        print(f"batch {args.batch}, {args.threads} thread(s), int8 files' weights {args.weights}")
        print("| file | node | op | kernel ms (median) |\n|---|---|---|---|")
        for name in FILES:
            wall, nodes = node_times(folder / name, batch, args.runs, args.threads)
            print(f"| {name} | (whole call) | | {wall * 1e3:.1f} ({args.batch / wall:,.0f} rows/s) |")
            for op, node, seconds in nodes:
                print(f"| | {node} | {op} | {seconds * 1e3:.1f} |")


if __name__ == "__main__":
    main()
