"""The exported C model on emulated Cortex-M cores: built with ``examples/mcu`` (arm-none-eabi-gcc,
newlib), run under QEMU and compared with the host's results bit for bit, measured for flash and
RAM from the build and for instructions per inference in the ``unicorn`` emulator.

Cores: Cortex-M4 with its FPU (QEMU's mps2-an386), Cortex-M3 (mps2-an385), Cortex-M0 (ARMv6-M,
what M0+ parts run; microbit). Tools: ``arm-none-eabi-gcc``, ``qemu-system-arm`` (Debian's
``gcc-arm-none-eabi``, ``libnewlib-arm-none-eabi``, ``qemu-system-arm``) and, for counting,
``pip install 'lastedge[mcu]'`` (the unicorn emulator).
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
          timeout: float = 300, flags: str = "-O2") -> subprocess.CompletedProcess:
    """``make`` in ``examples/mcu`` for ``core``; ``flags``: the optimisation and other flags
    for the model's compilation."""
    opt, _, extra = flags.partition(" ")
    command = ["make", "-s", "-C", str(EXAMPLE), f"CPU={core.name}", f"MODEL={model_dir.resolve()}",
               f"BUILD={build.resolve()}", f"DSP={int(dsp)}", f"OPT={opt}", f"EXTRA={extra}", *targets]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def build_object(core: Core, model_dir: Path, build: Path, dsp: bool = False, timeout: float = 300,
                 flags: str = "-O2") -> Path:
    """Compile the model alone (``MODEL/lastedge.c``, no firmware, nothing run) for ``core`` as
    ``examples/mcu`` does, into ``build``; its object file, for :func:`sizes`. ``RuntimeError``
    when the compiler fails."""
    if dsp and not core.dsp:
        raise ValueError(f"{core.name} has no DSP extension")
    obj = build / "lastedge.o"
    made = _make(core, model_dir, build, dsp, str(obj.resolve()), timeout=timeout, flags=flags)
    if made.returncode != 0:
        raise RuntimeError(f"make for {core.name} failed:\n{made.stdout}{made.stderr}")
    return obj


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
                  timeout: float = 300, flags: str = "-O2") -> Run:
    """Build the firmware for ``core`` (the model compiled with ``flags``, an optimisation level
    first) and run it under QEMU; raise ``RuntimeError`` when the build or the run fails (a run
    that ends with rows differing from the host's is no failure here: ``Run.differ`` counts
    them)."""
    if dsp and not core.dsp:
        raise ValueError(f"{core.name} has no DSP extension")
    made = _make(core, model_dir, build, dsp, "all", timeout=timeout, flags=flags)
    if made.returncode != 0:
        raise RuntimeError(f"make for {core.name} failed:\n{made.stdout}{made.stderr}")
    elf = build / "firmware.elf"
    command = ["qemu-system-arm", "-M", core.board, "-nographic", "-monitor", "none",
               "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    found = re.search(r"^differ (\d+) of (\d+)$", ran.stdout, re.MULTILINE)
    stack = re.search(r"^stack (\d+) of (\d+)$", ran.stdout, re.MULTILINE)
    if found is None or stack is None or ran.returncode != int(found.group(1)):
        raise RuntimeError(f"{core.name}: the firmware did not finish (exit status {ran.returncode}):"
                           f"\n{ran.stdout[-2000:]}{ran.stderr[-2000:]}")
    if int(stack.group(1)) >= int(stack.group(2)) - 8:
        raise RuntimeError(f"{core.name}: one prediction took all {stack.group(2)} bytes of stack "
                           "that main.c paints; the measurement is a lower bound")
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
    """An object file's or ELF's bytes by kind (``arm-none-eabi-size -A``): ``code`` (.text),
    ``constants`` (.rodata), both in flash; ``data`` (flash and RAM), ``bss`` (RAM)."""
    out = subprocess.run(["arm-none-eabi-size", "-A", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    totals = dict.fromkeys(("code", "constants", "data", "bss"), 0)
    kinds = {".text": "code", ".rodata": "constants", ".data": "data", ".bss": "bss"}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            kind = next((k for prefix, k in kinds.items()
                         if parts[0] == prefix or parts[0].startswith(prefix + ".")), None)
            if kind is not None:
                totals[kind] += int(parts[1])
    return totals


def _symbols(elf: Path) -> dict[str, int]:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True)
    return {name: int(address, 16) for address, _, name in
            (line.split() for line in out.stdout.splitlines() if len(line.split()) == 3)}


UNICORN_CPUS = {"cortex-m4": "UC_CPU_ARM_CORTEX_M4", "cortex-m3": "UC_CPU_ARM_CORTEX_M3",
                "cortex-m0": "UC_CPU_ARM_CORTEX_M0"}
RAM, RETURN = 0x20000000, 0x003FFF00  # where arguments and the stack go; a stop address in flash


def thumb_instructions(code: bytes) -> int:
    """How many Thumb instructions ``code`` holds: a halfword starting 0b11101, 0b11110 or
    0b11111 opens a 32-bit instruction, any other is one of 16 bits."""
    count = offset = 0
    while offset < len(code):
        offset += 4 if int.from_bytes(code[offset:offset + 2], "little") >> 11 >= 0b11101 else 2
        count += 1
    return count


def count_instructions(elf: Path, core: Core, function: str, *buffers: bytes) -> tuple[int, int]:
    """The instructions one call ``function(buffer_0, ..., out)`` executes in the ``unicorn``
    emulator (each argument a pointer to a copy of its buffer, then one to 4 kB of output), and
    its return value. Counted per translated block (each decoded once), so an instruction of a
    Thumb-2 IT block whose condition fails counts, as it takes its cycle on the core."""
    try:
        import unicorn
        from unicorn import arm_const
    except ImportError:
        raise ImportError("counting instructions needs the unicorn emulator: "
                          "pip install 'lastedge[mcu]'") from None
    image = Path(elf).with_suffix(".bin")
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".text", str(elf), str(image)],
                   check=True)
    emulator = unicorn.Uc(unicorn.UC_ARCH_ARM, unicorn.UC_MODE_THUMB | unicorn.UC_MODE_MCLASS)
    emulator.ctl_set_cpu_model(getattr(arm_const, UNICORN_CPUS[core.name]))
    emulator.mem_map(0, 4 << 20)
    emulator.mem_write(0, image.read_bytes())
    emulator.mem_map(RAM, 1 << 20)
    for index, data in enumerate((*buffers, bytes(4096))):
        address = RAM + 0x80000 + index * 0x10000
        emulator.mem_write(address, data)
        emulator.reg_write(arm_const.UC_ARM_REG_R0 + index, address)
    emulator.reg_write(arm_const.UC_ARM_REG_SP, RAM + 0x70000)
    emulator.reg_write(arm_const.UC_ARM_REG_LR, RETURN | 1)
    count, lengths = [0], {}

    def block(uc: Any, address: int, size: int, _: Any) -> None:
        if address not in lengths:
            lengths[address] = thumb_instructions(bytes(uc.mem_read(address, size)))
        count[0] += lengths[address]

    emulator.hook_add(unicorn.UC_HOOK_BLOCK, block)
    emulator.emu_start(_symbols(elf)[function] | 1, RETURN)
    return count[0], emulator.reg_read(arm_const.UC_ARM_REG_R0)


