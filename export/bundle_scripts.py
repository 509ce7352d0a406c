"""The ``install.sh`` and ``README.txt`` of a bundle (``bundle.make_bundle``), per target board.

Each install line is one that ran on emulated Debian bookworm (docs/arm.md): on 64-bit Arm pip
installs numpy, LiteRT and onnxruntime as wheels; on 32-bit Arm neither LiteRT nor onnxruntime
has wheels and numpy<2 has none on the public index, so Debian's ``python3-numpy`` is used
through a venv made with ``--system-site-packages``, with the legacy ``tflite-runtime`` 2.14; on
ARMv6 (Pi Zero, Pi 1) no TFLite interpreter exists: numpy alone runs the ``.npz`` file.
"""

from __future__ import annotations

from typing import NamedTuple


class Target(NamedTuple):
    """A kind of board: what it is, which exported formats it runs, how lastedge is installed."""

    board: str
    formats: tuple[str, ...]  # exported formats besides the .npz, which every target gets
    debian_numpy: bool  # numpy from apt (python3-numpy) and a venv that sees it
    pip_extra: str  # the wheel's extras ("" for none)
    pip_more: str  # further pip requirements
    # whether its interpreters run int16x8 files as the workstation's do: tflite-runtime 2.14's
    # 16x8 FULLY_CONNECTED agreed with LiteRT's on 80 % of a digits model's rows
    int16x8: bool = True


TARGETS = {
    "pi64": Target("64-bit Arm (aarch64): Raspberry Pi OS 64-bit on a Pi 3, 4, 5 or Zero 2",
                   ("tflite", "onnx"), False, "[tflite,onnx]", ""),
    "pi32": Target("32-bit Arm (armv7l): Raspberry Pi OS 32-bit on a Pi 2, 3, 4 or Zero 2",
                   ("tflite",), True, "", ' "tflite-runtime==2.14.*"', int16x8=False),
    "pi-armv6": Target("ARMv6 (armv6l): a Pi Zero, Zero W or Pi 1, numpy backend only",
                       (), True, "", ""),
    "generic": Target("any machine with Python 3.10+ and pip wheels for LiteRT and onnxruntime",
                      ("tflite", "onnx"), False, "[tflite,onnx]", ""),
}

_DEBIAN_NUMPY = '''# numpy from Debian/Raspberry Pi OS: pip has no numpy wheel for this CPU on the public index
if ! python3 -c "import numpy, ensurepip" 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get install -y python3-numpy python3-venv ||
        { $SUDO apt-get update && $SUDO apt-get install -y python3-numpy python3-venv; }
fi
'''


def install_script(target: str, wheel: str) -> str:
    """``install.sh``: a venv in the bundle's folder, lastedge from ``wheel`` with the target's
    interpreter, then the bundle's self-test (its exit status is the script's)."""
    spec = TARGETS[target]
    venv = "python3 -m venv --system-site-packages .venv" if spec.debian_numpy else "python3 -m venv .venv"
    return (f"#!/bin/sh\n# Install lastedge from this bundle on {spec.board},\n"
            "# then check every model file against the scores the workstation computed.\n"
            'set -eu\ncd "$(dirname "$0")"\n'
            + (_DEBIAN_NUMPY if spec.debian_numpy else "")
            + f"{venv}\n"
            f'.venv/bin/pip install "./{wheel}{spec.pip_extra}"{spec.pip_more}\n'
            ".venv/bin/python -m lastedge.runtime.selftest .\n")


def readme(target: str, wheel: str, files: list[str], made: str) -> str:
    """``README.txt``: what the bundle holds and the three commands to use it."""
    spec = TARGETS[target]
    example = next((f for f in files if f.endswith(".tflite")), files[0])
    return (f"lastedge bundle for {spec.board}\n{made}\n\n"
            "Copy this folder to the device (e.g. scp -r), then in it:\n\n"
            "    sh install.sh        # a venv in .venv, lastedge and its interpreter, then the self-test\n"
            f"    .venv/bin/python on_device.py {example} selftest.csv   # one label per row\n"
            f"    .venv/bin/lastedge bench {example}\n\n"
            f"Model files (parity-checked on the workstation):\n"
            + "".join(f"    {name}\n" for name in files)
            + f"\n{wheel}: lastedge itself. selftest.npz: rows and the scores the workstation\n"
            "computed for each file (selftest.csv: the same rows as text); bundle.json: the list\n"
            "of files and score bounds. Rerun the self-test with\n"
            "    .venv/bin/python -m lastedge.runtime.selftest .\n"
            "pip needs the package index (Raspberry Pi OS adds piwheels) for numpy and the\n"
            "interpreters; docs/arm.md in lastedge's repository explains each board's install.\n")
