"""Full-batch LAST fits with L-BFGS-B's BLAS on one thread (the trainer's setting) against the
BLAS's own thread count, side by side, alternating, median of several fits.

    python benchmarks/lbfgs_blas_threads.py [--repeats 3] [--max-dca-iter 3] [--n-jobs 1] [--textures]

L-BFGS-B (scipy) updates vectors of a few ten thousand entries through scipy's OpenBLAS; with
OpenBLAS's threads those small calls cost more than the sub-problem's own matrix products.
``LBFGSSolver.blas_threads`` holds the limit; this script sets it to None for the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from arguments import positive_int
from paper_data import DEFAULT_DATA, check_data, texture_task
from lastedge.train import LASTClassifier
from lastedge.train.curves import head_histories
from lastedge.train.lbfgs import LBFGSSolver


def tasks(textures: bool, data: str) -> dict[str, tuple[np.ndarray, np.ndarray, dict]]:
    """name -> (X_train, y_train, estimator settings)."""
    X, y = load_digits(return_X_y=True)
    X_train, _, y_train, _ = train_test_split(X, y, stratify=y, random_state=0)
    found = {"digits, 10 heads x 25 atoms": (X_train, y_train, {"n_atoms": 25, "preprocess": "center-l2"})}
    if textures:
        X_train, y_train, _, _ = texture_task("bark-woodgrain", data)
        found["bark vs woodgrain, 200 atoms"] = (X_train, y_train, {"n_atoms": 200, "preprocess": "l2"})
    return found


def timed_fit(X: np.ndarray, y: np.ndarray, settings: dict, max_dca_iter: int, n_jobs: int,
                blas_threads: int | None) -> tuple[float, float]:
    """(fit seconds, final objective) of one fit with L-BFGS-B's BLAS limited to ``blas_threads``."""
    LBFGSSolver.blas_threads = blas_threads
    clf = LASTClassifier(**settings, inner_solver="lbfgs", max_dca_iter=max_dca_iter, tol=0,
                         n_jobs=n_jobs, random_state=0, verbose=0)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_dca_iter stops every fit early on purpose
        clf.fit(X, y)
    seconds = time.perf_counter() - start
    heads = head_histories(clf.history_)
    return seconds, sum(head[-1]["objective"] for head in heads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=positive_int, default=3, help="fits per setting (default 3)")
    parser.add_argument("--max-dca-iter", type=positive_int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--textures", action="store_true", help="also bark vs woodgrain (slower)")
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    args = parser.parse_args()
    if args.textures:
        check_data(parser, args.data, "brodatz_usc_sipi.npz")
    default = LBFGSSolver.blas_threads
    print(f"{os.cpu_count()} CPUs; torch threads {args.n_jobs}; {args.max_dca_iter} DCA iterations per "
          f"fit, median of {args.repeats} fits, the two settings alternating\n")
    print("| task | BLAS default s | BLAS 1 thread s | speed-up | objective, relative difference |")
    print("|---|---|---|---|---|")
    try:
        for name, (X, y, settings) in tasks(args.textures, args.data).items():
            runs: dict[int | None, list[tuple[float, float]]] = {None: [], 1: []}
            for _ in range(args.repeats):
                for threads in runs:
                    runs[threads].append(timed_fit(X, y, settings, args.max_dca_iter, args.n_jobs,
                                                     threads))
            free, one = (statistics.median(s for s, _ in runs[t]) for t in (None, 1))
            # summation order differs with the thread count, so the paths drift apart slightly
            drift = abs(runs[None][0][1] - runs[1][0][1]) / abs(runs[1][0][1])
            print(f"| {name} | {free:.1f} | {one:.1f} | {free / one:.1f}x | {drift:.1e} |")
    finally:
        LBFGSSolver.blas_threads = default


if __name__ == "__main__":
    main()
