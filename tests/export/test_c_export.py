"""The C99 export: its integer graph is the int8 TFLite file's, and the compiled C matches it bit
for bit (int8) or within the fp32 bound, on the host (gcc -std=c99 -pedantic -Werror)."""

from __future__ import annotations

import math
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from lastedge.export import ParityError, to_tflite
from lastedge.runtime import Model, load
from lastedge.export import c_parity
from lastedge.export.c import build_c, to_c
from lastedge.export.c_kernels import SQRT, pack_dictionary, zero_up_to
from lastedge.export.c_preprocess import FAST_MIN, gains, preprocessed, slow_rows
from lastedge.export.c_parity import (HOST_FLAGS, compiler, integer_graph_figures,
                                      measure_c_parity, run_c)
from lastedge.export.int8_reference import IntegerGraph, quantize_multiplier, requantize

KINDS = ("none", "l2", "center-l2", "standardize")


@pytest.fixture(scope="module")
def digits(digits_case):
    return digits_case()


def test_quantize_multiplier_and_requantize_are_exact_fixed_point():
    rng = np.random.default_rng(0)
    for real in np.concatenate([10.0 ** rng.uniform(-9, 1, 200), [0.5, 1.0, 2 ** -31, 1e-12]]):
        multiplier, shift = quantize_multiplier(float(real))
        if multiplier:
            assert 1 << 30 <= multiplier < 1 << 31
            assert abs(multiplier * 2.0 ** (shift - 31) / real - 1) <= 2.0 ** -30
        acc = rng.integers(-2 ** 31, 2 ** 31, 50)
        got = requantize(acc, multiplier, shift)
        exact = [math.floor(Fraction(int(a) * multiplier, 2 ** (31 - shift)) + Fraction(1, 2))
                 for a in acc]
        assert got.tolist() == exact
    assert quantize_multiplier(0.0) == (0, 0) and quantize_multiplier(1e-12) == (0, 0)
    assert quantize_multiplier(2.0 ** 40) == (2 ** 31 - 1, 30)
    with pytest.raises(ValueError, match="finite and >= 0"):
        quantize_multiplier(float("nan"))


