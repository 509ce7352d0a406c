"""The runtime stays light: no heavy imports, and ``pip install .`` with no extras pulls numpy only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
    assert _heavy_modules_after_import(python, tmp_path, cwd=tmp_path) == []
