"""The C export's code size against ``c_size``'s prediction, on many random shapes and every
core and variant (build only: the model's object file, nothing run).

    python benchmarks/c_code_size.py [--shapes 120] [--seed 0] [--json rows.json]
    python benchmarks/c_code_size.py --rows rows.json [more.json ...] --fit   # c_size.CODE

Random models: features 2..784, atoms 1..400, classes 2..16 (binary: one output), each
preprocessing kind, dense output weights or one weight per atom (``one_output_per_atom``), raw
rows and dictionaries drawn at several scales so the quantisation's per-tensor constants (zero
points, multipliers, shifts) vary; 3 sizes in 10 at the edges of the kernels' blocks and of
Thumb's 8-bit immediates (1-9, 15-17, ..., 255-257, 511-513). Each is exported as int8, int16x8
and fp32 and compiled with examples/mcu's flags for every core and variant of ``c_size.CODE``
(builds that fail are listed). ``--fit`` prints ``c_size.CODE`` fitted to the builds. Prints, per core, variant and
preprocessing: the builds measured, the largest under-prediction of the former flat constant
(``FLAT``; positive: built above it) and of ``predict_size``, and ``predict_size``'s largest
slack (predicted minus built). Needs arm-none-eabi-gcc (scripts/mcu_check.py --install-only).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from lastedge.export.c import build_c
from lastedge.export.c_emulate import CORES, build_object, sizes
from lastedge.export.c_size import code_bytes, code_terms
from lastedge.runtime import Model, Preprocess

KINDS = ("none", "standardize", "l2", "center-l2")
# the flat code bytes of c_size before the per-shape terms, for the comparison
FLAT = {
    ("cortex-m4", "int8"): {"none": 776, "standardize": 792, "l2": 964, "center-l2": 1036},
    ("cortex-m4", "int8-dsp"): {"none": 740, "standardize": 752, "l2": 916, "center-l2": 988},
    ("cortex-m3", "int8"): {"none": 792, "standardize": 808, "l2": 1216, "center-l2": 1300},
    ("cortex-m0", "int8"): {"none": 916, "standardize": 932, "l2": 1348, "center-l2": 1428},
    ("cortex-m4", "int16x8"): {"none": 800, "standardize": 816, "l2": 972, "center-l2": 1048},
    ("cortex-m4", "int16x8-dsp"): {"none": 744, "standardize": 764, "l2": 916, "center-l2": 992},
    ("cortex-m3", "int16x8"): {"none": 784, "standardize": 800, "l2": 1200, "center-l2": 1288},
    ("cortex-m0", "int16x8"): {"none": 940, "standardize": 1060, "l2": 1360, "center-l2": 1448},
    ("cortex-m4", "fp32"): {"none": 244, "standardize": 284, "l2": 464, "center-l2": 540},
    ("cortex-m3", "fp32"): {"none": 284, "standardize": 308, "l2": 684, "center-l2": 780},
    ("cortex-m0", "fp32"): {"none": 284, "standardize": 316, "l2": 748, "center-l2": 840},
}
# sizes at the edges of Thumb's immediates and of the kernels' blocks
EDGES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
         511, 512, 513)


def draw_shapes(count: int, rng: np.random.Generator) -> list[dict]:
    """``count`` random shapes: sizes log-uniform or at an edge, the model's scales varied."""
    def size(low: int, high: int) -> int:
        if rng.random() < 0.3:
            return int(rng.choice([e for e in EDGES if low <= e <= high]))
        return int(np.exp(rng.uniform(np.log(low), np.log(high + 1))))

    return [{"n": size(2, 784), "k": size(1, 400), "classes": int(rng.integers(2, 17)),
             "kind": KINDS[i % 4], "one_output": bool(rng.random() < 0.4),
             "mean": float(rng.choice([0.0, 2.0, 50.0])), "spread": float(rng.choice([0.01, 3.0, 300.0])),
             "active": float(rng.choice([0.5, 0.9, 0.99])), "seed": int(rng.integers(1 << 30))}
            for i in range(count)]


def random_model(shape: dict) -> tuple[Model, np.ndarray]:
    """The shape's model (random atoms firing on about ``1 - active`` of the rows) and 200 rows."""
    rng = np.random.default_rng(shape["seed"])
    X = rng.normal(shape["mean"], shape["spread"], (200, shape["n"])).astype(np.float32)
    pre = Preprocess.fit(shape["kind"], X)
    D = rng.standard_normal((shape["n"], shape["k"]))
    D /= np.linalg.norm(D, axis=0)
    D /= max(float(np.quantile(pre.apply(X) @ D, shape["active"])), 1e-6)
    W = rng.standard_normal((shape["k"], 1 if shape["classes"] == 2 else shape["classes"]))
    if shape["one_output"]:
        keep = np.zeros_like(W)
        keep[np.arange(len(W)), np.abs(W).argmax(axis=1)] = W[np.arange(len(W)), np.abs(W).argmax(axis=1)]
        W = keep
    return Model(D, W, np.arange(shape["classes"]), 1.0, pre), X


