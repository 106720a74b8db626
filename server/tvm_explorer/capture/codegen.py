"""Line-level provenance for generated C and CUDA source.

TVM's code generators print no comments and no ``#line``, but they keep buffer names and
loop variables (adding suffixes such as ``_1`` or ``_ptr``). We walk the final TIR of each
function (its stores and loops, in order) and align it with the generated lines of the same
function: a store line takes the unit id of the TIR store it came from, so a C line and the
TIR statement share a key (``store:<id>``); a loop takes the union of the stores inside it;
other lines in a loop body serve the loop; every generated function maps to its PrimFunc.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tvm import tirx

from tvm_explorer.bundle.index import Range
from tvm_explorer.capture.node_collect import walk
from tvm_explorer.capture.tracker import ProvenanceTracker
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import handle, read_span

_FUNC = re.compile(r"^[A-Za-z_].*?\b([A-Za-z_]\w*)\(([^()]*)\)\s*\{\s*$")
_FOR = re.compile(r"^\s*for \((?:[\w\s\*]+?)\b([A-Za-z_]\w*) = ")
_STORE = re.compile(
    r"^\s*(?:\*\(\([^()]*\)\(?([A-Za-z_]\w*)|\(\([^()]*\)([A-Za-z_]\w*)\)\[|\*\([^()]*\*\)\(([A-Za-z_]\w*)|([A-Za-z_]\w*)\[)"
    r"[^;]*?\]?\)?\s*=(?!=)"
)
_SUFFIX = re.compile(r"^(.*?)(?:_ptr|_\d+)+$")


@dataclass
class TirEvent:
    """A store or loop of the final TIR, in the order the code generator emits them."""

    kind: str  # "store" | "loop"
    name: str  # buffer name or loop variable name
    unit: int
    origin_set: int
    key: str


def loop_keys(func, fname: str) -> dict[int, str]:
    """Key of every loop of a PrimFunc, by loop node identity."""
    loops: list = []
    walk(func.body, (tirx.For,), loops.append, "pre")
    return loop_keys_of(loops, fname)


def loop_keys_of(nodes: list, fname: str) -> dict[int, str]:
    """Key of every loop among ``nodes`` (a PrimFunc's nodes in walk pre-order; other kinds
    are skipped), by loop node identity."""
    keys: dict[int, str] = {}
    seen: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, tirx.For):
            name = node.loop_var.name
            k = seen.get(name, 0)
            seen[name] = k + 1
            keys[handle(node)] = loop_key(fname, name, k)
    return keys


def _events(func, fname: str) -> list[TirEvent]:
    events: list[TirEvent] = []
    keys = loop_keys(func, fname)

    def visit(node):
        if isinstance(node, tirx.For):
            events.append(TirEvent("loop", node.loop_var.name, 0, 0, keys[handle(node)]))
        elif isinstance(node, tirx.BufferStore):
            got = read_span(node) or (0, 0)
            events.append(TirEvent("store", node.buffer.name, got[1], got[0], f"store:{got[1]}"))

    walk(func.body, (tirx.For, tirx.BufferStore), visit, "pre")
    return events


def loop_key(fname: str, var: str, occurrence: int) -> str:
    """Key of a loop: function, loop variable, and which occurrence of that name it is."""
    return f"loop:{fname}:{var}#{occurrence}"


def _base(name: str) -> str:
    m = _SUFFIX.match(name)
    return m.group(1) if m else name


def _store_target(line: str) -> str | None:
    m = _STORE.match(line)
    if not m:
        return None
    return next(g for g in m.groups() if g)


@dataclass
class GeneratedFunction:
    """A function found in generated source: name and 0-based line span (inclusive)."""

    name: str
    first: int
    last: int


def find_functions(lines: list[str]) -> list[GeneratedFunction]:
    """Function definitions at column 0 whose bodies end at a ``}`` at column 0."""
    out = []
    i = 0
    while i < len(lines):
        m = _FUNC.match(lines[i])
        if m and not lines[i].rstrip().endswith(";"):
            j = i + 1
            while j < len(lines) and lines[j] != "}":
                j += 1
            out.append(GeneratedFunction(m.group(1), i, min(j, len(lines) - 1)))
            i = j
        i += 1
    return out


def _primfunc_for(name: str, by_symbol: dict[str, tuple[str, object]]):
    if name in by_symbol:
        return by_symbol[name]
    for prefix in ("__tvm_ffi_", "__tvm_"):
        if name.startswith(prefix) and name[len(prefix) :] in by_symbol:
            return by_symbol[name[len(prefix) :]]
    return None


@dataclass
class CodeCoverage:
    """Computing lines (stores and loops) inside function bodies, and how many have origins."""

    units: int = 0
    attributed: int = 0


def _lines(text: str) -> tuple[list[str], list[int]]:
    """The lines of ``text`` and the offset where each starts."""
    lines = text.split("\n")
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    return lines, starts


def index_source(
    text: str, final_tir, tracker: ProvenanceTracker, origins: OriginTable, trace_link=None
) -> tuple[list[Range], CodeCoverage]:
    """Ranges for every generated function, loop and store line of a C/CUDA source."""
    by_symbol: dict[str, tuple[str, object]] = {}
    for gv, func in final_tir.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        by_symbol[gv.name_hint] = (gv.name_hint, func)
        symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
        if symbol:
            by_symbol[str(symbol)] = (gv.name_hint, func)
    lines, starts = _lines(text)
    ranges: list[Range] = []
    cov = CodeCoverage()

    def rng(first: int, last: int) -> tuple[int, int]:
        line = lines[first]
        return starts[first] + len(line) - len(line.lstrip()), starts[last] + len(lines[last])

    for gf in find_functions(lines):
        found = _primfunc_for(gf.name, by_symbol)
        if found is None:
            continue
        fname, func = found
        fset = tracker.function_set(fname)
        s, e = rng(gf.first, gf.last)
        ranges.append(Range(s, e, fset, "primfunc", f"prim:{fname}", trace_link(fname) if trace_link else None))
        ranges.extend(_index_body(lines, gf, _events(func, fname), fname, fset, origins, rng, cov, trace_link))
    return ranges, cov


def _index_body(lines, gf, events, fname, fset, origins, rng, cov, trace_link) -> list[Range]:
    stores = [e for e in events if e.kind == "store"]
    loops = [e for e in events if e.kind == "loop"]
    out: list[Range] = []
    stack: list[tuple[int, int, list[int], str, str | None]] = []  # first, depth, sets, key, link
    depth = 0
    s_cursor = l_cursor = 0

    def close(line_no: int) -> None:
        first, _d, sets, key, link = stack.pop()
        sid = origins.union(sets)
        s, e = rng(first, line_no)
        out.append(Range(s, e, sid, "loop", key, link))
        cov.units += 1
        cov.attributed += bool(sid)
        if stack:
            stack[-1][2].append(sid)

    for i in range(gf.first + 1, gf.last):
        line = lines[i]
        stripped = line.strip()
        m_for = _FOR.match(line)
        if m_for:
            var = m_for.group(1)
            base = var if any(ev.name == var for ev in loops) else _base(var)
            key = next((ev.key for ev in loops[l_cursor:] if ev.name == base), None)
            if key is None:
                key = f"loop:{fname}:c{i}"
            else:
                l_cursor = next(j for j in range(l_cursor, len(loops)) if loops[j].key == key) + 1
            link = trace_link(fname, var) if trace_link else None
            stack.append((i, depth, [], key, link))
        else:
            target = _store_target(line)
            if target is not None and not stripped.startswith(
                (
                    "int",
                    "float",
                    "void",
                    "uint",
                    "half",
                    "double",
                    "bool",
                    "char",
                    "signed",
                    "unsigned",
                    "long",
                    "short",
                )
            ):
                match = None
                for j in range(s_cursor, len(stores)):
                    if stores[j].name in (target, _base(target)):
                        match = j
                        break
                if match is not None:
                    ev = stores[match]
                    s_cursor = match + 1
                    sid, key = ev.origin_set, ev.key
                else:
                    # A store the TIR walk cannot place serves the loop it sits in.
                    around = origins.union(stack[-1][2]) if stack else 0
                    sid = origins.as_parts(around or fset)
                    key = f"line:{fname}:{i}"
                s, e = rng(i, i)
                out.append(Range(s, e, sid, "stmt", key))
                cov.units += 1
                cov.attributed += bool(sid)
                for frame in stack:
                    frame[2].append(sid)
        depth += line.count("{") - line.count("}")
        while stack and depth <= stack[-1][1]:
            close(i)
    while stack:
        close(gf.last - 1)
    return out


_LL_DEFINE = re.compile(r"^define\b.*?@\"?([\w.$]+)\"?\(")
_LL_CALLEE = re.compile(r"@\"?([\w.$]+)\"?")
_LL_DBG = re.compile(r"!dbg !(\d+)\b")
_LL_LOCATION = re.compile(r"^!(\d+) = (?:distinct )?!DILocation\(line: (\d+)(?:, column: (\d+))?")
_LL_COMPUTE = "_compute_"


@dataclass
class LlvmFunction:
    """A function defined in LLVM IR: its name, the PrimFunc it was generated from (None for
    runtime helpers), and its 0-based line span (inclusive)."""

    name: str
    primfunc: str | None
    first: int
    last: int


def llvm_functions(lines: list[str], prim_names: dict[str, str]) -> list[LlvmFunction]:
    """Every ``define … {`` … ``}`` of LLVM IR, each with its PrimFunc (``prim_names``: symbol
    or PrimFunc name -> PrimFunc name).

    TVM's LLVM code generator puts a kernel in several functions: the packed entry
    (``__tvm_ffi_<PrimFunc>``), its body (``<PrimFunc>_compute_``) and one
    ``__tvm_parallel_lambda[.N]`` per parallel loop; helpers (``__tvm_set_raised_N``) are
    shared. A function not named after a PrimFunc belongs to the PrimFunc of the functions
    that call it, when they all have the same one.
    """
    found: list[LlvmFunction] = []
    i = 0
    while i < len(lines):
        m = _LL_DEFINE.match(lines[i])
        if m and lines[i].rstrip().endswith("{"):
            j = i + 1
            while j < len(lines) and lines[j] != "}":
                j += 1
            name = m.group(1)
            base = name[: -len(_LL_COMPUTE)] if name.endswith(_LL_COMPUTE) else name
            got = _primfunc_for(base, {k: (v, None) for k, v in prim_names.items()})
            found.append(LlvmFunction(name, got[0] if got else None, i, min(j, len(lines) - 1)))
            i = j
        i += 1
    by_name = {f.name: f for f in found}
    callers: dict[str, set[str]] = {}
    for f in found:
        for k in range(f.first + 1, f.last):
            for callee in _LL_CALLEE.findall(lines[k]):
                if callee in by_name and callee != f.name:
                    callers.setdefault(callee, set()).add(f.name)
    changed = True
    while changed:  # a lambda called from a compute function called from the entry
        changed = False
        for f in found:
            if f.primfunc is None and f.name in callers:
                owners = {by_name[c].primfunc for c in callers[f.name]}
                if len(owners) == 1 and None not in owners:
                    f.primfunc = owners.pop()
                    changed = True
    return found


def index_llvm(text: str, final_tir, tracker: ProvenanceTracker) -> list[Range]:
    """Ranges of LLVM IR host code: every function generated from a PrimFunc (entry,
    ``_compute_`` body, parallel lambdas) maps to it; an instruction whose ``!dbg`` location
    is a TIR store's span (TVM's LLVM code generator turns a statement's span into its
    DILocation: line = our origin set, column = the store's unit) gets that store's origins
    and key, as a C line does."""
    prim_names: dict[str, str] = {}
    known: set[tuple[int, int]] = set()  # (origin set, unit) of every stamped final TIR store
    for gv, func in final_tir.functions.items():
        if isinstance(func, tirx.PrimFunc):
            prim_names[gv.name_hint] = gv.name_hint
            symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
            if symbol:
                prim_names[str(symbol)] = gv.name_hint
            walk(func.body, (tirx.BufferStore,), lambda node: known.add(read_span(node) or (0, 0)), "pre")
    known.discard((0, 0))
    lines, starts = _lines(text)
    locations: dict[str, tuple[int, int]] = {}
    for line in lines:
        if line.startswith("!"):
            m = _LL_LOCATION.match(line)
            if m and (int(m.group(2)), int(m.group(3) or 0)) in known:
                locations[m.group(1)] = (int(m.group(2)), int(m.group(3) or 0))
    out: list[Range] = []
    for f in llvm_functions(lines, prim_names):
        if f.primfunc is None:
            continue
        out.append(
            Range(
                starts[f.first],
                starts[f.last] + len(lines[f.last]),
                tracker.function_set(f.primfunc),
                "primfunc",
                f"prim:{f.primfunc}",
            )
        )
        if not locations:
            continue
        for k in range(f.first + 1, f.last):
            line = lines[k]
            m = _LL_DBG.search(line)
            got = locations.get(m.group(1)) if m else None
            if got is None:
                continue
            indent = len(line) - len(line.lstrip())
            out.append(Range(starts[k] + indent, starts[k] + len(line), got[0], "stmt", f"store:{got[1]}"))
    return out
