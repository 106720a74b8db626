"""Print an IRModule as TVMScript and learn on which line every binding and statement lands.

TVM cannot print spans, but ``script(obj_to_annotate=...)`` appends a comment to the line of
an annotated binding or statement (or puts it on its own line just above a compound
statement). We print each function once with a unique marker per node, find the markers,
strip them, and keep ``(line, node)`` anchors. Functions are printed one at a time and cached
by object identity: a pass that leaves a function alone hands back the same object, so only
what changed is printed again. A pass that rebuilds a function object out of the very same
parts (body, parameters, attributes: ``content_key``) is not printed again either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import tvm
from tvm import relax, s_tir, tirx

from tvm_explorer.capture.node_collect import collect
from tvm_explorer.provenance.spans import handle

_MARK = "@@tvmx{}@@"
_MARK_RE = re.compile(r"@@tvmx(\d+)@@")
_ONLY_MARKS = re.compile(r"^\s*#(\s*@@tvmx\d+@@)+\s*$")
_MARKS_ONLY = re.compile(r"(\s*@@tvmx\d+@@)+\s*")
_METADATA_NOTE = "# Metadata omitted"

TIR_NODES = (tirx.BufferStore, tirx.For, s_tir.SBlockRealize)
RELAX_NODES = (relax.VarBinding, relax.MatchCast)


@dataclass
class Anchor:
    """A node and the lines its text spans inside a function's printed lines."""

    first: int
    last: int
    node: Any  # a TIR statement or a Relax binding (TVM is untyped)


@dataclass
class FunctionText:
    """One printed function: its lines (indented as a class member) and its anchors."""

    name: str
    func: object
    lines: list[str]
    anchors: list[Anchor]
    header: list[str]
    metadata_note: bool = False
    nodes: list = field(default_factory=list)  # the anchored kinds of nodes, in walk pre-order
    marks: list | None = None  # the indexer's summary of the anchors, made once


def _strip_markers(line: str) -> str:
    """``line`` without a trailing comment made only of markers (a plain search: a regex
    anchored at the line's end tries every position of a 300-character line)."""
    hash_at = line.rfind("#", 0, line.find("@@tvmx"))
    if hash_at < 0 or not _MARKS_ONLY.fullmatch(line, hash_at + 1):
        return line
    return line[:hash_at].rstrip()


def _block_ends(lines: list[str], firsts: list[int]) -> dict[int, int]:
    """Last line of the statement starting at each of ``firsts``: all deeper-indented lines
    after it (blank lines inside count, trailing blank lines do not). One pass over the lines."""
    n = len(lines)
    indent = [len(t) - len(t.lstrip()) if t.strip() else -1 for t in lines]
    following = [n] * n  # the next non-blank line indented no deeper than this one
    waiting: list[int] = []
    for j in range(n):
        if indent[j] < 0:
            continue
        while waiting and indent[waiting[-1]] >= indent[j]:
            following[waiting.pop()] = j
        waiting.append(j)
    last_text = [-1] * (n + 1)  # last_text[k]: the last non-blank line before line k
    for k in range(1, n + 1):
        last_text[k] = k - 1 if indent[k - 1] >= 0 else last_text[k - 1]
    return {f: max(f, last_text[following[f]]) for f in firsts}


def nodes_of(func) -> list:
    """The nodes of ``func`` that get anchors (bindings, or stores, loops and blocks), in walk
    pre-order."""
    kinds = RELAX_NODES if isinstance(func, relax.Function) else TIR_NODES
    return collect(func, kinds, "pre")


def print_function(name: str, gv, func) -> FunctionText:
    """Print one function with markers, then strip them into anchors."""
    nodes = nodes_of(func)
    lines, anchors, header, metadata_note = print_lines(gv, func, nodes)
    return function_text(name, func, nodes, lines, anchors, header, metadata_note)


def function_text(
    name: str,
    func,
    nodes: list,
    lines: list[str],
    anchors: list[tuple[int, int, int]],
    header: list[str],
    metadata_note: bool,
) -> FunctionText:
    """A ``FunctionText`` from what ``print_lines`` returned (anchors by node index)."""
    return FunctionText(
        name, func, lines, [Anchor(first, last, nodes[i]) for first, last, i in anchors], header, metadata_note, nodes
    )


