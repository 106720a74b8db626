"""The runnable part of a reproducer script (copied into every script verbatim).

It needs ``tvm`` and ``numpy`` only. The script defines, before this code runs:
TARGET, KERNELS (name -> {"inputs": [(shape, dtype)...], "outputs": [...],
"shapes": [kernel-argument shapes]}), and the IRModules ``Kernels`` and ``Reference``.
"""

HARNESS = r'''
def make_target():
    """The bundle's target (CUDA: an sm_80 device with an LLVM host)."""
    if TARGET == "cuda":
        return tvm.target.Target({"kind": "cuda", "arch": "sm_80"}, host="llvm")
    return tvm.target.Target(TARGET)


def random_array(rng, shape, dtype):
    """Seeded inputs: floats in [-1, 1), integers over a small range (full range for 8 bits)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        low, high = (info.min, info.max) if dt.itemsize == 1 else (max(info.min, -64), 64)
        return rng.integers(low, high, size=shape, endpoint=True).astype(dt)
    raise SystemExit(f"cannot make random inputs of dtype {dtype}")


def reference_outputs(inputs):
    """Run every kernel's reference (the layer's Relax ops) with TVM's default llvm pipeline."""
    executable = tvm.compile(Reference, target="llvm")
    vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
    out = {}
    for name in KERNELS:
        got = vm[name](*[tvm.runtime.tensor(a) for a in inputs[name]])
        got = list(got) if isinstance(got, (list, tuple, tvm.ir.Array)) else [got]
        out[name] = [g.numpy() for g in got]
    return out


CONSTANT = getattr(tvm.relax, "Constant", None) or tvm.ir.Constant  # tvm.ir since TVM 0.27


def _bindings(func):
    """Variable -> value of every binding of a Relax function."""
    body = func.body
    return {b.var: b.value for block in getattr(body, "blocks", ()) for b in block.bindings}


def quantization_steps(name):
    """Per output of kernel ``name``'s reference: the quantization step (scale array and axis)
    when the output is a dequantized quantized value, else None (a plain float or integer)."""
    func = Reference[name]
    values = _bindings(func)

    def resolve(expr):
        while isinstance(expr, tvm.relax.Var) and expr in values:
            expr = values[expr]
        return expr

    out = resolve(func.body.body)
    outs = list(out.fields) if isinstance(out, tvm.relax.Tuple) else [out]
    steps = []
    for expr in outs:
        expr = resolve(expr)
        step = None
        if (isinstance(expr, tvm.relax.Call) and getattr(expr.op, "name", "") == "relax.dequantize"
                and isinstance(expr.args[1], CONSTANT)):
            scale = getattr(expr.args[1], "data", None)
            scale = getattr(expr.args[1], "value", None) if scale is None else scale
            if hasattr(scale, "numpy"):
                step = (np.asarray(scale.numpy(), dtype="float64").reshape(-1), int(expr.attrs.axis))
        steps.append(step)
    return steps


def close_enough(got, want, step=None):
    """Dequantized outputs: within one quantization step (rounding: another float summation
    order may round a value the other way); other floats: relative 1e-3 of the output's
    largest magnitude; integers (quantized outputs): off by at most one step."""
    if got.shape != want.shape:
        return False, f"shape {got.shape} instead of {want.shape}"
    if np.dtype(want.dtype).kind == "f":
        if not np.array_equal(np.isfinite(got), np.isfinite(want)):
            return False, "non-finite values where the reference has finite ones (or the reverse)"
        finite = np.isfinite(want)
        diff = np.abs(got.astype("float64") - want.astype("float64"))
        diff = np.where(finite, diff, 0.0)
        worst = float(np.max(diff)) if diff.size else 0.0
        if step is not None:
            scale, axis = step
            if scale.size > 1 and want.ndim:
                shape = [1] * want.ndim
                shape[axis] = -1
                scale = scale.reshape(shape)
            steps = float(np.max(diff / np.maximum(scale, 1e-30))) if diff.size else 0.0
            return steps <= 1.001, (f"max abs diff {worst:.3g} = {steps:.3g} quantization steps "
                                    "(tolerance 1 step)")
        magnitude = float(np.max(np.abs(np.where(finite, want, 0.0)))) if want.size else 0.0
        tolerance = 1e-3 * max(magnitude, 1e-6)
        return worst <= tolerance, f"max abs diff {worst:.3g} (tolerance {tolerance:.3g}, 1e-3 of the largest magnitude)"
    diff = np.abs(got.astype("int64") - want.astype("int64"))
    worst = int(diff.max()) if diff.size else 0
    return worst <= 1, f"max abs diff {worst} steps (tolerance 1)"


def time_per_call(func, args, dev, budget=0.2):
    """Seconds per call: the best of 3 runs of as many calls as fit in ``budget`` seconds."""
    func(*args)
    dev.sync()
    start = time.perf_counter()
    func(*args)
    dev.sync()
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, min(1000, int(budget / 3 / once)))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(number):
            func(*args)
        dev.sync()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def build_kernels(target):
    """Build the kernels as the bundle's compile did (opt level 3); C is compiled the way
    tvm-explorer compiles it (export_c_library, above)."""
    with tvm.transform.PassContext(opt_level=3):
        executable = tvm.compile(Kernels, target=target)
    if TARGET != "c":
        return executable
    import tempfile

    lib = os.path.join(tempfile.mkdtemp(prefix="repro-"), "kernels.so")
    export_c_library(executable, lib)
    return tvm.runtime.load_module(lib)


def cuda_source_only(target):
    """No GPU here: build the CUDA source (no nvcc needed) and show where it is."""
    def no_nvcc(code, target=None):
        return bytearray(b"cuda source only; no GPU on this machine")

    tvm.register_global_func("tvm_callback_cuda_compile", no_nvcc, override=True)
    executable = build_kernels(target)
    modules, source = [executable.mod], ""
    while modules and not source:
        module = modules.pop(0)
        modules += list(module.imports)
        if module.kind == "cuda":
            source = module.inspect_source("cuda")
    print(f"no GPU found: built the CUDA source only ({len(source.splitlines())} lines); "
          "kernels not run, nothing checked")
    for name in KERNELS:
        print(f"  {name}_kernel: {'present' if name + '_kernel' in source else 'MISSING'}")
    return 0 if all(name + "_kernel" in source for name in KERNELS) else 1


def main():
    target = make_target()
    dev = tvm.cuda(0) if TARGET == "cuda" else tvm.cpu(0)
    if TARGET == "cuda" and not dev.exist:
        return cuda_source_only(target)
    rng = np.random.default_rng(SEED)
    inputs = {name: [random_array(rng, s, d) for s, d in k["inputs"]] for name, k in KERNELS.items()}
    expected = reference_outputs(inputs)
    executable = build_kernels(target)
    failures = 0
    for name, k in KERNELS.items():
        args = [a.reshape(s) for a, s in zip(inputs[name], k["shapes"])]
        outs = [np.zeros(s, dtype=d) for s, d in k["outputs"]]
        outs = [o.reshape(s) for o, s in zip(outs, k["shapes"][len(args):])]
        tensors = [tvm.runtime.tensor(a, dev) for a in args + outs]
        func = executable[name]
        func(*tensors)
        dev.sync()
        got = [t.numpy().reshape(s) for t, (s, _) in zip(tensors[len(args):], k["outputs"])]
        want = expected[name]
        steps = quantization_steps(name)
        verdicts = [close_enough(g, w, st) for g, w, st in zip(got, want, steps + [None] * len(want))]
        ok = len(got) == len(want) and all(v for v, _ in verdicts)
        seconds = time_per_call(func, tensors, dev)
        status = "OK" if ok else "MISMATCH"
        detail = "; ".join(d for _, d in verdicts)
        print(f"{name}: {status} against the reference ({detail}); {seconds * 1e6:.1f} us per call on {TARGET}")
        failures += not ok
    if failures:
        print(f"{failures} kernel(s) do not match their reference")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
'''
