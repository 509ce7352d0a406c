"""What ``runtime.cpu`` reads from ``/proc/cpuinfo``: the CPU's name, its 8-bit dot product, and
so whether onnxruntime's kernels for signed int8 weights may saturate on it."""

from __future__ import annotations

import pytest

from lastedge.runtime import cpu as cpu_module
from lastedge.runtime.cpu import cpu_model, int8_dot_product, signed_weights_saturate

X86_AVX2 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n"
X86_VNNI = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni\n"
PI4 = "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU part\t: 0xd08\n"
PI5 = ("processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp "
       "cpuid asimdrdm lrcpc dcpop asimddp\n")


@pytest.mark.parametrize("cpuinfo, expected", [
    (X86_AVX2, False), (X86_VNNI, True), (PI4, False), (PI5, True),
    (X86_AVX2 + X86_VNNI, True),  # any processor that has it
    ("processor\t: 0\nmodel name\t: something\n", None), ("", None), (None, None),
])
def test_int8_dot_product_is_read_from_the_cpu_features(cpuinfo, expected):
    assert int8_dot_product(cpuinfo) is expected


def test_cpu_model_is_the_model_name_line_else_the_platform(monkeypatch):
    monkeypatch.setattr(cpu_module, "_read", lambda path: None)  # no device tree, as on x86
    assert cpu_model(X86_AVX2) == "AMD EPYC"
    assert cpu_model(PI4) and cpu_model(None)  # the platform: never empty


PI3_32BIT = ("processor\t: 0\nmodel name\t: ARMv7 Processor rev 4 (v7l)\nFeatures\t: half thumb neon\n"
             "Hardware\t: BCM2835\nRevision\t: a02082\nModel\t\t: Raspberry Pi 3 Model B Rev 1.2\n")


def test_cpu_model_names_a_pi_by_its_board(monkeypatch):
    """A 32-bit Pi OS names every Pi's CPU "ARMv7 Processor rev 4 (v7l)", which bench printed."""
    monkeypatch.setattr(cpu_module, "_read", lambda path: None)  # a container: no device tree
    assert cpu_model(PI3_32BIT) == "Raspberry Pi 3 Model B Rev 1.2"
    monkeypatch.setattr(cpu_module, "_read", lambda path: "Raspberry Pi 5 Model B Rev 1.0\x00")
    assert cpu_model(PI5) == "Raspberry Pi 5 Model B Rev 1.0"


@pytest.mark.parametrize("cpuinfo, machine, expected", [
    (X86_AVX2, "x86_64", True), (X86_VNNI, "x86_64", False), (X86_AVX2, "AMD64", True),
    (None, "x86_64", None),  # no /proc/cpuinfo (Windows, macOS on Intel): cannot tell
    (PI4, "aarch64", False), (PI5, "aarch64", False), (PI3_32BIT, "armv7l", False),
    (None, "arm64", False),  # the saturating 16-bit pair sums are x86 kernels (not measured on Arm)
])
def test_signed_weights_saturate_on_x86_without_vnni_only(cpuinfo, machine, expected):
    assert signed_weights_saturate(cpuinfo, machine) is expected


# --- emulation: QEMU user mode shows an Arm process the x86 host's /proc/cpuinfo -----------------

@pytest.mark.parametrize("cpuinfo, machine, expected", [
    (X86_AVX2, "aarch64", "host CPU x86 seen from an aarch64 process"),
    (X86_AVX2.replace("fma", "fma lm"), "armv7l", "host CPU x86_64 seen from an armv7l process"),
    (PI5, "x86_64", "host CPU Arm seen from an x86_64 process"),
    (X86_AVX2, "x86_64", None), (PI4, "aarch64", None), (PI3_32BIT, "armv7l", None), (PI5, "arm64", None),
    (None, "aarch64", None), ("processor\t: 0\n", "aarch64", None),  # cannot tell
    (X86_AVX2, "riscv64", None),  # a machine of neither family: not judged
])
def test_emulation_is_a_cpuinfo_of_another_architecture(cpuinfo, machine, expected):
    assert cpu_module.emulation(cpuinfo, machine) == expected


def test_bench_marks_an_emulated_cpu_and_claims_no_dot_product(monkeypatch):
    """Under QEMU, bench's first line named the x86 host with "int8 dot product: yes"."""
    from lastedge.runtime.bench import format_table

    monkeypatch.setattr(cpu_module, "_read", lambda path: X86_VNNI.replace("processor\t: 0\n",
                        "processor\t: 0\nmodel name\t: Intel Xeon\n") if path == "/proc/cpuinfo" else None)
    monkeypatch.setattr(cpu_module.platform, "machine", lambda: "aarch64")
    machine = cpu_module.machine_info()
    assert machine["emulated"] is True and machine["int8_dot_product"] is None
    assert machine["cpu"] == "Intel Xeon (emulated: host CPU x86 seen from an aarch64 process)"
    row = {"machine": machine, "peak_rss_mib": 10.0, "batches": []}
    assert format_table([row]).startswith(
        "Intel Xeon (emulated: host CPU x86 seen from an aarch64 process) (") and \
        "int8 dot product: unknown" in format_table([row])
    monkeypatch.setattr(cpu_module.platform, "machine", lambda: "x86_64")  # the same text, natively
    machine = cpu_module.machine_info()
    assert (machine["cpu"], machine["emulated"], machine["int8_dot_product"]) == ("Intel Xeon", False, True)
