"""Data-parallel LAST on torch.distributed: samples per second and time to a training loss, by ranks.

    python benchmarks/scaling.py [--ranks 1,2] [--images 60000] [--shift 2] [--atoms 10]
                                 [--batch-size 500] [--max-dca-iter 5] [--inner-iter 300]
                                 [--seeds 0] [--target-loss L] [--json PATH] [--data ../shared/data]

MNIST's training images (the first ``--images``, all 60000 by default) and their shifted copies
(``--shift 2``: 1 and 2 pixels up, down, left and right, 9 rows per image, 540000 rows in all),
one-vs-all heads of ``--atoms`` atoms, center-l2 rows, Adam on minibatches; every fit runs
``--max-dca-iter`` DCA iterations (no early stop). Each fit starts its ranks as processes on this
machine (gloo, one torch thread each); each rank reads its block of the rows.

- Strong scaling: the same rows and global minibatch on 1, 2, ... ranks, so the same fit up to
  the order of sums (see the distributed test); samples/s and the time until the training loss
  (objective of (P) per row, summed over heads) first reaches ``--target-loss`` (default: 1.01
  times the loss the seed's 1-rank fit ends at) should fall with more ranks.
- Weak scaling: each rank holds the rows and minibatch rows that 1 rank holds on its own (the
  rows of 1 rank: ``1 / max(ranks)`` of them, its minibatch as much of ``--batch-size``); ideal
  samples/s grows with the ranks (efficiency = samples/s / (ranks x 1-rank samples/s)).

Samples/s counts the minibatch rows of the Adam steps over the time of the DCA iterations (their
full-batch objective and line search included; start-up, reading and the model copy left out).
With ``--seeds`` several, the strong-scaling fits run once per seed and the table gives each
one's test error, to compare ranks within the spread of seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import arguments
import report
from arguments import positive_int
from paper_data import DEFAULT_DATA, check_data, digits_task

COLUMNS: list[report.Column] = [
    ("scaling", "scaling", "{}"), ("ranks", "ranks", "{}"), ("seed", "seed", "{}"), ("rows", "rows", "{:,}"),
    ("global batch", "batch", "{}"), ("samples/s", "samples_per_s", "{:,.0f}"), ("speed-up", "speed_up", "{:.2f}x"),
    ("efficiency", "efficiency", "{:.0%}"), ("fit s", "fit_s", "{:.1f}"), ("s to target loss", "to_target_s", "{}"),
    ("final loss", "final_loss", "{:.4f}"), ("test error %", "error_pct", "{:.2f}"),
]


def rank_main(rank: int, world: int, port: int, folder: str, params: dict[str, Any], rows: int) -> None:
    """One rank of a fit (started by ``torch.multiprocessing.spawn``): its block of the first
    ``rows`` rows of ``folder``'s X.npy / y.npy, the fit, and rank 0's record in result.json."""
    import torch
    import torch.distributed as dist

    from lastedge.train import LASTClassifier
    from lastedge.train.distributed import shard_rows

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    block = shard_rows(rows, rank, world)
    X = np.array(np.load(Path(folder) / "X.npy", mmap_mode="r")[block])
    y = np.load(Path(folder) / "y.npy")[block]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tol = 0: every fit runs max_dca_iter iterations
        start = time.perf_counter()
        clf = LASTClassifier(**params).fit(X, y)
        fit_s = time.perf_counter() - start
    if rank == 0:
        test = np.load(Path(folder) / "test.npz")
        heads = clf.history_ if isinstance(clf.history_[0], list) else [clf.history_]
        record = {"fit_s": fit_s, "objectives": np.sum([[r["objective"] for r in h] for h in heads], axis=0).tolist(),
                  "times": [r["time"] for r in heads[0]],
                  "error_pct": 100.0 * float(np.mean(clf.predict(test["X"]) != test["y"]))}
        (Path(folder) / "result.json").write_text(json.dumps(record))
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_fit(folder: Path, ranks: int, rows: int, params: dict[str, Any]) -> dict[str, Any]:
    """One fit on ``ranks`` processes; rank 0's record."""
    import torch.multiprocessing as mp

    (folder / "result.json").unlink(missing_ok=True)
    mp.spawn(rank_main, args=(ranks, free_port(), str(folder), params, rows), nprocs=ranks, join=True)
    return json.loads((folder / "result.json").read_text())


def time_to_target(record: dict[str, Any], rows: int, target: float) -> float | None:
    """Seconds of DCA until the loss per row first reached ``target`` (None: never)."""
    for objective, seconds in zip(record["objectives"], record["times"]):
        if objective / rows <= target:
            return seconds
    return None


def summarise(record: dict[str, Any], scaling: str, ranks: int, seed: int, rows: int, batch: int,
              inner_iter: int) -> dict[str, Any]:
    steps = len(record["times"]) * inner_iter
    return {"scaling": scaling, "ranks": ranks, "seed": seed, "rows": rows, "batch": batch,
            "samples_per_s": steps * batch / record["times"][-1], "fit_s": record["fit_s"],
            "final_loss": record["objectives"][-1] / rows, "error_pct": record["error_pct"], "record": record}


