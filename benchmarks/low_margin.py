"""int8 against int16x8 (8-bit weights, 16-bit activations) on low-margin models, in every format.

    python benchmarks/low_margin.py [--noise 6 8] [--atoms 50] [--json figures.json]

Models: LAST on the digits with Gaussian noise of the given standard deviations added to every
pixel (``--atoms`` shared atoms, standardize; the noisier, the less accurate and the smaller
the margins of its decisions), trained here in seconds. Each is exported as TFLite, ONNX and C at int8 and
int16x8, calibrated on the training rows, and run on the held-out rows: the share of rows whose
prediction agrees with the float model's, the accuracy drop, and the file's bytes (C: the
source's bytes; built sizes are benchmarks/mcu.py's). The export's own check asks for >= 99 %
agreement and a drop <= 0.5 points.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np

from lastedge.export import measure_parity, to_onnx, to_tflite
from lastedge.export.c import build_c
from lastedge.export.c_parity import measure_c_parity
from lastedge.runtime.data import load_dataset


def noisy_model(noise: float, atoms: int, seed: int = 0):
    """A LAST model on the digits with noise of standard deviation ``noise``, and its rows."""
    from lastedge.train import LASTClassifier

    data = load_dataset("digits")
    rng = np.random.default_rng(seed)
    X_train, X_test = (X + rng.normal(0, noise, X.shape) for X in (data.X_train, data.X_test))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LASTClassifier(n_atoms=atoms, multiclass="shared", preprocess="standardize", max_dca_iter=10,
                             random_state=seed, verbose=0).fit(X_train, data.y_train)
    return clf.to_model(), X_train.astype(np.float32), X_test.astype(np.float32), data.y_test


def measure(noise: float, atoms: int, folder: Path) -> list[dict]:
    """Agreement, accuracy drop and bytes of every format and precision for one noise level."""
    model, X_train, X_test, y_test = noisy_model(noise, atoms)
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    rows = []
    for precision in ("int8", "int16x8"):
        for fmt, writer in (("tflite", to_tflite), ("onnx", to_onnx)):
            path = writer(model, folder / f"{noise}-{precision}.{fmt}", precision=precision, calibration=X_train)
            figures = measure_parity(model, path, X_test, y_test, min_agreement=None)
            rows.append({"format": fmt, "bytes": path.stat().st_size, **_figures(figures)})
        c_model = build_c(model, precision=precision, calibration=X_train)
        figures = measure_c_parity(c_model, X_test, y_test, min_agreement=0.0)
        rows.append({"format": "c", "bytes": len(c_model.source.encode()), **_figures(figures)})
        for row in rows[-3:]:
            row.update(noise=noise, precision=precision, float_accuracy=accuracy)
    return rows


def _figures(figures: dict) -> dict:
    return {"agreement": figures["agreement"], "accuracy_drop": figures.get("accuracy_drop", float("nan"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--noise", type=float, nargs="+", default=[6.0, 8.0])
    parser.add_argument("--atoms", type=int, default=50, help="shared atoms (default 50)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    results = []
    print(f"{'noise':>5} {'float acc':>9} {'format':<7} {'precision':<9} {'agreement':>9} {'drop (pts)':>10} {'bytes':>7}")
    with tempfile.TemporaryDirectory(prefix="lastedge-low-margin-") as scratch:
        for noise in args.noise:
            for row in measure(noise, args.atoms, Path(scratch)):
                results.append(row)
                print(f"{row['noise']:>5g} {row['float_accuracy']:>9.2%} {row['format']:<7} {row['precision']:<9} "
                      f"{row['agreement']:>9.2%} {100 * row['accuracy_drop']:>10.2f} {row['bytes']:>7,}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
