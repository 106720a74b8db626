"""Reading a model file of any kind: a regular file of bounded size, or one ModelError naming
it (a FIFO must not block the reader, a symlink to ``/dev/zero`` must not fill the memory)."""

from __future__ import annotations

import os

from tvm_explorer.errors import ModelError

MAX_MODEL_BYTES = 2 * 1024**3
"""Largest model file read (a flatbuffer cannot address more; ONNX keeps big weights in
external data files)."""


def open_model_file(path: str, what: str, limit: int = MAX_MODEL_BYTES) -> int:
    """A descriptor of the model file at ``path``, or ModelError naming the file (``what``: "a
    TFLite model", …). Only a regular file of at most ``limit`` bytes is accepted, checked on
    the open descriptor (a FIFO named ``m.tflite`` must not block the reader, a symlink to
    ``/dev/zero`` must not fill the memory)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory, not {what}") from None
    except OSError as err:
        raise ModelError(f"{path}: cannot read ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ModelError(f"{path}: is a directory, not {what}")
        if not stat.S_ISREG(info.st_mode):
            raise ModelError(f"{path}: is not a regular file (a FIFO, a device or a socket), not {what}")
        if info.st_size > limit:
            raise ModelError(
                f"{path}: is {info.st_size / 2**20:.0f} MiB, more than the {limit // 2**20} MiB {what} may have here"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_model_bytes(path: str, what: str, limit: int = MAX_MODEL_BYTES) -> bytes:
    """A model file's bytes (at most ``limit`` of a regular file: ``open_model_file``), or
    ModelError naming the file."""
    fd = open_model_file(path, what, limit)
    try:
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 24, limit + 1 - total)):
            total += len(chunk)
            if total > limit:
                raise ModelError(f"{path}: grew past {limit // 2**20} MiB while read")
            chunks.append(chunk)
        data = b"".join(chunks)
    except OSError as err:
        raise ModelError(f"{path}: cannot read ({err.strerror})") from None
    finally:
        os.close(fd)
    if not data:
        raise ModelError(f"{path}: file is empty, not {what}")
    return data