def _litert(interpreter, path, Q):
    """A TFLite file's integer scores for integer rows ``Q`` in LiteRT, and its input's
    (scale, zero point)."""
    runner = interpreter.Interpreter(model_path=str(path))
    (inp,), (out,) = runner.get_input_details(), runner.get_output_details()
    runner.resize_tensor_input(inp["index"], Q.shape)
    runner.allocate_tensors()
    runner.set_tensor(inp["index"], Q)
    runner.invoke()
    return runner.get_tensor(out["index"]), inp["quantization"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_integer_graph_is_the_int8_tflite_file(kind, tmp_path, random_model):
    """LiteRT's kernels on random int8 rows give the graph's int8 scores, every one."""
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    model, X = random_model(n_features=24, n_atoms=30, n_classes=4, kind=kind, seed=3)
    graph = IntegerGraph.build(model, X[:150])
    path = to_tflite(model, tmp_path / "m.tflite", precision="int8", calibration=X[:150])
    Q = np.random.default_rng(1).integers(-128, 128, (2000, 24)).astype(np.int8)
    scores, quantization = _litert(interpreter, path, Q)
    assert np.array_equal(scores, graph.quantized_scores(Q))
    assert quantization == (np.float32(graph.input_scale), graph.input_zero_point)


@pytest.mark.parametrize("kind", ["none", "center-l2"])
def test_the_16x8_graph_is_litert_16x8_kernels(kind, tmp_path, random_model):
    """A 16x8 TFLite file of ``int16x8.tensors`` (FULLY_CONNECTED version 7) in LiteRT gives the
    graph's int16 scores on random int16 rows, every one."""
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    from lastedge.export import int16x8, tflite
    from lastedge.export.calibration import Ranges
    from lastedge.export.metadata import build_metadata, dumps

    model, X = random_model(n_features=24, n_atoms=30, n_classes=4, kind=kind, seed=4)
    ranges = Ranges.measure(model, X[:150])
    graph = IntegerGraph.from_ranges(model, ranges, "int16x8")
    data = tflite._Writer(tflite.check_schema()).write(
        int16x8.tensors(model, ranges), dumps(build_metadata(model, precision="int16x8", preprocess_in_graph=False)),
        "16x8", op_version=7)
    (tmp_path / "m.tflite").write_bytes(data)
    Q = np.random.default_rng(1).integers(-32768, 32768, (2000, 24)).astype(np.int16)
    assert np.array_equal(_litert(interpreter, tmp_path / "m.tflite", Q)[0], graph.quantized_scores(Q))


def test_the_c_model_and_the_int8_tflite_file_give_the_same_scores(digits, tmp_path):
    """Through lastedge.runtime (numpy's preprocessing, LiteRT): every held-out digits row's int8
    input levels and scores are the C's."""
    pytest.importorskip("ai_edge_litert.interpreter")
    model, X_train, _, X_test, _ = digits
    c_model = build_c(model, precision="int8", calibration=X_train)
    path = to_tflite(model, tmp_path / "m.tflite", precision="int8", calibration=X_train)
    graph, levels = c_model.graph, run_c(c_model, X_test)["q"]
    expected = ((graph.quantized_scores(levels).astype(np.float32) - np.float32(graph.output_zero_point))
                * np.float32(graph.output_scale))
    assert np.array_equal(load(path, backend="litert").decision_function(X_test), expected)


def test_zero_up_to_is_the_last_accumulator_that_gives_a_zero_feature():
    for multiplier, shift in ((1406965225, -7), (1 << 30, 0), (2 ** 31 - 1, -31), (0, 0)):
        edge = zero_up_to(multiplier, shift)
        assert requantize(edge, multiplier, shift) <= 0
        assert edge == 2 ** 31 - 1 or requantize(edge + 1, multiplier, shift) >= 1


def test_the_packed_dictionary_pairs_each_weight_with_its_input():
    q = np.arange(-60, 60).reshape(6, 20).astype(np.int8)  # 6 atoms, 20 features: both padded
    packed = pack_dictionary(q).reshape(2, 6, 4, 4)  # [block, group of 4 inputs, atom, byte]
    assert packed.size == 8 * 24
    for atom in range(8):
        for feature in range(24):
            block, group, byte = atom // 4, feature // 4, feature % 4
            expected = q[atom, feature] if atom < 6 and feature < 20 else 0
            assert packed[block, group, atom % 4, byte] == expected


def test_the_square_root_is_correctly_rounded(tmp_path):
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.uniform(0, 1, 5000), 10.0 ** rng.uniform(-45, 38, 5000),
        [0.0, 1.0, 2.0, 4.0, np.finfo(np.float32).max, np.finfo(np.float32).tiny, 1e-45, 3e-40]],
    ).astype(np.float32)
    program = ("#include <stdint.h>\n#include <stdio.h>\n" + SQRT +
               "int main(void) { float a; while (fread(&a, 4, 1, stdin) == 1) { a = root(a); "
               "fwrite(&a, 4, 1, stdout); } return 0; }\n")
    (tmp_path / "root.c").write_text(program)
    subprocess.run([compiler(), *HOST_FLAGS, "-o", str(tmp_path / "root"), str(tmp_path / "root.c")],
                   check=True)
    out = subprocess.run([str(tmp_path / "root")], input=values.tobytes(), capture_output=True, check=True)
    assert np.array_equal(np.frombuffer(out.stdout, np.float32), np.sqrt(values))


@pytest.mark.parametrize("precision", ["fp32", "int8", "int16x8"])
def test_the_compiled_model_matches_on_held_out_digits(digits, precision):
    model, X_train, _, X_test, y_test = digits
    c_model = build_c(model, precision=precision, calibration=X_train if precision != "fp32" else None)
    figures = measure_c_parity(c_model, X_test, y_test)
    assert figures["problems"] == []
    assert figures["agreement"] >= (1.0 if precision == "fp32" else 0.99)
    if precision != "fp32":
        assert figures["input_identical"] and figures["scores_identical"] and figures["labels_identical"]
    else:
        assert figures["within_tolerance"] and figures["max_score_error"] < 1e-4


