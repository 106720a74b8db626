"""Turn a printed module (text + anchors) into the document's provenance ranges."""

from __future__ import annotations

from tvm import relax, s_tir, tirx

from ..bundle.index import Range
from ..provenance import OriginTable
from .printer import PlacedFunction
from .codegen import loop_keys
from .spans import handle, read_span
from .tracker import ProvenanceTracker
from .walk import collect


def _prim_callee(value, prim_names: set[str]) -> str | None:
    for gv in collect(value, (relax.GlobalVar,)):
        if gv.name_hint in prim_names:
            return gv.name_hint
    return None


def index_module(placed: list[PlacedFunction], starts: list[int], mod, tracker: ProvenanceTracker,
                 origins: OriginTable, trace_link=None) -> list[Range]:
    """Ranges for every function, binding, loop, block and store of a printed module.

    ``trace_link(function, loop_var)`` names the schedule step that created a loop, if any.
    """
    prim_names = {gv.name_hint for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)}
    ranges: list[Range] = []
    for pf in placed:
        ftext = pf.text
        lines = ftext.lines
        is_prim = isinstance(ftext.func, tirx.PrimFunc)

        def span_of(first: int, last: int) -> tuple[int, int]:
            line = lines[first]
            start = starts[pf.line + first] + len(line) - len(line.lstrip())
            end = starts[pf.line + last] + len(lines[last])
            return start, end

        fstart, fend = span_of(0, len(lines) - 1)
        ranges.append(Range(fstart, fend, tracker.function_set(ftext.name),
                               "primfunc" if is_prim else "function",
                               f"{'prim' if is_prim else 'func'}:{ftext.name}",
                               trace_link(ftext.name) if (trace_link and is_prim) else None))
        open_containers: list[tuple[int, list[int], object]] = []  # (last line, sets, range info)
        keys_of_loops = loop_keys(ftext.func, ftext.name) if is_prim else {}

        def close_until(line: int) -> None:
            while open_containers and open_containers[-1][0] < line:
                _last, sets, (start, end, kind, key, link) = open_containers.pop()
                sid = origins.union(sets)
                ranges.append(Range(start, end, sid, kind, key, link))
                if open_containers:
                    open_containers[-1][1].append(sid)

        for anchor in ftext.anchors:
            close_until(anchor.first)
            node = anchor.node
            start, end = span_of(anchor.first, anchor.last)
            if isinstance(node, tirx.BufferStore):
                got = read_span(node) or (0, 0)
                ranges.append(Range(start, end, got[0], "stmt", f"store:{got[1]}"))
                for container in open_containers:
                    container[1].append(got[0])
            elif isinstance(node, tirx.For):
                key = keys_of_loops.get(handle(node), f"loop:{ftext.name}:?")
                link = trace_link(ftext.name, node.loop_var.name) if trace_link else None
                open_containers.append((anchor.last, [], (start, end, "loop", key, link)))
            elif isinstance(node, s_tir.SBlockRealize):
                key = f"block:{ftext.name}:{node.block.name_hint}"
                open_containers.append((anchor.last, [], (start, end, "block", key, None)))
            else:  # a Relax binding
                got = read_span(node) or read_span(node.var) or (0, 0)
                link = _prim_callee(node.value, prim_names)
                ranges.append(Range(start, end, got[0], "binding",
                                       f"bind:{ftext.name}:{node.var.name}",
                                       f"prim:{link}" if link else None))
        close_until(len(lines) + 1)
    return ranges
