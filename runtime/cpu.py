"""What the CPU is, read from Linux's ``/proc/cpuinfo``: its name, and whether it has an 8-bit
dot-product instruction, which decides how fast int8 files run and whether signed int8 ONNX
weights are exact on it; and whether that text describes another architecture than the process's
(QEMU user mode passes the x86 host's ``/proc/cpuinfo`` through to an emulated Arm process), so that
no figure measured under emulation reads as a device's."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

# CPU feature flags (Linux /proc/cpuinfo) of an 8-bit dot product: x86 VNNI (AVX-512 or AVX),
# AMX, and Arm's dot-product extension (Armv8.2+, e.g. the Raspberry Pi 5's Cortex-A76).
INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"})
X86_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})
ARM_MACHINES = ("arm", "aarch64")  # platform.machine() prefixes: armv6l, armv7l, aarch64, arm64


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


def cpuinfo_family(cpuinfo: str | None) -> str | None:
    """The architecture ``/proc/cpuinfo`` text describes: ``"x86_64"`` or ``"x86"`` (a ``flags``
    line; 64-bit when it has ``lm``), ``"Arm"`` (a ``Features`` line or a ``CPU implementer``),
    None when it says neither."""
    keys = {key.strip().lower(): value.split() for key, _, value in
            (line.partition(":") for line in (cpuinfo or "").splitlines())}
    if "flags" in keys:
        return "x86_64" if "lm" in keys["flags"] else "x86"
    if "features" in keys or "cpu implementer" in keys:
        return "Arm"
    return None


def emulation(cpuinfo: str | None, machine: str) -> str | None:
    """Why ``cpuinfo`` is not this process's CPU, e.g. ``"host CPU x86_64 seen from an aarch64
    process"`` when an x86 host runs an Arm process under QEMU user mode; None when the two agree
    or either is unknown. ``machine`` is ``platform.machine()``."""
    family = cpuinfo_family(cpuinfo)
    process = "x86" if machine.lower() in X86_MACHINES else \
        "Arm" if machine.lower().startswith(ARM_MACHINES) else None
    if family is None or process is None or family.startswith(process):
        return None
    return f"host CPU {family} seen from an {machine} process"


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


def usable_cores(cpus: Sequence[int] | None = None) -> int | None:
    """How many cores this process may run on: ``cpus`` when pinned to them (None when some lie
    outside its affinity, which ``pinned`` refuses), else its affinity (Linux), else all the
    machine's (None when unknown)."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if cpus is None:
        return os.cpu_count() if allowed is None else len(allowed)
    return len(set(cpus)) if allowed is None or allowed.issuperset(cpus) else None


def machine_info() -> dict[str, Any]:
    """CPU model, cores (all / usable), OS, Python and backend versions; under emulation
    (``emulation``) the CPU marked so and its (the host's) int8 dot product left unknown."""
    cpuinfo = read_cpuinfo()
    emulated = emulation(cpuinfo, platform.machine())
    return {
        "cpu": cpu_model(cpuinfo) + ("" if emulated is None else f" (emulated: {emulated})"),
        "emulated": emulated is not None,
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "machine": platform.machine(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "int8_dot_product": None if emulated else int8_dot_product(cpuinfo),
        **{name: _version(dist) for name, dist in
           (("numpy", "numpy"), ("onnxruntime", "onnxruntime"), ("litert", "ai-edge-litert"),
            ("tflite_runtime", "tflite-runtime"))},
    }


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
