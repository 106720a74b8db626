"""Files written whole or not at all: the data goes to a temporary sibling (flushed to disk),
which is then renamed over the destination; on any failure the temporary file is removed and
the destination keeps what it held before."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from tvm_explorer.errors import ExplorerError


def replace_whole(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; OSError (and anything else) propagates."""
    out = Path(path)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
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
