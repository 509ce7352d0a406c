"""The tight majoriser's per-minibatch weights: the shortcut for heads whose atoms are each in one
group against the general formula, side by side, alternating, median of several repeats.

    python benchmarks/tight_majoriser.py [--repeats 15] [--threads 1]

Every minibatch Adam step of a one-vs-all or binary fit calls ``objective.tight_data_weights``.
The general formula mixes linearised and exact features, which only atoms voting against a class
need (a shared dictionary's); with every atom in one group the
rivals are scored from the features themselves (``one_group_per_atom=True``). Both give the same
values (checked here before timing). The shapes are the trainer's: rows x features x heads x
atoms per head, with one-vs-all's tenth of each head's atoms voting for its class.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from arguments import positive_int
from lastedge.train import objective

BETA = 100.0  # LASTClassifier's default softplus sharpness
# (what, rows m, features n, heads H, atoms per head N)
SHAPES = [
    ("MNIST minibatch 1000, one-vs-all 10 x 400 (the paper's)", 1000, 784, 10, 400),
    ("MNIST minibatch 1000, one-vs-all 10 x 40", 1000, 784, 10, 40),
    ("USPS minibatch 500, one-vs-all 10 x 20", 500, 256, 10, 20),
]


def one_vs_all_problem(m: int, n: int, H: int, N: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Rows, targets, atoms, thresholds, groups and an anchor near the atoms, float32."""
    X = torch.randn(m, n, generator=generator) / n ** 0.5
    U_k = 0.1 * torch.randn(H, n, N, generator=generator)
    v_k = 0.5 + torch.rand(H, N, generator=generator)
    U = U_k + 0.01 * torch.randn(H, n, N, generator=generator)
    signs = (torch.arange(N) < max(1, N // 10)).long()  # a tenth of the atoms vote for the class
    groups = torch.nn.functional.one_hot(signs, 2).float().expand(H, N, 2).contiguous()
    targets = torch.randint(2, (H, m), generator=generator)
    return X, targets, U, v_k, groups, U_k, v_k


def weights(problem: tuple[torch.Tensor, ...], shortcut: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``tight_data_weights`` with the general formula or the shortcut."""
    X, targets, U, v, groups, U_k, v_k = problem
    return objective.tight_data_weights(X, targets, U, v, groups, BETA, U_k, v_k, one_group_per_atom=shortcut)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=positive_int, default=15, help="timed calls per formula (default 15)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as LASTClassifier.fit does
    generator = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {args.threads} thread(s), float32, median of {args.repeats} calls\n")
    print("| shapes | general ms | shortcut ms | speed-up |")
    print("|---|---|---|---|")
    for name, m, n, H, N in SHAPES:
        problem = one_vs_all_problem(m, n, H, N, generator)
        general, shortcut = weights(problem, False), weights(problem, True)
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(general, shortcut))
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.repeats):  # alternating, so that both see the same machine load
            for use_shortcut in (False, True):
                start = time.perf_counter()
                weights(problem, use_shortcut)
                times[use_shortcut].append(1e3 * (time.perf_counter() - start))
        old, new = statistics.median(times[False]), statistics.median(times[True])
        print(f"| {name} | {old:.1f} | {new:.1f} | {old / new:.2f}x |")


if __name__ == "__main__":
    main()
