"""``tvm-explorer extract``: pick the kernel(s) of a bundle and write their reproducer."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.types import Document, Layer
from tvm_explorer.capture.c_source import script_source
from tvm_explorer.errors import ExplorerError
from tvm_explorer.reproducers.harness import HARNESS
from tvm_explorer.reproducers.relax_reference import ReferenceBuilder
from tvm_explorer.reproducers.script_text import check_functions, comment, tvm_import
from tvm_explorer.reproducers.signature import Argument, read_signature
from tvm_explorer.version import __version__
from tvm_explorer.whole_files import write_whole

_BASE_IMPORTS = (
    "from tvm.script import ir as I",
    "from tvm.script import tirx as T",
    "from tvm.script import relax as R",
)


@dataclass
class Reproducer:
    """A rendered reproducer script and what it contains."""

    text: str
    kernels: list[str]
    document: str
    pass_index: int | None
    pass_name: str
    layers: list[Layer] = field(default_factory=list)
    label: str = ""


def describe_layer(layer: Layer) -> str:
    """``op 3 MAX_POOL_2D small_cnn_1/max_pooling2d_1`` (with the subgraph when not 0)."""
    where = f"subgraph {layer.subgraph} " if layer.subgraph else ""
    name = layer.display_name
    return f"{where}op {layer.op_index} {layer.opcode}" + (f" {name}" if name else "")


class KernelFinder:
    """Names of a bundle's kernels, and the documents they are printed in."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.tir_docs = [d for d in bundle.documents if d.stage == "tir"]
        self.ir_docs = [d for d in bundle.documents if d.stage in ("relax", "tir")]
        self._prims: dict[str, list[str]] = {}  # name -> documents printing it, in order
        self._funcs: dict[str, list[str]] = {}
        for doc in self.ir_docs:
            for key in bundle.index(doc.path).keys():
                if key.startswith("prim:"):
                    self._prims.setdefault(key[5:], []).append(doc.path)
                elif key.startswith("func:") and doc.stage == "relax":
                    self._funcs.setdefault(key[5:], []).append(doc.path)

    def primfuncs(self) -> list[str]:
        """Every PrimFunc printed in the bundle."""
        return sorted(self._prims)

    def kernels(self) -> list[str]:
        """The PrimFuncs of the first TIR document (the functions the build lowers)."""
        if not self.tir_docs:
            return []
        return sorted(k[5:] for k in self.bundle.index(self.tir_docs[0].path).keys() if k.startswith("prim:"))

    def all_names(self) -> list[str]:
        """Everything NAME may be: PrimFuncs, generated kernel names, Relax functions."""
        names = set(self._prims) | set(self._funcs)
        generated = "{}_kernel" if self.bundle.manifest.get("target") == "cuda" else "__tvm_ffi_{}"
        names |= {generated.format(k) for k in self.kernels()}
        names -= {n for n in self._prims if n.endswith("_kernel") and n[:-7] in self._prims}
        return sorted(names)

    def default_document(self, prim: str) -> str:
        """The first TIR document printing ``prim`` (else the first Relax one: a PrimFunc
        that fusion replaced, as LegalizeOps wrote it)."""
        docs = self._prims.get(prim, [])
        tir = [p for p in docs if _known(self.bundle, p).stage == "tir"]
        return tir[0] if tir else docs[0]

    def documents_of(self, prim: str) -> list[str]:
        return self._prims.get(prim, [])

    def resolve(self, name: str) -> list[str]:
        """The PrimFunc(s) NAME stands for; an unknown NAME lists the closest names."""
        kernels = set(self.kernels())
        if name in kernels:
            return [name]
        for prefix, suffix in (("__tvm_ffi_", ""), ("", "_kernel")):
            if name.startswith(prefix) and name.endswith(suffix):
                core = name[len(prefix) : len(name) - len(suffix)]
                if core in kernels:
                    return [core]
        if name in self._prims:
            return [name]
        if name in self._funcs:
            return self._called_by(name)
        close = difflib.get_close_matches(name, self.all_names(), n=6, cutoff=0.5)
        hint = f"closest: {', '.join(close)}" if close else f"kernels: {', '.join(self.kernels()[:12])}"
        raise ExplorerError(
            f"{name}: no PrimFunc, generated kernel or Relax function of that name in {self.bundle.root}; {hint}"
        )

    def _called_by(self, func: str) -> list[str]:
        """The kernels a Relax function calls (in its last Relax document)."""
        path = self._funcs[func][-1]
        index = self.bundle.index(path)
        known = set(self.kernels())
        out = []
        for rng in index.ranges:
            if rng.kind == "binding" and rng.key.startswith(f"bind:{func}:") and rng.link:
                prim = rng.link[5:]
                if prim in known and prim not in out:
                    out.append(prim)
        if not out:
            raise ExplorerError(f"{func}: this Relax function calls no kernel of the TIR documents (in {path})")
        return out

    def layer_kernels(self, layer: Layer) -> list[str]:
        """The kernels of the first TIR document that carry ``layer`` among their origins."""
        if not self.tir_docs:
            return []
        path = self.tir_docs[0].path
        out = []
        for rng in self.bundle.index(path).ranges:
            if rng.kind == "primfunc" and any(lid == layer.id for lid, _ in self.bundle.origin_sets[rng.origin_set]):
                out.append(rng.key[5:])
        return sorted(set(out), key=out.index)

    def layers_of(self, prim: str) -> list[Layer]:
        """The layers a kernel came from (origins of its range in its default document)."""
        path = self.default_document(prim)
        found = self.bundle.index(path).by_key(f"prim:{prim}")
        if not found:
            return []
        return [self.bundle.layers[lid] for lid, _ in self.bundle.origin_sets[found[0].origin_set]]


