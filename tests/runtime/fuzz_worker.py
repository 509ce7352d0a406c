"""The fuzz harness's worker: runs cases one after another in this process, under a memory limit.

``python fuzz_worker.py MANIFEST JOURNAL FIRST MEMORY_MB``: reads the cases (one JSON object a
line) from MANIFEST, runs those it expects to be "ok" once to warm the backends up (what memory
a case adds is measured from there), then those from index FIRST on, and appends to JOURNAL a ``start I`` line
before each case and a JSON result after it, flushed at once, so the harness (``fuzz.py``) knows
which case was running when the process died (a signal) or stopped answering (a hang). The address
space is limited to what it has after its imports plus MEMORY_MB (``RLIMIT_AS``). Imports numpy
and ``lastedge.runtime`` only, and the backends the cases name: what a device has.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _mapped_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


def _rows(n_features: int):
    import numpy as np

    rng = np.random.default_rng(0)
    return np.vstack([np.zeros((1, n_features)), rng.normal(size=(2, n_features)),
                      np.full((1, n_features), 1e3)])


def run_model(case: dict) -> None:
    """Load a model file and predict with it, as ``lastedge predict`` does."""
    from lastedge.runtime import load

    predictor = load(case["path"], backend=case["backend"], trust=case.get("trust", False))
    predictor.decision_function(_rows(predictor.n_features))
    predictor.predict(_rows(predictor.n_features))


def inspect_model(case: dict) -> None:
    """Read a model file's kind and summary without loading it, as ``lastedge inspect`` does."""
    from lastedge.runtime.files import sniff

    if sniff(case["path"]) == "onnx":
        from lastedge.runtime.onnx_metadata import read_onnx_summary

        read_onnx_summary(case["path"])


def run_data(case: dict) -> None:
    """What ``train`` and ``predict --data`` read: a data set, or a CSV file."""
    from lastedge.runtime.csv_rows import load_csv
    from lastedge.runtime.data import load_dataset

    if case["reader"] == "csv":
        load_csv(case["path"], -1)
    else:
        load_dataset(case["path"])


SEVERITY = ("ok", "refused", "memory", "escape")


def run(case: dict) -> tuple[str, str]:
    """(outcome, detail) of the case's steps, the worst of them: "ok", "refused" (ValueError),
    "memory" (MemoryError) or "escape" (any other exception)."""
    steps = (inspect_model, run_model) if case["kind"] == "model" else (run_data,)
    return max((_outcome(step, case) for step in steps), key=lambda result: SEVERITY.index(result[0]))


def _outcome(step, case: dict) -> tuple[str, str]:
    try:
        step(case)
    except ValueError as err:
        return "refused", str(err).splitlines()[0][:300] if str(err) else ""
    except MemoryError as err:
        return "memory", str(err)[:300]
    except Exception as err:  # noqa: BLE001 - what the harness counts: anything else escaped
        return "escape", f"{type(err).__module__}.{type(err).__name__}: {str(err)[:300]}"
    return "ok", ""


def main(argv: list[str]) -> int:
    manifest, journal, first, memory_mb = argv[0], argv[1], int(argv[2]), int(argv[3])
    with open(manifest, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    import numpy  # noqa: F401 - imported before the limit, as a device's process has it

    for backend in sorted({c.get("backend") for c in cases[first:]} - {None, "numpy"}):
        __import__({"onnxruntime": "onnxruntime", "litert": "ai_edge_litert.interpreter",
                    "tflite_runtime": "tflite_runtime.interpreter"}[backend])
    import lastedge.runtime  # noqa: F401

    for case in cases:
        if case.get("expect") == "ok" and run(case)[0] != "ok":
            raise SystemExit(f"warming up: {case['label']} did not run: {run(case)}")
    limit = _mapped_bytes() + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with open(journal, "a", encoding="utf-8") as out:
        out.write(json.dumps({"ready": _peak_mb()}) + "\n")
        out.flush()
        for index in range(first, len(cases)):
            out.write(f"start {index}\n")
            out.flush()
            started = time.perf_counter()
            outcome, detail = run(cases[index])
            out.write(json.dumps({"index": index, "outcome": outcome, "detail": detail,
                                  "seconds": time.perf_counter() - started, "peak_mb": _peak_mb()}) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
