"""Files written whole or not at all: the data goes to a temporary sibling (flushed to disk),
which is then renamed over the destination; on any failure the temporary file is removed and
the destination keeps what it held before.

A new file gets the mode any other program's would (0666 less the umask), a replaced one keeps
its own: ``mkstemp``'s private 0600 would stop a shared report from being read by others."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from tvm_explorer.errors import ExplorerError


def current_umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``os.umask`` can
    only set it, and setting it briefly would race with threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(out: Path) -> int:
    """The permission bits ``out`` should have: those it has, else a new file's."""
    try:
        return stat.S_IMODE(os.stat(out).st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def replace_whole(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; OSError (and anything else) propagates."""
    out = Path(path)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), _mode_for(out))
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return out


def write_whole(path: str | os.PathLike, data: bytes, what: str, shown: str | None = None) -> Path:
    """``replace_whole`` for a command's output: an OSError becomes one message naming the file
    (``shown``, else the path) and ``what`` it is."""
    try:
        return replace_whole(path, data)
    except OSError as err:
        reason = err.strerror or str(err)
        raise ExplorerError(f"{shown or path}: cannot write the {what} ({reason}); nothing written") from None
