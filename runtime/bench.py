"""``bench``: on-device latency with statistics a user can trust, several files side by side.

For each file: load time, first inference, then for each batch size a warmup and the timed calls,
run in alternating rounds across the files (the order reversed every other round) so that drift on
a shared machine (thermal throttling, a neighbour's job) hits all of them alike. Each call is timed
alone with ``perf_counter_ns``, garbage collection paused. One result dict per file, schema
``SCHEMA`` (documented in docs/devices.md, "The JSON schema").
"""

from __future__ import annotations

import gc
import math
import os
import resource
import sys
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .backends import Predictor
from .cpu import machine_info, usable_cores
from .loading import load, max_threads

SCHEMA = "lastedge-bench/1"
ROUNDS = 10
PERCENTILES = (50, 90, 95, 99)


def bench(sources: Sequence[str | os.PathLike | Predictor], *, batch_sizes: Sequence[int] = (1,),
          runs: int | None = None, seconds: float | None = None, warmup: int = 10,
          threads: int | None = None, backend: str | None = None,
          cpus: Sequence[int] | None = None, X: np.ndarray | None = None,
          seed: int = 0, progress: Callable[[str, float | None], None] | None = None
          ) -> list[dict[str, Any]]:
    """Benchmark model files (or loaded ``Predictor``s) side by side; one dict per source (``SCHEMA``).

    Parameters
    ----------
    sources : sequence of str, os.PathLike or Predictor
        ``.npz``, ``.onnx`` or ``.tflite`` files, or loaded predictors.
    batch_sizes : sequence of int, default=(1,)
        Rows per call; each gets its own warmup and timed calls.
    runs, seconds, warmup : int or float, optional
        Timed calls per file and batch size, or a time budget instead (default 1 s), after
        ``warmup`` (default 10) untimed ones.
    threads, backend, cpus : optional
        ``threads`` and ``backend`` go to ``load``; ``cpus`` pins the process to these cores
        while it runs (emulates a small device; Linux).
    X, seed : array and int, optional
        Rows to feed, tiled to the batch size; default standard-normal rows from ``seed``.
    progress : callable, optional
        Called before each batch size's timed calls with a description and their expected seconds.
    """
    runs, seconds = _check_budget(runs, seconds)
    batch_sizes = _check_batch_sizes(batch_sizes)
    if not _is_count(warmup, 0):
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    with pinned(cpus):
        rows, predictors = [], []
        for source in sources:
            row, predictor = _load(source, backend=backend, threads=threads, seed=seed, X=X)
            rows.append(row)
            predictors.append(predictor)
        try:
            for i, batch in enumerate(batch_sizes, 1):
                inputs = [_batch(p.n_features, batch, X, seed) for p in predictors]
                warm = [_time_calls(p, Xb, warmup) for p, Xb in zip(predictors, inputs)]
                if progress is not None:
                    expected = _expected_seconds(warm, runs, seconds)
                    about = "" if expected is None else f", about {_seconds_text(expected)}"
                    files = f"{len(predictors)} file{'s' if len(predictors) > 1 else ''}"
                    progress(f"batch {batch} ({i} of {len(batch_sizes)}): timing {files}{about}", expected)
                timed = _alternating_rounds(predictors, inputs, runs, seconds)
                results = [{"batch_size": batch, "warmup_mean_us": _mean(w), **statistics(t, batch)}
                           for w, t in zip(warm, timed)]
                for row, result in zip(rows, results):  # every file's, or none
                    row["batches"].append(result)
        except KeyboardInterrupt:
            if not rows or not rows[0]["batches"]:  # nothing timed in full yet
                raise
            raise BenchInterrupted(_with_machine(rows)) from None
        return _with_machine(rows)  # still pinned: the machine's usable cores are the pinned ones


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``bench`` after at least one batch size was timed: ``rows`` holds the
    results of every batch size timed in full (minutes of a slow device's work, not thrown away)."""

    def __init__(self, rows: list[dict[str, Any]]):
        super().__init__("interrupted")
        self.rows = rows


def _with_machine(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the machine that timed them and the process's peak memory."""
    machine = machine_info()
    for row in rows:
        row["peak_rss_mib"] = peak_rss_mib()
        row["machine"] = machine
    return rows


def _load(source: str | os.PathLike | Predictor, *, backend: str | None, threads: int | None,
          seed: int, X: np.ndarray | None) -> tuple[dict[str, Any], Predictor]:
    """Load one source, timing the load and the first single-row inference."""
    rss_before = current_rss_mib()
    start = time.perf_counter_ns()
    predictor = source if isinstance(source, Predictor) else load(source, backend=backend,
                                                                   threads=threads)
    load_ms = None if isinstance(source, Predictor) else (time.perf_counter_ns() - start) / 1e6
    first = _time_calls(predictor, _batch(predictor.n_features, 1, X, seed), 1)
    rss_after = current_rss_mib()
    row = {
        "schema": SCHEMA,
        "file": str(predictor.path) if predictor.path is not None else f"<{predictor.backend}>",
        "file_size_bytes": predictor.file_size,
        "backend": predictor.backend,
        "precision": predictor.precision,
        "threads": predictor.threads,
        "n_features": predictor.n_features,
        "n_outputs": predictor.n_outputs,
        "macs_per_sample": predictor.macs_per_sample,
        "load_ms": load_ms,
        "first_inference_us": first[0],
        "rss_load_mib": None if rss_before is None else rss_after - rss_before,
        "batches": [],
    }
    return row, predictor


def _alternating_rounds(predictors: list[Predictor], inputs: list[np.ndarray],
                        runs: int | None, seconds: float | None) -> list[list[float]]:
    """Timed calls (microseconds) per predictor, in rounds alternating between predictors."""
    rounds = min(ROUNDS, runs) if runs is not None else ROUNDS
    times: list[list[float]] = [[] for _ in predictors]
    for r in range(rounds):
        order = range(len(predictors)) if r % 2 == 0 else reversed(range(len(predictors)))
        for i in order:
            if runs is not None:
                count = runs // rounds + (1 if r < runs % rounds else 0)
                times[i] += _time_calls(predictors[i], inputs[i], count)
            else:
                times[i] += _time_for(predictors[i], inputs[i], seconds / rounds)
    return times


def _expected_seconds(warm: list[list[float]], runs: int | None, seconds: float | None
                      ) -> float | None:
    """Seconds the timed calls of one batch size should take, from each file's warmup mean: the
    budget (or one call per round, when that is longer), or ``runs`` calls (None without warmup)."""
    if runs is None:
        return sum(max(seconds, ROUNDS * _mean(w) / 1e6) if w else seconds for w in warm)
    if not all(warm):
        return None
    return runs * sum(_mean(w) for w in warm) / 1e6


def _seconds_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.2g} s"


def _time_calls(predictor: Predictor, X: np.ndarray, count: int) -> list[float]:
    with gc_paused():
        out = []
        for _ in range(count):
            start = time.perf_counter_ns()
            predictor.predict(X)
            out.append((time.perf_counter_ns() - start) / 1e3)
    return out


def _time_for(predictor: Predictor, X: np.ndarray, seconds: float) -> list[float]:
    """Timed calls until ``seconds`` have passed (at least one)."""
    out: list[float] = []
    deadline = time.perf_counter() + seconds
    while not out or time.perf_counter() < deadline:
        out += _time_calls(predictor, X, 1)
    return out


def statistics(times_us: Sequence[float], batch: int) -> dict[str, Any]:
    """count, mean, std, min, max, percentiles (microseconds) and throughput (samples/s)."""
    t = np.asarray(times_us, dtype=np.float64)
    p = np.percentile(t, PERCENTILES)
    mean = float(t.mean())
    return {
        "count": int(t.size),
        "mean_us": mean,
        "std_us": float(t.std(ddof=1)) if t.size > 1 else 0.0,
        "min_us": float(t.min()),
        "max_us": float(t.max()),
        **{f"p{q}_us": float(v) for q, v in zip(PERCENTILES, p)},
        "throughput_per_s": batch * 1e6 / mean,
    }


def _mean(times: list[float]) -> float | None:
    return float(np.mean(times)) if times else None


def _batch(n_features: int, batch: int, X: np.ndarray | None, seed: int) -> np.ndarray:
    if X is None:
        return np.random.default_rng(seed).standard_normal((batch, n_features), dtype=np.float32)
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != n_features or len(X) == 0:
        raise ValueError(f"X must be non-empty [n, {n_features}], got shape {X.shape}")
    return np.resize(X, (batch, n_features))


def _check_budget(runs: int | None, seconds: float | None) -> tuple[int | None, float | None]:
    if runs is not None and seconds is not None:
        raise ValueError("give runs or seconds, not both")
    if runs is not None and not _is_count(runs, 1):
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    if seconds is not None and not (isinstance(seconds, (int, float, np.number)) and 0 < seconds < math.inf):
        raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
    return runs, (1.0 if runs is None and seconds is None else seconds)


def _check_batch_sizes(batch_sizes: Sequence[int]) -> list[int]:
    sizes = list(batch_sizes)
    if not sizes or not all(_is_count(b, 1) for b in sizes):
        raise ValueError(f"batch sizes must be positive integers, got {sizes}")
    return [int(b) for b in sizes]


def _is_count(value: Any, least: int) -> bool:
    """Whether ``value`` is an integer (a bool is none) of at least ``least``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= least


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def pinned(cpus: Sequence[int] | None) -> Iterator[None]:
    """Pin every thread of this process to ``cpus`` for the block (no-op for None), then restore
    each one's old set. Affinity is per thread on Linux, and the BLAS and interpreter thread pools
    already exist, so pinning the calling thread alone would leave them free."""
    if cpus is None:
        yield
        return
    if not hasattr(os, "sched_setaffinity"):
        raise OSError("pinning to cpus needs Linux (os.sched_setaffinity)")
    before = {thread: os.sched_getaffinity(thread) for thread in _threads()}
    try:
        for thread in before:
            os.sched_setaffinity(thread, set(cpus))
    except (OSError, ValueError) as err:
        _set_affinities(before)
        reason = getattr(err, "strerror", None) or str(err)
        raise ValueError(f"cannot pin to cpus {sorted(cpus)}: {reason[:1].lower()}{reason[1:]}; this "
                         f"process runs on cores {_core_ranges(set().union(*before.values()))} "
                         "(numbered from 0)") from None
    try:
        yield
    finally:
        _set_affinities(before)


def _core_ranges(cores: set[int]) -> str:
    """Core numbers as ``--cpus`` takes them: {0, 1, 2, 5} -> '0-2,5'."""
    parts: list[list[int]] = []
    for core in sorted(cores):
        if parts and parts[-1][1] == core - 1:
            parts[-1][1] = core
        else:
            parts.append([core, core])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def _threads() -> list[int]:
    """The ids of this process's threads (Linux's /proc; this thread alone elsewhere)."""
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _set_affinities(affinities: dict[int, set[int]]) -> None:
    for thread, cores in affinities.items():
        with suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(thread, cores)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB (process-wide: includes Python, earlier
    files and the backends loaded)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def current_rss_mib() -> float | None:
    """Resident memory of this process now, MiB (Linux; None elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def oversubscription(threads: int | None, cpus: Sequence[int] | None = None) -> str | None:
    """A warning when ``threads`` exceed the cores the process may use (``cpus`` when pinned):
    the backend's threads then wait for a core, and the latencies time that wait. None when they
    fit, or when ``threads`` or ``cpus`` are invalid (refused later, in their own error)."""
    cores = usable_cores(cpus)
    if not isinstance(threads, int) or not cores or not cores < threads <= max_threads():
        return None
    where = f"--cpus {_core_ranges(set(cpus))}" if cpus is not None else "this process's CPU affinity"
    return (f"{threads} threads oversubscribe the {cores} usable core{'s' if cores > 1 else ''} "
            f"({where}): latency will be skewed by threads waiting for a core")


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The bench results as a text table: one line per file and batch size, machine on top."""
    header = ("file", "backend", "prec", "thr", "batch", "n", "p50 us", "p90 us", "p99 us",
              "mean±std us", "samples/s", "MAC/sample", "KiB", "load ms", "first us")
    lines = []
    for row in rows:
        for b in row["batches"]:
            lines.append((
                Path(row["file"]).name, row["backend"], row["precision"], str(row["threads"]),
                str(b["batch_size"]), str(b["count"]), _num(b["p50_us"]), _num(b["p90_us"]), _num(b["p99_us"]),
                f"{_num(b['mean_us'])}±{_num(b['std_us'])}", _num(b["throughput_per_s"]),
                _num(row["macs_per_sample"]), _num(row["file_size_bytes"], 1024),
                _num(row["load_ms"]), _num(row["first_inference_us"]),
            ))
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
              for i, h in enumerate(header)]
    text = ["  ".join(c.ljust(w) if i < 4 else c.rjust(w) for i, (c, w) in
                      enumerate(zip(cells, widths))) for cells in (header, *lines)]
    return "\n".join([_machine_line(rows), *text])


def _machine_line(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "no results"
    m = rows[0]["machine"]
    versions = ", ".join(f"{k} {m[k]}" for k in ("numpy", "onnxruntime", "litert", "tflite_runtime")
                         if m[k])
    dot = {True: "yes", False: "no", None: "unknown"}[m.get("int8_dot_product")]
    return (f"{m['cpu']} ({m['usable_cores']}/{m['cores']} cores, int8 dot product: {dot}), "
            f"Python {m['python']}, {versions}; peak RSS {rows[-1]['peak_rss_mib']:.0f} MiB")


def _num(value: float | int | None, divide: float = 1.0) -> str:
    if value is None:
        return "-"
    value = value / divide
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"
