"""Where LAST's training time goes: profile one full-batch DCA fit on a texture task and compare
the inner loop's matrix products with the machine's measured single-thread sgemm peak.

    python benchmarks/profile_dca.py [--task bark-woodgrain] [--n-atoms 50] [--inner-solver lbfgs]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np
import torch

from arguments import positive_int
from paper_data import DEFAULT_DATA, TEXTURE_TASKS, check_data, texture_task
from lastedge.train import LASTClassifier
from lastedge.train.subproblem import Data, SubProblem


def sgemm_peak(size: int = 1024, repeats: int = 20) -> float:
    """Measured float32 matmul GFLOP/s on one torch thread (median of ``repeats``)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size**3 / np.median(times) / 1e9


def step_cost(Z: np.ndarray, n_atoms: int, repeats: int = 200) -> tuple[float, float]:
    """(seconds per sub-problem value+gradient, GFLOP in its two matrix products)."""
    m, n = Z.shape
    X = torch.as_tensor(Z, dtype=torch.float32)
    U = (X[:n_atoms].T * 1.05)[None].contiguous()
    v = torch.ones(1, n_atoms)
    targets = torch.randint(2, (1, m))
    groups = torch.zeros(1, n_atoms, 2)
    groups[0, : n_atoms // 2, 0] = 1
    groups[0, n_atoms // 2:, 1] = 1
    problem = SubProblem(Data(X, targets, groups), U, v, 100.0, 1.0, 1e-4)
    problem.value_and_grad(U, v)
    start = time.perf_counter()
    for _ in range(repeats):
        problem.value_and_grad(U, v)
    return (time.perf_counter() - start) / repeats, 2 * 2 * m * n * n_atoms / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="bark-woodgrain", choices=sorted(TEXTURE_TASKS))
    parser.add_argument("--n-atoms", type=positive_int, default=50)
    parser.add_argument("--inner-solver", default="auto", choices=["auto", "adam", "lbfgs", "subgradient"])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    args = parser.parse_args()
    check_data(parser, args.data, "brodatz_usc_sipi.npz")
    torch.set_num_threads(1)
    X_train, y_train, X_test, y_test = texture_task(args.task, args.data)
    clf = LASTClassifier(args.n_atoms, preprocess="l2", inner_solver=args.inner_solver, random_state=0,
                         verbose=0)
    profiler = cProfile.Profile()
    profiler.enable()
    clf.fit(X_train, y_train)
    profiler.disable()
    print(f"fit {clf.fit_time_:.1f} s, {clf.n_iter_} DCA iterations, test accuracy "
          f"{clf.score(X_test, y_test):.3f}\n")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    seconds, gflop = step_cost(clf.preprocess_.apply(X_train), args.n_atoms)
    peak = sgemm_peak()
    print(f"| sub-problem value+gradient | {seconds * 1e3:.2f} ms | {gflop / seconds:.1f} GFLOP/s "
          f"in its matmuls | {100 * gflop / seconds / peak:.0f} % of the {peak:.0f} GFLOP/s "
          f"single-thread sgemm peak |")


if __name__ == "__main__":
    main()
