"""The parts' import graph: the CLI is the top layer; train and export sit on runtime, apart.

Read from the source (every ``import``, lazy ones inside functions included), so a forbidden
import is found whether or not a test happens to run it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER_OF_PART = {"train": "train", "export": "export", "runtime": "runtime", "cli": "cli"}
FORBIDDEN = {
    "runtime": {"train", "export", "cli"},
    "export": {"train", "cli"},
    "train": {"export", "cli"},
}


def imported_parts(path: Path, part: str) -> set[str]:
    """The lastedge parts (``train``, ``export``, ...) that the module at ``path`` imports."""
    parts = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.ImportFrom):  # relative: inside the module's own part
            names = [f"lastedge.{part}"]
        else:
            continue
        parts |= {name.split(".")[1] for name in names if name.startswith("lastedge.")}
    return parts


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_a_part_imports_only_the_parts_below_it(part):
    offences = {str(path.relative_to(ROOT)): sorted(imported_parts(path, part) & FORBIDDEN[part])
                for path in sorted((ROOT / FOLDER_OF_PART[part]).rglob("*.py"))}
    assert {path: parts for path, parts in offences.items() if parts} == {}


def test_the_reader_sees_lazy_and_relative_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from . import x\ndef f():\n    import lastedge.cli.app\n    from lastedge.export import to_onnx\n")
    assert imported_parts(module, "runtime") == {"runtime", "cli", "export"}
