"""What the CPU is, read from Linux's ``/proc/cpuinfo``: its name, and whether it has an 8-bit
dot-product instruction, which decides how fast int8 files run and whether signed int8 ONNX
weights are exact on it."""

from __future__ import annotations

import platform
from pathlib import Path

# CPU feature flags (Linux /proc/cpuinfo) of an 8-bit dot product: x86 VNNI (AVX-512 or AVX),
# AMX, and Arm's dot-product extension (Armv8.2+, e.g. the Raspberry Pi 5's Cortex-A76).
INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"})
X86_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})


def read_cpuinfo() -> str | None:
    """The text of ``/proc/cpuinfo``, or None where there is none (macOS, Windows)."""
    return _read("/proc/cpuinfo")


def int8_dot_product(cpuinfo: str | None) -> bool | None:
    """Whether the CPU has an 8-bit dot-product instruction, from ``/proc/cpuinfo`` text; None
    when unknown (no such file, or no feature list in it).

    Without one, int8 files run little faster than fp32 (docs/benchmarks.md, "Latency and int8"),
    so ``bench`` reports it.
    """
    fields = (line.partition(":") for line in (cpuinfo or "").splitlines())
    feature_lists = [value.split() for key, _, value in fields
                     if key.strip().lower() in ("flags", "features")]
    if not feature_lists:
        return None
    return any(INT8_DOT_FLAGS.intersection(features) for features in feature_lists)


def signed_weights_saturate(cpuinfo: str | None, machine: str) -> bool | None:
    """Whether onnxruntime's kernels for int8 (signed) weights may saturate on this CPU: True on
    x86 without VNNI (they add pairs of 8-bit products in 16 bits), False on x86 with it and off
    x86, None on x86 when the features are unknown. ``machine`` is ``platform.machine()``."""
    if machine.lower() not in X86_MACHINES:
        return False
    dot = int8_dot_product(cpuinfo)
    return None if dot is None else not dot


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def cpu_model(cpuinfo: str | None) -> str:
    """The board (a Raspberry Pi's: ``/proc/cpuinfo``'s 'Model' line or the device tree), else the
    CPU's 'model name' (x86), else the platform. The board comes first: a 32-bit Pi OS names
    every Pi's CPU "ARMv7 Processor rev 4 (v7l)", which does not say which Pi ran the numbers."""
    fields: dict[str, str] = {}
    for line in (cpuinfo or "").splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    board = fields.get("Model") or (_read("/proc/device-tree/model") or "").strip("\x00\n ")
    return board or fields.get("model name") or platform.processor() or platform.machine()
