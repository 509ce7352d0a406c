"""The generalisation suite's summary (issue 55): per (task, method) statistics over seeds, the
issue's target rows, and the markdown table that ``generalisation.py`` prints."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (task, method) in run order: mean, std (ddof=1) and standard error of the
    accuracy over the seeds that ran, mean MACs and training seconds (None where none ran)."""
    out = []
    for task, method in dict.fromkeys((r["task"], r["method"]) for r in rows):
        done = [r for r in rows if (r["task"], r["method"]) == (task, method) and r["accuracy"] is not None]
        acc = np.array([r["accuracy"] for r in done])
        std = float(acc.std(ddof=1)) if len(acc) > 1 else 0.0
        out.append({"task": task, "method": method, "n_seeds": len(done),
                    "accuracy": float(acc.mean()) if len(done) else None,
                    "std": std if len(done) else None,
                    "se": std / math.sqrt(len(acc)) if len(done) else None,
                    "macs": int(np.mean([r["macs"] for r in done])) if len(done) else None,
                    "seconds": float(np.mean([r["seconds"] for r in done])) if len(done) else None})
    return out


def _cells(summary: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(s["task"], s["method"]): s for s in summary if s["accuracy"] is not None}


def at_least(summary: list[dict[str, Any]], method: str, reference: str) -> tuple[int, int]:
    """``(k, n)``: on k of the n tasks where both ran, ``method``'s mean accuracy is at least
    ``reference``'s less one standard error of their difference (0 with one seed: plain >=)."""
    cell = _cells(summary)
    tasks = [t for t in dict.fromkeys(s["task"] for s in summary) if (t, method) in cell and (t, reference) in cell]
    wins = 0
    for task in tasks:
        a, b = cell[(task, method)], cell[(task, reference)]
        wins += a["accuracy"] >= b["accuracy"] - math.hypot(a["se"], b["se"])
    return wins, len(tasks)


def median_gap(summary: list[dict[str, Any]], method: str, reference: str) -> float | None:
    """Median over tasks of ``reference``'s mean accuracy minus ``method``'s (points; None if no task has both)."""
    cell = _cells(summary)
    gaps = [cell[(t, reference)]["accuracy"] - cell[(t, method)]["accuracy"]
            for t in dict.fromkeys(s["task"] for s in summary) if (t, method) in cell and (t, reference) in cell]
    return float(np.median(gaps)) if gaps else None


def targets(summary: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The issue's target rows as ``(what, result)``."""
    lines = []
    for method, reference, label in (("last", "sgd", "LAST default >= SGD baseline (within one s.e.)"),
                                     ("last-cv", "mlp", "LASTClassifierCV >= MLP (within one s.e.)")):
        wins, n = at_least(summary, method, reference)
        lines.append((label, f"{wins} of {n} tasks" if n else "n/a"))
    for method in ("last-cv", "last"):
        gap = median_gap(summary, method, "svm-rbf")
        lines.append((f"median gap RBF SVM - {method} (points)", "n/a" if gap is None else f"{gap:.1f}"))
    return lines


def _format_macs(macs: int) -> str:
    return f"{macs / 1e6:.1f}M" if macs >= 1e6 else f"{macs / 1e3:.1f}k" if macs >= 1e3 else str(macs)


def markdown(summary: list[dict[str, Any]], methods: list[str]) -> str:
    """Tasks as rows, methods as columns (``acc ± std · MACs · s``; n/a where nothing ran), then the targets."""
    cell = _cells(summary)
    lines = ["| task | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for task in dict.fromkeys(s["task"] for s in summary):
        cells = []
        for method in methods:
            s = cell.get((task, method))
            cells.append("n/a" if s is None else f"{s['accuracy']:.1f} ± {s['std']:.1f} · "
                         f"{_format_macs(s['macs'])} · {s['seconds']:.1f} s")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines += ["", "| target | result |", "|---|---|"] + [f"| {what} | {result} |" for what, result in targets(summary)]
    return "\n".join(lines)
