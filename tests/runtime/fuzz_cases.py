"""The fuzz harness's files: the ones lastedge writes, the attacks of issue 54, and random damage.

``model_files`` and ``data_files`` write what the exporters and a user's data look like;
``hostile_models`` and ``hostile_data`` the structured attacks (each reproduced a crash, hang,
memory bomb, traceback or silent wrong answer before the runtime checked for it);
``damaged`` random damage of any of them. Everything is seeded by the caller's generator. The
harness's modules import each other by name: their folder is on ``sys.path`` (the runtime tests'
conftest puts it there; a script run from it has it).
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from lastedge.runtime import Model, Preprocess

N, K, CLASSES = 12, 10, 3  # the base model's features, atoms and classes


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def random_model(kind: str = "center-l2", classes: int = CLASSES, seed: int = 0) -> Model:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, N))
    preprocess = Preprocess(kind, X.mean(0), X.std(0)) if kind == "standardize" else Preprocess(kind)
    return Model(rng.normal(size=(N, K)), rng.normal(size=(K, 1 if classes == 2 else classes)),
                 np.arange(classes), 1.0, preprocess)


def metadata(n: int = N, k: int = K, m: int = CLASSES, **changes) -> dict:
    """The ``lastedge`` metadata of an fp32 file of that shape, with ``changes``."""
    return {"format": "lastedge-export", "format_version": 1, "classes": list(range(max(m, 2))),
            "n_features": n, "n_atoms": k, "n_outputs": m, "alpha": 1.0, "preprocess": {"kind": "none"},
            "preprocess_in_graph": False, "precision": "fp32", "quantization": None, **changes}


def model_files(folder: Path) -> dict[str, Path]:
    """Every kind of model file lastedge writes that this environment can write."""
    model, binary = random_model(), random_model("standardize", classes=2, seed=1)
    files = {"m.npz": model.save(folder / "m.npz"), "binary.npz": binary.save(folder / "binary.npz")}
    rows = np.random.default_rng(2).normal(size=(200, N)).astype(np.float32)
    if has("tflite") and has("flatbuffers"):
        from lastedge.export import to_tflite

        for name, options in (("fp32", {}), ("int8", {"precision": "int8", "calibration": rows}),
                              ("int8-channels", {"precision": "int8", "calibration": rows, "per_channel": True}),
                              ("dynamic", {"precision": "int8-dynamic"})):
            files[f"{name}.tflite"] = to_tflite(model, folder / f"{name}.tflite", **options)
        files["binary.tflite"] = to_tflite(binary, folder / "binary.tflite")
    if has("onnx") and has("onnxruntime"):
        from lastedge.export import to_onnx

        for name, options in (("fp32", {}), ("int8", {"precision": "int8", "calibration": rows}),
                              ("int8-channels", {"precision": "int8", "calibration": rows, "per_channel": True}),
                              ("dynamic", {"precision": "int8-dynamic"}),
                              ("signed", {"precision": "int8", "calibration": rows, "signed_weights": True}),
                              ("int16x8", {"precision": "int16x8", "calibration": rows})):
            for graph in ("", "-graph"):
                path = folder / f"{name}{graph}.onnx"
                files[path.name] = to_onnx(model, path, with_preprocessing=bool(graph), **options)
        files["binary.onnx"] = to_onnx(binary, folder / "binary.onnx", with_preprocessing=True)
    return files


def data_files(folder: Path) -> dict[str, Path]:
    """A data archive, a CSV file and an IDX folder, small."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, N)), rng.integers(0, CLASSES, 40)
    np.savez_compressed(folder / "data.npz", X_train=X[:30], y_train=y[:30], X_test=X[30:], y_test=y[30:])
    text = "\n".join(",".join(f"{v:.3f}" for v in row) + f",{label}" for row, label in zip(X, y))
    (folder / "data.csv").write_text(",".join(f"f{i}" for i in range(N)) + ",label\n" + text + "\n")
    idx = folder / "idx"
    idx.mkdir()
    images = rng.integers(0, 256, size=(20, 4, 3), dtype=np.uint8)
    for name, array in (("train-images-idx3-ubyte.gz", images), ("train-labels-idx1-ubyte.gz", y[:20])):
        with gzip.open(idx / name, "wb") as f:
            f.write(idx_bytes(array.astype(np.uint8)))
    return {"data.npz": folder / "data.npz", "data.csv": folder / "data.csv", "idx": idx}


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of an unsigned byte array: magic, big-endian dims, values."""
    return bytes([0, 0, 8, array.ndim]) + np.asarray(array.shape, ">u4").tobytes() + array.tobytes()


def hostile_models(folder: Path, base: dict[str, Path], chunks: int) -> dict[str, Path]:
    """The attacks on model files (issue 54's reproducers and kin), each a file in ``folder``."""
    files = _hostile_npz(folder, base["m.npz"], chunks)
    if "fp32.tflite" in base:
        files.update(_hostile_tflite(folder))
    if "fp32.onnx" in base:
        files.update(_hostile_onnx(folder, base))
    for suffix in (".npz", ".onnx", ".tflite"):
        os.mkfifo(folder / f"fifo{suffix}")
        files[f"fifo{suffix}"] = folder / f"fifo{suffix}"
    files["dev-zero"] = Path("/dev/zero")
    return files


def _hostile_npz(folder: Path, model: Path, chunks: int) -> dict[str, Path]:
    import fuzz_bombs as bombs
    arrays = dict(np.load(model))
    rows = chunks * bombs.CHUNK // (4 * 1024)  # a dictionary [1024, rows] of zeros
    members = bombs.npy_members({**arrays, "weights": np.zeros((rows, CLASSES), np.float32),
                                 "preprocess": np.array('{"kind": "none"}')})
    del members["dictionary.npy"]
    written = {
        "npz-bomb.npz": bombs.zip_file(members, {"dictionary.npy": (bombs.npy_header((1024, rows)), chunks)}),
        "npz-extra-member-bomb.npz": bombs.zip_file(bombs.npy_members(arrays),
                                                    {"junk.npy": (bombs.npy_header((1024, rows)), chunks)}),
        "npz-version-negative.npz": npz_bytes({**arrays, "format_version": np.array(-5)}),
        "npz-version-future.npz": npz_bytes({**arrays, "format_version": np.array(2)}),
        "npz-header-tokenerror.npz": npz_bytes(arrays, ("dictionary.npy", b"(12, 10), }", b"(12, 10(, }")),
        "npz-header-syntaxerror.npz": npz_bytes(arrays, ("dictionary.npy", b"'<f4'", b"',f4'")),
    }
    return _write(folder, written)


def npz_bytes(arrays: dict, edit: tuple[str, bytes, bytes] | None = None) -> bytes:
    """The bytes ``np.savez`` writes for ``arrays``, with ``edit`` (member, old, new) applied to
    a member's bytes before it is stored (its CRC is the damaged bytes' own)."""
    import fuzz_bombs

    members = fuzz_bombs.npy_members(arrays)
    if edit is not None:
        members[edit[0]] = members[edit[0]].replace(edit[1], edit[2])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _write(folder: Path, written: dict[str, bytes]) -> dict[str, Path]:
    for name, data in written.items():
        (folder / name).write_bytes(data)
    return {name: folder / name for name in written}


def _hostile_tflite(folder: Path) -> dict[str, Path]:
    import fuzz_tflite as t
    three = t.lastedge_graph(N, K, CLASSES)
    three.tensors.append(t.Tensor((1, CLASSES), signature=(-1, CLASSES)))
    three.ops.append(t.Op(t.FULLY_CONNECTED, [6, 4, 5], [7], ("fc", 0)))
    three.outputs = [7]
    graphs = {
        "tflite-while-recursion": (t.while_recursion(N, CLASSES), {}),
        "tflite-while-forever": (t.while_forever(N, N), {"n_outputs": N, "classes": list(range(N))}),
        "tflite-fill": (t.allocation(t.FILL, (30000, 25000), N), {}),
        "tflite-tile": (t.allocation(t.TILE, (1 << 16, 1 << 14), N), {}),
        "tflite-second-subgraph": ([t.lastedge_graph(N, K, CLASSES), t.lastedge_graph(N, K, CLASSES)], {}),
        "tflite-three-layers": ([three], {}),
        "tflite-atoms-disagree": ([t.lastedge_graph(N, K + 3, CLASSES)], {}),
        "tflite-claims-preprocessing": ([t.lastedge_graph(N, K, CLASSES)],
                                        {"preprocess": {"kind": "l2"}, "preprocess_in_graph": True}),
        "tflite-claims-int8": ([t.lastedge_graph(N, K, CLASSES)], {"precision": "int8"}),
    }
    return _write(folder, {f"{name}.tflite": t.tflite_file(subgraphs, metadata(**changes))
                           for name, (subgraphs, changes) in graphs.items()})


def _hostile_onnx(folder: Path, base: dict[str, Path]) -> dict[str, Path]:
    import onnx

    import fuzz_onnx as o
    protos = {
        "onnx-loop-2e31": (o.loop(N, CLASSES, 2**31), {}),
        "onnx-loop-1e15": (o.loop(N, CLASSES, 10**15), {}),
        "onnx-constant-of-shape": (o.constant_of_shape(N, CLASSES, (30000, 25000)), {}),
        "onnx-square": (o.square(N, 2000, CLASSES), {"n_atoms": 2000}),
        "onnx-broadcast-rows": (o.broadcast_rows(N, K, CLASSES), {}),
        "onnx-external-data": (o.external_data(N, CLASSES), {}),
        "onnx-function": (o.with_function(N, CLASSES), {}),
    }
    files = {}
    for name, (proto, changes) in protos.items():
        o.save(proto, metadata(**changes), folder / f"{name}.onnx")
        files[f"{name}.onnx"] = folder / f"{name}.onnx"
    lies = {"onnx-claims-preprocessing": ("fp32.onnx", {"preprocess_in_graph": True}),
            "onnx-claims-int8": ("fp32.onnx", {"precision": "int8", "quantization": {"mode": "static"}}),
            "onnx-claims-signed-weights": ("int8.onnx", {"quantization": {"mode": "static", "weights": "int8"}})}
    proto = onnx.load(base["dynamic-graph.onnx"])  # found by the fuzz run: onnxruntime 1.32 crashed
    next(node for node in proto.graph.node if node.op_type == "Max").input[1] = ""
    o.save(proto, json.loads(next(p.value for p in proto.metadata_props if p.key == "lastedge")),
           folder / "onnx-empty-input.onnx")
    files["onnx-empty-input.onnx"] = folder / "onnx-empty-input.onnx"
    for name, (source, changes) in lies.items():
        proto = onnx.load(base[source])
        recorded = json.loads(next(p.value for p in proto.metadata_props if p.key == "lastedge"))
        o.save(proto, {**recorded, **changes}, folder / f"{name}.onnx")
        files[f"{name}.onnx"] = folder / f"{name}.onnx"
    return files


def hostile_data(folder: Path, chunks: int) -> dict[str, Path]:
    """The attacks on data files: bombs, a damaged header, a FIFO, a device."""
    import fuzz_bombs as bombs
    chunks = min(4 * chunks, 240)  # declared beyond the memory a worker has (1 GiB from 16); < 4 GiB
    rows = chunks * bombs.CHUNK // (8 * 256)  # X_train [rows, 256] of float64 zeros
    labels = bombs.npy_members({"y_train": np.zeros(rows, np.int8)})
    arrays = dict(np.load(folder / "data.npz"))
    files = _write(folder, {
        "data-bomb.npz": bombs.zip_file(labels, {"X_train.npy": (bombs.npy_header((rows, 256), "<f8"), chunks)}),
        "data-header-tokenerror.npz": npz_bytes(arrays, ("X_train.npy", b"(30, 12), }", b"(30, 12(, }")),
        "data-bare-npy.npz": bombs.npy_header((1 << 20, 1 << 20)),
    })
    idx = folder / "idx-bomb"
    idx.mkdir()
    images = bombs.gzip_file(bytes([0, 0, 8, 3]) + np.array([chunks * 4096, 64, 64], ">u4").tobytes(), chunks)
    (idx / "train-images-idx3-ubyte.gz").write_bytes(images)
    labels = np.zeros(chunks * 4096, np.uint8)
    (idx / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(labels)))
    os.mkfifo(folder / "fifo-data.npz")
    return {**files, "idx-bomb": idx, "fifo-data.npz": folder / "fifo-data.npz",
            "dev-zero-data.npz": Path("/dev/zero")}


