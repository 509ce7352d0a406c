"""Emulated Debian bookworm roots for ``arm_check.py``: tools, bootstrap, mounts, chroot commands.

A root is built once with ``debootstrap`` (about 4 minutes) under the cache folder, outside the
clone, and reused. Commands run in it under QEMU user mode, with ``/proc`` and ``/dev`` mounted
(never ``/sys``: onnxruntime and LiteRT crash reading the x86 host's CPU topology through it),
pip's cache bound in from the cache folder, and a clean environment. Every mount is undone when
the commands end, also on failure. The recipe is /work/shared/ARM.md's, measured.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

DEBIAN_ARCH = {"aarch64": "arm64", "armhf": "armhf"}
QEMU_BINFMT = {"aarch64": "qemu-aarch64", "armhf": "qemu-arm"}
APT_TOOLS = {"qemu-user-static": "qemu-aarch64-static", "binfmt-support": "update-binfmts",
             "debootstrap": "debootstrap"}
INCLUDE = "python3,python3-venv,python3-pip,ca-certificates"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CLEAN_ENV = ("HOME=/root", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C.UTF-8")
HOST_FILES = ("/etc/resolv.conf", "/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf")

Runner = Callable[[Sequence[str]], None]


def run(command: Sequence[str]) -> None:
    """Run ``command``, raising ``CalledProcessError`` when it fails."""
    subprocess.run(list(command), check=True)


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    """$LASTEDGE_ARM_CACHE, else ~/.cache/lastedge-arm."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("LASTEDGE_ARM_CACHE") or Path.home() / ".cache" / "lastedge-arm")


def root_path(cache: Path, arch: str) -> Path:
    """Where the bookworm root of ``arch`` ("aarch64" or "armhf") lives in the cache."""
    return cache / "roots" / f"bookworm-{DEBIAN_ARCH[arch]}"


def missing_apt_tools(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The Debian packages of ``APT_TOOLS`` whose program is not on PATH."""
    return [package for package, program in APT_TOOLS.items() if which(program) is None]


def binfmt_commands(arch: str, mounted: bool) -> list[list[str]]:
    """The commands that let the kernel run ``arch`` binaries through QEMU."""
    mount = [] if mounted else [["mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc"]]
    return mount + [["update-binfmts", "--enable", QEMU_BINFMT[arch]]]


def host_mirror(sources: str) -> str:
    """The Debian mirror the host's apt uses (a ``deb URL bookworm`` line or a deb822 ``URIs:``
    field whose path ends in /debian), else ``DEFAULT_MIRROR``."""
    for match in re.finditer(r"(?m)^(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(\S+)", sources):
        if match.group(1).rstrip("/").endswith("/debian"):
            return match.group(1).rstrip("/")
    return DEFAULT_MIRROR


def read_host_sources() -> str:
    """The text of the host's apt sources (sources.list and sources.list.d)."""
    paths = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    return "\n".join(p.read_text(errors="replace") for p in paths
                     if p.is_file() and p.suffix in (".list", ".sources"))


def debootstrap_command(arch: str, root: Path, mirror: str) -> list[str]:
    """The ``debootstrap`` of a minimal bookworm root with Python for ``arch``."""
    return ["debootstrap", f"--arch={DEBIAN_ARCH[arch]}", "--variant=minbase", f"--include={INCLUDE}",
            "bookworm", str(root), mirror]


def is_built(root: Path) -> bool:
    """Whether ``root`` holds a finished bootstrap (its Python and venv module are there)."""
    return (root / "usr" / "bin" / "python3").exists() and (root / "usr" / "lib" / "python3.11" / "venv").is_dir()


def build_root(arch: str, root: Path, runner: Runner = run) -> None:
    """Bootstrap ``root`` unless built: into ``ROOT.partial``, renamed when done, so a stopped
    bootstrap is started again rather than reused half made."""
    if is_built(root):
        return
    partial = root.with_name(root.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.parent.mkdir(parents=True, exist_ok=True)
    runner(debootstrap_command(arch, partial, host_mirror(read_host_sources())))
    os.replace(partial, root)


def copy_host_files(root: Path) -> None:
    """DNS, the CA bundle and pip's configuration, so pip inside reaches the host's index."""
    for name in HOST_FILES:
        if Path(name).is_file():
            target = root / name.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(name, target)


def mount_commands(root: Path, pip_cache: Path) -> list[list[str]]:
    """The mounts a run needs, in order: /proc, /dev and pip's cache (never /sys)."""
    return [["mount", "-t", "proc", "proc", str(root / "proc")],
            ["mount", "--bind", "/dev", str(root / "dev")],
            ["mount", "--bind", str(pip_cache), str(root / "root" / ".cache" / "pip")]]


@contextmanager
def mounted(root: Path, pip_cache: Path, runner: Runner = run) -> Iterator[None]:
    """``root`` with ``mount_commands`` done; each mount that succeeded is undone in reverse
    order when the block ends, also when it or a later mount fails."""
    pip_cache.mkdir(parents=True, exist_ok=True)
    (root / "root" / ".cache" / "pip").mkdir(parents=True, exist_ok=True)
    done: list[str] = []
    try:
        for command in mount_commands(root, pip_cache):
            runner(command)
            done.append(command[-1])
        yield
    finally:
        for target in reversed(done):
            try:
                runner(["umount", target])
            except subprocess.CalledProcessError:  # busy: lazily, so the root is never left bound
                runner(["umount", "-l", target])


def chroot_command(root: Path, script: str) -> list[str]:
    """``script`` run by sh in ``root`` with a clean environment (no host variable leaks in)."""
    return ["env", "-i", *CLEAN_ENV, shutil.which("chroot") or "/usr/sbin/chroot", str(root), "sh", "-c", script]
