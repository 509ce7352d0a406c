"""How long ``lastedge train`` / ``predict`` take to read MNIST from each kind of data source.

    python benchmarks/data_loading.py [--data ../shared/data] [--images 10000] [--csv-rows 20000] [--runs 3]

Writes MNIST (../shared/data/mnist.npz) to a temporary folder as the sources users bring (the
.npz itself, IDX files gzipped and plain, one PNG per image in class subfolders, a CSV of
training rows with a header and the label last) and times ``lastedge.runtime.data.load_dataset``
on each (median of ``--runs``, after one untimed read that warms the page cache), checking that
every source gives the same pixels. The CSV is read twice: as it is (numpy's parser reads plain
numbers) and cell by cell (the reader every other CSV takes), each also once in a fresh process
for its peak memory. Prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from arguments import positive_int
from lastedge.runtime import csv_rows as csv_reader
from lastedge.runtime.data import load_dataset
from paper_data import DEFAULT_DATA, check_data


def write_idx(path: Path, array: np.ndarray, gz: bool) -> None:
    head = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    data = head + np.ascontiguousarray(array, dtype=np.uint8).tobytes()
    path.write_bytes(gzip.compress(data, compresslevel=6) if gz else data)


CELL_BY_CELL = "CSV, cell by cell"


def write_sources(mnist: dict[str, np.ndarray], folder: Path, n_images: int,
                  csv_rows: int) -> dict[str, Path]:
    from PIL import Image

    sources = {"npz": folder / "mnist.npz"}
    np.savez(sources["npz"], **mnist)
    for gz in (True, False):
        idx = sources[f"IDX{' .gz' if gz else ''}"] = folder / f"idx{'_gz' if gz else ''}"
        idx.mkdir()
        suffix = ".gz" if gz else ""
        for part, prefix in (("train", "train"), ("test", "t10k")):
            write_idx(idx / f"{prefix}-images-idx3-ubyte{suffix}", mnist[f"X_{part}"].reshape(-1, 28, 28), gz)
            write_idx(idx / f"{prefix}-labels-idx1-ubyte{suffix}", mnist[f"y_{part}"], gz)
    pngs = sources[f"PNG folder ({n_images} images)"] = folder / "png"
    for i, (row, label) in enumerate(zip(mnist["X_test"][:n_images], mnist["y_test"][:n_images])):
        (pngs / str(label)).mkdir(parents=True, exist_ok=True)
        Image.fromarray(row.reshape(28, 28)).save(pngs / str(label) / f"{i}.png")
    csv = sources[f"CSV ({csv_rows} rows)"] = sources[CELL_BY_CELL] = folder / "mnist.csv"
    with csv.open("w") as f:
        f.write(",".join([f"p{i}" for i in range(784)] + ["label"]) + "\n")
        for row, label in zip(mnist["X_train"][:csv_rows], mnist["y_train"][:csv_rows]):
            f.write(",".join(map(str, row.tolist())) + f",{label}\n")
    return sources


@contextlib.contextmanager
def reading(name: str):
    """The CSV reader ``name`` asks for: cell by cell, or as ``load_csv`` chooses."""
    plain = csv_reader._plain_numbers
    if name == CELL_BY_CELL:
        csv_reader._plain_numbers = lambda *args: None
    try:
        yield
    finally:
        csv_reader._plain_numbers = plain


def peak_mib(path: Path, cell_by_cell: bool) -> float:
    """Peak resident memory of a fresh process that reads ``path`` (MiB; Linux's VmHWM, which,
    unlike ``ru_maxrss``, does not carry over the forking parent's peak)."""
    code = ("from pathlib import Path; from lastedge.runtime import csv_rows, data; "
            + ("csv_rows._plain_numbers = lambda *a: None; " if cell_by_cell else "")
            + f"data.load_dataset({str(path)!r}); "
            "print(next(int(line.split()[1]) for line in Path('/proc/self/status').read_text().splitlines() "
            "if line.startswith('VmHWM')) / 1024)")
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding mnist.npz")
    p.add_argument("--images", type=positive_int, default=10000, help="test images written as PNG files")
    p.add_argument("--csv-rows", type=positive_int, default=20000, help="training rows written as CSV")
    p.add_argument("--runs", type=positive_int, default=3, help="timed reads per source (median shown)")
    args = p.parse_args()
    check_data(p, args.data, "mnist.npz")
    with np.load(args.data / "mnist.npz") as archive:
        mnist = {key: archive[key] for key in ("X_train", "y_train", "X_test", "y_test")}
    print("| source | rows | read s (median) | us per row | peak MiB (CSV) |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in write_sources(mnist, Path(tmp), args.images, args.csv_rows).items():
            with reading(name):
                load_dataset(str(path))  # warm the page cache
                times = []
                for _ in range(args.runs):
                    start = time.perf_counter()
                    data = load_dataset(str(path))
                    times.append(time.perf_counter() - start)
            rows = len(data.X_train) + len(data.X_test)
            pixels = np.concatenate([data.X_train, data.X_test])
            reference = (mnist["X_test"][:args.images] if name.startswith("PNG") else
                         mnist["X_train"][:args.csv_rows] if path.suffix == ".csv" else
                         np.concatenate([mnist["X_train"], mnist["X_test"]]))
            same = sorted(map(bytes, pixels.astype(np.uint8))) == sorted(map(bytes, reference))
            median = statistics.median(times)
            peak = f"{peak_mib(path, name == CELL_BY_CELL):.0f}" if path.suffix == ".csv" else ""
            print(f"| {name} | {rows} | {median:.2f} | {1e6 * median / rows:.0f} | {peak} |"
                  + ("" if same else " PIXELS DIFFER"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
