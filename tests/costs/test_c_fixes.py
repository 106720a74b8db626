"""TVM's C spells infinity and NaN as C does not (``inff``, ``inf``, ``nanf``, ``nan``):
compiled with ``capture/c_source.export_c_library`` the kernels build with the system compiler
and compute the same values as the llvm build."""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from tvm_explorer.capture.c_source import c_fixes_for, export_c_library


def _module(dtype: str):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4,), dtype))
    with bb.function("main", [x]):
        with bb.dataflow():
            masked = bb.emit(relax.op.equal(x, relax.const(-np.inf, dtype)))
            plus_nan = bb.emit(relax.op.add(x, relax.const(np.nan, dtype)))
            out = bb.emit_output(relax.op.where(masked, relax.const(np.inf, dtype), plus_nan))
        bb.emit_func_output(out)
    return bb.get()


def test_float32_and_float64_constants_compile_and_match_llvm(tmp_path):
    x = np.array([-np.inf, 1.0, -np.inf, 2.0])
    for dtype, spelled in (("float32", ["inff", "nanf"]), ("float64", ["inf", "nan"])):
        mod = _module(dtype)
        ex = tvm.compile(mod, target="c")
        lib = tmp_path / f"{dtype}.so"
        fixes = export_c_library(ex, str(lib))
        assert sorted(f.split()[1] for f in fixes) == sorted(spelled), fixes
        got = relax.VirtualMachine(tvm.runtime.load_module(str(lib)), tvm.cpu())["main"](
            tvm.runtime.tensor(x.astype(dtype))
        )
        want = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())["main"](
            tvm.runtime.tensor(x.astype(dtype))
        )
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert np.isinf(got.numpy()[0]) and np.isnan(got.numpy()[1])


def test_only_bare_uses_are_defined():
    assert c_fixes_for("y[i] = (x[i] == -inff);") == ["#define inff (__builtin_inff())"]
    assert c_fixes_for("y[i] = nan(s); z = s.inf; w = infinity;") == []  # calls, members, longer names
    assert c_fixes_for("float inf = 1.0f; y = inf;") == []  # the source's own variable