def check_on_core(c_model: Any, X: np.ndarray, core: Core, folder: Path, *, dsp: bool = False,
                  count_rows: int = 4) -> dict[str, Any]:
    """Build ``c_model`` (a ``c.CModel``, prefix "lastedge") with ``examples/mcu`` for ``core``,
    run it under QEMU on rows ``X``, compare every result with the host's bit for bit, and
    measure it: flash and RAM of the model alone (its object file; RAM is the stack high-water
    of one prediction, the model holding no data or bss), and the instructions of
    ``lastedge_predict`` (float row in, class out) and, integer models, of ``lastedge_predict_q``
    (integer row in, class out: no float preprocessing or quantisation), averaged over the
    first ``count_rows`` rows. ``folder`` keeps the project and the build."""
    X = np.asarray(X, np.float32)
    project = write_project(c_model, X, folder / "model")
    run = build_and_run(core, project, folder / f"{core.name}{'-dsp' if dsp else ''}", dsp)
    model_bytes = sizes(run.model_object)
    rows = X[:count_rows]
    predict = [count_instructions(run.elf, core, "lastedge_predict", row.tobytes())[0] for row in rows]
    macs = c_model.model.macs_per_sample
    figures = {
        "core": core.name, "dsp": dsp, "precision": c_model.precision,
        "rows": len(X), "identical_to_host": run.differ == 0 and run.lines == host_lines(c_model, X),
        "flash_code": model_bytes["code"], "flash_constants": model_bytes["constants"] + model_bytes["data"],
        "ram_static": model_bytes["data"] + model_bytes["bss"], "stack": run.stack,
        "macs": macs, "instructions_predict": float(np.mean(predict)),
    }
    figures["flash"] = figures["flash_code"] + figures["flash_constants"]
    figures["instructions_per_mac"] = figures["instructions_predict"] / macs
    if c_model.graph is not None:
        levels = run_c(c_model, rows)["q"]
        integer = [count_instructions(run.elf, core, "lastedge_predict_q", q.tobytes())[0] for q in levels]
        figures["instructions_integer"] = float(np.mean(integer))
        figures["integer_per_mac"] = figures["instructions_integer"] / macs
    return figures
