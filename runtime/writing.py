"""Write files safely: check an output path before long work, write it atomically.

``check_output_path`` runs before a fit or an export so that a typo does not lose the work;
``write_atomically`` writes a temp file beside the target and renames it over it, so a crash or
Ctrl-C leaves the old file or the complete new one, with the old file's permissions (or, for a
new file, those the umask gives).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def check_output_path(path: str | os.PathLike, suffixes: str | tuple[str, ...], what: str,
                      inputs: dict[str, str | os.PathLike] | None = None) -> Path:
    """``path`` if a file can be written there: its suffix one of ``suffixes`` (e.g. ".npz"), its
    folder existing, and no file of ``inputs`` (name in the message -> path, e.g. {"--data": ...})
    that writing it would destroy. Called before long work, so that a typo does not lose the work;
    ``what`` names the path in the message ("--out", "the figure")."""
    path = Path(path)
    for name, source in (inputs or {}).items():
        if path.exists() and Path(source).exists() and os.path.samefile(path, source):
            raise ValueError(f"{what} {path} is the file {name} reads; writing it would destroy that "
                             "input: give another path")
    suffixes = (suffixes,) if isinstance(suffixes, str) else suffixes
    check_has_stem(path, suffixes)
    if path.suffix.lower() not in suffixes:
        raise ValueError(f"{what} must be a {', '.join(suffixes)} file, got {path.name or str(path)!r}")
    if not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise ValueError(f"cannot write {path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise ValueError(f"cannot write {path}: it is a folder")
    folder = path.parent if str(path.parent) else Path(".")
    try:  # a real probe: permissions, read-only mounts and special folders such as /proc alike
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise cannot_write(path, err) from None
    return path


def check_has_stem(path: Path, suffixes: tuple[str, ...]) -> None:
    """Refuse a file name that is one of ``suffixes`` alone (".npz"): ``Path(".npz").suffix`` is
    "", so a suffix check would refuse it as "got '.npz'", the very suffix it asks for."""
    if path.name.startswith(".") and path.name.lower() in suffixes:  # not "." itself
        raise ValueError(f"cannot write {path}: its name {path.name!r} is a suffix alone; "
                         f"give the file a name before {path.name!r}")


def cannot_write(path: Path, err: OSError) -> ValueError:
    """The error for ``path``, whose folder exists but refused a new file or folder (``err``). It
    names the user's path, not a temp file's; /proc refuses with "No such file or directory",
    which would read as a missing folder, so that one says what it means."""
    folder = path.parent if str(path.parent) else Path(".")
    why = "it does not accept new files" if err.errno == errno.ENOENT else err.strerror or str(err)
    return ValueError(f"cannot write {path}: folder {folder} is not writable ({why})")


def write_atomically(path: str | os.PathLike, write) -> None:
    """Call ``write(file)`` on a temp file beside ``path``, then rename it over ``path``.

    A crash or error mid-write leaves ``path`` untouched and no temp file behind. The new file
    keeps the permissions of the one it replaces (a private 0600 model stays private), or gets
    those the umask gives a new file.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"cannot write {path}: folder {folder} does not exist")
    if path.is_dir():
        raise ValueError(f"cannot write {path}: it is a folder")
    try:
        # a short name: ".{name}.XXXXXXXX.tmp" in full passed the 255-byte limit of names that
        # fit it themselves (80 CJK characters), after check_output_path had accepted them
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:32]}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise cannot_write(path, err) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _permissions(path))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _permissions(path: Path) -> int:
    """The permission bits of the file at ``path``, or those ``open`` gives a new file there."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask: read from /proc where Linux shows it, else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