def print_lines(gv, func, nodes: list) -> tuple[list[str], list[tuple[int, int, int]], list[str], bool]:
    """Print one function with a marker on each of ``nodes`` (``nodes_of(func)``).

    Returns its lines, its anchors as ``(first line, last line, index in nodes)`` in
    document order, the ``# from`` header lines, and whether TVM noted omitted metadata:
    plain data, which a printing worker process can send back.
    """
    annotate = {node: _MARK.format(i) for i, node in enumerate(nodes)}
    text = tvm.IRModule({gv: func}).script(obj_to_annotate=annotate)
    raw = text.split("\n")
    try:
        start = next(i for i, line in enumerate(raw) if line.startswith("class Module"))
    except StopIteration:
        start = -1
    header = [line for line in raw[: max(start, 0)] if line.startswith("# from ")]
    lines: list[str] = []
    node_line: dict[int, int] = {}
    pending: list[int] = []
    for line in raw[start + 1 :]:
        if "@@tvmx" not in line:
            for m in pending:
                node_line.setdefault(m, len(lines))
            pending = []
            lines.append(line)
            continue
        if _ONLY_MARKS.match(line):
            pending.extend(int(m) for m in _MARK_RE.findall(line))
            continue
        marks = [int(m) for m in _MARK_RE.findall(line)]
        line = _strip_markers(line)
        for m in pending + marks:
            node_line.setdefault(m, len(lines))
        pending = []
        lines.append(line)
    # TVM ends every print with a note about omitted metadata: keep it once per document.
    metadata_note = any(line.startswith(_METADATA_NOTE) for line in lines)
    lines = [line for line in lines if not line.startswith(_METADATA_NOTE)]
    while lines and not lines[-1].strip():
        lines.pop()
    ends = _block_ends(lines, sorted(set(node_line.values())))
    anchors = [(line, ends[line], i) for i, line in sorted(node_line.items())]
    anchors.sort(key=lambda a: (a[0], -a[1]))
    return lines, anchors, header, metadata_note


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(cls) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        found: list[str] = []
        info = getattr(cls, "__tvm_ffi_type_info__", None)
        while info is not None:
            found.extend(f.name for f in info.fields)
            info = info.parent_type_info
        names = _FIELDS[cls] = tuple(found)
    return names


def content_key(func) -> tuple:
    """What ``func`` is made of, by identity: its type and, for each of its fields, the object
    there (its handle) or the plain value. TVM IR is immutable (apart from the spans the
    tracker stamps, which are never printed), so two functions with equal keys are made of
    the same objects: they print the same text, and their anchored nodes are the same
    objects in the same order. Valid while a function with this key is alive (it holds the
    field objects, so their handles are not reused)."""
    parts: list = [type(func).__name__]
    for name in _field_names(type(func)):
        value = getattr(func, name)
        chandle = getattr(value, "__chandle__", None)
        parts.append(chandle() if chandle is not None else value)
    return tuple(parts)


class ModulePrinter:
    """Prints modules function by function, reusing the text of functions seen before."""

    def __init__(self):
        self._cache: dict[int, FunctionText] = {}
        # The last printed version of each function name, by content: passes often rebuild
        # a function object (another function of the module changed) out of the same parts.
        self._latest: dict[str, tuple[tuple, FunctionText]] = {}
        self.reused = 0  # functions not printed again thanks to _latest (for tests)

    def functions(self, mod, include=None) -> list[FunctionText]:
        """Printed functions of ``mod`` sorted by name (``include`` filters by function)."""
        out = []
        seen = set()
        for gv, func in sorted(mod.functions.items(), key=lambda kv: kv[0].name_hint):
            if include is not None and not include(func):
                continue
            key = handle(func)
            seen.add(key)
            cached = self._cache.get(key)
            if cached is None or cached.name != gv.name_hint:
                ckey = content_key(func)
                latest = self._latest.get(gv.name_hint)
                if latest is not None and latest[0] == ckey:
                    cached = replace(latest[1], func=func)  # same parts: same text and nodes
                    self.reused += 1
                else:
                    cached = print_function(gv.name_hint, gv, func)
                self._latest[gv.name_hint] = (ckey, cached)
                self._cache[key] = cached
            out.append(cached)
        return out

    def forget_except(self, keep: set[int]) -> None:
        """Drop cached functions that are no longer alive in any recent module."""
        for key in list(self._cache):
            if key not in keep:
                del self._cache[key]


@dataclass
class PlacedFunction:
    """A printed function placed in a document: its first line's number there."""

    text: FunctionText
    line: int


def assemble(functions: list[FunctionText]) -> tuple[str, list[PlacedFunction], list[int]]:
    """One document from printed functions; returns text, placements and line start offsets."""
    header: list[str] = []
    for f in functions:
        for line in f.header:
            if line not in header:
                header.append(line)
    lines = header + ["", "@I.ir_module", "class Module:"]
    placed = []
    for i, f in enumerate(functions):
        if i:
            lines.append("")
        placed.append(PlacedFunction(f, len(lines)))
        lines.extend(f.lines)
    if any(f.metadata_note for f in functions):
        lines += ["", "# Metadata omitted (constants print as metadata[...])."]
    text = "\n".join(lines) + "\n"
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    return text, placed, starts
