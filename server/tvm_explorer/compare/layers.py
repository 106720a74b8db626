"""One bundle's layers as the comparison sees them: name, kernels, generated code, costs."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.types import Layer
from tvm_explorer.costs.static import StaticCosts, code_size
from tvm_explorer.errors import BundleError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COST_KEYS = ("time_ms", "share", "workspace_bytes", "flops")


@dataclass
class LayerCode:
    """A layer's generated code in one bundle: in each function carrying it as an origin, its
    own computing lines (the loops and stores whose origin is the layer), not the function's
    FFI argument checks and unpacking; and its code size as ``costs`` counts it."""

    layer: Layer
    name: str
    kernels: list[str] = field(default_factory=list)
    pieces: list[tuple[str, str, str]] = field(default_factory=list)  # (document, kernel, text)
    costs: dict | None = None
    lines: int = 0  # code lines of the layer (``costs.static.code_size``)
    shared_lines: int = 0  # lines of kernels it shares, counted for another layer

    @property
    def code_lines(self) -> int:
        return self.lines

    def text(self) -> str:
        """The layer's code as one document (each function headed by where it comes from)."""
        if not self.pieces:
            return "// no generated code carries this layer as an origin\n"
        comment = "//" if not self.pieces[0][0].endswith(".ll") else ";"
        out = []
        for path, kernel, text in self.pieces:
            mark = ";" if path.endswith(".ll") else comment
            out.append(f"{mark} ---- {path}: {kernel} ----\n{text}\n")
        return "\n".join(out)

    def normalized(self) -> str:
        """The code up to a consistent renaming of identifiers (kernel and argument names,
        which cloning or another call site changes), without blank lines or trailing blanks:
        two layers whose code differs only in names normalize to the same text."""
        names: dict[str, str] = {}

        def rename(m: re.Match) -> str:
            return names.setdefault(m.group(0), f"_{len(names)}")

        text = "\n".join(t for _, _, t in self.pieces)
        lines = (line.rstrip() for line in text.split("\n") if line.strip())
        return "\n".join(_IDENTIFIER.sub(rename, line) for line in lines)


def _code_documents(bundle: Bundle) -> list[str]:
    """The documents with the layer's generated code: C or CUDA source, else LLVM IR."""
    code = [d for d in bundle.documents if d.stage == "code"]
    source = [d.path for d in code if not d.path.endswith(".ll")]
    return source or [d.path for d in code]


def _kernel_name(key: str, target: str) -> str:
    name = key[5:] if key.startswith("prim:") else key
    if target == "cuda" and name.endswith("_kernel"):
        name = name[: -len("_kernel")]
    return name


def read_costs(bundle: Bundle) -> dict[tuple[int, int], dict]:
    """Per-layer costs of the bundle's validated ``costs.json`` (else {}); a damaged one is
    left out, never fatal to a comparison (``Bundle.costs`` checked every value once)."""
    try:
        raw = bundle.costs()
    except BundleError:
        return {}
    out: dict[tuple[int, int], dict] = {}
    for entry in raw.get("layers", ()) if raw else ():
        key = (entry["subgraph"], entry["op_index"])
        fields: Mapping[str, object] = entry  # read by name
        out[key] = {k: fields[k] for k in _COST_KEYS if fields.get(k) is not None}
        out[key]["code_lines"] = entry["code_lines"]
    return out


def layer_codes(bundle: Bundle, size: StaticCosts | None = None) -> list[LayerCode]:
    """Every layer of the bundle with its generated code, in layer order; its code lines are
    ``size``'s (default: ``code_size(bundle)``), the count ``costs`` shows."""
    target = str(bundle.manifest.get("target", ""))
    costs = read_costs(bundle)
    size = size or code_size(bundle)
    codes = [
        LayerCode(
            lay,
            lay.display_name,
            costs=costs.get((lay.subgraph, lay.op_index)),
            lines=size.layer_lines.get(lay.id, 0),
            shared_lines=size.layer_shared_lines.get(lay.id, 0),
        )
        for lay in bundle.layers
    ]
    for path in _code_documents(bundle):
        text = bundle.text(path)
        ranges = bundle.index(path).ranges
        statements = any(rng.kind in COMPUTING for rng in ranges)
        for rng in ranges:
            if rng.kind != "primfunc":
                continue
            kernel = _kernel_name(rng.key, target)
            lids = [lid for lid, _ in bundle.origin_sets[rng.origin_set]]
            for lid in lids:
                if kernel not in codes[lid].kernels:
                    codes[lid].kernels.append(kernel)
            if not statements:  # function-level provenance: the function is the layer's code
                body = text[rng.start : rng.end]
                for lid in lids:
                    codes[lid].pieces.append((path, rng.key[5:], body))
                continue
            for lid, lines in _computing_lines(bundle, text, ranges, rng).items():
                codes[lid].pieces.append((path, rng.key[5:], "\n".join(lines)))
    return codes


COMPUTING = ("stmt", "loop")


def _computing_lines(bundle: Bundle, text: str, ranges, func) -> dict[int, list[str]]:
    """Per layer, its computing lines in function ``func``: each loop's header line and each
    store's lines, in order, indented as in the code (one count per loop or store, as
    ``costs`` counts them)."""
    out: dict[int, list[str]] = {}
    first = bisect_left(ranges, func.start, key=lambda r: r.start)
    for rng in ranges[first:]:
        if rng.start >= func.end:
            break
        if rng.kind not in COMPUTING or not rng.origin_set:
            continue
        line_start = text.rfind("\n", 0, rng.start) + 1
        line_end = text.find("\n", rng.start if rng.kind == "loop" else max(rng.end - 1, rng.start))
        line = text[line_start : len(text) if line_end < 0 else line_end].rstrip()
        for lid, _ in bundle.origin_sets[rng.origin_set]:
            out.setdefault(lid, []).append(line)
    return out
