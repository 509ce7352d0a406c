"""Milliseconds per step of the SGD baseline's descent (``SGDSoftThresholdClassifier._descend``),
this checkout's against an earlier commit's (by default the last one that stepped by autograd and
``torch.optim``), median of several runs.

    python benchmarks/sgd_step.py [--before fd22565] [--steps 2000] [--repeats 5]

The earlier commit's ``train/`` is checked out in a temporary git worktree and imported in place of
this one's, in a subprocess; each of the runs starts one subprocess per side (a warm-up run, then
the timed one), the sides in turn. One torch thread, float32, minibatches of
10 rows, as a default fit runs; no objective records or monitor (those cost the same on both sides).
The cases: one binary head of 50 atoms on 144 features (12x12 patches), ten one-vs-all heads of 50
atoms on digits' 64 features, and one shared dictionary of 50 atoms for digits' 10 classes (a
layout the baseline does not fit, but which its descent steps on alike).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arguments import positive_int

ROOT = Path(__file__).resolve().parent.parent
AUTOGRAD_COMMIT = "fd22565"  # main before the closed-form steps
CASES = ("binary, 50 atoms, 144 features", "10-class one-vs-all, 10 x 50 atoms, 64 features",
         "10-class shared, 50 atoms, 64 features")
OPTIMIZERS = ("sgd", "adam")


def problem(case: str, train):
    """``(estimator, Z, targets, groups, U0, v0)`` of one case, prepared by ``train`` (the
    ``lastedge.train`` package of one side) as a fit would."""
    import numpy as np
    from sklearn.datasets import load_digits, make_classification

    if case.startswith("binary"):
        X, y = make_classification(n_samples=1000, n_features=144, n_informative=20, random_state=0)
    else:
        X, y = load_digits(return_X_y=True)
    shared = "shared" in case
    estimator = train.LASTClassifier(n_atoms=50, multiclass="shared") if shared else \
        train.SGDSoftThresholdClassifier(n_atoms=50)
    X, y_index = estimator._validate_fit_data(X, y)
    return (estimator, *(a for i, a in enumerate(estimator._prepare(X, y_index, np.random.RandomState(0)))
                         if i != 1))


def step_times(steps: int, repeats: int) -> dict[str, list[float]]:
    """``{"case / optimizer": [ms per step of each run]}`` of the ``lastedge.train`` imported."""
    import torch
    from lastedge import train
    from lastedge.train.base import flushes_denormals

    threads, flushing = torch.get_num_threads(), flushes_denormals()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    try:
        return {f"{case} / {optimizer}": spent for case in CASES
                for optimizer, spent in _case_times(train, case, steps, repeats).items()}
    finally:
        torch.set_num_threads(threads)
        torch.set_flush_denormal(flushing)


def _case_times(train, case: str, steps: int, repeats: int) -> dict[str, list[float]]:
    """``{optimizer: [ms per step of each run]}`` of one case (one torch thread, denormals flushed,
    as in a fit)."""
    import torch

    _, *arrays = problem(case, train)
    Z, targets, groups, U0, v0 = (torch.as_tensor(a) for a in arrays)
    sgd = train.SGDSoftThresholdClassifier(n_atoms=50)
    r = float(Z.norm(dim=1).square().mean().sqrt())
    times = {}
    for optimizer in OPTIMIZERS:
        sgd.optimizer = optimizer
        spent = []
        for _ in range(repeats + 1):  # the first is a warm-up
            start = time.perf_counter()
            sgd._descend(Z, targets, groups, U0, v0, 0.01, r, 0.0, steps, 0, progress=None, watch=None)
            spent.append(1e3 * (time.perf_counter() - start) / steps)
        times[optimizer] = spent[1:]
    return times


def import_train_from(train_dir: Path) -> None:
    """Import ``train_dir`` as ``lastedge.train`` (before anything imports this checkout's)."""
    import lastedge

    spec = importlib.util.spec_from_file_location("lastedge.train", train_dir / "__init__.py",
                                                  submodule_search_locations=[str(train_dir)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["lastedge.train"] = module
    spec.loader.exec_module(module)
    lastedge.train = module


def side(train_dir: Path | None, steps: int, repeats: int) -> dict[str, list[float]]:
    """One side's times, measured in a subprocess importing ``train_dir`` (None: this checkout's)."""
    command = [sys.executable, __file__, "--measure", "--steps", str(steps), "--repeats", str(repeats)]
    if train_dir is not None:
        command += ["--train-dir", str(train_dir)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=AUTOGRAD_COMMIT,
                        help=f"commit to compare with (default {AUTOGRAD_COMMIT}, the autograd descent)")
    parser.add_argument("--steps", type=positive_int, default=2000, help="steps per run (default 2000)")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed runs per case (default 5)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--train-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        if args.train_dir is not None:
            import_train_from(args.train_dir)
        print(json.dumps(step_times(args.steps, args.repeats)))
        return
    print(f"before: {args.before}; load: {uptime()}")
    before: dict[str, list[float]] = {}
    after: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(worktree), args.before],
                       check=True)
        try:
            for _ in range(args.repeats):  # the sides in turn, so that both see the same load
                for times, train_dir in ((before, worktree / "train"), (after, None)):
                    for key, spent in side(train_dir, args.steps, 1).items():
                        times.setdefault(key, []).extend(spent)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=True)
    print(f"{args.steps} steps a run, median of {args.repeats} runs, 1 torch thread; load after: {uptime()}\n")
    print("| case | optimizer | before ms/step | after ms/step | speed-up |")
    print("|---|---|---|---|---|")
    for key in after:
        case, optimizer = key.split(" / ")
        old, new = statistics.median(before[key]), statistics.median(after[key])
        print(f"| {case} | {optimizer} | {old:.3f} | {new:.3f} | {old / new:.1f}x |")


if __name__ == "__main__":
    main()
