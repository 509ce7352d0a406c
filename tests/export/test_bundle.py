"""``export.make_bundle`` and the self-test it stores (``runtime.selftest``): a folder per board
with the model files that board runs, each checked again on the device against scores computed
here (issue 53)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from lastedge.export.bundle import make_bundle
from lastedge.export.bundle_scripts import TARGETS, install_script
from lastedge.runtime import selftest

pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")


@pytest.fixture(scope="module")
def case(blobs, prototype_model, tmp_path_factory):
    """A 3-class blobs model, its rows, and a stand-in wheel file."""
    X, y = blobs(rows=400)
    folder = tmp_path_factory.mktemp("bundles")
    wheel = folder / "lastedge-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("lastedge/__init__.py", "")
    return prototype_model(X, y), X, y, wheel, folder


def bundle(case, target, name=None, **kwargs):
    model, X, y, wheel, folder = case
    out = folder / (name or target)
    return make_bundle(model, out, target, X[:250], X[250:], y[250:], wheel=wheel, **kwargs), out


@pytest.mark.parametrize("target, models", [
    ("pi64", {"model.npz", *(f"model-{p}.{f}" for p in ("fp32", "int8", "int8-dynamic", "int16x8")
                             for f in ("tflite", "onnx"))}),
    # no int16x8: tflite-runtime 2.14's 16x8 kernel differs from LiteRT's
    ("pi32", {"model.npz", "model-fp32.tflite", "model-int8.tflite", "model-int8-dynamic.tflite"}),
    ("pi-armv6", {"model.npz"}),
])
def test_each_target_gets_the_formats_it_runs_and_passes_its_self_test(case, target, models, capsys):
    info, out = bundle(case, target)
    assert {p.name for p in (out / "models").iterdir()} == models
    assert {p.name for p in out.iterdir()} == {"models", "bundle.json", "selftest.npz", "selftest.csv",
                                               case[3].name, "on_device.py", "install.sh", "README.txt"}
    assert info["target"] == target and len(info["files"]) == len(models)
    assert selftest.main([str(out)]) == 0
    table = capsys.readouterr().out
    assert "FAIL" not in table and "self-test passed: " in table
    results = selftest.run_selftest(out)
    assert {r["file"] for r in results} == models and all(r["agreement"] == 1.0 for r in results)


def test_stored_rows_have_clear_decisions(case):
    info, out = bundle(case, "generic")
    manifest, X, stored = selftest.read_bundle(out)
    assert 0 < len(X) <= 200 and X.dtype == np.float32
    assert np.loadtxt(out / "selftest.csv", delimiter=",").shape == X.shape
    for entry in manifest["files"]:
        scores = stored[entry["file"]]
        assert entry["bound"] == pytest.approx(selftest.score_bound(entry["precision"], scores))
        assert np.all(selftest.margins(scores) > 2 * entry["bound"] * 0.5)  # clear, even after rescoring


def test_a_changed_file_fails_the_self_test(case, capsys):
    """A file whose scores moved beyond its bound fails, naming it; the exit status says so."""
    _, out = bundle(case, "pi-armv6", name="changed")
    manifest, X, stored = selftest.read_bundle(out)
    stored["models/model.npz"] = stored["models/model.npz"] + 0.5
    np.savez(out / selftest.ROWS, X=X, **stored)
    assert selftest.main([str(out)]) == 1
    out_text = capsys.readouterr().out
    assert "model.npz" in out_text and "FAIL" in out_text and "self-test FAILED: 0 of 1" in out_text


def test_a_missing_backend_is_a_failure_not_a_skip(case, monkeypatch, capsys):
    _, out = bundle(case, "pi32", name="nobackend")
    for module in ("ai_edge_litert", "tflite_runtime"):
        monkeypatch.setitem(sys.modules, module, None)
    assert selftest.main([str(out)]) == 1
    assert "FAIL: no backend for it is installed" in capsys.readouterr().out


@pytest.mark.parametrize("problem, message", [
    ("nothing", "is not a lastedge bundle: it has no bundle.json"),
    ("json", "bundle.json is not valid JSON"),
    ("format", "is not a lastedge-bundle manifest"),
])
def test_a_folder_that_is_no_bundle_is_one_line(tmp_path, problem, message, capsys):
    if problem != "nothing":
        (tmp_path / "bundle.json").write_text("{" if problem == "json" else json.dumps({"format": "x"}))
    assert selftest.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1


def test_bad_arguments_leave_nothing_behind(case, tmp_path):
    model, X, y, wheel, _ = case
    with pytest.raises(ValueError, match="target must be one of pi64, pi32, pi-armv6, generic"):
        make_bundle(model, tmp_path / "b", "pi5", None, X, wheel=wheel)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(ValueError, match="exists and is not an empty folder"):
        make_bundle(model, tmp_path / "full", "pi64", None, X, wheel=wheel)
    with pytest.raises(ValueError, match="is not a wheel file"):
        make_bundle(model, tmp_path / "b", "pi64", None, X, wheel=tmp_path / "full" / "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # no temp folder left


def test_a_failure_midway_removes_the_partial_folder(case, tmp_path, monkeypatch):
    from lastedge.export import bundle as bundle_module

    def fail(*args, **kwargs):
        raise ValueError("parity failed")

    monkeypatch.setattr(bundle_module, "export_all", fail)
    model, X, y, wheel, _ = case
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="parity failed"):
        make_bundle(model, tmp_path / "empty", "pi64", None, X, wheel=wheel)
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]


@pytest.mark.parametrize("target, lines", [
    ("pi64", ['python3 -m venv .venv\n', '.venv/bin/pip install "./w.whl[tflite,onnx]"\n']),
    ("pi32", ["apt-get install -y python3-numpy python3-venv", "python3 -m venv --system-site-packages .venv\n",
              '.venv/bin/pip install "./w.whl" "tflite-runtime==2.14.*"\n']),
    ("pi-armv6", ["python3-numpy", "--system-site-packages", '.venv/bin/pip install "./w.whl"\n']),
])
def test_install_script_installs_the_targets_interpreter_then_self_tests(target, lines):
    script = install_script(target, "w.whl")
    assert script.startswith("#!/bin/sh\n") and "set -eu\n" in script
    assert all(line in script for line in lines)
    assert script.endswith(".venv/bin/python -m lastedge.runtime.selftest .\n")
    assert ("tflite-runtime" in script) == (target == "pi32") and set(TARGETS) >= {target}
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0  # parses


def test_the_self_test_speaks_json_and_refuses_other_options(case, capsys):
    _, out = bundle(case, "pi-armv6", name="json")
    assert selftest.main([str(out), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)
    assert (result["file"], result["backend"], result["passed"], result["agreement"]) == \
        ("model.npz", "numpy", True, 1.0)
    assert selftest.main([str(out), "--verbose"]) == 2
