"""Planted faulty passes for ``reduce --pipeline``: each runs before TVM's own CPU pipeline and
misbehaves only when the module holds a given Relax operator, so the reducer must find the
operator that triggers it."""

from __future__ import annotations

import tvm
from tvm import relax


def _with(target, name: str, trigger: str, act):
    @tvm.transform.module_pass(opt_level=0, name=name)
    def planted(mod, _ctx):
        if trigger in mod.script():
            act()
        return mod

    return tvm.transform.Sequential([planted, relax.backend.cpu_generic.get_default_pipeline(target)])


def raise_on_sigmoid(target):
    def act():
        raise ValueError("PlantedCheck: sigmoid is not allowed here")

    return _with(target, "PlantedCheck", "R.sigmoid", act)


def crash_on_softmax(target):
    def act():
        import ctypes

        ctypes.string_at(0)  # SIGSEGV

    return _with(target, "PlantedCrash", "R.nn.softmax", act)


def hang_on_softmax(target):
    def act():
        import time

        time.sleep(3600)

    return _with(target, "PlantedHang", "R.nn.softmax", act)


def fail_once(target):
    """Fails in the first process that builds with it (a marker file named by the environment),
    passes in every later one: a flaky failure."""
    import os

    marker = os.environ["REDUCE_TEST_MARKER"]

    def act():
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        raise ValueError("PlantedOnce: failed this one time")

    return _with(target, "PlantedOnce", "R.", act)


def slow_raise_on_sigmoid(target):
    """raise_on_sigmoid, each compile 2 s slower: a reduce long enough to be interrupted."""
    import time

    time.sleep(2)
    return raise_on_sigmoid(target)
