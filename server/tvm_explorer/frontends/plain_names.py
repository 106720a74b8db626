"""Every name a model gives the IR that TVM compiles becomes a plain identifier.

TVM's importers name Relax variables after the model's tensors (a graph input keeps its TFLite
or ONNX tensor name, an ONNX ``dim_param`` names a symbolic size), and those names travel
through the passes into the parameter and variable names of the generated C, CUDA and LLVM.
TVM replaces a few characters on the way (``:``, ``-``, ``.``), not newlines or quotes: a
TFLite tensor named ``x\\n#include "..."`` put a preprocessor line into ``module.c``, which
``--profile`` and ``--numerics`` then compiled and ran. So right after the import, and before
any pass, every variable (function parameters, bindings, symbolic sizes) and every function
name that is not a plain ASCII identifier is renamed to one: each other character becomes
``_`` (what TVMScript's printer shows for it anyway), a leading digit or a C/C++/CUDA keyword
gets ``_``, a leading ``__`` (the compiler's own names) a ``v``, and a name longer than
``MAX_NAME`` is cut and given a hash of the original.

The original names stay where they belong: the model document, the layer table and
everything provenance shows come from the model file, not from the IR (and are displayed
escaped there: ``inert/text.py``). Spans are kept, so provenance is unchanged.
"""

from __future__ import annotations

import hashlib
import re

import tvm
from tvm import relax

from tvm_explorer.provenance.spans import handle, read_span, set_span

MAX_NAME = 256
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z", re.ASCII)
_OTHER = re.compile(r"[^A-Za-z0-9_]", re.ASCII)
# C11, C++ and CUDA words a generated identifier must not be
_RESERVED = frozenset(
    """
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local alignas alignof and and_eq asm bitand
    bitor bool catch char16_t char32_t char8_t class compl concept consteval constexpr constinit
    const_cast co_await co_return co_yield decltype delete dynamic_cast explicit export false
    friend mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
    public reinterpret_cast requires static_assert static_cast template this thread_local throw
    true try typeid typename using virtual wchar_t xor xor_eq __global__ __device__ __host__
    __shared__ __constant__ __restrict__ __syncthreads NULL
    """.split()
)


def plain(name: str) -> str:
    """``name`` if it is a plain identifier, else the identifier it becomes (see above)."""
    name = str(name)
    if len(name) <= MAX_NAME and _PLAIN.match(name) and name not in _RESERVED and not name.startswith("__"):
        return name
    out = _OTHER.sub("_", name) or "v"
    if out[0].isdigit():
        out = "_" + out
    if out.startswith("__"):  # reserved to the compiler in C and C++ (__builtin_…)
        out = "v" + out
    if out in _RESERVED:
        out += "_"
    if len(out) > MAX_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        out = f"{out[: MAX_NAME - 9]}_{digest}"
    return out


def _is_plain(name: str) -> bool:
    return plain(name) == name


@relax.expr_functor.mutator
class _Renamer(relax.PyExprMutator):
    """Relax variables and referenced functions renamed (same type, same span)."""

    def __init__(self, mod, functions: dict):
        super().__init__(mod)
        self.functions = functions

    def visit_var_def_(self, var):
        return var if _is_plain(var.name) else relax.Var(plain(var.name), var.ty, var.span)

    def visit_dataflow_var_def_(self, var):
        return var if _is_plain(var.name) else relax.DataflowVar(plain(var.name), var.ty, var.span)

    def visit_global_var_(self, gv):
        return self.functions.get(gv, gv)


def _symbolic_vars(func: relax.Function) -> list:
    seen = list(relax.analysis.defined_symbolic_vars(func)) + list(relax.analysis.free_symbolic_vars(func))
    return list({handle(v): v for v in seen}.values())


def _needs_renaming(func: relax.Function) -> bool:
    names = [p.name for p in func.params] + [v.name for v in relax.analysis.all_vars(func)]
    names += [v.name for v in _symbolic_vars(func)]
    return not all(_is_plain(n) for n in names)


def _restamp(func: relax.Function) -> None:
    """A binding the mutator rebuilt lost its span: it gets its variable's (the same one)."""
    body = func.body
    for block in getattr(body, "blocks", []):
        for binding in block.bindings:
            if read_span(binding) is None and read_span(binding.var) is not None:
                set_span(binding, binding.var.span)


def plain_names(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` with every variable and function name a plain identifier (the same module if
    all already are)."""
    renamed_globals = {gv: tvm.ir.GlobalVar(plain(gv.name_hint)) for gv in mod.functions if not _is_plain(gv.name_hint)}
    todo = {
        gv
        for gv, func in mod.functions.items()
        if isinstance(func, relax.Function) and (renamed_globals or _needs_renaming(func))
    }
    symbols = {
        gv
        for gv, func in mod.functions.items()
        if func.attrs is not None and "global_symbol" in func.attrs and not _is_plain(str(func.attrs["global_symbol"]))
    }
    if not (renamed_globals or todo or symbols):
        return mod
    renamer = _Renamer(mod, renamed_globals)
    functions = {}
    for gv, func in mod.functions.items():
        if gv in todo:
            sym = {v: tvm.tirx.Var(plain(v.name), v.ty) for v in _symbolic_vars(func) if not _is_plain(v.name)}
            if sym:
                func = func.bind_symbolic_vars(sym)
            func = renamer.visit_expr(func)
            _restamp(func)
        if gv in symbols:
            func = func.with_attr("global_symbol", plain(str(func.attrs["global_symbol"])))
        functions[renamed_globals.get(gv, gv)] = func
    return tvm.IRModule(functions, attrs=mod.attrs)
