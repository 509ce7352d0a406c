"""The C export on emulated Cortex-M cores (slow: cross-builds and QEMU runs; the script installs
the toolchain when it is missing) and the size prediction made before any build."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lastedge.export.c import build_c
from lastedge.export.c_size import constant_bytes, predict_size

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mcu_check.py"
SHAPES = [(64, 50, 10, "center-l2"), (37, 21, 5, "standardize"), (30, 8, 2, "none"), (100, 9, 3, "l2")]
TYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int32_t": 4, "float": 4}


@pytest.mark.parametrize("n, k, classes, kind", SHAPES)
@pytest.mark.parametrize("precision", ["fp32", "int8", "int16x8"])
@pytest.mark.parametrize("one_output", [False, True])
def test_predicted_constants_are_the_generated_arrays(n, k, classes, kind, precision, one_output, random_model,
                                                     one_output_per_atom):
    model, X = random_model(n_features=n, n_atoms=k, n_classes=classes, kind=kind, seed=1)
    model = one_output_per_atom(model) if one_output else model
    source = build_c(model, precision=precision, calibration=X[:100] if precision != "fp32" else None).source
    arrays = sum(TYPE_BYTES[ctype] * int(named or union) for ctype, named, union in
                 re.findall(r"\b(u?int8_t|int32_t|float) (?:\w+\[(\d+)\] =|b\[(\d+)\];)", source))
    assert (f"output_class[{k}] =" in source) is (one_output and classes > 2 and precision != "fp32")
    strings = [len(str(c)) + 1 for c in range(classes)]  # labels 0, 1, ...: 4-byte aligned but the last
    labels = 4 * classes + sum((s + 3) // 4 * 4 for s in strings[:-1]) + strings[-1]
    assert constant_bytes(model, precision) == arrays + labels


def test_predict_size_refuses_unknown_targets(digits_case):
    model = digits_case()[0]
    with pytest.raises(ValueError, match="target must be one of"):
        predict_size(model, "cortex-a53")
    with pytest.raises(ValueError, match="only cortex-m4 has the DSP"):
        predict_size(model, "cortex-m0", dsp=True)
    figures = predict_size(model, "cortex-m4", "int8")
    assert figures["flash"] == figures["flash_code"] + figures["flash_constants"]


@pytest.fixture(scope="module")
def toolchain():
    """The cross toolchain, QEMU and unicorn, installed by the script when missing."""
    subprocess.run([sys.executable, str(SCRIPT), "--install-only"], check=True)


@pytest.mark.slow
def test_the_script_runs_bit_exact_on_every_core(toolchain, tmp_path, digits_case):
    model = digits_case()[0]
    model.save(tmp_path / "digits.npz")
    run = subprocess.run([sys.executable, str(SCRIPT), "--model", str(tmp_path / "digits.npz"),
                          "--rows", "12", "--json", str(tmp_path / "figures.json")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads((tmp_path / "figures.json").read_text())["results"]
    integer = {(core, precision, dsp) for precision in ("int8", "int16x8") for core, dsp in
               (("cortex-m4", False), ("cortex-m4", True), ("cortex-m3", False), ("cortex-m0", False))}
    floats = {(core, "fp32", False) for core in ("cortex-m4", "cortex-m3", "cortex-m0")}
    assert {(r["core"], r["precision"], r["dsp"]) for r in results} == integer | floats
    assert all(r["identical_to_host"] and r["ram_static"] == 0 for r in results)


@pytest.mark.slow
@pytest.mark.parametrize("n, k, classes, kind", SHAPES[1:])
def test_predicted_sizes_bound_the_built_ones(toolchain, tmp_path, n, k, classes, kind, random_model):
    from lastedge.export.c_emulate import CORES, build_and_run, sizes, write_project

    model, X = random_model(n_features=n, n_atoms=k, n_classes=classes, kind=kind, seed=2)
    for precision in ("int8", "int16x8", "fp32"):
        c_model = build_c(model, precision=precision, calibration=X[:100] if precision != "fp32" else None)
        project = write_project(c_model, X[100:103], tmp_path / precision)
        for core in CORES.values():
            for dsp in (False, True) if core.dsp and precision != "fp32" else (False,):
                run = build_and_run(core, project, tmp_path / f"{precision}-{core.name}-{dsp}", dsp)
                built, predicted = sizes(run.model_object), predict_size(model, core.name, precision, dsp)
                assert predicted["flash_constants"] == built["constants"]
                assert 0 <= predicted["flash_code"] - built["code"] <= 200
                assert 0 <= predicted["ram"] - run.stack <= 64


@pytest.mark.slow
@pytest.mark.parametrize("flags", ["-O0", "-O2 -fno-omit-frame-pointer -DLASTEDGE_DSP_C"])
def test_the_dsp_path_without_its_assembly_loop_is_bit_exact(toolchain, tmp_path, flags, random_model):
    """Builds that keep a frame pointer in r7 (-O0, -fno-omit-frame-pointer) take the SMLAD loop
    in C: the same scores on the Cortex-M4."""
    from lastedge.export.c_emulate import CORES, build_and_run, host_lines, write_project

    model, X = random_model(n_features=37, n_atoms=21, n_classes=5, kind="center-l2", seed=3)
    for precision in ("int8", "int16x8"):
        c_model = build_c(model, precision=precision, calibration=X[:100])
        project = write_project(c_model, X[100:106], tmp_path / precision)
        run = build_and_run(CORES["cortex-m4"], project, tmp_path / f"{precision}-build", dsp=True, flags=flags)
        assert run.differ == 0 and run.lines == host_lines(c_model, X[100:106])
