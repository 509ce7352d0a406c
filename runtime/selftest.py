"""``python -m lastedge.runtime.selftest BUNDLE``: prove a bundle's model files run on this device
as they ran on the workstation that made it (``lastedge bundle``).

A bundle holds ``bundle.json`` (its manifest: each model file, its precision and score bound) and
``selftest.npz`` (rows ``X`` and, per file, the scores the workstation computed). Each file runs on
every installed backend that can run it; a file passes when its predictions agree with the
stored ones on every row and no score differs by more than its bound,
``SCORE_BOUNDS[precision] * (1 + max |stored score|)``. The stored rows are ones whose decision
is clear by more than twice that bound, so exact agreement is a fair demand. Prints one table
and exits non-zero on any failure, or where no backend for a file is installed. numpy only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .bounded import read_regular
from .files import sniff
from .loading import BACKENDS, installed_backends, load

MANIFEST, ROWS = "bundle.json", "selftest.npz"
BUNDLE_FORMAT = "lastedge-bundle"
# Score bounds relative to 1 + the largest stored score, per precision. fp32: float32 rounding
# across CPUs and BLAS kernels (measured on emulated Arm: 1e-7). int8: a few output quantization
# steps (a static file's scores come in steps of about range / 255) or rounding of a dynamic
# file's on-the-fly quantization, which kernels may do either way; int16x8 (steps 256 times
# finer) as int8.
SCORE_BOUNDS = {"fp32": 1e-5, "int8": 2e-2, "int8-dynamic": 2e-2, "int16x8": 2e-2}


def score_bound(precision: str, scores: np.ndarray) -> float:
    """The absolute score bound of a file of ``precision`` whose stored scores are ``scores``."""
    return SCORE_BOUNDS[precision] * (1.0 + float(np.max(np.abs(scores), initial=0.0)))


def decisions(scores: np.ndarray) -> np.ndarray:
    """The index of the class each row's scores choose: argmax, or score > 0 with one output."""
    scores = np.asarray(scores, dtype=np.float64)
    return (scores.reshape(len(scores), -1)[:, 0] > 0).astype(int) if scores.ndim == 1 or \
        scores.shape[1] == 1 else np.argmax(scores, axis=1)


def margins(scores: np.ndarray) -> np.ndarray:
    """How far each row's decision is from a tie: |score| with one output, else best minus second."""
    scores = np.asarray(scores, dtype=np.float64).reshape(len(scores), -1)
    if scores.shape[1] == 1:
        return np.abs(scores[:, 0])
    top = np.sort(scores, axis=1)
    return top[:, -1] - top[:, -2]


def read_bundle(folder: str | Path) -> tuple[dict[str, Any], np.ndarray, dict[str, np.ndarray]]:
    """(manifest, rows, stored scores by file) of the bundle in ``folder``; ``ValueError`` naming
    what is wrong for a folder that is no bundle or a damaged one."""
    folder = Path(folder)
    try:
        manifest = json.loads(read_regular(folder / MANIFEST))
    except FileNotFoundError:
        raise ValueError(f"{folder} is not a lastedge bundle: it has no {MANIFEST}") from None
    except ValueError as err:
        raise ValueError(f"{folder / MANIFEST} is not valid JSON ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT or \
            not isinstance(manifest.get("files"), list):
        raise ValueError(f"{folder / MANIFEST} is not a {BUNDLE_FORMAT} manifest")
    with np.load(folder / ROWS, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    if "X" not in arrays:
        raise ValueError(f"{folder / ROWS} holds no rows X")
    for entry in manifest["files"]:
        if not isinstance(entry, dict) or entry.get("precision") not in SCORE_BOUNDS or \
                entry.get("file") not in arrays:
            raise ValueError(f"{folder / MANIFEST}: entry {entry!r} names no stored scores or "
                             f"a precision other than {', '.join(SCORE_BOUNDS)}")
    return manifest, arrays.pop("X"), arrays


def check_file(path: Path, backend: str, X: np.ndarray, expected: np.ndarray,
               precision: str) -> dict[str, Any]:
    """One file on one backend against its stored scores: the figures and whether they pass."""
    bound = score_bound(precision, expected)
    row: dict[str, Any] = {"file": path.name, "backend": backend, "precision": precision,
                           "bound": bound, "rows": len(X)}
    try:
        scores = load(path, backend=backend).decision_function(X)
    except (ValueError, ImportError, OSError) as err:
        return {**row, "passed": False, "error": str(err).splitlines()[0]}
    scores = np.asarray(scores, dtype=np.float64).reshape(np.shape(expected))
    difference = float(np.max(np.abs(scores - expected), initial=0.0))
    agreement = float(np.mean(decisions(scores) == decisions(expected))) if len(X) else 1.0
    return {**row, "max_difference": difference, "agreement": agreement,
            "passed": difference <= bound and agreement == 1.0}


def run_selftest(folder: str | Path) -> list[dict[str, Any]]:
    """Every model file of the bundle in ``folder`` on every installed backend that runs it."""
    folder = Path(folder)
    manifest, X, stored = read_bundle(folder)
    results = []
    for entry in manifest["files"]:
        path = folder / entry["file"]
        backends = installed_backends(sniff(path))
        if not backends:
            kind = sniff(path)
            results.append({"file": path.name, "backend": "/".join(BACKENDS[kind]),
                            "precision": entry["precision"], "passed": False,
                            "error": "no backend for it is installed"})
        for backend in backends:
            results.append(check_file(path, backend, X, stored[entry["file"]], entry["precision"]))
    return results


def format_results(results: Sequence[dict[str, Any]]) -> str:
    """The self-test's table: one line per file and backend, its verdict last."""
    header = ("file", "backend", "precision", "rows", "max diff", "bound", "agreement", "result")
    lines = [header]
    for r in results:
        if "error" in r:
            lines.append((r["file"], r["backend"], r["precision"], "-", "-", "-", "-", f"FAIL: {r['error']}"))
            continue
        lines.append((r["file"], r["backend"], r["precision"], str(r["rows"]), f"{r['max_difference']:.3g}",
                      f"{r['bound']:.3g}", f"{r['agreement']:.2%}", "ok" if r["passed"] else "FAIL"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(line, widths)), line[-1]]) for line in lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the self-test of the bundle named in ``argv`` (default: this folder; ``--json``: the
    results as one JSON list); 0 when every check passes."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    folders = [a for a in argv if a != "--json"]
    if len(folders) > 1 or any(a.startswith("-") for a in folders):
        print("usage: python -m lastedge.runtime.selftest [BUNDLE_FOLDER] [--json]", file=sys.stderr)
        return 2
    try:
        results = run_selftest(folders[0] if folders else ".")
    except (ValueError, OSError) as err:
        print(f"selftest: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 1
    failed = sum(not r["passed"] for r in results)
    if as_json:
        print(json.dumps(results, indent=2))
    else:
        print(format_results(results))
        print(f"self-test {'FAILED' if failed else 'passed'}: {len(results) - failed} of {len(results)} "
              "file x backend checks within their bounds")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
