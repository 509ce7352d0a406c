"""Exported C models on emulated Cortex-M4, M3 and M0 cores: flash, RAM, instructions per inference.

    python benchmarks/mcu.py [--quick] [--json figures.json]

Models: the digits LAST models (64 features, 10 classes: one-vs-all 10 x 5 atoms and 50 shared
atoms, center-l2, and a low-margin one on noisy digits; trained here in seconds) and MNIST-shaped ones (784 features, l2, random
weights with ~10 % of the features active: 400 atoms, and 4000 (the one-vs-all size) where it
fits). Each as int8, int16x8 (int16 activations; with -DLASTEDGE_DSP too on M4) and fp32, with
its predictions' agreement with the Python model on the held-out rows (host build), built with examples/mcu,
run under QEMU and compared bit for bit with the host (``same``), sized from the model's object
file (flash = code + constants; RAM = the stack one prediction took, the model has no data or
bss) beside the sizes ``c_size`` predicted from the shapes, and counted in unicorn: instructions
of ``PREFIX_predict`` (float row in, class out) per inference and per MAC, and of the integer
``PREFIX_predict_q`` (integer row in, class out) per MAC. The int8 TFLite file of the same model is listed for scale (a
TFLite Micro build adds its interpreter, some tens of kB, and a tensor arena in RAM).
``--quick``: the digits models and M4 only. Needs the tools of scripts/mcu_check.py.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np

from lastedge.export import to_tflite
from lastedge.export.c import build_c
from lastedge.export.c_emulate import CORES, check_on_core
from lastedge.export.c_parity import measure_c_parity
from lastedge.export.c_size import predict_size
from lastedge.runtime import Model, Preprocess
from lastedge.runtime.data import load_dataset

BOARD_FLASH = {"cortex-m4": 4 << 20, "cortex-m3": 4 << 20, "cortex-m0": 256 << 10}
HARNESS_FLASH = 48 << 10  # main.c, newlib's printf and the stored rows, with room to spare


def digits_models() -> list[tuple[str, Model, np.ndarray, np.ndarray]]:
    """The digits LAST models, their calibration rows and held-out rows: two good ones, and a
    low-margin one (digits with noise of standard deviation 6 added, ~67 % accurate)."""
    from lastedge.train import LASTClassifier

    data = load_dataset("digits")
    noise = np.random.default_rng(0)
    noisy = [X + noise.normal(0, 6, X.shape) for X in (data.X_train, data.X_test)]
    models = []
    for name, params, (X_train, X_test) in (
            ("digits 10x5 ovr", {"n_atoms": 5}, (data.X_train, data.X_test)),
            ("digits 50 shared", {"n_atoms": 50, "multiclass": "shared"}, (data.X_train, data.X_test)),
            ("noisy digits 10", {"n_atoms": 10, "multiclass": "shared", "preprocess": "standardize",
                                 "max_dca_iter": 10}, noisy)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = LASTClassifier(**{"preprocess": "center-l2", **params}, random_state=0, verbose=0)
            clf.fit(X_train, data.y_train)
        models.append((name, clf.to_model(), X_train.astype(np.float32), X_test.astype(np.float32)))
    return models


def mnist_shaped(n_atoms: int, n_classes: int = 10, seed: int = 0) -> tuple[Model, np.ndarray]:
    """A 784-feature l2 model with random weights, ~10 % of its features active, and rows for it."""
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(0.2, 0.3, (600, 784)), 0, 1).astype(np.float32)
    pre = Preprocess("l2")
    D = rng.standard_normal((784, n_atoms))
    D /= np.linalg.norm(D, axis=0)
    D /= np.quantile(pre.apply(X) @ D, 0.9)
    return Model(D, rng.standard_normal((n_atoms, n_classes)), np.arange(n_classes), 1.0, pre), X


def measure(name: str, model: Model, calibration: np.ndarray, rows: np.ndarray, cores: list[str],
            folder: Path, n_rows: int, count_rows: int) -> list[dict]:
    """Every precision on every core where the model fits the board's flash."""
    folder.mkdir(parents=True)
    tflite = to_tflite(model, folder / "m.tflite", precision="int8", calibration=calibration).stat().st_size
    results = []
    for precision in ("int8", "int16x8", "fp32"):
        try:
            c_model = build_c(model, precision=precision, calibration=calibration if precision != "fp32" else None)
        except ValueError as err:  # int32 sums that could overflow
            print(f"{name} {precision}: {err}", flush=True)
            continue
        agreement = measure_c_parity(c_model, rows, min_agreement=0.0)["agreement"]
        for core in (CORES[c] for c in cores):
            for dsp in (False, True) if core.dsp and precision != "fp32" else (False,):
                predicted = predict_size(model, core.name, precision, dsp)
                row = {"model": name, "tflite_int8_bytes": tflite, "predicted_flash": predicted["flash"],
                       "predicted_ram": predicted["ram"], "core": core.name, "dsp": dsp,
                       "precision": precision, "agreement": agreement}
                if predicted["flash"] + HARNESS_FLASH > BOARD_FLASH[core.name]:
                    results.append({**row, "fits": False})
                    continue
                figures = check_on_core(c_model, rows[:n_rows], core, folder / precision, dsp=dsp,
                                        count_rows=count_rows)
                results.append({**row, **figures, "fits": True})
                print(line(results[-1]), flush=True)
    return results


HEADER = (f"{'model':<18} {'core':<14} {'prec':<7} {'agree':>7} {'same':<5} {'flash B':>9} {'(pred.)':>9} "
          f"{'code B':>7} {'RAM B':>6} {'(pred.)':>7} {'instr/inf':>10} {'/MAC':>6} {'int/MAC':>7} "
          f"{'tflite B':>9}")


def line(f: dict) -> str:
    """One table row."""
    core = f["core"] + ("+dsp" if f["dsp"] else "")
    head = f"{f['model']:<18} {core:<14} {f['precision']:<7} {f['agreement']:>7.2%} "
    if not f["fits"]:
        return head + f"does not fit ({f['predicted_flash']:,} B predicted)"
    integer = f"{f['integer_per_mac']:.2f}" if "integer_per_mac" in f else "-"
    return (head + f"{str(f['identical_to_host']):<5} {f['flash']:>9,} {f['predicted_flash']:>9,} "
            f"{f['flash_code']:>7,} {f['stack']:>6,} {f['predicted_ram']:>7,} "
            f"{f['instructions_predict']:>10,.0f} {f['instructions_per_mac']:>6.2f} {integer:>7} "
            f"{f['tflite_int8_bytes']:>9,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the digits models on Cortex-M4 only")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    cores = ["cortex-m4"] if args.quick else list(CORES)
    cases = [(*case, 40, 4) for case in digits_models()]
    if not args.quick:
        for atoms, classes, name in ((400, 10, "mnist 400 shared"), (4000, 10, "mnist 4000 atoms")):
            model, X = mnist_shaped(atoms, classes)
            cases.append((name, model, X[:500], X[500:], 12, 1))
    results = []
    print(HEADER)
    with tempfile.TemporaryDirectory(prefix="lastedge-mcu-bench-") as scratch:
        for index, (name, model, calibration, rows, n_rows, count_rows) in enumerate(cases):
            results += measure(name, model, calibration, rows, cores, Path(scratch) / str(index),
                               n_rows, count_rows)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    print(f"\n{HEADER}\n" + "\n".join(line(f) for f in results))


if __name__ == "__main__":
    main()
