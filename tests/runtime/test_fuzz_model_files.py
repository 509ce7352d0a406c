"""The project's fuzz run (``fuzz.py``): damaged and hostile model and data files on every backend
installed, each case in a worker process under a memory limit and a timeout. None may crash the
process, hang, blow its memory up or raise anything but ValueError; every structured attack of
issue 54 is refused. ``LASTEDGE_FUZZ_CASES`` sizes the slow run (``pytest -m slow``)."""

from __future__ import annotations

import os

import pytest

FAST_CASES = 500


def test_the_fast_fuzz_set(fuzz, tmp_path):
    cases = fuzz.campaign(tmp_path, seed=0, n_cases=FAST_CASES)
    report = fuzz.run_cases(cases, tmp_path / "run")
    assert report.failures() == {} and report.wrong == [], report.summary()
    attacks = sum(case["expect"] == "refused" for case in cases)
    assert attacks >= 12 and report.counts["refused"] >= attacks and report.counts["ok"] > 0


@pytest.mark.slow
def test_a_long_fuzz_run(fuzz, tmp_path):
    """10,000 cases by default, with bombs of 1.5 GiB."""
    cases = fuzz.campaign(tmp_path, seed=int(os.environ.get("LASTEDGE_FUZZ_SEED", "1")),
                          n_cases=int(os.environ.get("LASTEDGE_FUZZ_CASES", "10000")), chunks=96)
    report = fuzz.run_cases(cases, tmp_path / "run")
    print(report.summary())
    assert report.failures() == {} and report.wrong == [], report.summary()


def test_the_harness_counts_crashes_and_hangs(fuzz, fuzz_cases, base_files, tmp_path):
    """What the run must never see, seen: hostile files loaded with trust=True (no graph check)
    crash the TFLite interpreter (a WHILE whose condition is the main graph) and hang it (a WHILE
    whose condition is always true); the worker is replaced after each and the run goes on."""
    interpreters = fuzz.backends()["tflite"]
    if not interpreters or "fp32.tflite" not in base_files:
        pytest.skip("needs a TFLite interpreter and the tflite package")
    (tmp_path / "files").mkdir()
    hostile = fuzz_cases.hostile_models(tmp_path / "files", base_files, chunks=1)
    cases = [{"label": label, "kind": "model", "path": str(hostile[f"tflite-{name}.tflite"]),
              "backend": interpreters[0], "trust": True, "expect": None}
             for label, name in (("crash", "while-recursion"), ("hang", "while-forever"))]
    cases.append({"label": "after", "kind": "model", "path": str(base_files["m.npz"]), "backend": "numpy",
                  "expect": "ok"})
    report = fuzz.run_cases(cases, tmp_path / "run", timeout_s=2.0)
    assert [(w["label"], w["outcome"]) for w in report.wrong] == [("crash", "crash"), ("hang", "hang")]
    assert report.counts["ok"] == 1, report.summary()
