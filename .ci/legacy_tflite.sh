#!/usr/bin/env bash
# Run the TFLite export tests, the graph checks and the fuzz run in the legacy tflite-runtime interpreter (2.14, the last release:
# Python <= 3.11, numpy < 2), which cannot share the main environment (numpy 2).
# Usage: .ci/legacy_tflite.sh [VENV_DIR]   (default: a temp dir, removed afterwards)
# PYTHON selects the interpreter (default python3.11, else python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
venv="${1:-}"
if [[ -z "$venv" ]]; then
    venv="$(mktemp -d -t lastedge-legacy-tflite.XXXXXX)"
    trap 'rm -rf "$venv"' EXIT
fi

if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] <= (3, 11) else 1)'; then
    echo "legacy_tflite: tflite-runtime 2.14 needs Python <= 3.11, $python is newer; skipped" >&2
    exit 0
fi

[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "numpy<2" "tflite-runtime==2.14.*" "flatbuffers>=23.5" \
    "tflite>=2.18,<3" pytest
# The base package needs only numpy; --no-deps keeps the main extras (and numpy 2) out.
"$venv/bin/python" -m pip install --quiet --no-deps -e "$root"

cd "$root"
"$venv/bin/python" -c 'import numpy, tflite_runtime; print("numpy", numpy.__version__, "tflite_runtime", tflite_runtime.__version__)'
"$venv/bin/python" -m pytest -q -p no:cacheprovider -m "" tests/export/test_tflite_legacy.py \
    tests/runtime/test_tflite_legacy.py tests/runtime/test_tflite_check.py tests/runtime/test_graph_check.py \
    tests/runtime/test_bounded_reads.py tests/runtime/test_fuzz_model_files.py
