"""Every estimator's parameters: declared once in ``_parameter_constraints``, documented in a few
lines each, and checked at the start of ``fit`` with errors that name the parameter, what it must
be and the value received."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from lastedge.train import (KMeansCentroidClassifier, LASTClassifier, SGDSoftThresholdClassifier,
                            SoftThresholdEncoderSVM, SparseCodingSVM)
from lastedge.train.params import Interval, Options, check_value

ESTIMATORS = [LASTClassifier, SGDSoftThresholdClassifier, SoftThresholdEncoderSVM, SparseCodingSVM,
              KMeansCentroidClassifier]
FAST_LAST = dict(n_atoms=4, max_dca_iter=2, inner_iter=30, verbose=0, random_state=0)
FAST_SGD = dict(n_atoms=4, max_iter=100, step_sizes=(0.1,), verbose=0, random_state=0)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_parameter_has_constraints(cls):
    assert set(cls._parameter_constraints) == set(inspect.signature(cls).parameters)


def documented_parameters(cls) -> dict[str, list[str]]:
    """``{name: description lines}`` of the numpydoc "Parameters" and "Other Parameters" sections."""
    documented, section = {}, None
    lines = inspect.getdoc(cls).splitlines()
    for line, underline in zip(lines, lines[1:] + [""]):
        if re.fullmatch(r"-+", underline):
            section = line if line in ("Parameters", "Other Parameters") else None
        elif section and re.match(r"\S", line) and not re.fullmatch(r"-+", line):
            names = [name.strip() for name in line.split(":")[0].split(",")]
            documented.update({name: [] for name in names})
            current = names
        elif section and line.startswith("    ") and line.strip():
            for name in current:
                documented[name].append(line)
    return documented


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_parameter_is_documented_in_at_most_four_lines(cls):
    documented = documented_parameters(cls)
    assert set(documented) == set(inspect.signature(cls).parameters)
    assert {name: len(lines) for name, lines in documented.items() if len(lines) > 4} == {}


def test_last_keeps_a_small_public_api():
    assert len(inspect.signature(LASTClassifier).parameters) <= 24


@pytest.mark.parametrize("removed", ["sign_ratio", "init_active_fraction", "surrogate", "line_search", "hinge",
                                     "atoms_per_class", "atoms_against", "ovr_hinge_weight", "sub_dictionaries"])
def test_research_switches_are_not_parameters(removed):
    with pytest.raises(TypeError, match=removed):
        LASTClassifier(**{removed: None})


@pytest.mark.parametrize("value, constraints, message", [
    (0, [Interval(1, integer=True)], "x must be an integer >= 1, got 0"),
    (True, [Interval(0, integer=True)], "x must be an integer >= 0, got True"),  # a bool is no count
    (np.nan, [Interval(0)], "x must be a finite number >= 0, got nan"),
    (1.0, [Interval(0, 1, open_high=True)], r"x must be a finite number in \[0, 1\), got 1.0"),
    ("abc", [Interval(1, integer=True), Options(("full",)), None], "x must be an integer >= 1, 'full' or None, got 'abc'"),
    ("shraed", [Options(("ovr", "shared"))], r"x must be one of \('ovr', 'shared'\), got 'shraed' \(did you mean 'shared'\?\)"),
    ("xyz", [Options(("ovr", "shared"))], r"x must be one of \('ovr', 'shared'\), got 'xyz'$"),
])
def test_check_value_names_the_parameter_the_allowed_values_and_the_value(value, constraints, message):
    with pytest.raises(ValueError, match=message):
        check_value("x", value, constraints)


@pytest.mark.parametrize("value, constraints", [
    (3, [Interval(1, integer=True)]), (np.int64(3), [Interval(1, integer=True)]), (0.5, [Interval(0, 1)]),
    (None, [Interval(0), None]), ("full", [Interval(1, integer=True), Options(("full",))]),
])
def test_check_value_accepts_what_the_constraints_allow(value, constraints):
    check_value("x", value, constraints)


@pytest.mark.parametrize("params, match", [
    ({"inner_solver": "newton"}, "inner_solver must be one of .* got 'newton'"),
    ({"multiclass": "shraed"}, r"multiclass must be one of \('ovr', 'shared'\), got 'shraed' \(did you mean 'shared'\?\)"),
    ({"max_dca_iter": 0}, "max_dca_iter must be an integer >= 1, got 0"),
    ({"max_dca_iter": None}, "max_dca_iter must be an integer >= 1, got None"),
    ({"max_dca_iter": 2.7}, "max_dca_iter must be an integer >= 1, got 2.7"),  # not truncated to 2
    ({"inner_iter": 2.5}, "inner_iter must be an integer >= 1 or None, got 2.5"),
    ({"batch_size": "abc"}, "batch_size must be an integer >= 1, 'full' or None, got 'abc'"),
    ({"batch_size": 2.5}, "batch_size must be an integer >= 1, 'full' or None, got 2.5"),
    ({"tol": -1e-3}, "tol must be a finite number >= 0 or None, got -0.001"),
    ({"early_stopping": "yes"}, "early_stopping must be a bool, got 'yes'"),
    ({"warm_start": 1}, "warm_start must be a bool, got 1"),
    ({"n_iter_no_change": 0}, "n_iter_no_change must be an integer >= 1, got 0"),
    ({"image_shape": (8, 8, 2)}, r"image_shape must be \(H, W\) or \(H, W, 3\) of integers >= 1 or None"),
    ({"shift_augment": -1}, "shift_augment must be an integer >= 0, got -1"),
    ({"mu": "automatic"}, "mu must be a finite number >= 0 or 'auto', got 'automatic' \\(did you mean 'auto'\\?\\)"),
    ({"shift_augment": 1}, r"shift_augment needs image_shape, the \(H, W\) or \(H, W, 3\) of each row"),
])
def test_bad_last_parameters_are_refused(small_blobs, params, match):
    X, y = small_blobs()
    with pytest.raises(ValueError, match=match):
        LASTClassifier(**{**FAST_LAST, **params}).fit(X, y)


@pytest.mark.parametrize("cls, fast", [(LASTClassifier, FAST_LAST), (SGDSoftThresholdClassifier, FAST_SGD)])
@pytest.mark.parametrize("params, match", [
    ({"n_atoms": 0}, "n_atoms must be an integer >= 1, got 0"),
    ({"n_atoms": 2.5}, "n_atoms must be an integer >= 1"),
    ({"preprocess": "zscore"}, "preprocess must be one of .* got 'zscore'"),
    ({"mu": -1.0}, "mu must be a finite number >= 0.*, got -1.0"),
    ({"mu": None}, "mu must be a finite number >= 0.*, got None"),
    ({"nu": "1"}, "nu must be a finite number > 0, got '1'"),
    ({"eps": None}, r"eps must be a finite number in \(0, 3.40282e\+38\], got None"),
    ({"validation_fraction": 2.0}, r"validation_fraction must be a finite number in \(0, 1\), got 2.0"),
    ({"n_jobs": 0}, r"n_jobs must be a non-zero integer \(-1: all cores\) of at most \d+ threads .* or None, got 0"),
    ({"n_jobs": "two"}, "n_jobs must be a non-zero integer .* got 'two'"),
    # torch's thread pool used to abort the process: "libgomp: Out of memory allocating 216000001344 bytes"
    ({"n_jobs": 10**9}, r"n_jobs must be a non-zero integer \(-1: all cores\) of at most \d+ threads .* got 1000000000"),
    # a step <= 0 never moves: LAST used to report convergence after one untrained iteration
    ({"step_sizes": (-0.01,)}, r"step_sizes must be a non-empty sequence of numbers in \(0, 3.4e\+38\]"),
    ({"step_sizes": (0,)}, r"step_sizes must be a non-empty sequence .* or None, got \(0,\)"),
    ({"step_sizes": ()}, r"step_sizes must be a non-empty sequence .* got \(\)"),
    ({"step_sizes": 0.1}, r"step_sizes must be a non-empty sequence .* got 0.1"),
    ({"step_sizes": (1e300,)}, r"step_sizes must be .*float32.* got \(1e\+300,\)"),  # was a torch overflow
    ({"beta": 1e300}, r"beta must be a finite number in \(0, 3.40282e\+38\], got 1e\+300"),  # was a torch overflow
    ({"eps": 1e300}, r"eps must be a finite number in \(0, 3.40282e\+38\], got 1e\+300"),
    ({"random_state": -1}, r"random_state must be an integer in \[0, 4294967295\], a numpy RandomState or None"),
    ({"verbose": -1}, "verbose must be an integer >= 0 or a bool, got -1"),
    ({"device": 3}, "device must be a device name such as 'cpu', 'cuda' or 'auto', got 3"),
])
def test_bad_shared_parameters_are_refused(small_blobs, cls, fast, params, match):
    X, y = small_blobs()
    with pytest.raises(ValueError, match=match):
        cls(**{**fast, **params}).fit(X, y)


@pytest.mark.parametrize("params, match", [
    ({"max_iter": 2.5}, "max_iter must be an integer >= 1, got 2.5"),
    ({"batch_size": 2.5}, "batch_size must be an integer >= 1, got 2.5"),
    ({"batch_size": "full"}, "batch_size must be an integer >= 1, got 'full'"),
    ({"optimizer": "rmsprop"}, "optimizer must be one of .* got 'rmsprop'"),
])
def test_bad_sgd_parameters_are_refused(small_blobs, params, match):
    X, y = small_blobs()
    with pytest.raises(ValueError, match=match):
        SGDSoftThresholdClassifier(**{**FAST_SGD, **params}).fit(X, y)
