"""What a code generator could not handle, found in the final TIR when it stops without
naming a kernel: TVM's LLVM code generator stops on arithmetic or comparisons of booleans
(``Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat))`` in ``CreateAdd``, ``fcmp`` on
``i1``), which its C code generator compiles."""

from __future__ import annotations

from tvm import tirx

from tvm_explorer.capture.node_collect import collect

_BOOL_SIGNS = ("MatchesCode(DLDataTypeCode::kDLFloat)", "fcmp oeq i1", "Invalid operand types for FCmp")
_ARITH = {
    name: getattr(tirx, cls)
    for name, cls in (
        ("adds", "Add"),
        ("subtracts", "Sub"),
        ("multiplies", "Mul"),
        ("compares", "EQ"),
        ("compares", "NE"),
        ("compares", "LT"),
        ("compares", "LE"),
        ("compares", "GT"),
        ("compares", "GE"),
    )
    if hasattr(tirx, cls)
}


def _bool(expr) -> bool:
    return str(getattr(expr, "ty", "")) == "bool"


def bool_arithmetic(message: str, final_tir) -> tuple[str, str] | None:
    """``(kernel, verb)`` of the first kernel that does arithmetic on booleans, when
    ``message`` is the LLVM code generator's failure on it; else None."""
    if final_tir is None or not any(sign in message for sign in _BOOL_SIGNS):
        return None
    types = tuple(set(_ARITH.values()))
    for gv, func in final_tir.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        for node in collect(func.body, types):
            a, b = getattr(node, "a", None), getattr(node, "b", None)
            if (isinstance(node, tirx.Add | tirx.Sub | tirx.Mul) and _bool(node)) or (_bool(a) and _bool(b)):
                verb = next(v for v, cls in _ARITH.items() if isinstance(node, cls))
                return gv.name_hint, verb
    return None
