"""The README's tour is code a newcomer pastes: it must run as written."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_tour_runs(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    tour = next(block for block in blocks if "to_tflite(model" in block)
    result = subprocess.run([sys.executable, "-c", tour], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    accuracy = float(re.search(r"device accuracy ([0-9.]+)", result.stdout).group(1))
    assert accuracy > 0.9
    assert {"digits.npz", "digits.onnx", "digits.tflite"} <= {p.name for p in tmp_path.iterdir()}
