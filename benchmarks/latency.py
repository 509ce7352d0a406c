"""Latency of every backend against a bare numpy expression, measured side by side in one run.

    python benchmarks/latency.py [--runs-1 2000] [--runs-10k 5]

Two models: digits-shaped (n = 64, 10 heads x 20 atoms built from digits rows, center-l2) and
MNIST-shaped (n = 784, 10 heads x 400 atoms, random weights, no preprocessing); each as .npz,
.onnx and .tflite, fp32, int8 (static, calibrated on 500 rows) and dynamic int8 (8-bit weights,
activations quantized as the file runs), and the two ONNX int8 files again with signed weights
(``--signed-weights``: fast on x86 with VNNI, wrong without it, where loading them warns); threads 1 and 2; batch 1 and 10000. The bare expression
``np.maximum(X @ D - 1, 0) @ W`` (plus argmax, like ``predict``) runs on the same arrays as the
yardstick. Prints the full bench tables, then the headline numbers:
numpy backend / bare throughput at batch 10000, numpy backend overhead per call at batch 1, the
best backend's single-sample p50 and the best batch-10000 throughput as a share of the machine's
float32 matmul peak: the fastest of numpy's sgemm (in a fresh process with OPENBLAS_CORETYPE
unset, so that OpenBLAS runs this CPU's own kernel, which the output names), onnxruntime and
LiteRT on 2000 x 2000 products.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from arguments import positive_int
from lastedge.export import to_onnx, to_tflite
from lastedge.runtime import Model, Preprocess, bench, format_table, load
from lastedge.runtime.backends import NumpyPredictor
from lastedge.runtime.blas import blas_threads

FILES = ("m.npz", "m.onnx", "m.tflite", "m-int8.onnx", "m-int8.tflite", "m-dyn.onnx", "m-dyn.tflite",
         "m-int8-signed.onnx", "m-dyn-signed.onnx")
INT8_FILES = tuple(f for f in FILES if "-" in f)  # static and dynamic int8


def digits_model(rng: np.random.Generator) -> tuple[Model, np.ndarray]:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    step = Preprocess("center-l2")
    picks = np.concatenate([rng.choice(np.flatnonzero(y == c), 20, replace=False) for c in range(10)])
    atoms = 1.5 * step.apply(X[picks])  # unit rows: an atom fires when the cosine exceeds 2/3
    return Model(atoms.T, np.eye(10)[np.repeat(np.arange(10), 20)], np.arange(10),
                 preprocess=step), X.astype(np.float32)


def mnist_model(rng: np.random.Generator) -> tuple[Model, np.ndarray]:
    n, heads, atoms = 784, 10, 400
    D = rng.standard_normal((n, heads * atoms)).astype(np.float32) / np.sqrt(n)
    W = np.kron(np.eye(heads), np.abs(rng.standard_normal((atoms, 1)))).astype(np.float32)
    return Model(D, W, np.arange(heads)), rng.uniform(0, 2, (2000, n)).astype(np.float32)


def write_files(model: Model, X: np.ndarray, folder: Path) -> dict[str, Path]:
    model.save(folder / "m.npz")
    to_onnx(model, folder / "m.onnx")
    to_tflite(model, folder / "m.tflite")
    to_onnx(model, folder / "m-int8.onnx", precision="int8", calibration=X[:500])
    to_tflite(model, folder / "m-int8.tflite", precision="int8", calibration=X[:500])
    to_onnx(model, folder / "m-dyn.onnx", precision="int8-dynamic")
    to_tflite(model, folder / "m-dyn.tflite", precision="int8-dynamic")
    to_onnx(model, folder / "m-int8-signed.onnx", precision="int8", calibration=X[:500], signed_weights=True)
    to_onnx(model, folder / "m-dyn-signed.onnx", precision="int8-dynamic", signed_weights=True)
    return {name: folder / name for name in FILES}


class BareExpression:
    """``np.maximum(X @ D - 1, 0) @ W``, nothing else: the yardstick for the numpy backend."""

    def __init__(self, model: Model) -> None:
        self.D, self.W = model.dictionary, model.weights

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(X @ self.D - 1, 0) @ self.W


def bare_predictor(model: Model, threads: int) -> NumpyPredictor:
    """A predictor whose calls are the bare expression (with the same BLAS thread cap)."""
    predictor = NumpyPredictor(model, threads=threads)
    predictor.model = BareExpression(model)
    predictor.backend = "bare np expr"
    return predictor


SGEMM_PEAK = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits
size, threads = int(sys.argv[1]), int(sys.argv[2])
A = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
best = float("inf")
with threadpool_limits(threads, user_api="blas"):
    for _ in range(5):
        start = time.perf_counter()
        A @ A
        best = min(best, time.perf_counter() - start)
kernels = sorted({i.get("architecture") or "?" for i in threadpool_info() if i["user_api"] == "blas"})
print(json.dumps({"gflops": 2 * size**3 / best / 1e9, "kernel": ", ".join(kernels)}))
"""


