"""What ``reduce`` writes beside the small model: ``SMALL.report.md`` and ``SMALL.repro.py``
(stock TVM, numpy and the model kind's own reader, no ``tvm_explorer``: what a user pastes
into an upstream issue; its header lists what it imports)."""

from __future__ import annotations

import os

from tvm_explorer.capture.c_source import script_source
from tvm_explorer.inert import markdown as md
from tvm_explorer.inert.python import comment


def _tvm_version() -> str:
    try:
        from importlib.metadata import version

        return version("apache-tvm")
    except Exception:  # noqa: BLE001 - TVM built from source has no distribution
        import tvm

        return tvm.__version__


def report(
    *,
    model,
    small,
    ops,
    kept,
    original,
    reduced,
    probes,
    seconds,
    jobs,
    minimal,
    why,
    partial,
    target,
    pipeline,
    unit,
    reference=None,
    all_ops=None,
) -> str:
    from tvm_explorer.version import __version__

    by_index = {op.index: op for op in ops}
    title = "Partial reduction" if partial else "Reduced"
    lines = [
        f"# {title}: {md.code(os.path.basename(model))} → {md.code(os.path.basename(small))}",
        "",
        f"{len(ops)} → {len(kept)} {unit}s, {probes} probes in {seconds:.1f} s ({jobs} at a time).",
        "",
    ]
    if all_ops is not None and tuple(all_ops) != (len(ops), len(kept)):
        lines += [
            f"Over all subgraphs (loop and branch bodies included): {all_ops[0]} → {all_ops[1]} {unit}s; "
            "subgraphs no kept operator runs are dropped.",
            "",
        ]
    if minimal:
        lines.append(f"**1-minimal**: removing any single remaining {unit} makes the failure go away.")
    else:
        lines.append(f"**Not shown 1-minimal**: {why}.")
    lines += [
        "",
        "## The failure",
        "",
        f"Original model ({original.kind}, stage {original.stage}"
        + (f", pass {original.pass_name}" if original.pass_name else "")
        + "):",
        "",
        md.block(original.describe()),
        "",
        "Reduced model:",
        "",
        md.block(reduced.describe() if reduced is not None else "(not probed)"),
        "",
        f"## Kept {unit}s",
        "",
        f"| {unit} in the original | kind | name |",
        "|---|---|---|",
    ]
    for i in kept:
        op = by_index[i]
        lines.append(f"| {i} | {md.cell(op.opcode)} | {md.cell(op.name or '(no name)')} |")
    lines += [
        "",
        "## Environment",
        "",
        f"- TVM {_tvm_version()}",
        f"- target {md.code(target)}" + (f", pipeline {md.code(pipeline)}" if pipeline else ""),
        f"- tvm-explorer {__version__} (`tvm-explorer reduce`)",
    ]
    if reference:
        lines.append(f"- reference: {md.code(os.path.basename(reference))} (`--reference`, cut the same way)")
    lines += [
        "",
        "## Reproduce",
        "",
        md.block(f"python {os.path.splitext(os.path.basename(small))[0]}.repro.py"),
        "",
    ]
    return "\n".join(lines)


def _module_file(module: str) -> str | None:
    """The file of ``--pipeline``'s MODULE, found as the probes found it (the current
    directory, then PYTHONPATH), without running it; None if it is not a plain file."""
    import importlib.util
    import sys

    added = os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    finally:
        if added:
            sys.path.remove(os.getcwd())
    origin = getattr(spec, "origin", None) if spec is not None else None
    return origin if origin and origin.endswith(".py") else None


_TARGETS = {
    "c": 'tvm.target.Target("c")',
    "llvm": 'tvm.target.Target("llvm")',
    "cuda": 'tvm.target.Target({"kind": "cuda", "arch": "sm_80", "max_shared_memory_per_block": 49152}, host="llvm")',
}


def imported_packages(source: str) -> list[str]:
    """The top-level modules a script imports that are not Python's own, in the order it
    first imports them: what a user must have installed to run it."""
    import ast
    import sys

    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, name.split(".")[0]) for name in names]
    ordered: list[str] = []
    for _, top in sorted(found):
        if top not in sys.stdlib_module_names and top not in ordered:
            ordered.append(top)
    return ordered


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def repro(*, small, stock_import, original, target, pipeline) -> str:
    """A script that fails the way ``original`` did, on the small model, with stock TVM."""
    body = _repro_body(small=small, stock_import=stock_import, original=original, target=target, pipeline=pipeline)
    name = os.path.basename(small)
    summary = original.describe()
    if len(summary) > 600:
        summary = summary[:600] + " …"
    needs = _listed(imported_packages(body))
    # The failure's words come from the model and from TVM: one inert comment line each.
    header = [
        "#!/usr/bin/env python3",
        f"# Reproduces a TVM {comment(_tvm_version())} failure on {comment(name)} (found by tvm-explorer reduce):",
        "#",
        *(f"#     {comment(line)}" for line in summary.splitlines() or [""]),
        "#",
        f"# Run: python {comment(os.path.splitext(name)[0])}.repro.py  (the model beside it)",
        f"# Imports {comment(needs)} (and Python's own modules); nothing of tvm-explorer",
    ]
    return "\n".join(header) + "\n" + body