def add_ratios(rows: list[dict[str, Any]], target: float | None) -> None:
    """Speed-up and efficiency against the 1-rank fit of the same scaling and seed, and the strong
    fits' time to ``target`` (default: 1.01 x the final loss of the seed's 1-rank strong fit)."""
    for row in rows:
        base = next(r for r in rows if r["scaling"] == row["scaling"] and r["seed"] == row["seed"] and r["ranks"] == 1)
        row["speed_up"] = row["samples_per_s"] / base["samples_per_s"]
        row["efficiency"] = row["speed_up"] / row["ranks"]
        if row["scaling"] == "weak":
            row["to_target_s"] = "-"
            continue
        reached = time_to_target(row["record"], row["rows"], 1.01 * base["final_loss"] if target is None else target)
        row["to_target_s"] = "not reached" if reached is None else f"{reached:.1f}"


def build_data(args: argparse.Namespace, folder: Path) -> int:
    """MNIST's first ``--images`` training images and their shifted copies in ``folder`` (X.npy,
    y.npy, test.npz); the rows written."""
    from lastedge.train.augment import shifted_copies

    X_train, y_train, X_test, y_test = digits_task("mnist", args.data)
    X = X_train[:args.images].reshape(min(args.images, len(X_train)), -1).astype(np.float32)
    X, y = shifted_copies(X, y_train[:args.images], (28, 28), args.shift)
    np.save(folder / "X.npy", X)
    np.save(folder / "y.npy", y)
    np.savez(folder / "test.npz", X=X_test.reshape(len(X_test), -1), y=y_test)
    return len(X)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    most = max(args.ranks)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n_rows = build_data(args, folder)
        for scaling in ("strong", "weak"):
            for seed in args.seeds if scaling == "strong" else args.seeds[:1]:
                for ranks in args.ranks:
                    share = 1.0 if scaling == "strong" else ranks / most
                    fit_rows, batch = int(n_rows * share), max(1, int(args.batch_size * share))
                    params = {"n_atoms": args.atoms, "preprocess": "center-l2", "batch_size": batch,
                              "max_dca_iter": args.max_dca_iter, "inner_iter": args.inner_iter, "tol": 0.0,
                              "n_iter_no_change": args.max_dca_iter, "n_jobs": 1, "random_state": seed,
                              "verbose": 0}
                    record = run_fit(folder, ranks, fit_rows, params)
                    rows.append(summarise(record, scaling, ranks, seed, fit_rows, batch, args.inner_iter))
                    print(f"{scaling} {ranks} rank(s), seed {seed}: {rows[-1]['samples_per_s']:,.0f} samples/s, "
                          f"test error {rows[-1]['error_pct']:.2f} %", flush=True)
    add_ratios(rows, args.target_loss)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=lambda text: [int(n) for n in text.split(",")], default=[1, 2],
                   help="rank counts, comma separated, 1 first (default 1,2)")
    p.add_argument("--images", type=positive_int, default=60000,
                   help="the first N MNIST training images (default 60000: 540000 rows with --shift 2)")
    p.add_argument("--shift", type=int, default=2, help="shifted copies: 1..K pixels each way (default 2)")
    p.add_argument("--atoms", type=positive_int, default=10, help="atoms per one-vs-all head (default 10)")
    p.add_argument("--batch-size", type=positive_int, default=500)
    p.add_argument("--max-dca-iter", type=positive_int, default=5)
    p.add_argument("--inner-iter", type=positive_int, default=300)
    p.add_argument("--seeds", type=lambda text: [int(n) for n in text.split(",")], default=[0],
                   help="strong-scaling fits run once per seed (default 0)")
    p.add_argument("--target-loss", type=float, default=None,
                   help="training loss per row for the time-to-target column (default: 1.01 x the "
                        "final loss of the seed's 1-rank fit)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding mnist.npz")
    p.add_argument("--json", type=arguments.output_file, default=None, metavar="PATH")
    args = p.parse_args(argv)
    if args.ranks[0] != 1:
        p.error("--ranks must start with 1, the reference of the speed-up")
    check_data(p, args.data, "mnist.npz")
    rows = run(args)
    target = "1.01 x each seed's 1-rank final loss" if args.target_loss is None else f"{args.target_loss:g}"
    print()
    print(report.markdown_table(rows, COLUMNS))
    print(f"\nMNIST, first {args.images} training images with shifted copies of 1..{args.shift} pixels; "
          f"{args.atoms} atoms per head x 10 heads; {args.max_dca_iter} DCA iterations x {args.inner_iter} Adam "
          f"steps; gloo on {os.cpu_count()} CPU cores, 1 torch thread per rank; target loss per row: {target}.")
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in row.items() if k != "record"} for row in rows], indent=2))


if __name__ == "__main__":
    main()