def _known(bundle: Bundle, path: str) -> Document:
    """The document at ``path``, a path the bundle's own documents gave."""
    doc = bundle.document(path)
    assert doc is not None
    return doc


def _pass_entry(bundle: Bundle, index: int) -> dict:
    passes = bundle.manifest.get("passes", [])
    for entry in passes:
        if entry.get("index") == index:
            return entry
    indices = [p.get("index") for p in passes if isinstance(p.get("index"), int)]
    span = f"{min(indices)}–{max(indices)}" if indices else "none"
    raise ExplorerError(f"--pass {index}: {bundle.root} has passes {span} (see `tvm-explorer coverage BUNDLE`)")


def _pass_of_document(bundle: Bundle, path: str) -> tuple[int | None, str]:
    doc = bundle.document(path)
    for entry in bundle.manifest.get("passes", []):
        if entry.get("after") == path and entry.get("changed"):
            return entry.get("index"), str(entry.get("name"))
    return (doc.pass_index if doc else None), Path(path).stem


def _raw_text(bundle: Bundle, path: str, prim: str) -> str:
    rng = bundle.index(path).by_key(f"prim:{prim}")[0]
    return bundle.text(path)[rng.start : rng.end]


def _kernel_text(bundle: Bundle, path: str, prim: str) -> str:
    text = _raw_text(bundle, path, prim)
    if "metadata[" in text:
        raise ExplorerError(
            f"{prim}: its text in {path} uses constants the bundle does not "
            "store (metadata[...]); pick another pass with --pass"
        )
    # PrimFuncs printed inside a Relax module are private (no symbol): the script exports them.
    first, _, rest = text.partition("\n")
    first = first.replace("(private=True, ", "(").replace("(private=True)", "")
    return "    " + first + "\n" + rest


def _imports(bundle: Bundle, path: str) -> list[str]:
    out = list(_BASE_IMPORTS)
    for line in bundle.text(path).split("\n"):
        if not line.startswith("#"):
            break
        found = tvm_import(line[1:].strip(" "))
        if found and found not in out:
            out.append(found)
    return out