@pytest.mark.parametrize("precision", ["int8", "int16x8"])
def test_one_output_weight_per_atom_gives_the_same_integers(digits, precision, one_output_per_atom):
    """An atom that votes for one class is stored as one weight and a class index: the scores
    are the integer graph's, bit for bit."""
    model, X_train, _, X_test, y_test = digits
    c_model = build_c(one_output_per_atom(model), precision=precision, calibration=X_train)
    assert "#define ONE_OUTPUT_PER_ATOM 1" in c_model.source
    figures = measure_c_parity(c_model, X_test, y_test)
    assert figures["problems"] == [] and figures["agreement"] >= 0.99
    assert figures["input_identical"] and figures["scores_identical"] and figures["labels_identical"]


def _extreme_rows(X: np.ndarray) -> np.ndarray:
    """Real rows, and rows at the ends of float32: zeros, huge, tiny and subnormal values."""
    rng = np.random.default_rng(0)
    signs = rng.choice([-1.0, 1.0], size=(6, X.shape[1]))
    return np.concatenate([X[:40], np.zeros((1, X.shape[1])), X[:3] * 1e30, X[:3] * 1e-30,
                           X[:3] * 1e-42, signs * 3e38, signs * 1e-45, X[:2] + 1e6]).astype(np.float32)


@pytest.mark.parametrize("soft_float", [False, True])
@pytest.mark.parametrize("precision", ["int8", "int16x8"])
@pytest.mark.parametrize("kind", KINDS)
def test_integers_are_bit_exact_on_any_finite_rows(kind, precision, soft_float, random_model):
    """Both roundings of the input (the FPU's addition, and the float's bits alone as on cores
    without an FPU) give the reference's levels."""
    model, X = random_model(n_features=20, n_atoms=13, n_classes=3, kind=kind, seed=5)
    c_model = build_c(model, precision=precision, calibration=X[:200])
    rows = _extreme_rows(X[200:])
    flags = (*HOST_FLAGS, "-DLASTEDGE_SOFT_FLOAT") if soft_float else HOST_FLAGS
    figures = integer_graph_figures(c_model, rows, run_c(c_model, rows, flags))
    assert figures["input_identical"] and figures["scores_identical"] and figures["labels_identical"]


def _rows_on_both_paths(X: np.ndarray, center: bool) -> tuple[np.ndarray, np.ndarray]:
    """Rows the l2 preprocessing computes at scale 1 (real ones, 1e10 times larger, and a sum of
    squares 2**-10 above FAST_MIN) and rows it computes again scaled (overflowing, tiny,
    subnormal, zero, constant for center-l2, non-finite, 2**-10 below FAST_MIN); whether each
    takes the slow path. Rows 2**-70 times real ones have subnormal squares, and lose bits at
    scale 1 (their values differ from the scaled path's by ~1e-5)."""
    X = X[:6].astype(np.float64)
    C = X - X.mean(axis=1, keepdims=True) if center else X
    edge = X * np.sqrt(float(FAST_MIN) / (C * C).sum(axis=1, keepdims=True))
    fast = [X, X * 1e10, edge * (1 + 2 ** -10)]
    signs = np.random.default_rng(1).choice([-1.0, 1.0], size=X.shape)
    constant = np.full((1, X.shape[1]), 5.0)
    slow = [X * 2.0 ** -70, X * 1e30, X * 1e-30, X * 1e-42, signs * 3e38, signs * 1e-45, edge * (1 - 2 ** -10),
            np.zeros((1, X.shape[1])), np.where(np.arange(X.shape[1]) % 2, np.inf, X[:1])]
    if center:
        slow.append(constant)
    else:
        fast.append(constant)
    rows = np.concatenate(fast + slow).astype(np.float32)
    return rows, np.repeat([False] * len(fast) + [True] * len(slow), [len(r) for r in fast + slow])


