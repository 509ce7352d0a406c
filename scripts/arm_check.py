"""Prove every exported file runs the same on Arm: emulated Debian bookworm aarch64 and armhf.

    python scripts/arm_check.py [--arch aarch64|armhf|all] [--install-only]

Installs qemu-user-static, binfmt-support and debootstrap with apt-get when missing; builds (once)
and caches the Debian roots in $LASTEDGE_ARM_CACHE (default ~/.cache/lastedge-arm), outside the
clone; trains a one-vs-all and a shared digits model here; makes a bundle of each
(``lastedge bundle``: pi64 for aarch64, pi32 for armhf); copies only the bundle into the root and
runs its ``install.sh`` there, as a Pi owner would (the root never sees the source tree); then runs
``predict``, ``bench``, ``inspect`` and ``on_device.py`` on every model file, and the bundle's
self-test on every backend (aarch64: numpy, onnxruntime, LiteRT; armhf: numpy, tflite_runtime).
Prints one parity table (file x backend x architecture: max score difference against the
workstation's scores, prediction agreement of the self-test, predict and on_device.py) and exits 1
on any disagreement beyond the bounds of ``lastedge.runtime.selftest``. Timings under QEMU are
printed as "emulated": they are no device's. Needs root (chroot, mount).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import arm_root  # noqa: E402  (this folder's module, found through the line above)

TARGET = {"aarch64": "pi64", "armhf": "pi32"}
MODELS = {"ovr": ["--atoms", "10"], "shared": ["--multiclass", "shared", "--atoms", "60"]}
INSIDE = "/opt/lastedge-check"
BENCH_RUNS = 50


def step(name: str, command: str) -> str:
    """One line of the device script: ``command``'s output, errors and status kept under results/."""
    return f"{command} > results/{name}.out 2> results/{name}.err; echo $? > results/{name}.rc"


def device_script(bundle: str, files: list[str], install_only: bool) -> str:
    """The commands run in the root for the bundle copied to ``bundle``: its install.sh, its
    self-test as JSON, then predict, bench, inspect and on_device.py on each of ``files``."""
    lines = [f"cd {bundle}", "rm -rf results .venv", "mkdir results", step("install", "sh install.sh"),
             step("selftest", ".venv/bin/python -m lastedge.runtime.selftest . --json")]
    for index, name in enumerate([] if install_only else files):
        lines += [step(f"{index}.predict", f".venv/bin/lastedge predict {name} --data selftest.csv "
                                          "--no-labels --json"),
                  step(f"{index}.bench", f".venv/bin/lastedge bench {name} --runs {BENCH_RUNS} --warmup 2 --json"),
                  step(f"{index}.inspect", f".venv/bin/lastedge inspect {name} --json"),
                  step(f"{index}.on_device", f".venv/bin/python on_device.py {name} selftest.csv")]
    return "\n".join(lines) + "\n"


def lastedge(*args: str) -> None:
    """The ``lastedge`` command of this checkout, with this Python."""
    subprocess.run([sys.executable, "-m", "lastedge.cli", *args], check=True, stdout=subprocess.DEVNULL)


def make_bundles(arch: str, work: Path) -> dict[str, Path]:
    """Train the one-vs-all and shared digits models here (once) and bundle each for ``arch``."""
    bundles = {}
    for name, options in MODELS.items():
        model = work / f"{name}.npz"
        if not model.exists():
            lastedge("train", "--data", "digits", *options, "--quiet", "--out", str(model))
        out = work / f"{arch}-{name}"
        shutil.rmtree(out, ignore_errors=True)
        lastedge("bundle", str(model), "--target", TARGET[arch], "--data", "digits", "--out", str(out))
        bundles[name] = out
    return bundles


def run_inside(arch: str, root: Path, cache: Path, bundles: dict[str, Path], install_only: bool) -> float:
    """Copy each bundle (only it) into ``root`` and run its device script there; the seconds taken."""
    arm_root.copy_host_files(root)
    start = time.perf_counter()
    with arm_root.mounted(root, cache / f"pip-{arch}"):
        for name, bundle in bundles.items():
            inside = Path(INSIDE) / name
            target = root / inside.relative_to("/")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(bundle, target)
            files = [entry["file"] for entry in json.loads((bundle / "bundle.json").read_text())["files"]]
            subprocess.run(arm_root.chroot_command(root, device_script(str(inside), files, install_only)),
                           check=True)
    return time.perf_counter() - start


def expected_labels(bundle: Path) -> dict[str, list[str]]:
    """Each file's predictions on the self-test rows, from the scores stored at the workstation."""
    from lastedge.runtime import Model
    from lastedge.runtime.selftest import decisions, read_bundle

    _, _, stored = read_bundle(bundle)
    classes = Model.load(bundle / "models" / "model.npz").classes
    return {name: [str(c) for c in classes[decisions(scores)]] for name, scores in stored.items()}


def _read(results: Path, name: str) -> tuple[int, str]:
    """(exit status, stdout) of one device step; status -1 when it never ran."""
    rc = results / f"{name}.rc"
    return (int(rc.read_text()) if rc.exists() else -1), (results / f"{name}.out").read_text() \
        if (results / f"{name}.out").exists() else ""


def _agreement(found: list[str], expected: list[str]) -> float:
    return float(np.mean([a == b for a, b in zip(found, expected)])) if len(found) == len(expected) else 0.0


