"""The README is what a newcomer follows: its tour must run as written and its examples must print
what it shows."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lastedge.cli import main

pytestmark = pytest.mark.slow  # each runs a script or the README's commands in full

README = Path(__file__).resolve().parents[2] / "README.md"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def test_readme_tour_runs(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    tour = next(block for block in blocks if "to_tflite(model" in block)
    result = subprocess.run([sys.executable, "-c", tour], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    accuracy = float(re.search(r"device accuracy ([0-9.]+)", result.stdout).group(1))
    assert accuracy > 0.9
    assert {"digits.npz", "digits.onnx", "digits-int8.tflite"} <= {p.name for p in tmp_path.iterdir()}


def console_examples() -> list[tuple[list[str], list[str]]]:
    """Every command of the README's console blocks, in order: its arguments after ``lastedge``
    and the lines shown under it."""
    examples = []
    for block in re.findall(r"```console\n(.*?)```", README.read_text(), flags=re.S):
        for entry in block.replace("\\\n", " ").split("$ ")[1:]:
            command, *shown = entry.splitlines()
            assert command.startswith("lastedge "), command
            examples.append((shlex.split(command)[1:], shown))
    return examples


def assert_prints_as_shown(argv: list[str], shown: list[str], capsys) -> None:
    """Each shown line is printed, up to one unit in each number (a row more or less on another
    CPU); times and file sizes (the ``training time`` and ``model`` lines) are not compared."""
    assert main(argv) == 0, argv
    printed = capsys.readouterr().out.splitlines()
    for line in shown:
        if line == "..." or line.startswith(("training time", "model ")):
            continue
        assert any(same_up_to_rounding(line, got) for got in printed), (line, printed)


def same_up_to_rounding(shown: str, printed: str) -> bool:
    if NUMBER.sub("#", shown).split() != NUMBER.sub("#", printed).split():
        return False
    values = [[float(v.replace(",", "")) for v in NUMBER.findall(text)] for text in (shown, printed)]
    return all(abs(a - b) <= 1 for a, b in zip(*values))


def test_readme_commands_run_in_order_and_print_what_they_show(tmp_path, monkeypatch, capsys):
    """The command-line tour: train, export, predict, bench and inspect, each as written."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    examples = console_examples()
    assert [argv[0] for argv, _ in examples] == ["train", "export", "predict", "bench", "inspect"]
    for argv, shown in examples:
        assert_prints_as_shown([*argv, "--quiet"] if argv[0] == "train" else argv, shown, capsys)


def test_readme_layout_names_every_source_the_data_readers_load():
    """The runtime row listed .npz, CSV and digits only; IDX and image folders are read too."""
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `runtime/`"))
    readers = re.search(r"`lastedge\.runtime\.data`: ([^)]*)\)", row).group(1)
    assert readers.split(", ") == ["`.npz`", "CSV", "IDX folders", "image folders", "`digits`"]
