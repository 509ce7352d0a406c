"""The trainer's two big matrix products per step, per-head batched against one product for all heads,
side by side, alternating, median of several repeats.

    python benchmarks/head_products.py [--repeats 7] [--threads 1] [--one-product-always]

Every solver step computes ``X U_h`` (the pre-activations) and ``X^T R_h`` (the gradient by the
atoms) for each head h. A batched product (``torch.matmul(X, U)`` with ``U`` [H, n, N], the
trainer's code until 2026-11-28) reads ``X`` once per head; with few atoms per head it is bound by
that reading. ``objective.head_products`` / ``objective.pull_back`` do one product with all heads'
atoms side by side, up to ``_BATCHED_FROM_ATOMS`` atoms per head; from there on they use the
batched product, which this measures with ``--one-product-always`` (one product for every shape).
The shapes are the trainer's: rows x features x heads x atoms per head.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from arguments import positive_int
from lastedge.train import objective
from lastedge.train.objective import head_products, pull_back

# (what, rows m, features n, heads H, atoms per head N)
SHAPES = [
    ("MNIST 4000 rows, full batch, 10 x 10", 4000, 784, 10, 10),
    ("MNIST 4000 rows, full batch, 10 x 40", 4000, 784, 10, 40),
    ("MNIST minibatch 1000, 10 x 40", 1000, 784, 10, 40),
    ("MNIST minibatch 1000, 10 x 100", 1000, 784, 10, 100),
    ("MNIST minibatch 1000, 10 x 200", 1000, 784, 10, 200),
    ("MNIST minibatch 1000, 10 x 400 (the paper's)", 1000, 784, 10, 400),
    ("digits, full batch, 10 x 25", 1347, 64, 10, 25),
    ("USPS minibatch 500, 10 x 20", 500, 256, 10, 20),
]


def milliseconds(works: tuple[Callable[[], torch.Tensor], ...], repeats: int) -> list[float]:
    """Median wall time in ms of each of ``works``, called in turn ``repeats`` times (after one
    warm-up call each), so that all of them see the same machine load."""
    times: list[list[float]] = [[] for _ in works]
    for work in works:
        work()
    for _ in range(repeats):
        for work, spent in zip(works, times):
            start = time.perf_counter()
            work()
            spent.append(time.perf_counter() - start)
    return [1e3 * statistics.median(spent) for spent in times]


def timings(X: torch.Tensor, U: torch.Tensor, R: torch.Tensor, repeats: int) -> list[str]:
    """Table cells: batched ms, the trainer's ms and the speed-up, for ``X U`` then ``X^T R``."""
    cells = []
    for batched, trainers in ((lambda: torch.matmul(X, U), lambda: head_products(X, U)),
                              (lambda: X.T @ R, lambda: pull_back(X, R))):
        old, new = milliseconds((batched, trainers), repeats)
        cells += [f"{old:.2f}", f"{new:.2f}", f"{old / new:.1f}x"]
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=positive_int, default=7, help="timed calls per product (default 7)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--one-product-always", action="store_true",
                        help="one product for every shape, also where the trainer uses the batched one")
    args = parser.parse_args()
    if args.one_product_always:
        objective._BATCHED_FROM_ATOMS = float("inf")
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} thread(s), float32, median of {args.repeats} calls\n")
    print("| shapes | X U: batched ms | trainer's ms | speed-up | X^T R: batched ms | trainer's ms | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for name, m, n, H, N in SHAPES:
        X = torch.randn(m, n, generator=generator)
        U = torch.randn(H, n, N, generator=generator)
        R = torch.randn(H, m, N, generator=generator)
        # the same numbers up to float summation order
        assert torch.allclose(head_products(X, U), torch.matmul(X, U), rtol=1e-4, atol=1e-3)
        assert torch.allclose(pull_back(X, R), X.T @ R, rtol=1e-4, atol=1e-3)
        print("| " + " | ".join([name, *timings(X, U, R, args.repeats)]) + " |")


if __name__ == "__main__":
    main()
