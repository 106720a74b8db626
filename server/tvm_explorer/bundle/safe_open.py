"""Open a file of a bundle so that the check "it lies inside the bundle" and the read are one
step.

Checking a path (resolving its symlinks) and then opening it is a race: another process can
swap a directory for a symlink in between, and the open follows it outside (a hostile review
read ``code/module.c`` from outside 308 times in 2,781 loads). Here the file is opened first
and the check is made on what was opened: on Linux the kernel's name of the open descriptor
(``/proc/self/fd/N``) must lie inside the bundle; elsewhere every path component is opened
relative to the previous directory's descriptor with ``O_NOFOLLOW`` (no symlinks at all).
"""

from __future__ import annotations

import os
from pathlib import Path

from tvm_explorer.errors import BundleError

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_PROC_FD = Path("/proc/self/fd")


def open_inside(root: Path, path: Path, what: str) -> int:
    """A read-only, non-blocking descriptor of ``path``, which must lie inside the directory
    ``root`` (a resolved path) once opened. Raises FileNotFoundError / OSError as ``os.open``
    does, BundleError when what was opened lies outside."""
    if _PROC_FD.is_dir():
        fd = os.open(path, _FLAGS)
        try:
            real = os.readlink(_PROC_FD / str(fd))
        except OSError:
            os.close(fd)
            raise
        if real.endswith(" (deleted)"):
            real = real[: -len(" (deleted)")]
        if not (real == str(root) or real.startswith(str(root).rstrip("/") + "/")):
            os.close(fd)
            raise BundleError(f"{path}: {what} leads outside the bundle (to {real})")
        return fd
    return _open_without_symlinks(root, path, what)


def _open_without_symlinks(root: Path, path: Path, what: str) -> int:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise BundleError(f"{path}: {what} leads outside the bundle") from None
    if not parts:
        raise BundleError(f"{path}: {what} is the bundle directory")
    dir_fd = os.open(root, os.O_RDONLY | _DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(parts[-1], _FLAGS | _NOFOLLOW, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