def _c_preprocessed(c_model, rows: np.ndarray, flags, folder: Path) -> np.ndarray:
    """The fp32 C's ``preprocess`` itself (static: a program that includes the source) on rows."""
    c_model.write(folder)
    (folder / "main.c").write_text(
        f'#include <stdio.h>\n#include "{c_model.prefix}.c"\n'
        "int main(void) { float x[N_FEATURES], z[N_FEATURES];\n"
        "  while (fread(x, 4, N_FEATURES, stdin) == N_FEATURES) { preprocess(x, z); "
        "fwrite(z, 4, N_FEATURES, stdout); }\n  return 0; }\n")
    subprocess.run([compiler(), *flags, "-o", "pre", "main.c"], cwd=folder, check=True)
    out = subprocess.run(["./pre"], cwd=folder, input=rows.astype("<f4").tobytes(), capture_output=True,
                         check=True).stdout
    return np.frombuffer(out, "<f4").reshape(rows.shape)


@pytest.mark.parametrize("soft_float", [False, True])
@pytest.mark.parametrize("kind", ["l2", "center-l2"])
def test_rows_on_both_paths_of_the_l2_preprocessing(kind, soft_float, random_model, tmp_path):
    """Rows at scale 1 and rows scaled again: the C's preprocessed values (fp32) equal the
    twin's bit for bit, its int8 levels and scores the integer graph's, on both paths and with
    both roundings of the input; fp32 scores within the bound."""
    model, X = random_model(n_features=20, n_atoms=13, n_classes=3, kind=kind, seed=5)
    rows, slow = _rows_on_both_paths(X[200:], kind == "center-l2")
    assert np.array_equal(slow_rows(model, rows), slow)
    finite = np.all(np.isfinite(rows), axis=1)
    flags = (*HOST_FLAGS, "-DLASTEDGE_SOFT_FLOAT") if soft_float else HOST_FLAGS
    got = _c_preprocessed(build_c(model), rows[finite], flags, tmp_path)
    assert np.array_equal(got.view(np.uint32),
                          preprocessed(model, rows[finite], gains(model, None)).view(np.uint32))
    c_model = build_c(model, precision="int8", calibration=X[:200])
    figures = integer_graph_figures(c_model, rows[finite], run_c(c_model, rows[finite], flags))
    assert figures["input_identical"] and figures["scores_identical"] and figures["labels_identical"]
    got = run_c(c_model, rows[~finite], flags)  # inf: any levels, but an answer (no endless loop)
    assert len(got["labels"]) == np.count_nonzero(~finite)
    fp32 = measure_c_parity(build_c(model), rows[finite], flags=flags)
    assert fp32["within_tolerance"] and fp32["problems"] == []


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_binary_model_with_text_labels(precision, binary_digits_case):
    model, X_train, X_test, y_test = binary_digits_case()
    c_model = build_c(model, precision=precision, calibration=X_train if precision == "int8" else None)
    figures = measure_c_parity(c_model, X_test, y_test)
    assert figures["problems"] == [] and figures["agreement"] >= 0.99
    assert '{"eight", "three"}' in c_model.source


