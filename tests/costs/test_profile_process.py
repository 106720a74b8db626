"""The profiling process: a model that crashes or fails while running costs the profile
only, with one line saying why."""

from __future__ import annotations

import numpy as np
import pytest

from tvm_explorer.costs import profile


def test_a_crash_while_running_is_reported_not_inherited(monkeypatch):
    def crash(*_args):
        import ctypes

        ctypes.string_at(0)  # a segmentation fault, as a broken kernel would cause

    monkeypatch.setattr(profile, "_measure", crash)
    with pytest.raises(profile.ProfileFailed, match=r"^the model crashed while running \(SIGSEGV\)$"):
        profile.measure(object(), "llvm", [np.zeros(1, np.float32)], 1)


def test_an_error_while_running_gives_its_first_line(monkeypatch):
    def fail(*_args):
        raise RuntimeError("InternalError: Check failed: (x) is false\n  stack frame 1\n  stack frame 2")

    monkeypatch.setattr(profile, "_measure", fail)
    with pytest.raises(profile.ProfileFailed) as err:
        profile.measure(object(), "llvm", [], 1)
    assert str(err.value) == "the model failed while running: InternalError: Check failed: (x) is false"


def test_a_profile_past_its_time_is_given_up(monkeypatch):
    import time

    monkeypatch.setattr(profile, "_measure", lambda *_a: time.sleep(30))
    started = time.monotonic()
    with pytest.raises(profile.ProfileFailed, match="did not finish within 0.5 s"):
        profile.measure(object(), "llvm", [], 1, timeout=0.5)
    assert time.monotonic() - started < 10


def test_first_line_prefers_the_compiler_error():
    text = "Compilation error:\nIn file included from x.c:1:\nlib0.c:12:3: error: unknown type name 'half'\n"
    assert profile.first_line(text) == "lib0.c:12:3: error: unknown type name 'half'"
    assert profile.first_line("warning: a\nlib0.c:3: error: bad\n") == "lib0.c:3: error: bad"
