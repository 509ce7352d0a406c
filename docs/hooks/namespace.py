"""MkDocs hook: let mkdocstrings (griffe) find ``lastedge.train``, ``.export``, ``.runtime``, ``.cli``.

The import names differ from the folder names (``train/`` is ``lastedge.train``, mapped in
pyproject.toml), and griffe reads source folders by name, so it cannot find them in the checkout,
nor through setuptools' editable-install finder (it maps only top-level packages). At start-up this
hook builds, in a temporary folder outside the clone, ``lastedge/`` holding one link per part to
its folder, and puts that folder first on ``sys.path``, where mkdocstrings' python handler looks.
Griffe then reads the checkout's own source as the package ``lastedge``, statically: nothing is
imported, so the docs build needs no torch, onnx or interpreter.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("train", "export", "runtime", "cli")
_made: list[Path] = []


def on_startup(**_: object) -> None:
    folder = Path(tempfile.mkdtemp(prefix="lastedge-docs-"))
    package = folder / "lastedge"
    package.mkdir()
    for part in PARTS:
        (package / part).symlink_to(ROOT / part, target_is_directory=True)
    sys.path.insert(0, str(folder))
    _made.append(folder)


def on_shutdown(**_: object) -> None:
    while _made:
        folder = _made.pop()
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
        shutil.rmtree(folder, ignore_errors=True)
