"""``lastedge train`` started by ``torchrun`` on several ranks: one data-parallel LAST fit.

``torchrun`` sets ``WORLD_SIZE``, ``RANK`` and the rendezvous address in every rank's environment;
with ``WORLD_SIZE`` above 1 the command joins the process group (gloo on CPUs, nccl on GPUs), each
rank reads its block of the rows (``runtime.data_shards``), ``LASTClassifier.fit`` trains on all
blocks together (``lastedge.train.distributed``), the accuracies are summed over the ranks, and
rank 0 alone writes the model and prints the summary.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import Any

from .budget import budget_given
from .common import CommandError

WORLD_VARIABLE = "WORLD_SIZE"
# What the collectives' errors say when another rank ended (gloo's, nccl's)
LOST_RANK = ("Connection closed by peer", "Connection reset by peer", "remote worker", "NCCL communicator was aborted")


def launched() -> bool:
    """Whether ``torchrun`` (or another launcher setting ``WORLD_SIZE``) started several ranks."""
    try:
        return int(os.environ.get(WORLD_VARIABLE, "1")) > 1
    except ValueError:
        raise ValueError(f"{WORLD_VARIABLE} must be a number of ranks, got "
                         f"{os.environ[WORLD_VARIABLE]!r}") from None


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse what a distributed run cannot do: the baselines, grids and searches (their hold-out
    choices would be made on each rank's rows apart)."""
    refused = [option for option, given in (
        (f"--method {args.method}", args.method != "last"), ("--mu with several values", len(args.mu or ()) > 1),
        ("--auto", args.auto), ("--jobs", args.jobs != 1), ("--cluster", args.cluster is not None),
        ("a --budget-* option", budget_given(args))) if given]
    if refused:
        raise ValueError(f"{', '.join(refused)} cannot run under torchrun ({WORLD_VARIABLE}="
                         f"{os.environ[WORLD_VARIABLE]}): a distributed run trains one LAST model")


@contextlib.contextmanager
def process_group(args: argparse.Namespace) -> Iterator[None]:
    """The ranks' process group while the command runs: nccl when ``--device`` is a GPU (each
    rank on the GPU of its ``LOCAL_RANK``), else gloo."""
    import torch.distributed as dist

    check_arguments(args)
    on_gpu = args.device.startswith("cuda")
    if on_gpu:
        import torch

        if args.device == "cuda":
            args.device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
        torch.cuda.set_device(torch.device(args.device))  # nccl's collectives run on the current GPU
    started = not dist.is_initialized()
    if started:
        dist.init_process_group("nccl" if on_gpu else "gloo")
    try:
        yield
    except RuntimeError as error:  # gloo's and nccl's errors are plain RuntimeErrors
        if not any(sign in str(error) for sign in LOST_RANK):
            raise
        raise CommandError(f"another rank of this run failed (its error is above); rank "
                           f"{dist.get_rank()} lost it: {str(error).splitlines()[0][:200]}") from None
    finally:
        if started:
            dist.destroy_process_group()


def is_writer() -> bool:
    """Whether this process writes files and prints: rank 0, or the only process."""
    if not launched():
        return True
    from lastedge.train.distributed import rank

    return rank() == 0


def load_block(args: argparse.Namespace) -> Any:
    """This rank's block of the rows of ``--data`` (each part: training, and test if any)."""
    from lastedge.runtime.data_shards import load_dataset_block
    from lastedge.train.distributed import rank, world_size

    return load_dataset_block(args.data, rank(), world_size(), label_column=args.label_column,
                              random_state=args.seed, image_size=args.image_size)


def record_ranks(summary: dict[str, Any]) -> None:
    """Count every rank's rows in the summary's data record, and the ranks."""
    import numpy as np

    from lastedge.train.distributed import all_gather_rows, world_size

    facts = summary["data"]
    counts = all_gather_rows(np.array([[facts["train_rows"], facts["test_rows"]]], dtype=np.int64)).sum(axis=0)
    facts.update(train_rows=int(counts[0]), test_rows=int(counts[1]), ranks=world_size())


def metrics_over_ranks(estimator: Any, data: Any) -> dict[str, Any]:
    """``train_report.metrics`` over every rank's rows: accuracies and sparsity summed over the ranks."""
    import numpy as np

    from lastedge.train.distributed import all_gather_rows

    has_test = bool(all_gather_rows(np.array([int(data.has_test)])).any())
    rows = data.X_test if has_test else data.X_train
    counts = np.array([[
        np.sum(estimator.predict(data.X_train) == data.y_train) if len(data.X_train) else 0, len(data.X_train),
        np.sum(estimator.predict(data.X_test) == data.y_test) if len(data.X_test) else 0, len(data.X_test),
        estimator.feature_sparsity(rows) * len(rows) if len(rows) else 0.0, len(rows)]], dtype=np.float64)
    total = all_gather_rows(counts).sum(axis=0)
    return {"train_accuracy": round(float(total[0] / total[1]), 5),
            "test_accuracy": round(float(total[2] / total[3]), 5) if has_test else None,
            "fit_seconds": round(estimator.fit_time_, 3),
            "feature_sparsity": round(float(total[4] / max(total[5], 1)), 5)}
