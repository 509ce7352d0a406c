"""What every command shares: the one-line error type, install hints, JSON output, common options."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

# Third-party module -> the extra that installs it, for "not installed" errors (pyproject.toml).
EXTRA_OF_MODULE = {
    "torch": "train", "sklearn": "train", "scipy": "train", "threadpoolctl": "train", "tqdm": "train",
    "onnx": "export", "flatbuffers": "export", "tflite": "export",
    "onnxruntime": "onnx", "ai_edge_litert": "tflite", "matplotlib": "plot", "PIL": "images",
}


class CommandError(Exception):
    """An error a command reports to the user as one line."""


def install_hint(module: str) -> str:
    """The pip command that installs third-party ``module`` with its lastedge extra."""
    return f"pip install 'lastedge[{EXTRA_OF_MODULE[module]}]'"


def json_text(value: Any) -> str:
    """``value`` as indented JSON, every NaN or infinity written as null (JSON readers refuse
    ``NaN``/``Infinity``, which a model's metadata or a parity error may hold)."""
    return json.dumps(_finite(value), indent=2)


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None, in nested dicts and lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def add_image_size_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--image-size HxW`` (height x width in pixels), shared by ``train`` and ``predict``."""
    parser.add_argument("--image-size", type=_image_size, default=None, metavar="HxW", help=help_text)


def _image_size(text: str) -> tuple[int, int]:
    from lastedge.runtime.images import parse_image_size

    try:
        return parse_image_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