def _args_literal(args: list[Argument]) -> str:
    return "[" + ", ".join(f"({a.shape!r}, {a.dtype!r})" for a in args) + "]"


def extract(
    bundle_path: str | os.PathLike,
    name: str | None = None,
    *,
    layer: int | None = None,
    subgraph: int = 0,
    pass_index: int | None = None,
) -> Reproducer:
    """The reproducer of kernel/function ``name``, or of the kernels of layer ``layer``."""
    bundle = Bundle(bundle_path)
    finder = KernelFinder(bundle)
    if not finder.tir_docs:
        raise ExplorerError(f"{bundle.root}: the bundle has no TIR documents")
    layers: list[Layer] = []
    if layer is not None:
        lay = bundle.layer(subgraph, layer)
        if lay is None:
            ops = sorted(l.op_index for l in bundle.layers if l.subgraph == subgraph)
            span = f"ops {ops[0]}–{ops[-1]}" if ops else "no operators"
            raise ExplorerError(f"--layer {layer}: subgraph {subgraph} of {bundle.root} has {span}")
        kernels = finder.layer_kernels(lay)
        if not kernels:
            raise ExplorerError(
                f"{describe_layer(lay)}: no kernel of the TIR documents comes "
                "from this layer (its computation was folded into constants "
                "or into a neighbour's kernel without an origin)"
            )
        layers = [lay]
        label = f"layer{layer}" if not subgraph else f"sg{subgraph}-layer{layer}"
    elif name:
        kernels = finder.resolve(name)
        label = name
    else:
        raise ExplorerError("extract: give a NAME or --layer OP_INDEX")

    if pass_index is not None:
        entry = _pass_entry(bundle, pass_index)
        path = entry.get("after")
        missing = [k for k in kernels if path not in finder.documents_of(k)]
        if missing:
            where = [_known(bundle, p).pass_index for p in finder.documents_of(missing[0])]
            known = [w for w in where if w is not None]
            span = f"passes {min(known)}–{max(known)}" if known else "no pass document"
            raise ExplorerError(
                f"--pass {pass_index} ({entry.get('name')}): {missing[0]} is not "
                f"printed after it; it is printed after {span}"
            )
    else:
        docs = {finder.default_document(k) for k in kernels}
        path = min(docs, key=lambda p: _known(bundle, p).order)
        missing = [k for k in kernels if path not in finder.documents_of(k)]
        if missing:
            raise ExplorerError(f"{', '.join(missing)}: not printed in {path} with the others; extract them one by one")
    assert path is not None  # every kernel is printed there (checked above)
    pidx, pname = _pass_of_document(bundle, path)

    builder = ReferenceBuilder(bundle)
    kernel_texts, reference_texts, specs, sources = [], [], [], []
    for k in kernels:
        ref = builder.build(k)
        _, base = read_signature(_raw_text(bundle, finder.default_document(k), k))
        _, sig = read_signature(_raw_text(bundle, path, k))
        if not all(a.is_buffer for a in sig) or len(sig) != len(base):
            raise ExplorerError(
                f"{k}: after pass {pidx} ({pname}) it takes packed arguments "
                "(lowered calling convention); choose an earlier --pass"
            )
        if not all(a.is_buffer for a in base) or len(base) <= ref.inputs:
            raise ExplorerError(f"{k}: its arguments are not static-shape buffers")
        kernel_texts.append(_kernel_text(bundle, path, k))
        reference_texts.append(ref.text)
        sources.append(ref.source)
        specs.append(
            f'    {k!r}: {{\n        "inputs": {_args_literal(base[: ref.inputs])},\n'
            f'        "outputs": {_args_literal(base[ref.inputs :])},\n'
            f'        "shapes": {[a.shape for a in sig]!r},\n    }},'
        )
        if layer is None:
            for lay in finder.layers_of(k):
                if lay not in layers:
                    layers.append(lay)

    manifest = bundle.manifest
    model = manifest.get("model") or {}
    target = str(manifest.get("target", "c"))
    tvm_version = (manifest.get("tool") or {}).get("tvm", "?")
    what = (
        f"kernels of {describe_layer(layers[0])}"
        if layer is not None
        else f"kernel{'s' if len(kernels) > 1 else ''} {', '.join(kernels)}"
    )
    # Every line is one comment: bundle strings pass through comment() (see script_text.py).
    header = [
        f"# Reproducer: {comment(what)}",
        f"# Written by tvm-explorer {__version__} from bundle {comment(bundle.root)}",
        f"# Model:     {comment(model.get('file', '?'))} (sha256 {comment(str(model.get('sha256', '?'))[:16])})",
        "# Layer(s):  " + (comment("; ".join(describe_layer(l) for l in layers)) or "unknown"),
        f"# Kernels:   {comment(', '.join(kernels))}",
        f"# Pass:      {pidx} {comment(pname)} ({comment(path)})",
        f"# Target:    {comment(target)}"
        + (" (on a machine without a GPU only the CUDA source is built)" if target == "cuda" else ""),
        f"# TVM:       {comment(tvm_version)} (compiled the bundle); needs only tvm and numpy",
        f"# Reference: the layer's own Relax ops from {comment(builder.import_doc)}, built for "
        "llvm (bindings "
        + comment("; ".join(f"{k}: {src}" if len(kernels) > 1 else src for k, src in zip(kernels, sources)))
        + ")",
        "# Run:       python this_script.py  (exit 0: every kernel matches its reference)",
    ]
    for k, text in zip(kernels, kernel_texts):
        check_functions(text, f"{k} in {path}")
    for k, text in zip(kernels, reference_texts):
        check_functions(text, f"the reference of {k} (from {builder.import_doc})")
    body = [
        "\n".join(header),
        "",
        "import os",
        "import sys",
        "",
        "# Nothing is imported from this script's folder (it lies next to the bundle).",
        "_HERE = os.path.dirname(os.path.realpath(__file__))",
        "sys.path[:] = [p for p in sys.path if os.path.realpath(p or '.') != _HERE]",
        "",
        "import time",
        "",
        "import numpy as np",
        "import tvm",
        *_imports(bundle, path),
        "",
        f"TARGET = {target!r}",
        "SEED = 0",
        "",
        "# The kernel(s) as TVMScript, after the pass named above.",
        "@I.ir_module",
        "class Kernels:",
        "\n\n".join(kernel_texts),
        "",
        "",
        "# The reference: the same layer(s) as Relax ops (arguments named like the kernel's).",
        "@I.ir_module",
        "class Reference:",
        "\n\n".join(reference_texts),
        "",
        "",
        "# Per kernel: input shapes/dtypes (in argument order), outputs, and the shapes the",
        "# kernel's own arguments have at this pass.",
        "KERNELS = {",
        *specs,
        "}",
        *(["", "import re", "", "", script_source()] if target == "c" else []),
        HARNESS,
    ]
    return Reproducer("\n".join(body), kernels, path, pidx, pname, layers, label)


def default_output(bundle_path: str | os.PathLike, repro: Reproducer) -> Path:
    """``<bundle's parent>/<bundle name>.<label>.repro.py``: next to the bundle."""
    root = Path(bundle_path).resolve()
    label = re.sub(r"[^\w.-]", "_", repro.label)
    return root.parent / f"{root.name}.{label}.repro.py"


def write(repro: Reproducer, output: str | os.PathLike) -> Path:
    """Write the script (whole or not at all)."""
    out = Path(output)
    try:
        data = repro.text.encode("utf-8")
    except UnicodeEncodeError as err:  # a lone surrogate that escaped comment() and repr()
        raise ExplorerError(
            f"{out}: the reproducer holds a character UTF-8 cannot encode "
            f"({err.object[err.start : err.end]!r}); nothing written"
        ) from None
    return write_whole(out, data, "reproducer")