def _repro_body(*, small, stock_import, original, target, pipeline) -> str:
    name = os.path.basename(small)
    parts = [
        "",
        "import os",
        "import sys",
        "",
        "import numpy  # noqa: F401",
        "import tvm",
        "from tvm import relax",
        "",
        f"path = os.path.join(os.path.dirname(os.path.abspath(__file__)), {name!r})",
        stock_import.rstrip(),
    ]
    if original.stage != "import":
        parts += ["", f"target = {_TARGETS.get(target, repr(target))}"]
        if target == "cuda":
            parts += [
                "import tvm_ffi",
                "",
                "# source only: no GPU or nvcc needed",
                'tvm_ffi.register_global_func("tvm_callback_cuda_compile", lambda code, *_: bytearray(b"x"), '
                "override=True)",
                "pipeline = relax.backend.cuda.get_default_pipeline(target)",
            ]
        else:
            parts.append("pipeline = relax.backend.cpu_generic.get_default_pipeline(target)")
        if pipeline:
            module, _, func = pipeline.rpartition(":")
            found = module if module.endswith(".py") else _module_file(module)
            if found:
                where = os.path.abspath(found)
                parts += [
                    "import importlib.util",
                    "",
                    f"_spec = importlib.util.spec_from_file_location('user_pipeline', {where!r})",
                    "_user = importlib.util.module_from_spec(_spec)",
                    "_spec.loader.exec_module(_user)",
                    f"pipeline = _user.{func}(target)  # --pipeline {comment(pipeline)}",
                ]
            else:
                parts += [
                    f"sys.path.insert(0, {os.getcwd()!r})  # where --pipeline's module was found",
                    f"from {module} import {func.split('.')[0]} as _user_pipeline",
                    "",
                    f"pipeline = _user_pipeline{func[len(func.split('.')[0]) :]}(target)  # --pipeline {comment(pipeline)}",
                ]
        if original.kind in ("culprit", "diverge"):
            if target == "c":
                parts += ["import re", "", "", *script_source().splitlines(), ""]
            parts += _DIVERGE.splitlines()
        else:
            parts += [
                "with tvm.transform.PassContext(opt_level=3):",
                "    ex = tvm.compile(mod, target, relax_pipeline=pipeline)",
            ]
    parts += [
        "",
        'print("not reproduced: TVM did not fail on", path)',
        "sys.exit(0)",
        "",
    ]
    return "\n".join(parts)


_DIVERGE = """
# The baseline is what bisect compares with: the imported module with TVM's minimal lowering.
baseline = tvm.compile(mod, target, relax_pipeline=relax.pipeline.default_build_pipeline())
with tvm.transform.PassContext(opt_level=3):
    optimized = tvm.compile(mod, target, relax_pipeline=pipeline)


def run(ex, inputs):
    if target.kind.name == "c":  # C source: compile it into a library first
        import tempfile

        lib = os.path.join(tempfile.mkdtemp(), "model.so")
        export_c_library(ex, lib)  # TVM's C with the spellings C lacks defined (above)
        ex = tvm.runtime.load_module(lib)
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.runtime.tensor(x) for x in inputs])
    return flat(out)


def flat(value):
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [a for item in value for a in flat(item)]


rng = numpy.random.default_rng(0)
inputs = []
for param in mod["main"].params:
    info = param.ty  # TVM 0.27: a Var's type (struct_info before)
    shape = [int(d) for d in info.shape.values]
    dtype = str(info.dtype)
    if "float" in dtype:
        inputs.append(rng.standard_normal(shape).astype(dtype))
    else:
        inputs.append(rng.integers(0, 4, shape).astype(dtype))
worst = max(
    float(numpy.max(numpy.abs(a.astype("float64") - b.astype("float64"))))
    for a, b in zip(run(baseline, inputs), run(optimized, inputs))
)
if worst > 1e-3:
    raise AssertionError(f"results diverge: max abs error {worst:g} between the minimal lowering and the pipeline")"""
