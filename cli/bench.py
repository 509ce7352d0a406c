"""``lastedge bench``: on-device latency of model files, side by side."""

from __future__ import annotations

import argparse
import sys

from .common import json_text


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="measure on-device latency of model files, side by side",
        description="Load each FILE (.npz, .onnx, .tflite), time it in alternating rounds, and "
                    "print one table (or --json: one object per file).")
    parser.add_argument("files", nargs="+", metavar="FILE", help="model files to compare")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per backend (default 1, see the device guide, Threads); more "
                             "than the usable cores is warned of, as it skews latency")
    parser.add_argument("--batch", type=_int_list, default=[1], metavar="LIST",
                        help="comma-separated batch sizes (default 1), e.g. 1,64")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--runs", type=int, default=None, help="timed calls per file and batch size")
    budget.add_argument("--seconds", type=float, default=None,
                        help="time per file and batch size instead (default 1.0)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first (default 10)")
    parser.add_argument("--cpus", type=_cpu_list, default=None, metavar="LIST",
                        help="pin to these cores, e.g. 0 or 0-1 or 0,2 (emulates a small device)")
    parser.add_argument("--backend", default=None,
                        help="force a backend: numpy, onnxruntime, litert, tflite_runtime")
    parser.add_argument("--json", action="store_true", help="print JSON, one object per file")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines on stderr (shown on a terminal, or when a batch size "
                             f"takes {LONG_BENCH_S:.0f} s or more)")
    parser.add_argument("--plot", default=None, metavar="PATH",
                        help="also draw the latencies (p50, p90, p99 per file and batch size) to this "
                             ".png/.pdf/.svg file (needs matplotlib)")
    parser.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    from lastedge.runtime.bench import BenchInterrupted, bench, format_table, oversubscription

    if args.plot is not None:  # checked before measuring, which can take minutes
        from lastedge.runtime.figures import check_figure_path

        check_figure_path(args.plot)
    warning = oversubscription(args.threads, args.cpus)
    if warning is not None:  # the run proceeds: the user may mean to measure it
        print(f"lastedge bench: warning: {warning}", file=sys.stderr, flush=True)
    try:
        rows = bench(args.files, batch_sizes=args.batch, runs=args.runs, seconds=args.seconds,
                     warmup=args.warmup, threads=args.threads, backend=args.backend, cpus=args.cpus,
                     progress=None if args.quiet else _show_progress)
    except BenchInterrupted as stopped:  # Ctrl-C: print what was timed in full, then stop as interrupted
        print(json_text(stopped.rows) if args.json else format_table(stopped.rows))
        timed = ", ".join(str(b["batch_size"]) for b in stopped.rows[0]["batches"])
        print(f"lastedge bench: interrupted; the results are those of batch size(s) {timed}", file=sys.stderr)
        return 130
    print(json_text(rows) if args.json else format_table(rows))
    if args.plot is not None:
        from lastedge.runtime.figures import latency_chart

        chart = latency_chart(rows, args.plot)
        if not args.json:
            print(f"latency chart: {chart}")
    return 0


# Seconds of timing per batch size from which bench shows its progress even off a terminal (a log,
# ``ssh pi lastedge bench ...``): many files, batch sizes and a long --seconds print nothing for minutes.
LONG_BENCH_S = 5.0


def _show_progress(line: str, expected_s: float | None) -> None:
    """One progress line of ``bench`` on stderr, on a terminal or for long timing (stdout, the
    table or the JSON, stays clean)."""
    if sys.stderr.isatty() or (expected_s is not None and expected_s >= LONG_BENCH_S):
        print(f"lastedge bench: {line}", file=sys.stderr, flush=True)


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _cpu_list(text: str) -> list[int]:
    """'0', '0,2' or '0-3' (ranges and lists may mix) -> core numbers."""
    cpus: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            cores = range(int(first), int(last or first) + 1)
            if not cores:  # was pinned to no core at all: "cannot pin to cpus []"
                raise argparse.ArgumentTypeError(f"{part} names no core: give the lower core first, "
                                                 f"e.g. {last}-{first}")
            if len(cores) > MAX_CPUS:
                raise argparse.ArgumentTypeError(f"{part} names more than {MAX_CPUS} cores")
            cpus += cores
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected cores like 0 or 0-1 or 0,2, got {text!r}") from None
    return cpus


MAX_CPUS = 4096  # Linux's largest CPU count; a longer range is a typo
