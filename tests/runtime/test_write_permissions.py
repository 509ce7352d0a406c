"""Atomic writes keep the replaced file's permissions, or give a new file the umask's (issue 54:
a private 0600 model was replaced by a world-readable 0644 one)."""

from __future__ import annotations

import os
import stat

import pytest

from lastedge.runtime import write_atomically


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("permissions", [0o600, 0o640, 0o664, 0o755])
def test_a_rewritten_file_keeps_its_permissions(tmp_path, permissions):
    path = tmp_path / "m.npz"
    path.write_bytes(b"old")
    path.chmod(permissions)
    write_atomically(path, lambda f: f.write(b"new"))
    assert path.read_bytes() == b"new" and mode(path) == permissions


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o027])
def test_a_new_file_gets_what_the_umask_gives(tmp_path, umask):
    previous = os.umask(umask)
    try:
        write_atomically(tmp_path / "new.onnx", lambda f: f.write(b"x"))
    finally:
        os.umask(previous)
    assert mode(tmp_path / "new.onnx") == 0o666 & ~umask
