"""The options of ``shared_vs_ovr.py``: data sets, models, training budget, seeds and output."""

from __future__ import annotations

import argparse
from pathlib import Path

import arguments
from lastedge.train import LASTClassifier
from lastedge.train.settings import FULL_BATCH_LIMIT, MINIBATCH_SIZE
from paper_data import DEFAULT_DATA

DESCRIPTION = "LAST with one shared dictionary against one-vs-all, at equal total atoms, on MNIST and USPS."
DATASETS = ("mnist", "usps")
MULTICLASS = {"shared": "shared dictionary", "ovr": "one-vs-all"}
DEFAULT_TOTAL_ATOMS = [100, 200, 400, 800, 1600, 4000]
QUICK = {"train_rows": 2000, "total_atoms": [100, 200], "max_dca_iter": 2, "inner_iter": 50}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The run's options, with --quick's budgets and the library's defaults filled in."""
    p = argparse.ArgumentParser(description=DESCRIPTION)
    _add_training_options(p)
    _add_run_options(p)
    args = p.parse_args(argv)
    if args.merge:
        if args.json:
            p.error("--merge prints its table and writes no results file: drop --json")
        return args
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
    if args.total_atoms is None:
        args.total_atoms = list(DEFAULT_TOTAL_ATOMS)
    if args.max_dca_iter is None:
        args.max_dca_iter = LASTClassifier().max_dca_iter
    bad = [t for t in args.total_atoms if t % 10]
    if bad:
        p.error(f"total atoms must be multiples of 10 (one-vs-all splits them over 10 heads), got {bad}")
    if args.parallel_fits < 1:
        p.error(f"--parallel-fits must be >= 1, got {args.parallel_fits}")
    if args.train_rows is not None and args.train_rows < 10:
        p.error(f"--train-rows must be >= 10, got {args.train_rows}")
    for name in args.datasets:
        if not (args.data / f"{name}.npz").is_file():
            p.error(f"no {name}.npz in {args.data}; pass --data")
    return args


def _choice_list(text: str, choices: tuple[str, ...] | dict[str, str], what: str) -> list[str]:
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in choices]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose {what} from {','.join(choices)}, got {text!r}")
    return names


def _seed_list(text: str) -> list[int]:
    """``"3"``, ``"0,2,5"`` or ``"16-31"`` (both ends included) as distinct seeds >= 0."""
    try:
        seeds = []
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            seeds += range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a seed, A-B or A,B,..., got {text!r}") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(f"expected distinct seeds >= 0, got {text!r}")
    return seeds


def _dataset_list(text: str) -> list[str]:
    return _choice_list(text, DATASETS, "data sets")


def _method_list(text: str) -> list[str]:
    return _choice_list(text, MULTICLASS, "methods")




def _add_training_options(p: argparse.ArgumentParser) -> None:
    """The data, the models and their training budget."""
    p.add_argument("--data", type=Path, default=DEFAULT_DATA,
                   help="folder holding mnist.npz and usps.npz (default ../shared/data from the repo)")
    p.add_argument("--datasets", type=_dataset_list, default=list(DATASETS),
                   help="comma separated subset of mnist,usps (default both)")
    p.add_argument("--total-atoms", type=arguments.atom_counts, default=None,
                   help="total atoms per model, multiples of 10 (default 100,200,400,800,1600,4000; "
                        "--quick: 100,200)")
    p.add_argument("--train-rows", type=int, default=None, metavar="N",
                   help="stratified subsample of N training rows (default all; --quick: 2000)")
    p.add_argument("--max-dca-iter", type=int, default=None,
                   help="DCA iterations (default the library's; --quick: 2)")
    p.add_argument("--inner-iter", type=int, default=None,
                   help="inner solver iterations per DCA step (default the library's; --quick: 50)")
    p.add_argument("--batch-size", type=int, default=None,
                   help=f"minibatch rows of the inner solver (default the library's: {MINIBATCH_SIZE} "
                        f"from {FULL_BATCH_LIMIT} rows)")
    p.add_argument("--n-jobs", type=int, default=1, help="torch threads during fit (default 1)")
    p.add_argument("--device", default="cpu", help="torch device to train on, e.g. cuda (default cpu)")
    p.add_argument("--tol", type=float, default=LASTClassifier().tol,
                   help="DCA's stopping tolerance (default the library's: on minibatches 1e-4 of objective "
                        "per training row, in full batch 1e-3 of parameter change)")
    p.add_argument("--mu", type=float, default=0.0,
                   help="weight decay (mu/2)||U||^2 on the atoms of both models (default 0, the paper's objective)")
    p.add_argument("--mu-grid", type=lambda text: [float(v) for v in text.split(",")], default=None,
                   metavar="MU,MU,...", help="instead of --mu: per data set and method, choose mu among these "
                                             "on a 10 %% hold-out of the training rows, at the first total of "
                                             "--total-atoms, and use it at every total"),
    p.add_argument("--methods", type=_method_list, default=list(MULTICLASS),
                   help="comma separated subset of shared,ovr (default both)")
    p.add_argument("--shift-augment", type=int, default=0, metavar="K",
                   help="train also on copies of every training image moved 1..K pixels up, down, left "
                        "and right (default 0: none)")
    p.add_argument("--early-stopping", action="store_true",
                   help="hold out 10 %% of the training rows and keep the best validation iterate")
    p.add_argument("--inner-solver", default="auto", choices=["auto", "adam", "lbfgs", "subgradient"],
                   help="LAST's inner solver (default auto)")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """Seeds, parallel fits, output files and --merge."""
    p.add_argument("--quick", action="store_true",
                   help="tiny run to check the script: 2000 train rows, atoms 100,200, 2 DCA x 50 inner "
                        "iterations (explicit options still win)")
    p.add_argument("--seed", type=_seed_list, default=[0], metavar="S|A-B|A,B,...",
                   help="random_state of every model and the subsample; several seeds repeat every fit "
                        "per seed and add a summary over seeds (default 0)")
    p.add_argument("--parallel-fits", type=int, default=1, metavar="P",
                   help="fits at a time, in joblib worker processes (default 1: one after another in this one)")
    p.add_argument("--json", type=arguments.output_file, default=None, metavar="PATH",
                   help="also write the results here")
    p.add_argument("--plot", type=arguments.figure_file, default=None, metavar="PATH",
                   help="draw test error against MACs per sample here (e.g. .png)")
    p.add_argument("--merge", type=Path, nargs="+", default=None, metavar="JSON",
                   help="run nothing: join these --json files into one table (and --plot)")
