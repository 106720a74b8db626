"""MetaSchedule's tensor intrinsics, registered without TVMScript's slow stack walk.

MetaSchedule imports ``tvm.s_tir.tensor_intrin`` when it makes a tune context and again in
every builder worker (``default_build``; the builder starts a new worker for every batch).
That parses about 250 TVMScript functions, and each parse calls ``inspect.stack()``, which
looks up the source of every frame on the stack: the frames of the import machinery have no
file, and each one makes ``inspect.getmodule`` scan all of ``sys.modules``. That was 22 s of
every tuning run here (90 s in a worker that has PyTorch loaded). ``preload`` does the same
import with a stack that gives those frames no source lines — TVMScript reads the source
line of one frame only, its caller's, which has a file — so the intrinsics registered are the
same, in about 9 s.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterator
from types import FrameType

INTRINSICS = "tvm.s_tir.tensor_intrin"


def preload() -> None:
    """Import MetaSchedule's tensor intrinsics now, quickly (also a builder worker's
    ``initializer``)."""
    if INTRINSICS in sys.modules:
        return
    with _stack_without_fileless_sources():
        import tvm.s_tir.tensor_intrin  # noqa: F401


def _stack(context: int = 1) -> list[inspect.FrameInfo]:
    frames = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<"):  # frozen or generated code: no source to read
            info = inspect.Traceback(filename, frame.f_lineno, frame.f_code.co_name, None, None)
        else:
            info = inspect.getframeinfo(frame, context)
        if sys.version_info >= (3, 11):
            frames.append(inspect.FrameInfo(frame, *info, positions=getattr(info, "positions", None)))
        else:
            frames.append(inspect.FrameInfo(frame, *info))
        frame = frame.f_back
    return frames


@contextlib.contextmanager
def _stack_without_fileless_sources() -> Iterator[None]:
    stack = inspect.stack
    inspect.stack = _stack
    try:
        yield
    finally:
        inspect.stack = stack
