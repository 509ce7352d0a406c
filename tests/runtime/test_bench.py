"""``bench`` statistics are consistent, its schema is stable, and ``lastedge bench`` behaves as a CLI."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from lastedge.cli import main
from lastedge.runtime import bench, format_table, load
from lastedge.runtime.bench import statistics

ROW_KEYS = {"schema", "file", "file_size_bytes", "backend", "precision", "threads", "n_features",
            "n_outputs", "macs_per_sample", "load_ms", "first_inference_us", "rss_load_mib",
            "batches", "peak_rss_mib", "machine"}
BATCH_KEYS = {"batch_size", "warmup_mean_us", "count", "mean_us", "std_us", "min_us", "max_us",
              "p50_us", "p90_us", "p95_us", "p99_us", "throughput_per_s"}
MACHINE_KEYS = {"cpu", "emulated", "cores", "usable_cores", "machine", "os", "python", "int8_dot_product",
                "numpy", "onnxruntime", "litert", "tflite_runtime"}


@pytest.fixture(scope="module")
def paths(blobs, export, prototype_model, tmp_path_factory):
    X, y = blobs()
    return export(prototype_model(X, y), tmp_path_factory.mktemp("bench"), X)


def test_bench_rows_have_the_documented_schema_and_consistent_statistics(paths):
    files = list(paths.values())
    rows = bench(files, batch_sizes=(1, 7), runs=23, warmup=2)
    assert [row["file"] for row in rows] == [str(f) for f in files]
    for row in rows:
        assert set(row) == ROW_KEYS and row["schema"] == "lastedge-bench/1"
        assert set(row["machine"]) == MACHINE_KEYS
        assert row["threads"] == 1 and row["load_ms"] > 0 and row["first_inference_us"] > 0
        assert row["file_size_bytes"] == os.path.getsize(row["file"])
        assert row["macs_per_sample"] == 24 * 24 + 24 * 3
        assert [b["batch_size"] for b in row["batches"]] == [1, 7]
        for b in row["batches"]:
            assert set(b) == BATCH_KEYS
            assert b["count"] == 23
            assert b["min_us"] <= b["p50_us"] <= b["p90_us"] <= b["p95_us"] <= b["p99_us"] <= b["max_us"]
            assert b["min_us"] <= b["mean_us"] <= b["max_us"] and b["std_us"] >= 0
            assert b["throughput_per_s"] == pytest.approx(b["batch_size"] * 1e6 / b["mean_us"])
    json.dumps(rows)  # plain JSON types only


def test_seconds_budget_and_loaded_predictors(paths):
    predictor = load(paths["m.npz"])
    (row,) = bench([predictor], seconds=0.05, warmup=0)
    assert row["load_ms"] is None and row["batches"][0]["warmup_mean_us"] is None
    assert row["batches"][0]["count"] >= 10  # at least one call per round


def test_statistics_of_known_times():
    stats = statistics([1.0, 2.0, 3.0, 4.0, 100.0], batch=10)
    assert stats["count"] == 5 and stats["min_us"] == 1.0 and stats["max_us"] == 100.0
    assert stats["p50_us"] == 3.0 and stats["mean_us"] == 22.0
    assert stats["throughput_per_s"] == pytest.approx(10 / 22e-6)


def test_bench_rejects_bad_budgets(paths):
    for kwargs, message in ((dict(runs=5, seconds=1.0), "not both"), (dict(runs=0), "runs"),
                            (dict(seconds=-1.0), "seconds"), (dict(seconds=float("inf")), "finite"),
                            (dict(batch_sizes=(0,)), "batch"),
                            (dict(warmup=-1), "warmup"),
                            (dict(runs=1e3), r"runs must be an integer >= 1, got 1000.0"),
                            (dict(runs=True), "runs must be an integer"),
                            (dict(warmup=2.5), "warmup must be an integer"),
                            (dict(seconds="1"), "seconds must be a finite number")):
        with pytest.raises(ValueError, match=message):
            bench([paths["m.npz"]], **kwargs)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_cpus_pin_the_process_and_restore(paths):
    before = os.sched_getaffinity(0)
    (row,) = bench([paths["m.npz"]], runs=3, cpus=[min(before)])
    assert row["machine"]["usable_cores"] == 1
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux threads in /proc")
def test_cpus_pin_every_thread_not_only_the_calling_one():
    """A thread that exists before pinning (as BLAS pools do) is pinned too, and restored."""
    import threading

    from lastedge.runtime.bench import pinned

    ready, done, seen = threading.Event(), threading.Event(), {}

    def worker():
        seen["id"] = threading.get_native_id()
        ready.set()
        done.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    ready.wait(10)
    before = os.sched_getaffinity(seen["id"])
    try:
        with pinned([min(before)]):
            assert os.sched_getaffinity(seen["id"]) == {min(before)}
        assert os.sched_getaffinity(seen["id"]) == before
    finally:
        done.set()
        thread.join()


def test_format_table_has_one_line_per_file_and_batch(paths):
    rows = bench(list(paths.values()), batch_sizes=(1, 4), runs=3, warmup=0)
    lines = format_table(rows).splitlines()
    assert len(lines) == 2 + 2 * len(paths)
    assert "p50 us" in lines[1] and "numpy" in lines[2]
    assert "int8 dot product: " in lines[0]


def test_cli_bench_table_and_json(paths, capsys):
    files = [str(p) for p in paths.values()]
    assert main(["bench", *files, "--runs", "5", "--batch", "1,3", "--warmup", "1"]) == 0
    assert "samples/s" in capsys.readouterr().out
    assert main(["bench", files[0], "--runs", "4", "--json", "--threads", "2", "--cpus", "0"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["threads"] == 2 and row["batches"][0]["count"] == 4


def test_cli_bench_draws_the_latencies(paths, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    files = [str(p) for p in paths.values()]
    assert main(["bench", *files, "--runs", "5", "--batch", "1,3", "--warmup", "1",
                 "--plot", str(tmp_path / "latency.png")]) == 0
    assert capsys.readouterr().out.endswith(f"latency chart: {tmp_path / 'latency.png'}\n")
    assert (tmp_path / "latency.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["bench", files[0], "--runs", "3", "--json", "--plot", str(tmp_path / "l.svg")]) == 0
    json.loads(capsys.readouterr().out)  # the chart's path does not spoil the JSON
    assert "<svg" in (tmp_path / "l.svg").read_text()


@pytest.mark.parametrize("argv, message", [
    (["bench", "missing.npz"], "no such file: missing.npz"),
    (["bench", "{npz}", "--batch", "0"], "batch sizes must be positive"),
    (["bench", "{npz}", "--threads", "0"], "threads must be a positive integer"),
    (["bench", "{npz}", "--backend", "litert"], "cannot run a .npz file"),
    (["bench", "{npz}", "--cpus", "4096"], "cannot pin to cpus"),
    (["bench", "{npz}", "--seconds", "inf"], "seconds must be a finite number > 0"),
    (["bench", "{npz}", "--plot", "latency.jpeg"], "the figure must be a .png, .pdf, .svg file"),
])
def test_cli_errors_print_one_line_and_exit_1(paths, capsys, argv, message):
    argv = [a.format(npz=paths["m.npz"]) for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err and err.startswith("lastedge bench: error:")


def test_cli_usage_errors_exit_2(capsys):
    for argv in (["bench"], ["bench", "m.npz", "--batch", "x"], ["bench", "m.npz", "--runs", "3",
                                                                   "--seconds", "1"],
                 ["bench", "m.npz", "--cpus", "0-200000000"]):  # a typo, not 200 million cores
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    capsys.readouterr()


def test_bench_feeds_given_rows(paths):
    X = np.ones((2, 24), dtype=np.float32)
    (row,) = bench([paths["m.npz"]], batch_sizes=(5,), runs=2, X=X)
    assert row["batches"][0]["count"] == 2
    with pytest.raises(ValueError, match="X must be non-empty"):
        bench([paths["m.npz"]], runs=2, X=np.ones((2, 3)))


@pytest.mark.parametrize("cpus, part", [("1-0", "1-0"), ("0,3-1", "3-1")])
def test_cli_a_reversed_core_range_is_a_usage_error(paths, capsys, cpus, part):
    """It pinned to no core at all and said "cannot pin to cpus []: [Errno 22] Invalid argument"."""
    with pytest.raises(SystemExit) as exit_:
        main(["bench", str(paths["m.npz"]), "--runs", "2", "--cpus", cpus])
    assert exit_.value.code == 2
    assert f"argument --cpus: {part} names no core: give the lower core first" in capsys.readouterr().err


def test_bench_reports_each_batch_size_before_timing_it(paths):
    """Many files x batch sizes x a long --seconds ran for minutes without a sign of life."""
    files = [paths["m.npz"], paths["m.npz"]]
    seen = []
    bench(files, batch_sizes=(1, 4), seconds=0.01, warmup=0, progress=lambda *line: seen.append(line))
    assert seen == [("batch 1 (1 of 2): timing 2 files, about 0.02 s", pytest.approx(0.02)),
                    ("batch 4 (2 of 2): timing 2 files, about 0.02 s", pytest.approx(0.02))]
    seen.clear()
    bench(files[:1], runs=3, warmup=2, progress=lambda *line: seen.append(line))  # from the warmup
    ((line, expected),) = seen
    assert line.startswith("batch 1 (1 of 1): timing 1 file, about ") and expected > 0
    seen.clear()
    bench(files[:1], runs=3, warmup=0, progress=lambda *line: seen.append(line))  # nothing to go by
    assert seen == [("batch 1 (1 of 1): timing 1 file", None)]


def test_the_expected_time_counts_one_call_per_round_of_slow_files():
    from lastedge.runtime.bench import ROUNDS, _expected_seconds

    slow, fast = [2e5, 2e5], [10.0]  # warmup calls, microseconds
    assert _expected_seconds([slow, fast, []], None, 1.0) == pytest.approx(ROUNDS * 0.2 + 1 + 1)
    assert _expected_seconds([slow, fast], 100, None) == pytest.approx(100 * (0.2 + 1e-5))


def test_cli_bench_shows_progress_on_a_terminal_and_keeps_json_clean(paths, capsys, monkeypatch):
    argv = ["bench", str(paths["m.npz"]), "--runs", "3", "--warmup", "0", "--json"]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""  # off a terminal, a short run says nothing
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == "lastedge bench: batch 1 (1 of 1): timing 1 file\n"
    json.loads(out)
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_bench_shows_progress_of_long_timing_off_a_terminal(paths, capsys, monkeypatch):
    from lastedge.cli import bench as commands

    monkeypatch.setattr(commands, "LONG_BENCH_S", 0.01)  # as 5 s of timing would
    assert main(["bench", str(paths["m.npz"]), "--seconds", "0.02", "--batch", "1,2"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "lastedge bench: batch 1 (1 of 2): timing 1 file, about 0.02 s",
        "lastedge bench: batch 2 (2 of 2): timing 1 file, about 0.02 s"]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_cli_a_core_the_process_cannot_use_names_the_ones_it_can(paths, capsys):
    """It said "[Errno 22] Invalid argument", which did not say that a 4-core Pi's cores are 0-3."""
    from lastedge.runtime.bench import _core_ranges

    cores = os.sched_getaffinity(0)
    assert main(["bench", str(paths["m.npz"]), "--runs", "2", "--cpus", str(max(cores) + 1)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"lastedge bench: error: cannot pin to cpus [{max(cores) + 1}]: invalid argument; ")
    assert err.endswith(f"this process runs on cores {_core_ranges(cores)} (numbered from 0)\n")
    assert _core_ranges({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8" and _core_ranges({3}) == "3"


def _interrupt_at(batch: int):
    """A progress callback that presses Ctrl-C as batch size ``batch`` is about to be timed."""
    def progress(line: str, expected_s: float | None) -> None:
        if line.startswith(f"batch {batch} "):
            raise KeyboardInterrupt
    return progress


def test_ctrl_c_keeps_the_batch_sizes_timed_in_full(paths):
    """Minutes of a slow device's timing were thrown away by Ctrl-C."""
    from lastedge.runtime.bench import BenchInterrupted

    files = list(paths.values())
    with pytest.raises(BenchInterrupted) as stopped:
        bench(files, batch_sizes=(1, 7, 9), runs=5, warmup=1, progress=_interrupt_at(7))
    rows = stopped.value.rows
    assert [row["file"] for row in rows] == [str(f) for f in files]
    assert all([b["batch_size"] for b in row["batches"]] == [1] and "machine" in row for row in rows)
    with pytest.raises(KeyboardInterrupt) as nothing:  # before any batch size: nothing to keep
        bench(files, batch_sizes=(1, 7), runs=5, warmup=1, progress=_interrupt_at(1))
    assert not isinstance(nothing.value, BenchInterrupted)


def test_cli_bench_interrupted_prints_what_it_timed_and_exits_130(paths, capsys, monkeypatch):
    import lastedge.cli.bench as commands

    monkeypatch.setattr(commands, "_show_progress", _interrupt_at(64))
    assert main(["bench", str(paths["m.npz"]), "--runs", "5", "--batch", "1,8,64", "--json"]) == 130
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)
    assert [b["batch_size"] for b in row["batches"]] == [1, 8]
    assert captured.err == "lastedge bench: interrupted; the results are those of batch size(s) 1, 8\n"
