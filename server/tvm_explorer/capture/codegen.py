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

from ..bundle.index import Range
from ..provenance import OriginTable
from .spans import handle, read_span
from .tracker import ProvenanceTracker
from .walk import walk

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
        if name.startswith(prefix) and name[len(prefix):] in by_symbol:
            return by_symbol[name[len(prefix):]]
    return None


@dataclass
class CodeCoverage:
    """Computing lines (stores and loops) inside function bodies, and how many have origins."""

    units: int = 0
    attributed: int = 0


def index_source(text: str, final_tir, tracker: ProvenanceTracker, origins: OriginTable,
                 trace_link=None) -> tuple[list[Range], CodeCoverage]:
    """Ranges for every generated function, loop and store line of a C/CUDA source."""
    by_symbol: dict[str, tuple[str, object]] = {}
    for gv, func in final_tir.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        by_symbol[gv.name_hint] = (gv.name_hint, func)
        symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
        if symbol:
            by_symbol[str(symbol)] = (gv.name_hint, func)
    lines = text.split("\n")
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
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
        ranges.append(Range(s, e, fset, "primfunc", f"prim:{fname}",
                               trace_link(fname) if trace_link else None))
        ranges.extend(_index_body(lines, gf, _events(func, fname), fname, fset, origins, rng, cov,
                                  trace_link))
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
            if target is not None and not stripped.startswith(("int", "float", "void", "uint", "half", "double", "bool", "char", "signed", "unsigned", "long", "short")):
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


def index_llvm(text: str, final_tir, tracker: ProvenanceTracker) -> list[Range]:
    """Function-level ranges of LLVM IR host code: each ``define`` maps to its PrimFunc."""
    by_symbol: dict[str, str] = {}
    for gv, func in final_tir.functions.items():
        if isinstance(func, tirx.PrimFunc):
            by_symbol[gv.name_hint] = gv.name_hint
            symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
            if symbol:
                by_symbol[str(symbol)] = gv.name_hint
    out: list[Range] = []
    pos = 0
    start = name = None
    for line in text.split("\n"):
        if start is None:
            m = _LL_DEFINE.match(line)
            if m:
                found = _primfunc_for(m.group(1), {k: (v, None) for k, v in by_symbol.items()})
                if found is not None:
                    start, name = pos, found[0]
        elif line == "}":
            out.append(Range(start, pos + 1, tracker.function_set(name), "primfunc", f"prim:{name}"))
            start = name = None
        pos += len(line) + 1
    return out