def test_two_models_link_into_one_program(digits, tmp_path):
    model, X_train, *_ = digits
    build_c(model, prefix="first").write(tmp_path)
    build_c(model, precision="int8", calibration=X_train, prefix="second").write(tmp_path)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "first.h"\n#include "second.h"\n'
        "int main(void) { float x[FIRST_N_FEATURES] = {0}; x[3] = 16.0f; x[9] = 7.0f;\n"
        '  printf("%d %d %s\\n", first_predict(x), second_predict(x), second_label(second_predict(x)));\n'
        "  return 0; }\n")
    subprocess.run([compiler(), *HOST_FLAGS, "-o", "both", "main.c", "first.c", "second.c"],
                   cwd=tmp_path, check=True)
    first, second, label = subprocess.run(
        ["./both"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    x = np.zeros((1, 64), np.float32)
    x[0, 3], x[0, 9] = 16, 7
    assert int(first) == int(np.argmax(model.decision_function(x)))
    assert label == str(model.classes[int(second)])


def test_to_c_proves_the_files_before_writing_them(digits, tmp_path, monkeypatch):
    model, X_train, _, X_test, y_test = digits
    header, source = to_c(model, tmp_path / "ok", precision="int8", calibration=X_train,
                          prefix="digits", check_rows=X_test, check_labels=y_test)
    assert header.name == "digits.h" and source.name == "digits.c"
    assert "int digits_predict(const float *x);" in header.read_text()
    assert "malloc" not in source.read_text() and "math.h" not in source.read_text()

    real = c_parity.run_c

    def off_by_one(c_model, X, flags=HOST_FLAGS):
        got = real(c_model, X, flags)
        got["scores"][0, 0] += 1
        return got

    monkeypatch.setattr(c_parity, "run_c", off_by_one)
    with pytest.raises(ParityError, match="int32 scores differ"):
        to_c(model, tmp_path / "bad", precision="int8", calibration=X_train, check_rows=X_test)
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("arguments, message", [
    ({"precision": "int16"}, "precision must be one of"),
    ({"prefix": "2fast"}, "prefix must be a C identifier"),
    ({"prefix": "a-b"}, "prefix must be a C identifier"),
    ({"calibration": np.zeros((30, 64))}, "calibration applies to integer exports only"),
    ({"precision": "int8"}, "needs calibration rows"),
])
def test_bad_arguments_are_refused(digits, arguments, message):
    with pytest.raises(ValueError, match=message):
        build_c(digits[0], **arguments)


def test_sums_that_could_overflow_int32_are_refused(random_model):
    """600 atoms of equal output weight: int16 features could sum past int32; int8 ones cannot."""
    model, X = random_model(n_features=4, n_atoms=600, n_classes=3, seed=0)
    model = Model(model.dictionary, np.ones_like(model.weights), model.classes, 1.0, model.preprocess)
    build_c(model, precision="int8", calibration=X)
    with pytest.raises(ValueError, match="too large for the C kernels' int32 sums"):
        build_c(model, precision="int16x8", calibration=X)


def test_a_file_in_the_way_is_refused(digits, tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(ValueError, match="is a file"):
        to_c(digits[0], tmp_path / "taken")


@pytest.mark.parametrize("precision, one_output", [("fp32", False), ("int8", False), ("int8", True),
                                                   ("int16x8", False), ("int16x8", True)])
def test_no_undefined_behaviour_under_the_sanitizers(precision, one_output, random_model, one_output_per_atom):
    model, X = random_model(n_features=20, n_atoms=13, n_classes=3, kind="center-l2", seed=5)
    model = one_output_per_atom(model) if one_output else model
    c_model = build_c(model, precision=precision, calibration=X[:200] if precision != "fp32" else None)
    flags = (*HOST_FLAGS, "-g", "-fsanitize=undefined,address", "-fno-sanitize-recover=all")
    rows = _extreme_rows(X[200:])
    assert np.array_equal(run_c(c_model, rows, flags)["labels"], run_c(c_model, rows)["labels"])


def test_header_and_source_compile_as_cpp_callers_see_them(digits, tmp_path):
    """The header is usable from C++ (Arduino sketches): extern "C" linkage."""
    build_c(digits[0]).write(tmp_path)
    (tmp_path / "use.cpp").write_text('#include "lastedge.h"\nint main() { float x[64] = {}; '
                                      "return lastedge_predict(x) < 0; }\n")
    subprocess.run(["gcc", *HOST_FLAGS, "-c", "lastedge.c"], cwd=tmp_path, check=True)
    subprocess.run(["g++", "-Wall", "-Werror", "-o", "use", "use.cpp", "lastedge.o"], cwd=tmp_path, check=True)
    assert subprocess.run([str(tmp_path / "use")]).returncode == 0
    assert Path(tmp_path / "lastedge.h").read_text().count('extern "C"') == 1
