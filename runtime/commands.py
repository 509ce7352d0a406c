"""CLI commands of the runtime part (``lastedge bench``)."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-commands to the ``lastedge`` parser."""
    parser = subparsers.add_parser(
        "bench", help="measure on-device latency of model files, side by side",
        description="Load each FILE (.npz, .onnx, .tflite), time it in alternating rounds, and "
                    "print one table (or --json: one object per file).")
    parser.add_argument("files", nargs="+", metavar="FILE", help="model files to compare")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per backend (default 1, see the README section Threads)")
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
    parser.add_argument("--plot", default=None, metavar="PATH",
                        help="also draw the latencies (p50, p90, p99 per file and batch size) to this "
                             ".png/.pdf/.svg file (needs matplotlib)")
    parser.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    from .bench import bench, format_table

    if args.plot is not None:  # checked before measuring, which can take minutes
        from lastedge.figures import check_figure_path

        check_figure_path(args.plot)
    rows = bench(args.files, batch_sizes=args.batch, runs=args.runs, seconds=args.seconds,
                 warmup=args.warmup, threads=args.threads, backend=args.backend, cpus=args.cpus)
    print(json.dumps(rows, indent=2) if args.json else format_table(rows))
    if args.plot is not None:
        from lastedge.figures import latency_chart

        chart = latency_chart(rows, args.plot)
        if not args.json:
            print(f"latency chart: {chart}")
    return 0


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
            cpus += range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected cores like 0 or 0-1 or 0,2, got {text!r}") from None
    return cpus
