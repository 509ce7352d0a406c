"""Prototype behind one table of docs/results.md: how a shared model's parts add up.

``sub_dictionaries=K`` trains a shared dictionary as K parts of ``T / K`` atoms whose class scores
are averaged. This fits the models ``benchmarks/shared_vs_ovr.py`` would fit with the same
arguments (its own ``build``; give ``--sub-dictionaries K``) and scores, on the test set, each
part alone and the mean of the first k parts for k = 1 ... K, so one fit shows what each added
part buys. A diagnosis: choosing K on the test set would be cheating. One JSON line per model is
appended to ``--out``:

    python docs/reproduce/prototypes/parts_curve.py --out parts.jsonl --datasets mnist \\
        --total-atoms 4000 --methods shared --atoms-against 0.5 --ovr-hinge-weight 1 \\
        --sub-dictionaries 4 --mu 0 --shift-augment 1 --batch-size 1000 --inner-iter 300 \\
        --max-dca-iter 12 --n-jobs 1 --seed 16
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402


def error_pct(classes: np.ndarray, scores: np.ndarray, y: np.ndarray) -> float:
    return round(100 * float(np.mean(classes[scores.argmax(axis=1)] != y)), 3)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--out":
        raise SystemExit("usage: parts_curve.py --out PATH [shared_vs_ovr.py arguments]")
    out, args = Path(argv[1]), shared_vs_ovr.parse_args(argv[2:])
    for task, (X, y, X_test, y_test), total, multiclass, clf in shared_vs_ovr.unfitted_models(args):
        if multiclass != "shared":
            raise SystemExit("parts_curve.py: --methods shared only (one-vs-all has no parts)")
        start = time.time()
        clf.fit(X, y)
        fit_s = time.time() - start
        model, parts = clf.to_model(), clf.sub_dictionaries
        features = model.features(X_test.reshape(len(X_test), -1))
        width = model.n_atoms // parts  # part k holds atoms [k * width, (k + 1) * width)
        scores = [features[:, k * width:(k + 1) * width] @ model.weights[k * width:(k + 1) * width]
                  for k in range(parts)]
        line = {"task": task, "seed": clf.random_state, "total_atoms": total, "sub_dictionaries": parts,
                "atoms_against": args.atoms_against, "ovr_hinge_weight": args.ovr_hinge_weight,
                "n_iter": clf.n_iter_, "fit_s": round(fit_s, 1),
                "test_error_pct": error_pct(model.classes, sum(scores), y_test),
                "part_error_pct": [error_pct(model.classes, s, y_test) for s in scores],
                "first_k_parts_error_pct": [error_pct(model.classes, sum(scores[:k]), y_test)
                                            for k in range(1, parts + 1)]}
        with out.open("a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
