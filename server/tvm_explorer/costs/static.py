"""Static costs read from a bundle's generated code and final Relax: per kernel its call
sites, computing lines and workspace bytes; per layer the lines attributed to it.

Works on documents as the bundle index stores them (text plus ranges
``[start, end, origin_set, kind, key, link?]``), so it needs no TVM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_C_WORKSPACE = re.compile(r"TVMBackendAllocWorkspace\(\s*\d+\s*,\s*[^,]+,\s*\(uint64_t\)\s*(\d+)")
_LL_LOAD = re.compile(r"(%[\w.]+) = load ptr, ptr @__TVMBackendAllocWorkspace\b")
_LL_DIRECT = re.compile(r"call ptr @TVMBackendAllocWorkspace\(i32 [^,]+, i32 [^,]+, i64 (\d+)")
_CUDA_SHARED = re.compile(r"__shared__\s+(?:alignas\(\d+\)\s+|__align__\(\d+\)\s+)?(\w+)\s+\w+\[(\d+)\]")
_CALL_PACKED = re.compile(r'R\.call_packed\("([\w.]+)"')
_DTYPE_BYTES = {
    "float": 4,
    "half": 2,
    "double": 8,
    "int": 4,
    "char": 1,
    "signed char": 1,
    "uchar": 1,
    "int8_t": 1,
    "uint8_t": 1,
    "int16_t": 2,
    "uint16_t": 2,
    "int32_t": 4,
    "uint32_t": 4,
    "int64_t": 8,
    "uint64_t": 8,
    "__half": 2,
    "nv_bfloat16": 2,
    "bool": 1,
}
CODE_KINDS = {"c": "C", "cuda": "CUDA", "ll": "LLVM IR"}
# Kinds whose lines are one measure: C and CUDA are both C-syntax source whose computing lines
# (loops and stores) are counted by one rule; LLVM IR is counted per function.
_CODE_FAMILIES = {"c": "source", "cuda": "source", "ll": "llvm"}


def comparable_kinds(a: str | None, b: str | None) -> bool:
    """Whether code of kind ``a`` and of kind ``b`` can be compared, line counts and text:
    C with C or CUDA, LLVM IR with LLVM IR; never C lines with LLVM IR lines."""
    return a is not None and b is not None and _CODE_FAMILIES.get(a, a) == _CODE_FAMILIES.get(b, b)


CODE_DOCUMENTS = {"code/module.c": "c", "code/device.cu": "cuda", "code/host.ll": "ll"}


def workspace_bytes(kind: str, text: str) -> int:
    """Bytes a generated function allocates: ``TVMBackendAllocWorkspace`` calls (C, LLVM IR)
    or ``__shared__`` arrays (CUDA)."""
    if kind == "c":
        return sum(int(n) for n in _C_WORKSPACE.findall(text))
    if kind == "cuda":
        return sum(_DTYPE_BYTES.get(t, 4) * int(n) for t, n in _CUDA_SHARED.findall(text))
    total = sum(int(n) for n in _LL_DIRECT.findall(text))
    for reg in set(_LL_LOAD.findall(text)):
        call = re.compile(r"call ptr " + re.escape(reg) + r"\(i32 [^,]+, i32 [^,]+, i64 (\d+)")
        total += sum(int(n) for n in call.findall(text))
    return total


_LL_DEFINE = re.compile(r'^define\b[^@]*@"?([\w.$]+)"?\(', re.M)


def _ll_functions(text: str):
    """``(name, offset, text)`` of every function defined in LLVM IR."""
    for m in _LL_DEFINE.finditer(text):
        end = text.find("\n}\n", m.end())
        yield m.group(1), m.start(), text[m.start() : len(text) if end < 0 else end + 2]


def owner(members) -> int | None:
    """The one layer a line shared by several counts for: the first layer whose output it
    produces, else the first layer (so that per-layer lines add up to the attributed lines)."""
    members = list(members)
    if not members:
        return None
    outputs = [lid for lid, out in members if out]
    return min(outputs) if outputs else min(lid for lid, _ in members)


@dataclass
class Kernel:
    """One generated kernel (a PrimFunc) with what the code says about it."""

    name: str
    function_set: int = 0
    code_lines: int = 0  # computing lines (loops and stores) in the generated code
    total_lines: int = 0  # every line of its generated function(s)
    workspace_bytes: int = 0
    sites: list[int] = field(default_factory=list)  # origin set of each call site, in order


@dataclass
class CodeDocument:
    """A generated-code document: kind (``c``, ``cuda``, ``ll``), text and index ranges."""

    kind: str
    text: str
    ranges: list


@dataclass
class StaticCosts:
    """What the code and the final Relax say, before anything runs."""

    code_kind: str | None
    kernels: dict[str, Kernel]
    layer_lines: dict[int, int]  # layer id -> computing lines it owns
    layer_shared_lines: dict[int, int]  # layer id -> lines it shares with other layers
    attributed_lines: int
    builtin_sites: dict[str, list[int]]  # VM builtin -> origin set of each call site


def _kernel_name(key: str) -> str | None:
    if not key.startswith("prim:"):
        return None
    name = key[len("prim:") :]
    return name[: -len("_kernel")] if name.endswith("_kernel") else name


def analyse(code_docs: list[CodeDocument], relax_final: tuple[str, list] | None, origin_sets: list) -> StaticCosts:
    """Per kernel and per layer static costs. ``origin_sets`` as in the index
    (``[[layer_id, is_output], ...]`` per set)."""
    kernels: dict[str, Kernel] = {}
    layer_lines: dict[int, int] = {}
    shared_lines: dict[int, int] = {}
    attributed = 0
    # The document whose lines are counted: C or CUDA source, else LLVM IR.
    counted = next((d for d in code_docs if d.kind in ("c", "cuda")), None) or next(iter(code_docs), None)
    for doc in code_docs:
        for rng in doc.ranges:
            start, end, sid, kind, key = rng[:5]
            if kind != "primfunc":
                continue
            name = _kernel_name(key)
            if name is None:
                continue
            k = kernels.setdefault(name, Kernel(name))
            k.function_set = k.function_set or sid
            body = doc.text[start:end]
            k.workspace_bytes += workspace_bytes(doc.kind, body)
            if doc is counted:
                k.total_lines += body.count("\n") + 1
    for doc in code_docs:
        if doc.kind == "ll":
            # LLVM IR keeps a kernel's body in ``<PrimFunc>_compute_``, a function of its own
            # that older bundles' indexes do not list (newer ones do: counted above).
            indexed = {rng[0] for rng in doc.ranges if rng[3] == "primfunc"}
            for name, start, body in _ll_functions(doc.text):
                computed = kernels.get(name[: -len("_compute_")]) if name.endswith("_compute_") else None
                if computed is not None and start not in indexed:
                    computed.workspace_bytes += workspace_bytes("ll", body)
                    if doc is counted:
                        computed.total_lines += body.count("\n") + 1
    if counted is not None:
        # LLVM IR lines are counted per function: its located instructions are few and
        # stand for the TIR stores, not for the IR's computing lines.
        has_statements = counted.kind != "ll" and any(r[3] in ("stmt", "loop") for r in counted.ranges)
        if not has_statements:  # function-level provenance: a kernel's lines are its layer's
            for k in kernels.values():
                if k.function_set and k.total_lines:
                    lid = owner(origin_sets[k.function_set])
                    assert lid is not None  # only set id 0 is empty (provenance/__init__.py)
                    layer_lines[lid] = layer_lines.get(lid, 0) + k.total_lines
                    attributed += k.total_lines
                    k.code_lines = k.total_lines
        current: Kernel | None = None
        current_end = -1
        for rng in counted.ranges:  # sorted by start, outer first
            start, end, sid, kind, key = rng[:5]
            if kind == "primfunc":
                name = _kernel_name(key)
                current, current_end = (kernels.get(name) if name else None), end
                continue
            if kind not in ("stmt", "loop") or not has_statements:
                continue
            if current is not None and start < current_end:
                current.code_lines += 1
            if not sid:
                continue
            members = origin_sets[sid]
            lid = owner(members)
            assert lid is not None  # only set id 0 is empty (provenance/__init__.py)
            layer_lines[lid] = layer_lines.get(lid, 0) + 1
            attributed += 1
            if len(members) > 1:
                for other, _ in members:
                    shared_lines[other] = shared_lines.get(other, 0) + 1
    builtin_sites: dict[str, list[int]] = {}
    if relax_final is not None:
        text, ranges = relax_final
        for rng in ranges:
            start, end, sid, kind, key = rng[:5]
            if kind != "binding" or not key.startswith("bind:main:"):
                continue
            link = rng[5] if len(rng) > 5 else None
            name = _kernel_name(link) if isinstance(link, str) else None
            if name is not None:
                kernels.setdefault(name, Kernel(name)).sites.append(sid)
                continue
            m = _CALL_PACKED.search(text[start:end])
            if m:
                builtin_sites.setdefault(m.group(1), []).append(sid)
    code_kind = counted.kind if counted is not None else None
    return StaticCosts(code_kind, kernels, layer_lines, shared_lines, attributed, builtin_sites)


def code_documents(bundle) -> list[CodeDocument]:
    """The generated-code documents of a written bundle (``bundle.reader.Bundle``)."""
    have = {d.path for d in bundle.documents}
    return [
        CodeDocument(kind, bundle.text(path), bundle.index(path).ranges)
        for path, kind in CODE_DOCUMENTS.items()
        if path in have
    ]


def code_size(bundle) -> StaticCosts:
    """A written bundle's code size, counted as ``costs.json`` counts it when the bundle is
    compiled: the one count of code lines that ``costs``, ``compare`` and ``--fail-on`` show
    (its ``code_kind`` says what kind of lines they are)."""
    return analyse(code_documents(bundle), None, bundle.origin_sets)