def damaged(data: bytes, rng: np.random.Generator) -> bytes:
    """``data`` with one random kind of damage: bytes or bits changed, a word set to a telling
    value, a run zeroed or repeated, bytes inserted, or the end cut off."""
    data, size = bytearray(data), len(data)
    if not size:
        return rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
    kind = rng.integers(7)
    if kind == 0:
        for _ in range(rng.integers(1, 9)):
            data[rng.integers(size)] = rng.integers(256)
    elif kind == 1:
        for _ in range(rng.integers(1, 5)):
            data[rng.integers(size)] ^= 1 << rng.integers(8)
    elif kind == 2:
        value = rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, size, size + 1, rng.integers(1 << 32)])
        at = rng.integers(max(1, size // 4)) * 4
        data[at:at + 4] = int(value).to_bytes(4, "little")
    elif kind == 3:
        at = rng.integers(size)
        length = min(size - at, rng.integers(1, 64))
        data[at:at + length] = bytes(length)
    elif kind == 4:
        at, length = rng.integers(size), rng.integers(1, 256)
        data[at:at] = data[at:at + length]
    elif kind == 5:
        at = rng.integers(size + 1)
        data[at:at] = rng.integers(0, 256, rng.integers(1, 16), dtype=np.uint8).tobytes()
    else:
        del data[rng.integers(size):]
    return bytes(data)


def damaged_member(data: bytes, rng: np.random.Generator) -> bytes:
    """An .npz archive with one member damaged but its CRC valid: the damage reaches numpy."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    name = sorted(members)[rng.integers(len(members))]
    head = members[name][:128]
    members[name] = damaged(head, rng) + members[name][128:]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    return out.getvalue()


def damaged_folder(source: Path, target: Path, rng: np.random.Generator) -> Path:
    """A copy of an IDX folder with one file damaged, compressed or not."""
    shutil.copytree(source, target)
    victim = sorted(target.iterdir())[rng.integers(2)]
    if rng.random() < 0.5:
        victim.write_bytes(gzip.compress(damaged(gzip.decompress(victim.read_bytes()), rng)))
    else:
        victim.write_bytes(damaged(victim.read_bytes(), rng))
    return target
