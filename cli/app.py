"""The ``lastedge`` command: one sub-command per user task, one module of this package each.

Each command module has ``register(subparsers)``, whose sub-command sets ``func(args) -> int``.
Errors a user can cause (bad data, bad files, a missing extra) print one line to stderr and exit
non-zero, without a traceback; ``--debug`` (or ``LASTEDGE_DEBUG=1``) shows the traceback, and
errors that can only be bugs (``TypeError``, ``KeyError``, ...) always do.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
import zipfile
from typing import Any, NoReturn, Sequence

from lastedge.runtime import __version__

from .common import EXTRA_OF_MODULE, CommandError, install_hint

# The commands, in the order --help lists them (modules of this package).
_COMMAND_MODULES = ("train", "export", "bundle", "predict", "bench", "inspect", "demo")

# What a user's mistake raises; anything else is a bug, shown with its traceback.
USER_ERRORS = (CommandError, ValueError, ImportError, OSError, zipfile.BadZipFile)
DEBUG_VARIABLE = "LASTEDGE_DEBUG"


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
    parser.add_argument("--debug", action="store_true",
                        help=f"show the traceback of an error (also: {DEBUG_VARIABLE}=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__package__}.{name}").register(subparsers)
    parser.commands = subparsers.choices
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``lastedge`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``lastedge``; default ``sys.argv[1:]``. Tests pass a list.

    Returns
    -------
    int
        The exit status: 0 done, 1 an error (one line on stderr), 2 a command line that does not
        parse, 130 interrupted.
    """
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
    except (MemoryError, *USER_ERRORS) as err:
        if args.debug or os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
            raise
        print(f"lastedge {args.command}: error: {_error_line(err)}", file=sys.stderr)
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


def _error_line(err: BaseException) -> str:
    """The one line that reports ``err``: a bare MemoryError (numpy's, the OS's) says what to change."""
    if isinstance(err, MemoryError) and not str(err):
        return "out of memory (try smaller batches or data)"
    return _one_line(err)


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

