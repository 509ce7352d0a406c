"""The runtime stays light: no heavy imports, and ``pip install .`` with no extras pulls numpy only.

That bare install is a device's: its ``lastedge`` command must predict, bench and inspect ``.npz``
models, and name the extra to install for the workstation commands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sklearn", "onnx", "onnxruntime", "ai_edge_litert", "tflite_runtime", "scipy")
CHECK = (
    "import json, sys; import numpy as np; import lastedge.runtime as r; "
    "m = r.Model(np.eye(3, 2), np.ones((2, 1)), [0, 1]); m.save(sys.argv[1]); "
    "p = r.load(sys.argv[1]); assert p.predict(np.eye(3)).tolist() == [0, 0, 0]; "
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in %r)))" % (HEAVY,)
)


def _heavy_modules_after_import(python: str, tmp_path: Path, **kwargs) -> list[str]:
    out = subprocess.run([python, "-c", CHECK, str(tmp_path / "m.npz")], check=True,
                         capture_output=True, text=True, **kwargs).stdout
    return json.loads(out.splitlines()[-1])


def test_import_and_numpy_predict_load_no_heavy_module(tmp_path):
    assert _heavy_modules_after_import(sys.executable, tmp_path) == []


@pytest.mark.slow
def test_plain_pip_install_pulls_numpy_only(tmp_path):
    """A fresh venv, ``pip install`` of a copy of the repo (no extras): only numpy comes along."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "tests", "benchmarks", "build", "*.egg-info", "__pycache__", "*.npz"))
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    str(source)], check=True, timeout=300)
    listed = subprocess.run([python, "-m", "pip", "list", "--format", "json"], check=True,
                            capture_output=True, text=True).stdout
    installed = {p["name"].lower() for p in json.loads(listed)} - {"pip", "setuptools", "wheel"}
    assert installed == {"lastedge", "numpy"}
    licence = subprocess.run([python, "-c", "import importlib.metadata as m; "
                              "print(m.distribution('lastedge').read_text('licenses/LICENSE'))"],
                             check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence  # the text pyproject declares
    assert _heavy_modules_after_import(python, tmp_path, cwd=tmp_path) == []
    # from the checkout's root too: its folders (train/, cli/, ...) never shadow the installed package
    assert _heavy_modules_after_import(python, tmp_path, cwd=source) == []
    _check_device_commands(tmp_path / "venv" / "bin" / "lastedge", tmp_path)


def _check_device_commands(lastedge: Path, tmp_path: Path) -> None:
    """The numpy-only ``lastedge``: device commands work, workstation ones fail in one line."""
    (tmp_path / "rows.csv").write_text("1,0,0,0\n0,1,0,1\n0,0,1,0\n")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(lastedge), *args], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120)

    for args in (["--help"], ["inspect", "m.npz"], ["bench", "m.npz", "--runs", "5", "--batch", "1"]):
        done = run(*args)
        assert done.returncode == 0, (args, done.stderr)
    done = run("predict", "m.npz", "--data", "rows.csv")  # the model answers class 0 for all three
    assert done.returncode == 0 and "accuracy 66.67% on 3 rows" in done.stdout, done.stderr
    (tmp_path / "idx").mkdir()  # the same rows as MNIST-style IDX files: numpy reads them
    for part in ("train", "t10k"):
        (tmp_path / "idx" / f"{part}-images-idx2-ubyte").write_bytes(bytes([0, 0, 8, 2, 0, 0, 0, 3, 0, 0, 0, 3])
                                                                     + np.eye(3, dtype=np.uint8).tobytes())
        (tmp_path / "idx" / f"{part}-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 0]))
    done = run("predict", "m.npz", "--data", "idx")
    assert done.returncode == 0 and "accuracy 66.67% on 3 rows (idx, held-out part)" in done.stdout, done.stderr
    (tmp_path / "photos" / "cat").mkdir(parents=True)
    (tmp_path / "photos" / "cat" / "1.png").write_bytes(b"\x89PNG")
    done = run("predict", "m.npz", "--data", "photos")  # images need Pillow, which is not here
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("pip install 'lastedge[images]'")
    done = run("train", "--data", "rows.csv", "--atoms", "2", "--out", "x.npz")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("pip install 'lastedge[train]'")
    assert not (tmp_path / "x.npz").exists()
