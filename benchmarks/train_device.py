"""LAST's training time on the CPU against a torch GPU, the same fits side by side.

    python benchmarks/train_device.py [--devices cpu,cuda] [--threads N] [--dataset mnist]
                                      [--total-atoms 400,1600] [--methods shared,ovr]
                                      [--max-dca-iter 4] [--inner-iter 300] [--batch-size 1000]
                                      [--shift-augment K] [--repeats 1] [--quick] [--json PATH]
                                      [--data ../shared/data]

Each (method, total atoms) is fitted on every device with the same seed and budget (the paper's
digits setting: center-l2 rows, Adam on minibatches, ``mu`` = 0). Reported per fit: seconds per
DCA iteration (the median gap between the iterations' time stamps, so start-up and the final
model copy are left out), the whole fit's seconds, and the test error. A GPU fit is not
bit-identical to a CPU fit (another summation order), so its error may differ by noise. Methods:
one shared dictionary and one-vs-all; on one device the table compares their time per DCA
iteration at the same total atoms. One small
fit per device runs first and is not timed (CUDA's context and kernels load there). Prints one
Markdown table with each device's speed-up over the first device.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arguments import positive_int
import arguments
import harness
import report
from lastedge.train import LASTClassifier
from lastedge.train.base import thread_count, usable_device
from lastedge.train.curves import training_curve
from paper_data import DEFAULT_DATA, check_data, digits_task

QUICK = {"total_atoms": [20], "max_dca_iter": 2, "inner_iter": 10, "batch_size": 100}
QUICK_ROWS = 1000

COLUMNS: list[report.Column] = [
    ("method", "method", "{}"), ("total atoms", "total_atoms", "{}"), ("device", "device", "{}"),
    ("s / DCA iteration", "s_per_iteration", "{:.3f}"), ("speed-up", "speed_up", "{:.1f}x"),
    ("fit s", "fit_s", "{:.1f}"), ("DCA iterations", "n_iter", "{}"), ("test error %", "error_pct", "{:.2f}"),
]


# The estimator options of each method.
METHODS = {"shared": {"multiclass": "shared"}, "ovr": {"multiclass": "ovr"}}


def build(method: str, total_atoms: int, n_classes: int, device: str, args: argparse.Namespace,
          image_side: int) -> LASTClassifier:
    options = METHODS[method]
    return LASTClassifier(harness.atoms_per_head(options["multiclass"], total_atoms, n_classes), **options, preprocess="center-l2", device=device,
                          n_jobs=args.threads, max_dca_iter=args.max_dca_iter, inner_iter=args.inner_iter,
                          batch_size=args.batch_size, tol=0.0, n_iter_no_change=args.max_dca_iter,
                          shift_augment=args.shift_augment,
                          image_shape=(image_side, image_side), random_state=0, verbose=0)


def seconds_per_iteration(clf: LASTClassifier) -> float:
    """Median gap between consecutive DCA iterations' time stamps (the start-up before the first
    stamp is no gap between iterations); a fit of one iteration has only its stamp."""
    stamps = [row["time_s"] for row in training_curve(clf)]
    return float(np.median(np.diff(stamps))) if len(stamps) > 1 else float(stamps[0])


def timed_fit(clf: LASTClassifier, data: tuple[np.ndarray, ...]) -> dict[str, Any]:
    X_train, y_train, X_test, y_test = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tol = 0, no patience: every fit runs max_dca_iter iterations
        start = time.perf_counter()
        clf.fit(X_train, y_train)
        fit_s = time.perf_counter() - start
    return {"fit_s": fit_s, "s_per_iteration": seconds_per_iteration(clf), "n_iter": clf.n_iter_,
            "error_pct": 100.0 * float(np.mean(clf.predict(X_test) != y_test))}


def warm_up(device: str, data: tuple[np.ndarray, ...], args: argparse.Namespace, side: int) -> None:
    """One tiny fit, not timed: the first use of a GPU loads its context and kernels."""
    X, y = data[0][:500], data[1][:500]
    small = argparse.Namespace(**{**vars(args), "max_dca_iter": 1, "inner_iter": 5, "shift_augment": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build("shared", 20, len(np.unique(y)), device, small, side).fit(X, y)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    # a clear error before any fit (e.g. cuda on a CPU-only torch); "auto" becomes what it picks
    devices = [str(usable_device(device)) for device in args.devices]
    data = digits_task(args.dataset, args.data)
    if args.quick:
        data = (data[0][:QUICK_ROWS], data[1][:QUICK_ROWS], data[2][:QUICK_ROWS], data[3][:QUICK_ROWS])
    data = (data[0].reshape(len(data[0]), -1), data[1], data[2].reshape(len(data[2]), -1), data[3])
    side = int(round(np.sqrt(data[0].shape[1])))
    n_classes = len(np.unique(data[1]))
    for device in devices:
        warm_up(device, data, args, side)
    rows = []
    for method in args.methods:
        for total in args.total_atoms:
            first = None
            for device in devices:
                fits = [timed_fit(build(method, total, n_classes, device, args, side), data)
                        for _ in range(args.repeats)]
                row = {"method": method, "total_atoms": total, "device": device_name(device, args.threads),
                       "n_iter": fits[0]["n_iter"], **medians(fits, ("fit_s", "s_per_iteration", "error_pct"))}
                first = first or row["s_per_iteration"]
                row["speed_up"] = first / row["s_per_iteration"]
                rows.append(row)
                print(report.markdown_table([row], COLUMNS).splitlines()[-1], flush=True)
    return rows


def medians(fits: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, float]:
    return {key: float(np.median([fit[key] for fit in fits])) for key in keys}


def device_name(device: str, threads: int) -> str:
    """The device as the table shows it: the GPU's name, or the CPU's thread count."""
    if torch.device(device).type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return f"{device} ({plural(thread_count(threads), 'thread')})"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _method_list(text: str) -> list[str]:
    names = text.split(",")
    if not all(name in METHODS for name in names):
        raise argparse.ArgumentTypeError(f"choose methods from {','.join(METHODS)}, got {text!r}")
    return names


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--devices", type=lambda text: text.split(","), default=["cpu", "cuda"],
                   help="comma separated torch devices (or auto); the first is the speed-up's reference "
                        "(default cpu,cuda)")
    p.add_argument("--threads", type=int, default=-1,
                   help="torch threads for the CPU fits (default -1: all cores)")
    p.add_argument("--dataset", default="mnist", choices=["mnist", "usps"])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding mnist.npz and usps.npz")
    p.add_argument("--total-atoms", type=arguments.atom_counts, default=[400, 1600])
    p.add_argument("--methods", type=_method_list, default=["shared", "ovr"],
                   help=f"comma separated subset of {','.join(METHODS)} (default shared,ovr)")
    p.add_argument("--max-dca-iter", type=positive_int, default=4)
    p.add_argument("--inner-iter", type=positive_int, default=300)
    p.add_argument("--batch-size", type=positive_int, default=1000)
    p.add_argument("--shift-augment", type=int, default=0, metavar="K")
    p.add_argument("--repeats", type=positive_int, default=1, help="fits per device and size; medians are reported")
    p.add_argument("--quick", action="store_true",
                   help="check the script runs: 1000 rows, 20 atoms, 2 DCA x 10 Adam steps on minibatches of 100")
    p.add_argument("--json", type=arguments.output_file, default=None, metavar="PATH",
                   help="also write the results here")
    args = p.parse_args(argv)
    check_data(p, args.data, f"{args.dataset}.npz")
    if args.quick:
        vars(args).update(QUICK)
    try:
        rows = run(args)
    except ValueError as error:  # e.g. a device this machine cannot use
        p.exit(2, f"{p.prog}: error: {error}\n")
    print()
    print(report.markdown_table(rows, COLUMNS))
    print(f"\n{args.dataset}, {args.max_dca_iter} DCA iterations x {args.inner_iter} Adam steps on minibatches of "
          f"{args.batch_size}, shifted copies: {args.shift_augment or 'none'}; CPU fits on "
          f"{plural(thread_count(args.threads), 'thread')}.")
    if args.json:  # the fits' own budget, not the accuracy benchmarks' (harness.Budget)
        budget = {name: getattr(args, name) for name in ("max_dca_iter", "inner_iter", "batch_size")}
        report.write_json(args.json, "train_device", args, rows, extra={"sgd_iter": None, "last_budget": budget})


if __name__ == "__main__":
    main()
