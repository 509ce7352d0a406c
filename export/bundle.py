"""``make_bundle``: everything a board needs to run a model, in one folder to copy to it.

The folder holds the model in the formats the target runs (``bundle_scripts.TARGETS``), each
exported and parity-checked here (``export_all``); lastedge's wheel; ``on_device.py``; self-test
rows with the scores each file gave here (``runtime.selftest``); ``install.sh``, which installs
lastedge and the target's interpreter and ends with the self-test; and a README. The folder is
built beside ``out`` and renamed to it when complete: no half-written bundle is left behind.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from lastedge.runtime import Model, __version__, load
from lastedge.runtime.selftest import BUNDLE_FORMAT, MANIFEST, ROWS, margins, score_bound

from .bundle_scripts import TARGETS, install_script, readme
from .options import PRECISIONS, STATIC
from .variants import export_all

CHECKOUT = Path(__file__).resolve().parents[1]  # export/ sits in the repository's root
ON_DEVICE = CHECKOUT / "examples" / "on_device.py"
MAX_SELFTEST_ROWS = 200


def build_wheel(folder: str | os.PathLike) -> Path:
    """lastedge's wheel, built from the checkout this module runs from into ``folder``
    (``pip wheel --no-deps``); ``ValueError`` when lastedge is not run from a checkout."""
    if not (CHECKOUT / "pyproject.toml").is_file():
        raise ValueError(f"lastedge runs from {CHECKOUT}, not a source checkout: pass --wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                           "--no-build-isolation", "--wheel-dir", str(folder), str(CHECKOUT)],
                          capture_output=True, text=True)
    wheels = sorted(Path(folder).glob("lastedge-*.whl"))
    if done.returncode or not wheels:
        raise ValueError(f"pip wheel failed to build lastedge: {(done.stderr.strip() or '?').splitlines()[-1]}")
    return wheels[0]


def make_bundle(model: Model, out: str | os.PathLike, target: str, calibration: Any, X_check: Any,
                y_check: Any = None, *, wheel: str | os.PathLike, synthetic: bool = False) -> dict[str, Any]:
    """Write the bundle for ``target`` (a key of ``TARGETS``) to the folder ``out``.

    Parameters
    ----------
    model : Model
        The trained model.
    out : str or os.PathLike
        The bundle's folder: it must not exist, or be empty.
    calibration : array or None
        Raw rows calibrating the static files (int8; int16x8 where the target's interpreters
        run it, ``Target.int16x8``); None makes no static file.
    X_check, y_check : array, and array or None
        Rows (and labels) for the parity check and the self-test rows.
    wheel : str or os.PathLike
        lastedge's wheel to put in the bundle (``build_wheel``).
    synthetic : bool
        ``X_check`` are synthetic rows near the atoms' thresholds: int8 agreement is not bounded.

    Returns
    -------
    dict
        The bundle's path, target, files with their parity figures, self-test rows and wheel.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    out, wheel = Path(out), Path(wheel)
    _check_out(out)
    if wheel.suffix != ".whl" or not wheel.is_file():
        raise ValueError(f"--wheel {wheel} is not a wheel file (.whl)")
    if not ON_DEVICE.is_file():
        raise ValueError(f"{ON_DEVICE} is missing: make bundles from a lastedge checkout")
    work = Path(tempfile.mkdtemp(prefix=f".{out.name[:32]}.", dir=out.parent))
    work.chmod(0o755)  # mkdtemp makes it private; a bundle is to be copied and shared
    try:
        info = _fill(work, model, target, calibration, X_check, y_check, wheel, synthetic)
        if out.is_dir():
            out.rmdir()  # empty (checked): replaced by the complete folder
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {"path": str(out), **info}


def _check_out(out: Path) -> None:
    if out.exists() and not (out.is_dir() and not any(out.iterdir())):
        raise ValueError(f"--out {out} exists and is not an empty folder: choose a new one")
    if not out.parent.is_dir():
        raise ValueError(f"--out {out}: folder {out.parent} does not exist")


def _fill(work: Path, model: Model, target: str, calibration: Any, X_check: Any, y_check: Any,
          wheel: Path, synthetic: bool) -> dict[str, Any]:
    """Write the bundle's files into ``work``; the summary ``make_bundle`` returns."""
    spec = TARGETS[target]
    (work / "models").mkdir()
    model.save(work / "models" / "model.npz")
    precisions = [p for p in PRECISIONS if (calibration is not None or p not in STATIC)
                  and (spec.int16x8 or p != "int16x8")]
    parity = export_all(model, work / "models", calibration, X_check, y_check, formats=spec.formats,
                        precisions=precisions, min_rows=1,
                        min_agreement=None if synthetic else 0.99)
    files = [("models/model.npz", "fp32")] + [
        (f"models/{Path(row['path']).name}", row["precision"]) for row in parity]
    X, expected = _selftest_rows(work, files, X_check)
    np.savez(work / ROWS, X=X, **expected)
    np.savetxt(work / "selftest.csv", X, delimiter=",", fmt="%.9g")
    manifest = {"format": BUNDLE_FORMAT, "format_version": 1, "target": target,
                "lastedge_version": __version__, "wheel": wheel.name, "made": _made(),
                "files": [{"file": name, "precision": precision,
                           "bound": score_bound(precision, expected[name])} for name, precision in files]}
    (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.copy2(wheel, work / wheel.name)
    shutil.copy2(ON_DEVICE, work / "on_device.py")
    (work / "install.sh").write_text(install_script(target, wheel.name))
    (work / "install.sh").chmod(0o755)
    (work / "README.txt").write_text(readme(target, wheel.name, [name for name, _ in files], manifest["made"]))
    return {"target": target, "board": spec.board, "files": manifest["files"], "parity": parity,
            "selftest_rows": len(X), "wheel": wheel.name}


def _selftest_rows(work: Path, files: list[tuple[str, str]], X_check: Any
                   ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Up to ``MAX_SELFTEST_ROWS`` of ``X_check`` (as float32, which every backend computes in)
    whose decision in every file is clear by more than twice the file's score bound, and each
    file's scores on them (on the first backend installed here)."""
    X = np.asarray(X_check, dtype=np.float32)[:10 * MAX_SELFTEST_ROWS]
    scores = {name: np.asarray(load(work / name).decision_function(X), dtype=np.float64)
              for name, _ in files}
    clear = np.ones(len(X), dtype=bool)
    for name, precision in files:
        clear &= margins(scores[name]) > 2 * score_bound(precision, scores[name])
    X = X[np.flatnonzero(clear)[:MAX_SELFTEST_ROWS]]
    if not len(X):
        raise ValueError("no check row has a clear decision in every file: pass more rows (--data)")
    # scored again as the self-test scores them, in one batch of these rows: a dynamic ONNX file
    # quantizes a whole batch over one range, so its scores depend on the batch's other rows
    return X, {name: np.asarray(load(work / name).decision_function(X), dtype=np.float64)
               for name, _ in files}


def _made() -> str:
    """When and with which lastedge and machine the bundle was made, for its README."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"made {now} by lastedge {__version__} ({sys.platform}, Python {sys.version.split()[0]})"
