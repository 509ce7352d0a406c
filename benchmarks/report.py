"""The accuracy benchmarks' output: a Markdown table, fit warnings and the JSON record of a run."""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path
from typing import Any

import numpy as np
import sklearn
import torch

from harness import Budget
from lastedge.runtime.model import write_atomically


Column = tuple[str, str, str]  # header, row key, format
COLUMNS: list[Column] = [
    ("method", "label", "{}"), ("N", "n_atoms", "{}"), ("test error %", "error_pct", "{:.1f}"),
    ("train s", "train_s", "{:.1f}"), ("predict ms", "predict_ms", "{:.2f}"),
    ("zeros %", "zeros_pct", "{:.1f}"), ("chosen", "notes", "{}"),
]


def markdown_table(rows: list[dict[str, Any]], columns: list[Column] = COLUMNS) -> str:
    """A Markdown table; missing values print as "-"."""
    lines = ["| " + " | ".join(header for header, _, _ in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = ["-" if row.get(key) is None else fmt.format(row[key]) for _, key, fmt in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def warning_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per method run that raised warnings during fit."""
    return [f"- {row['task']} {row['method']} N={row['n_atoms']}: {'; '.join(row['warnings'])}"
            for row in rows if row["warnings"]]


def write_json(path: Path, benchmark: str, args: argparse.Namespace, rows: list[dict[str, Any]],
               extra: dict[str, Any] | None = None) -> None:
    """Results plus what produced them (arguments, budgets, library versions, machine).

    ``extra`` adds or replaces top-level fields (e.g. a benchmark's own budget).
    """
    record = {
        "benchmark": benchmark,
        "args": vars(args),
        "sgd_iter": Budget(args.quick).sgd_iter, "last_budget": Budget(args.quick).last or "defaults",
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "sklearn": sklearn.__version__, "torch": torch.__version__},
        "machine": platform.platform(),
        "results": rows,
    }
    if extra:
        record = {**record, **extra, "results": rows}
    text = (json.dumps(record, indent=2, default=str) + "\n").encode()  # default: paths
    # atomic: a reader (or a run stopped here) never sees half a file
    write_atomically(path, lambda file: file.write(text))


def report(benchmark: str, args: argparse.Namespace, rows: list[dict[str, Any]], notes: str,
           columns: list[Column] = COLUMNS) -> None:
    """Print the Markdown table, its notes and any fit warnings; write ``--json`` when asked."""
    print(markdown_table(rows, columns))
    print("\n" + notes)
    warnings_seen = warning_lines(rows)
    if warnings_seen:
        print("\nWarnings during fit:\n" + "\n".join(warnings_seen))
    if args.json:
        write_json(args.json, benchmark, args, rows)