def measure(shape: dict, folder: Path, failed: list[dict]) -> list[dict]:
    """The shape's code bytes, built, on every core and variant, beside the prediction; builds
    that fail go to ``failed``."""
    model, X = random_model(shape)
    rows = []
    for precision in ("int8", "int16x8", "fp32"):
        try:
            c_model = build_c(model, precision=precision, calibration=None if precision == "fp32" else X)
        except ValueError:  # int32 sums that could overflow
            continue
        c_model.write(folder / precision)
        for (target, variant) in FLAT:
            if variant.split("-")[0] != precision:
                continue
            dsp = variant.endswith("-dsp")
            try:
                obj = build_object(CORES[target], folder / precision, folder / f"{precision}-{target}-{dsp}", dsp)
            except RuntimeError as err:
                failed.append({**shape, "target": target, "variant": variant, "error": str(err)[-600:]})
                continue
            rows.append({**shape, "target": target, "variant": variant, "built": sizes(obj)["code"],
                         "flat": FLAT[target, variant][shape["kind"]]})
    return rows


def terms(row: dict) -> dict[str, int]:
    """The build's ``code_terms`` (the random models' dense weights have no zero)."""
    outputs = 1 if row["classes"] == 2 else row["classes"]
    return code_terms(row["n"], row["k"], outputs, row["one_output"] and row["variant"] != "fp32")


def table(rows: list[dict]) -> str:
    """Per core, variant and kind: builds, worst under-prediction before and after, worst slack."""
    lines = [f"{'core':<10} {'variant':<12} {'kind':<12} {'builds':>6} {'under before':>12} "
             f"{'under after':>11} {'slack after':>11}"]
    for target, variant in FLAT:
        for kind in KINDS:
            group = [r for r in rows if (r["target"], r["variant"], r["kind"]) == (target, variant, kind)]
            if group:
                after = [code_bytes(target, variant, kind, terms(r)) - r["built"] for r in group]
                lines.append(f"{target:<10} {variant:<12} {kind:<12} {len(group):>6} "
                             f"{max(r['built'] - r['flat'] for r in group):>12} "
                             f"{-min(after):>11} {max(after):>11}")
    return "\n".join(lines)


def fit(rows: list[dict]) -> dict[tuple[str, str], dict[str, int]]:
    """``c_size.CODE`` from the builds: per core and variant, the bases and terms whose sum is
    never below a build and exceeds the builds by the least largest amount; among those, the
    least in total, then with the smallest terms (two linear programs)."""
    from scipy.optimize import linprog

    table = {}
    for target, variant in FLAT:
        group = [r for r in rows if (r["target"], r["variant"]) == (target, variant)]
        names = list(KINDS) + sorted({name for r in group for name in terms(r)})
        A = np.array([[r["kind"] == name or terms(r).get(name, 0) for name in names] for r in group], float)
        built, free = np.array([r["built"] for r in group], float), [(None, None)] * len(names)
        # the least t with built <= A c <= built + t
        largest = linprog(np.r_[np.zeros(len(names)), 1.0], bounds=free + [(0, None)],
                          A_ub=np.block([[-A, np.zeros((len(A), 1))], [A, -np.ones((len(A), 1))]]),
                          b_ub=np.r_[-built, built]).x[-1]
        # then the least sum of A c plus 0.001 |term| (terms = p - q, p, q >= 0; kinds free)
        split = np.hstack([A, -A[:, len(KINDS):]])
        cost = split.sum(axis=0) + np.r_[np.zeros(len(KINDS)), np.full(2 * (len(names) - len(KINDS)), 1e-3)]
        x = linprog(cost, A_ub=np.vstack([-split, split]), b_ub=np.r_[-built, built + largest],
                    bounds=free[:len(KINDS)] + [(0, None)] * (2 * (len(names) - len(KINDS)))).x
        c = np.r_[x[:len(names)]] - np.r_[np.zeros(len(KINDS)), x[len(names):]]
        # whole bytes, each rounded up: still never below a build (every count is >= 0)
        table[target, variant] = {name: int(np.ceil(value - 1e-6)) for name, value in zip(names, c)}
        print(f"# {target} {variant}: {len(group)} builds, largest excess {largest:.0f} B")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", type=int, default=120, help="random shapes (a quarter per kind)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every build's row here")
    parser.add_argument("--rows", type=Path, nargs="+", help="read the builds' rows from these files "
                        "(written by --json) instead of building")
    parser.add_argument("--fit", action="store_true", help="print c_size.CODE fitted to the builds")
    args = parser.parse_args()
    rows, failed = [], []
    if args.rows:
        for path in args.rows:
            saved = json.loads(path.read_text())
            rows, failed = rows + saved["rows"], failed + saved["failed"]
    else:
        with tempfile.TemporaryDirectory(prefix="lastedge-code-size-") as scratch:
            for index, shape in enumerate(draw_shapes(args.shapes, np.random.default_rng(args.seed))):
                rows += measure(shape, Path(scratch) / str(index), failed)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "failed": failed}, indent=1))
    for build in failed:
        print(f"build failed: {build['target']} {build['variant']} n={build['n']} k={build['k']} "
              f"classes={build['classes']}: {build['error'].splitlines()[-1]}")
    if args.fit:
        for key, terms in fit(rows).items():
            print(f"    {key}: {terms},")
    print(table(rows))


if __name__ == "__main__":
    main()
