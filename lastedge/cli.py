"""The ``lastedge`` command: one sub-command per user task, each registered by the part that owns it.

Every part (train, export, runtime) has a ``commands.py`` with ``register(subparsers)``; each
sub-command sets ``func(args) -> int``. Errors a user can cause (bad data, bad files, a missing
extra) print one line to stderr and exit non-zero, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import warnings
import zipfile
from typing import Any, NoReturn, Sequence

from lastedge import __version__

# The parts whose commands the CLI offers, in the order --help lists them.
_COMMAND_MODULES = (
    "lastedge.train.commands",
    "lastedge.export.commands",
    "lastedge.runtime.commands",
    "lastedge.inspect_cmd",
    "lastedge.demo",
)

USER_ERRORS = (ValueError, TypeError, ImportError, OSError, zipfile.BadZipFile, KeyError)

# Third-party module -> the extra that installs it, for "not installed" errors (pyproject.toml).
EXTRA_OF_MODULE = {
    "torch": "train", "sklearn": "train", "scipy": "train", "threadpoolctl": "train", "tqdm": "train",
    "onnx": "export", "flatbuffers": "export", "tflite": "export",
    "onnxruntime": "onnx", "ai_edge_litert": "tflite", "matplotlib": "plot", "PIL": "images",
}


class CommandError(Exception):
    """An error a command reports to the user as one line."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming ``--help`` (exit status 2),
    like every other error of the command, rather than the whole usage text. ``commands`` holds
    the sub-commands' parsers, so that an option no command knows is reported by its command."""

    commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> _Parser:
    parser = _Parser(
        prog="lastedge",
        description="Train LAST soft-threshold classifiers, export them, run and benchmark them.",
    )
    parser.add_argument("--version", action="version", version=f"lastedge {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    parser.commands = subparsers.choices
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 error, 2 usage, 130 interrupted)."""
    try:
        return _run(argv)
    except KeyboardInterrupt:  # also while the commands' modules are imported, before any runs
        print("lastedge: interrupted", file=sys.stderr)
        return 130


def _run(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command, reporting a user's error in one line."""
    _escape_unprintable_output()
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():  # restores the default display when the command is done
            warnings.showwarning = _warning_line(args.command)
            return int(args.func(args) or 0)
    except BrokenPipeError:  # the reader stopped early (``lastedge predict ... | head``): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except MemoryError as err:  # a bare one from numpy or the OS, or one that says what to change
        reason = _one_line(err) if str(err) else "out of memory (try smaller batches or data)"
        print(f"lastedge {args.command}: error: {reason}", file=sys.stderr)
        return 1
    except (CommandError, *USER_ERRORS) as err:
        print(f"lastedge {args.command}: error: {_one_line(err)}", file=sys.stderr)
        return 1


def _warning_line(command: str) -> Any:
    """A ``warnings.showwarning`` that prints a warning as one line naming the command, as errors
    are, rather than Python's file, line and source."""
    def show(message: Warning | str, *_: Any, **__: Any) -> None:
        print(f"lastedge {command}: warning: {_one_line(message)}", file=sys.stderr)
    return show


def _escape_unprintable_output() -> None:
    """Print what stdout cannot encode as backslash escapes, as stderr does, rather than fail on
    it after the work is done: a file name with bytes that are not UTF-8 (an image's, in
    ``predict``) or a label outside the terminal's encoding."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # absent on a StringIO, None when closed
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def install_hint(module: str) -> str:
    """The pip command that installs third-party ``module`` with its lastedge extra."""
    return f"pip install 'lastedge[{EXTRA_OF_MODULE[module]}]'"


def _one_line(err: BaseException) -> str:
    """The first line of ``err``; a missing third-party module names the extra to install, and an
    error of the operating system names the path it concerns rather than its errno."""
    module = (getattr(err, "name", None) or "").split(".")[0]
    if isinstance(err, ModuleNotFoundError) and module in EXTRA_OF_MODULE:
        return f"{module} is not installed: {install_hint(module)}"
    if isinstance(err, FileNotFoundError) and err.filename:
        return f"no such file: {err.filename}"
    if isinstance(err, OSError) and err.filename and err.strerror:
        return f"cannot open {err.filename}: {err.strerror[0].lower()}{err.strerror[1:]}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def json_text(value: Any) -> str:
    """``value`` as indented JSON, every NaN or infinity written as null: ``json.dumps`` would
    write them as ``NaN``/``Infinity``, which JSON readers refuse (a model's metadata, an
    objective that overflowed, a parity error may hold one)."""
    return json.dumps(_finite(value), indent=2)


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None, in nested dicts and lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