def sgemm_peak(threads: int, size: int = 2000) -> tuple[float, str]:
    """The machine's float32 matmul peak, GFLOP/s (best of 5 products of ``size`` x ``size``
    matrices), and the BLAS kernel that ran them. Measured in a fresh process with
    ``OPENBLAS_CORETYPE`` unset, so that OpenBLAS picks this CPU's own kernel: an override to an
    older one (e.g. Haswell's AVX2 on an AVX-512 CPU) would put the peak below what LiteRT and
    onnxruntime reach, and their shares above 100 %."""
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_CORETYPE"}
    done = subprocess.run([sys.executable, "-c", SGEMM_PEAK, str(size), str(threads)], env=env,
                          check=True, capture_output=True, text=True)
    measured = json.loads(done.stdout)
    return measured["gflops"], measured["kernel"]


def engine_peaks(folder: Path, threads: int, size: int = 2000) -> dict[str, float]:
    """Each engine's float32 matmul throughput, GFLOP/s: numpy's sgemm (``sgemm_peak``), and
    onnxruntime's and LiteRT's on a ``size`` x ``size`` model file (its first MatMul is the
    square product; best of 5 calls on ``size`` rows). The largest is the machine's peak here:
    XNNPACK's kernels can outrun OpenBLAS's, so numpy's alone does not bound the others."""
    rng = np.random.default_rng(0)
    square = Model(rng.standard_normal((size, size), dtype=np.float32), np.ones((size, 1), np.float32), [0, 1])
    X = rng.standard_normal((size, size), dtype=np.float32)
    peaks = {"numpy": sgemm_peak(threads, size)[0]}
    for suffix, writer in ((".onnx", to_onnx), (".tflite", to_tflite)):
        predictor = load(writer(square, folder / f"square{suffix}"), threads=threads)
        best = np.inf
        for _ in range(5):
            start = time.perf_counter()
            predictor.decision_function(X)
            best = min(best, time.perf_counter() - start)
        peaks[predictor.backend] = 2 * size**3 / best / 1e9
    return peaks


def run(name: str, model: Model, X: np.ndarray, folder: Path, runs_1: int, runs_10k: int,
        peaks: dict[int, float]) -> list[str]:
    paths = write_files(model, X, folder)
    agreement = {p.name: np.mean(load(p).predict(X[500:]) == model.predict(X[500:]))
                 for p in paths.values()}
    summary = []
    for threads in (1, 2):
        sources = [load(p, threads=threads) for p in paths.values()]
        sources.append(bare_predictor(model, threads))
        rows_1 = bench(sources, batch_sizes=(1,), runs=runs_1, warmup=50, X=X)
        rows_10k = bench(sources, batch_sizes=(10000,), runs=runs_10k, warmup=1, X=X)
        print(f"\n== {name}, {threads} thread(s), batch 1\n{format_table(rows_1)}")
        print(f"\n== {name}, {threads} thread(s), batch 10000\n{format_table(rows_10k)}")
        by_1, by_10k = ({Path(r["file"]).name: r["batches"][0] for r in rows}
                        for rows in (rows_1, rows_10k))
        ratio = by_10k["m.npz"]["throughput_per_s"] / by_10k["<bare np expr>"]["throughput_per_s"]
        overhead = by_1["m.npz"]["p50_us"] - by_1["<bare np expr>"]["p50_us"]
        for precision in ("fp32", "int8"):
            names = [f for f in FILES if (f in INT8_FILES) == (precision == "int8")]
            best_1 = min(names, key=lambda f: by_1[f]["p50_us"])
            best_10k = max(names, key=lambda f: by_10k[f]["throughput_per_s"])
            gflops = by_10k[best_10k]["throughput_per_s"] * 2 * model.macs_per_sample / 1e9
            share = f"{gflops / peaks[threads]:6.0%}" if precision == "fp32" else "   n/a"
            summary.append(
                f"{name:7} {threads}  {precision}  {ratio:5.2f}x  {overhead:+7.1f}  "
                f"{best_1:18} {by_1[best_1]['p50_us']:8.1f}  {best_10k:18} "
                f"{by_10k[best_10k]['throughput_per_s']:9.0f}  {share}  "
                + " ".join(f"{f}={agreement[f]:.1%}" for f in names if f in INT8_FILES))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-1", type=positive_int, default=2000, help="timed calls at batch 1")
    parser.add_argument("--runs-10k", type=positive_int, default=5, help="timed calls at batch 10000")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    summary, peaks = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"numpy's BLAS kernel: {sgemm_peak(1, 200)[1]} (OPENBLAS_CORETYPE unset)")
        for threads in (1, 2):
            engines = engine_peaks(Path(tmp), threads)
            peaks[threads] = max(engines.values())
            print(f"float32 matmul, {threads} thread(s), GFLOP/s: "
                  + ", ".join(f"{engine} {gflops:.0f}" for engine, gflops in engines.items()))
        for name, build in (("digits", digits_model), ("mnist", mnist_model)):
            folder = Path(tmp) / name
            folder.mkdir()
            summary += run(name, *build(rng), folder, args.runs_1, args.runs_10k, peaks)
    print("\nmodel   thr prec  npz/bare  +us@1  best@1 (p50 us)               best@10k (samples/s)"
          "         %peak (fp32)  int8 agreement with fp32 numpy")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