def collect(arch: str, model: str, bundle: Path, results: Path, install_only: bool) -> list[dict[str, Any]]:
    """The table's rows of one bundle: its self-test per file x backend, with what predict,
    on_device.py, inspect and bench did with the file."""
    rc, out = _read(results, "install")
    if rc != 0:
        error = (results / "install.err").read_text().strip().splitlines()[-1:] or ["?"]
        return [{"arch": arch, "model": model, "file": "install.sh", "backend": "-", "passed": False,
                 "error": f"install.sh exited {rc}: {error[0]}"}]
    expected = expected_labels(bundle)
    files = list(expected)
    rows = []
    for result in json.loads(_read(results, "selftest")[1] or "[]"):
        name = next(f for f in files if Path(f).name == result["file"])
        row = {"arch": arch, "model": model, **result, "file": Path(name).name}
        if not install_only:
            row.update(_commands(results, files.index(name), expected[name]))
            row["passed"] = row["passed"] and row["predict"] == row["on_device"] == 1.0 and \
                row["inspect"] and row["emulated_p50_us"] is not None
        rows.append(row)
    return rows or [{"arch": arch, "model": model, "file": "self-test", "backend": "-", "passed": False,
                     "error": (results / "selftest.err").read_text().strip()[:200]}]


def _commands(results: Path, index: int, expected: list[str]) -> dict[str, Any]:
    """What predict, on_device.py, inspect and bench did with file ``index``."""
    rc, out = _read(results, f"{index}.predict")
    predict = _agreement([str(p) for p in json.loads(out)["predictions"]], expected) if rc == 0 else 0.0
    rc, out = _read(results, f"{index}.on_device")
    on_device = _agreement(out.split(), expected) if rc == 0 else 0.0
    bench_rc, out = _read(results, f"{index}.bench")
    bench = json.loads(out)[0] if bench_rc == 0 else None
    return {"predict": predict, "on_device": on_device, "inspect": _read(results, f"{index}.inspect")[0] == 0,
            "emulated_p50_us": None if bench is None else bench["batches"][0]["p50_us"],
            "bench_says_emulated": None if bench is None else bench["machine"]["emulated"]}


def _percent(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}" if value == 1.0 else f"{value:.2%}"


def format_table(rows: list[dict[str, Any]]) -> str:
    """One parity table: file x backend x architecture, figures against the workstation's."""
    header = ("arch", "model", "file", "backend", "max diff", "bound", "self-test", "predict",
              "on_device", "inspect", "p50 us (emulated)", "result")
    lines = [header]
    for r in rows:
        if "error" in r:
            lines.append((r["arch"], r["model"], r["file"], r["backend"], *("-",) * 7, f"FAIL: {r['error']}"))
            continue
        p50 = r.get("emulated_p50_us")
        lines.append((r["arch"], r["model"], r["file"], r["backend"], f"{r['max_difference']:.3g}",
                      f"{r['bound']:.3g}", _percent(r["agreement"]), _percent(r.get("predict")),
                      _percent(r.get("on_device")), {True: "ok", False: "FAIL", None: "-"}[r.get("inspect")],
                      "-" if p50 is None else f"{p50:.0f}", "ok" if r["passed"] else "FAIL"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(line, widths)), line[-1]]) for line in lines)


def check_arch(arch: str, cache: Path, install_only: bool, timings: dict[str, float]) -> list[dict[str, Any]]:
    """Build (once) the root of ``arch``, bundle, install and run inside; the table's rows."""
    root = arm_root.root_path(cache, arch)
    start = time.perf_counter()
    arm_root.build_root(arch, root)
    timings[f"{arch} root"] = time.perf_counter() - start
    start = time.perf_counter()
    bundles = make_bundles(arch, cache / "work")
    timings[f"{arch} train+bundle (host)"] = time.perf_counter() - start
    timings[f"{arch} install+runs (emulated)"] = run_inside(arch, root, cache, bundles, install_only)
    return [row for name, bundle in bundles.items()
            for row in collect(arch, name, bundle, root / INSIDE.lstrip("/") / name / "results", install_only)]


def ensure_tools(arches: list[str]) -> None:
    """apt-get the missing tools; let the kernel run each architecture through QEMU."""
    missing = arm_root.missing_apt_tools()
    if missing:
        arm_root.run(["apt-get", "install", "-y", "--no-install-recommends", *missing])
    binfmt = Path("/proc/sys/fs/binfmt_misc")
    for index, arch in enumerate(arches):
        for command in arm_root.binfmt_commands(arch, index > 0 or (binfmt / "register").exists()):
            arm_root.run(command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=("aarch64", "armhf", "all"), default="all")
    parser.add_argument("--install-only", action="store_true",
                        help="install each bundle and run its self-test only (no predict/bench/inspect)")
    args = parser.parse_args(argv)
    arches = ["aarch64", "armhf"] if args.arch == "all" else [args.arch]
    cache = arm_root.cache_dir()
    (cache / "work").mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ensure_tools(arches)
    timings["tools"] = time.perf_counter() - start
    rows = [row for arch in arches for row in check_arch(arch, cache, args.install_only, timings)]
    timings["total"] = time.perf_counter() - start
    print(format_table(rows))
    print("timings: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items()) +
          f" (cache {cache}; figures under QEMU are emulated, never device figures)")
    failed = [row for row in rows if not row["passed"]]
    print(f"arm check {'FAILED' if failed else 'passed'}: {len(rows) - len(failed)} of {len(rows)} "
          "file x backend x architecture checks within the self-test's bounds")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
