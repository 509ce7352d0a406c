"""The exported C model on emulated Cortex-M cores: built with ``examples/mcu`` (arm-none-eabi-gcc,
newlib), run under QEMU and compared with the host's results bit for bit, measured for flash and
RAM from the build and for instructions per inference in the ``unicorn`` emulator.

Cores: Cortex-M4 with its FPU (QEMU's mps2-an386), Cortex-M3 (mps2-an385), Cortex-M0 (ARMv6-M,
what M0+ parts run; microbit). Tools: ``arm-none-eabi-gcc``, ``qemu-system-arm`` (Debian's
``gcc-arm-none-eabi``, ``libnewlib-arm-none-eabi``, ``qemu-system-arm``) and, for counting,
``pip install unicorn``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .c_parity import run_c
from .c_source import float_literal

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mcu"
TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm")


@dataclass(frozen=True)
class Core:
    """A Cortex-M core: its ``make CPU=`` name, QEMU board, and whether it has the DSP extension."""

    name: str
    board: str
    dsp: bool
    fpu: bool


CORES = {core.name: core for core in (
    Core("cortex-m4", "mps2-an386", dsp=True, fpu=True),
    Core("cortex-m3", "mps2-an385", dsp=False, fpu=False),
    Core("cortex-m0", "microbit", dsp=False, fpu=False),
)}


def missing_tools() -> list[str]:
    """The cross-compiling and emulating programs not on the PATH."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def test_rows_header(c_model: Any, X: np.ndarray) -> str:
    """``test_rows.h`` for ``main.c``: rows ``X`` (as float32) and the host's labels and score
    bits for them."""
    X = np.asarray(X, np.float32)
    host = run_c(c_model, X)
    bits = np.ascontiguousarray(host["scores"]).view(np.uint32)
    score_type = "float" if c_model.graph is None else "int32_t"

    def rows(values: np.ndarray, render: Any) -> str:
        return ",\n    ".join("{" + ", ".join(render(v) for v in row) + "}" for row in values)

    return (f"/* Test rows and the host's results for them; written by lastedge.export.c_emulate. */\n"
            f"#define TEST_ROWS {len(X)}\n#define TEST_SCORE {score_type}\n"
            f"static const float test_rows[TEST_ROWS][{X.shape[1]}] = {{\n    "
            f"{rows(X, float_literal)}\n}};\n"
            f"static const uint32_t expected_bits[TEST_ROWS][{bits.shape[1]}] = {{\n    "
            f"{rows(bits, lambda v: f'0x{int(v):08x}u')}\n}};\n"
            f"static const int expected_labels[TEST_ROWS] = {{"
            f"{', '.join(str(int(v)) for v in host['labels'])}}};\n")


def write_project(c_model: Any, X: np.ndarray, folder: Path) -> Path:
    """The model's files and ``test_rows.h`` in ``folder`` (``make MODEL=folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    if c_model.prefix != "lastedge":
        raise ValueError("examples/mcu's main.c calls lastedge_*: export with prefix='lastedge'")
    c_model.write(folder)
    (folder / "test_rows.h").write_text(test_rows_header(c_model, X))
    return folder


def _make(core: Core, model_dir: Path, build: Path, dsp: bool, *targets: str,
          timeout: float = 300) -> subprocess.CompletedProcess:
    """``make`` in ``examples/mcu`` for ``core``."""
    command = ["make", "-s", "-C", str(EXAMPLE), f"CPU={core.name}", f"MODEL={model_dir.resolve()}",
               f"BUILD={build.resolve()}", f"DSP={int(dsp)}", *targets]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@dataclass
class Run:
    """One model built and run on one core."""

    core: str
    dsp: bool
    differ: int  # rows whose results differ from the host's, as the firmware found
    stack: int  # bytes of stack one prediction took
    lines: list[str]  # the firmware's "row" lines
    elf: Path
    model_object: Path


def build_and_run(core: Core, model_dir: Path, build: Path, dsp: bool = False,
                  timeout: float = 300) -> Run:
    """Build the firmware for ``core`` and run it under QEMU; raise ``RuntimeError`` when the
    build or the run fails (a run that ends with rows differing from the host's is no failure
    here: ``Run.differ`` counts them)."""
    if dsp and not core.dsp:
        raise ValueError(f"{core.name} has no DSP extension")
    made = _make(core, model_dir, build, dsp, "all", timeout=timeout)
    if made.returncode != 0:
        raise RuntimeError(f"make for {core.name} failed:\n{made.stdout}{made.stderr}")
    elf = build / "firmware.elf"
    command = ["qemu-system-arm", "-M", core.board, "-nographic", "-monitor", "none",
               "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    found = re.search(r"^differ (\d+) of (\d+)$", ran.stdout, re.MULTILINE)
    stack = re.search(r"^stack (\d+)$", ran.stdout, re.MULTILINE)
    if found is None or stack is None or ran.returncode != int(found.group(1)):
        raise RuntimeError(f"{core.name}: the firmware did not finish (exit status {ran.returncode}):"
                           f"\n{ran.stdout[-2000:]}{ran.stderr[-2000:]}")
    lines = [line for line in ran.stdout.splitlines() if line.startswith("row ")]
    return Run(core.name, dsp, int(found.group(1)), int(stack.group(1)), lines, elf,
               build / "lastedge.o")


def host_lines(c_model: Any, X: np.ndarray) -> list[str]:
    """The firmware's "row" lines as the host's build of the model gives them."""
    host = run_c(c_model, np.asarray(X, np.float32))
    bits = np.ascontiguousarray(host["scores"]).view(np.uint32)
    return [f"row {i} {label} " + " ".join(f"{int(b):08x}" for b in row)
            for i, (label, row) in enumerate(zip(host["labels"], bits))]


def sizes(obj: Path) -> dict[str, int]:
    """``arm-none-eabi-size`` of an object file or ELF: text (code and constants), data, bss."""
    out = subprocess.run(["arm-none-eabi-size", str(obj)], capture_output=True, text=True, check=True)
    text, data, bss = (int(v) for v in out.stdout.splitlines()[1].split()[:3])
    return {"text": text, "data": data, "bss": bss}
