"""tuning/intrinsics.py: the stack TVMScript sees while MetaSchedule's tensor intrinsics are
registered is ``inspect.stack()``'s, but for the source lines of frames that have no file."""

from __future__ import annotations

import inspect

from tvm_explorer.tuning import intrinsics


def _both():
    return inspect.stack(), intrinsics._stack()


def test_the_stack_is_inspects_but_for_frames_without_a_file():
    expected, got = eval("_both()")  # a frame without a file ("<string>") on the stack
    assert len(got) == len(expected)
    for want, have in zip(expected[1:], got[1:]):  # [0] is the line that called each one
        assert (have.frame, have.filename, have.lineno, have.function) == (
            want.frame,
            want.filename,
            want.lineno,
            want.function,
        )
        if want.filename.startswith("<"):
            assert have.code_context is None
        else:
            assert (have.code_context, have.index) == (want.code_context, want.index)
    assert any(f.filename == "<string>" for f in got)


def test_preload_registers_the_intrinsics_metaschedule_asks_for():
    intrinsics.preload()
    from tvm.s_tir import TensorIntrin
    from tvm.s_tir.tensor_intrin.x86 import VNNI_DOT_16x4_INTRIN

    assert TensorIntrin.get(VNNI_DOT_16x4_INTRIN) is not None
    assert inspect.stack is not intrinsics._stack  # put back
