"""Turn a printed module (text + anchors) into the document's provenance ranges."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from tvm import relax, s_tir, tirx

from tvm_explorer.bundle.index import Range
from tvm_explorer.capture.codegen import loop_keys_of
from tvm_explorer.capture.node_collect import collect
from tvm_explorer.capture.printer import FunctionText, PlacedFunction
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import handle, read_span


class _Mark(NamedTuple):
    """What indexing needs of one anchored node apart from its span (which a later pass may
    restamp): read once per printed function, reused by every document that shows it."""

    first: int
    last: int
    kind: str  # "stmt" | "loop" | "block" | "binding"
    node: Any  # the TIR statement or Relax binding (TVM is untyped)
    key: str = ""  # loops, blocks, bindings (a store's key is its unit)
    loop_var: str | None = None
    refs: tuple[str, ...] = ()  # bindings: the global functions their value uses, in order


def _marks(ftext: FunctionText) -> list[_Mark]:
    if ftext.marks is not None:
        return ftext.marks
    # The function's nodes are in walk pre-order, the order loop_keys counts loops in.
    keys_of_loops = loop_keys_of(ftext.nodes, ftext.name) if isinstance(ftext.func, tirx.PrimFunc) else {}
    marks = []
    for anchor in ftext.anchors:
        node = anchor.node
        if isinstance(node, tirx.BufferStore):
            marks.append(_Mark(anchor.first, anchor.last, "stmt", node))
        elif isinstance(node, tirx.For):
            key = keys_of_loops.get(handle(node), f"loop:{ftext.name}:?")
            marks.append(_Mark(anchor.first, anchor.last, "loop", node, key, node.loop_var.name))
        elif isinstance(node, s_tir.SBlockRealize):
            marks.append(_Mark(anchor.first, anchor.last, "block", node, f"block:{ftext.name}:{node.block.name_hint}"))
        else:  # a Relax binding
            refs = tuple(gv.name_hint for gv in collect(node.value, (relax.GlobalVar,)))
            marks.append(
                _Mark(anchor.first, anchor.last, "binding", node, f"bind:{ftext.name}:{node.var.name}", None, refs)
            )
    ftext.marks = marks
    return marks


class FunctionSets(Protocol):
    """What the indexer reads of the tracker (``ProvenanceTracker``, or one pass's sets)."""

    def function_set(self, name: str) -> int: ...


def index_module(
    placed: list[PlacedFunction],
    starts: list[int],
    mod,
    tracker: FunctionSets,
    origins: OriginTable,
    trace_link=None,
    read=read_span,
) -> list[Range]:
    """Ranges for every function, binding, loop, block and store of a printed module.

    ``trace_link(function, loop_var)`` names the schedule step that created a loop, if any.
    ``read(node)`` gives a node's ``(origin set, unit)`` (default: its span now; a deferred
    printer passes the spans as they were when the pass ran).
    """
    prim_names = {gv.name_hint for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)}
    ranges: list[Range] = []
    for pf in placed:
        ftext = pf.text
        lines = ftext.lines
        name = ftext.name
        is_prim = isinstance(ftext.func, tirx.PrimFunc)
        base = pf.line

        def span_of(first: int, last: int) -> tuple[int, int]:
            line = lines[first]
            start = starts[base + first] + len(line) - len(line.lstrip())
            end = starts[base + last] + len(lines[last])
            return start, end

        fstart, fend = span_of(0, len(lines) - 1)
        ranges.append(
            Range(
                fstart,
                fend,
                tracker.function_set(name),
                "primfunc" if is_prim else "function",
                f"{'prim' if is_prim else 'func'}:{name}",
                trace_link(name) if (trace_link and is_prim) else None,
            )
        )
        open_containers: list[tuple[int, list[int], tuple]] = []  # (last line, sets, range info)

        def close_until(line: int) -> None:
            while open_containers and open_containers[-1][0] < line:
                _last, sets, (start, end, kind, key, link) = open_containers.pop()
                sid = origins.union(sets)
                ranges.append(Range(start, end, sid, kind, key, link))
                if open_containers:
                    open_containers[-1][1].append(sid)

        for mark in _marks(ftext):
            close_until(mark.first)
            start, end = span_of(mark.first, mark.last)
            kind = mark.kind
            if kind == "stmt":
                sid, unit = read(mark.node) or (0, 0)
                ranges.append(Range(start, end, sid, "stmt", f"store:{unit}"))
                for container in open_containers:
                    container[1].append(sid)
            elif kind == "loop":
                link = trace_link(name, mark.loop_var) if trace_link else None
                open_containers.append((mark.last, [], (start, end, "loop", mark.key, link)))
            elif kind == "block":
                open_containers.append((mark.last, [], (start, end, "block", mark.key, None)))
            else:
                node = mark.node
                got = read(node) or read(node.var) or (0, 0)
                callee = next((ref for ref in mark.refs if ref in prim_names), None)
                ranges.append(Range(start, end, got[0], "binding", mark.key, f"prim:{callee}" if callee else None))
        close_until(len(lines) + 1)
    return ranges
