"""``lastedge bundle``: the command's output, its one-line errors, and (slow) a bundle installed by
its own ``install.sh`` in a fresh venv, whose self-test passes with no access to the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")


@pytest.fixture(scope="module")
def files(blobs, prototype_model, tmp_path_factory):
    """A blobs model, rows for it (.npy) and a stand-in wheel."""
    X, y = blobs(rows=400)
    folder = tmp_path_factory.mktemp("bundle-command")
    np.save(folder / "rows.npy", X)
    wheel = folder / "lastedge-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("lastedge/__init__.py", "")
    return prototype_model(X, y).save(folder / "m.npz"), folder / "rows.npy", wheel


def test_bundle_lists_its_files_and_their_parity(files, tmp_path, run):
    model, rows, wheel = files
    code, out, err = run("bundle", model, "--target", "pi32", "--data", rows, "--wheel", wheel,
                         "--out", tmp_path / "b")
    assert code == 0 and err == ""
    assert out.startswith(f"bundle {tmp_path / 'b'} for 32-bit Arm (armv7l)")
    assert "models/model-int8.tflite" in out and "parity max score error" in out and ".onnx" not in out
    assert out.endswith(f"on the device: sh {tmp_path / 'b'}/install.sh\n")
    code, out, _ = run("bundle", model, "--target", "pi-armv6", "--wheel", wheel, "--out",
                       tmp_path / "c", "--json")
    info = json.loads(out)
    assert code == 0 and info["check_rows"] == "synthetic" and [f["file"] for f in info["files"]] == \
        ["models/model.npz"]


@pytest.mark.parametrize("argv, message", [
    (["--target", "pi64", "--out", "{tmp}/x", "--wheel", "{tmp}/none.whl"], "is not a wheel file"),
    (["--target", "pi64", "--out", "{tmp}", "--wheel", "{wheel}"], "exists and is not an empty folder"),
    (["--target", "pi64", "--out", "{tmp}/no/x", "--wheel", "{wheel}"], "does not exist"),
    (["--target", "pi64", "--out", "{tmp}/x", "--wheel", "{wheel}", "--data", "{tmp}/none.csv"], "none.csv"),
])
def test_bad_input_is_one_line_and_writes_nothing(files, tmp_path, run, argv, message):
    model, _, wheel = files
    (tmp_path / "here").write_text("")  # --out {tmp} is not empty
    argv = [a.format(tmp=tmp_path, wheel=wheel) for a in argv]
    code, out, err = run("bundle", model, *argv)
    assert code == 1 and out == "" and message in err and len(err.splitlines()) == 1
    assert err.startswith("lastedge bundle: error: ")
    assert [p.name for p in tmp_path.iterdir()] == ["here"]


def test_an_unknown_target_is_a_usage_error(files, tmp_path, run, capsys):
    with pytest.raises(SystemExit) as exit_:
        run("bundle", files[0], "--target", "pi5", "--out", tmp_path / "b")
    assert exit_.value.code == 2 and "invalid choice: 'pi5'" in capsys.readouterr().err


@pytest.mark.slow
def test_install_sh_installs_the_bundle_and_its_self_test_passes(files, tmp_path):
    """The real thing on this (x86) machine: the wheel built from the checkout, the bundle copied
    where the checkout is not, ``install.sh`` run with a clean environment (a fresh venv, pip from
    the configured index), the self-test passing for every file on every backend."""
    model, rows, _ = files
    out = tmp_path / "made"
    subprocess.run([sys.executable, "-m", "lastedge.cli", "bundle", str(model), "--target", "generic",
                    "--data", str(rows), "--out", str(out)], check=True, capture_output=True)
    device = Path(shutil.copytree(out, tmp_path / "device" / "bundle"))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    done = subprocess.run(["sh", str(device / "install.sh")], capture_output=True, text=True, env=env,
                          cwd=tmp_path / "device", timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "self-test passed: 9 of 9" in done.stdout  # .npz, 4 .onnx and 4 .tflite files (int16x8 too)
    site = next((device / ".venv" / "lib").glob("python3*/site-packages"))
    assert (site / "lastedge" / "runtime").is_dir() and not (site / "torch").exists()
