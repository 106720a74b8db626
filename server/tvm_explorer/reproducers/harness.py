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


def close_enough(got, want):
    """Floats: relative 1e-3 of the output's scale; integers: off by at most one (rounding)."""
    if got.shape != want.shape:
        return False, f"shape {got.shape} instead of {want.shape}"
    if np.dtype(want.dtype).kind == "f":
        diff = np.abs(got.astype("float64") - want.astype("float64"))
        scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
        worst = float(np.nanmax(diff)) if diff.size else 0.0
        ok = bool(np.all(np.isfinite(got) == np.isfinite(want))) and worst <= 1e-3 * scale
        return ok, f"max abs diff {worst:.3g} (tolerance {1e-3 * scale:.3g})"
    diff = np.abs(got.astype("int64") - want.astype("int64"))
    worst = int(diff.max()) if diff.size else 0
    return worst <= 1, f"max abs diff {worst} (tolerance 1)"


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
    """Build the kernels as the bundle's compile did (opt level 3)."""
    with tvm.transform.PassContext(opt_level=3):
        return tvm.compile(Kernels, target=target)


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
        verdicts = [close_enough(g, w) for g, w in zip(got, want)]
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
