"""Run an exported C model on emulated Cortex-M4, M3 and M0 cores and prove it matches the host.

    python scripts/mcu_check.py [--model model.npz] [--data digits] [--json figures.json]

Installs what it needs when missing (Debian's gcc-arm-none-eabi, libnewlib-arm-none-eabi and
qemu-system-arm without recommends, and the unicorn package from PyPI), timing the install;
exports the model as C (int8, int16x8 and fp32), proves it on the host (gcc -std=c99 -pedantic -Werror),
builds examples/mcu for each core (M4 also with -DLASTEDGE_DSP for the integer models), runs it under QEMU,
compares every score bit for bit with the host's, and prints flash, RAM and instructions per
inference (and per MAC). Exits 1 when any core's results differ from the host's.
Without --model it trains the digits model of the docs (50 shared atoms, center-l2; seconds).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

APT_PACKAGES = ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "qemu-system-arm")


def ensure_tools(install: bool) -> float | None:
    """Install the cross toolchain, QEMU and unicorn when missing; the seconds it took (None
    when nothing was missing)."""
    from lastedge.export.c_emulate import missing_tools

    missing_apt = bool(missing_tools())
    missing_pip = importlib.util.find_spec("unicorn") is None
    if not (missing_apt or missing_pip):
        return None
    if not install:
        sys.exit(f"missing: {', '.join(missing_tools() + (['unicorn'] if missing_pip else []))} "
                 "(run without --no-install to install them)")
    start = time.perf_counter()
    if missing_apt:
        root = [] if shutil.which("sudo") is None or os.geteuid() == 0 else ["sudo"]
        subprocess.run([*root, "apt-get", "update", "-q"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([*root, "apt-get", "install", "-y", "-q", "--no-install-recommends", *APT_PACKAGES],
                       check=True, stdout=subprocess.DEVNULL)
    if missing_pip:  # lastedge[mcu]
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "unicorn>=2.0"], check=True)
    return time.perf_counter() - start


def digits_model():
    """The docs' digits model: 50 shared atoms, center-l2, trained in seconds."""
    import warnings

    from lastedge.runtime.data import load_dataset
    from lastedge.train import LASTClassifier

    data = load_dataset("digits")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LASTClassifier(n_atoms=50, multiclass="shared", preprocess="center-l2",
                             random_state=0, verbose=0).fit(data.X_train, data.y_train)
    return clf.to_model()


def check(model, rows, cores, folder: Path, n_rows: int) -> list[dict]:
    """Every precision on every core: the figures of ``c_emulate.check_on_core``."""
    from lastedge.export.c import build_c
    from lastedge.export.c_emulate import CORES, check_on_core
    from lastedge.export.c_parity import assert_c_parity

    results = []
    for precision in ("int8", "int16x8", "fp32"):
        c_model = build_c(model, precision=precision,
                          calibration=rows.calibration if precision != "fp32" else None)
        host = assert_c_parity(c_model, rows.X_check, rows.y_check)
        for name in cores:
            core = CORES[name]
            for dsp in (False, True) if core.dsp and precision != "fp32" else (False,):
                figures = check_on_core(c_model, rows.X_check[:n_rows], core, folder / precision, dsp=dsp)
                figures["host_agreement"] = host["agreement"]
                results.append(figures)
    return results


def table(results: list[dict]) -> str:
    """The figures as a text table."""
    lines = [f"{'core':<14} {'precision':<9} {'same':<5} {'flash B':>8} {'code B':>7} {'stack B':>8} "
             f"{'instr/inference':>16} {'per MAC':>8} {'integer/MAC':>12}"]
    for f in results:
        name = f["core"] + ("+dsp" if f["dsp"] else "")
        integer = f"{f['integer_per_mac']:.2f}" if "integer_per_mac" in f else "-"
        lines.append(f"{name:<14} {f['precision']:<9} {str(f['identical_to_host']):<5} {f['flash']:>8} "
                     f"{f['flash_code']:>7} {f['stack']:>8} {f['instructions_predict']:>16.0f} "
                     f"{f['instructions_per_mac']:>8.2f} {integer:>12}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a .npz model file (default: train the digits model)")
    parser.add_argument("--data", default="digits", help="calibration and check rows (as for "
                        "`lastedge export --data`; default digits)")
    parser.add_argument("--cores", nargs="+", default=["cortex-m4", "cortex-m3", "cortex-m0"])
    parser.add_argument("--rows", type=int, default=40, help="test rows stored in the firmware")
    parser.add_argument("--keep", type=Path, help="keep the projects and builds in this folder")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--no-install", action="store_true", help="fail instead of installing")
    parser.add_argument("--install-only", action="store_true", help="install what is missing, then stop")
    args = parser.parse_args(argv)

    install_seconds = ensure_tools(not args.no_install)
    if install_seconds is not None:
        print(f"installed the toolchain, QEMU and unicorn in {install_seconds:.0f} s")
    if args.install_only:
        return 0
    from lastedge.export.rows import load_rows
    from lastedge.runtime import Model

    model = Model.load(args.model) if args.model else digits_model()
    rows = load_rows(args.data, model)
    with tempfile.TemporaryDirectory(prefix="lastedge-mcu-") as scratch:
        folder = args.keep or Path(scratch)
        results = check(model, rows, args.cores, folder, args.rows)
    print(f"model: {model.n_features} features, {model.n_atoms} atoms, {model.n_outputs} outputs, "
          f"{model.macs_per_sample} MACs; {args.rows} rows per core")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({"install_seconds": install_seconds, "results": results},
                                        indent=1, default=lambda v: v.item() if isinstance(v, np.generic) else str(v)))
    return 0 if all(f["identical_to_host"] for f in results) else 1


if __name__ == "__main__":
    sys.exit(main())
