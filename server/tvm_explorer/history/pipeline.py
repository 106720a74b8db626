"""Every layer's state at every pass, for the graph's pass slider: which layers a pass
touched, which are fused together (one box each), and which have been lowered to TIR.

- **touched**: the layers whose code the pass changed. A document's code is cut into units —
  each function, PrimFunc or kernel whole, except the entry functions of a Relax module
  (``main``: not ``private``), cut into their bindings — and a unit whose text differs from the
  unit with its key in the document before it (compared as ``history/steps.py`` pairs them),
  or that is new or gone, touched the layers of its origins. Code generation touches every
  layer it generates code for.
- **fused**: the layers each call of a fused function computes together (a binding of an entry
  function calling ``fused_…``, FuseOps' and FuseTIR's names), from the first Relax document
  that has one; TIR passes and code generation keep the last Relax document's groups.
- **lowered**: the pass after which a layer first has a PrimFunc (LegalizeOps for most).

The whole bundle is read once per loaded bundle, when first asked (the graph document), and
remembered."""

from __future__ import annotations

import re
import threading
import weakref
from typing import TypedDict

from tvm_explorer.bundle.types import Document
from tvm_explorer.history.steps import transitions
from tvm_explorer.navigation.places import producing_pass
from tvm_explorer.navigation.view import BundleView

_FUSED_CALL = re.compile(r"(?:=\s*|call_tir\(\s*|\bcls\.|^)(fused_\w+)\s*[(,]")


class PipelinePass(TypedDict):
    """One pass as the pass slider shows it (mirrored in ``webview/graph/types.ts``)."""

    index: int | None
    name: str
    stage: str
    document: str
    touched: list[str]
    fused: list[list[str]] | None
    lowered: list[str]


class Pipeline(TypedDict):
    """Every pass in pipeline order."""

    passes: list[PipelinePass]


_STATES: weakref.WeakKeyDictionary[BundleView, Pipeline] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def pipeline_states(view: BundleView) -> Pipeline:
    """``{"passes": [{"index", "name", "stage", "touched", "fused", "lowered"}]}``, one entry
    per pass document in pipeline order (docs/graph.md, "Pass slider"). Layer ids are the
    graph's node ids (strings); ``fused`` is null when it is the entry before's, ``lowered``
    lists the layers lowered by that pass only."""
    with _LOCK:
        got = _STATES.get(view)
    if got is None:
        got = _compute(view)
        with _LOCK:
            _STATES[view] = got
    return got


def _compute(view: BundleView) -> Pipeline:
    units: dict[tuple[str, bool], dict[str, tuple[int, frozenset[int]]]] = {}
    calls: dict[str, list[frozenset[int]]] = {}

    def units_of(doc: Document, embedded: bool) -> dict[str, tuple[int, frozenset[int]]]:
        key = (doc.path, embedded)
        if key not in units:
            units[key], calls[doc.path] = _units(view, doc, embedded)
        return units[key]

    out: list[PipelinePass] = []
    lowered: set[int] = set()
    groups: list[list[str]] | None = None
    shown_groups: list[list[str]] | None = None
    for before_doc, embedded, doc in transitions(view):
        after = units_of(doc, False)
        touched: set[int] = set()
        if doc.stage == "code" or before_doc.stage == "model":
            touched = {lid for _, layers in after.values() for lid in layers}
        else:
            before = units_of(before_doc, embedded)
            for key in before.keys() | after.keys():
                old, new = before.get(key), after.get(key)
                if old is None or new is None or old[0] != new[0]:
                    touched |= (old[1] if old else frozenset()) | (new[1] if new else frozenset())
        if doc.stage == "relax" and calls.get(doc.path):
            groups = sorted(sorted(str(lid) for lid in g) for g in set(calls[doc.path]) if len(g) > 1)
        now_lowered = {
            lid for kind_key, (_, layers) in after.items() if kind_key.startswith("prim:") for lid in layers
        } - lowered
        lowered |= now_lowered
        index, name = producing_pass(view, doc)
        out.append(
            {
                "index": index,
                "name": name or doc.path,
                "stage": doc.stage,
                "document": doc.path,
                "touched": [str(lid) for lid in sorted(touched)],
                "fused": groups if groups != shown_groups else None,
                "lowered": [str(lid) for lid in sorted(now_lowered)],
            }
        )
        shown_groups = groups
    return {"passes": out}


def _units(
    view: BundleView, doc: Document, embedded: bool
) -> tuple[dict[str, tuple[int, frozenset[int]]], list[frozenset[int]]]:
    """A document's units (key → hash of its text, its layers) and the layer groups its entry
    functions' calls of fused functions compute."""
    bundle = view.bundle
    index = bundle.index(doc.path)
    layers_of = view.layer_map.layers_of_set
    with bundle.passing_through():  # a walk over every document: kept out of the text cache
        text = bundle.text(doc.path)
    out: dict[str, tuple[int, frozenset[int]]] = {}
    calls: list[frozenset[int]] = []
    parents = index.parents
    entry: set[int] = set()  # range numbers of the entry functions (cut into their bindings)
    for i in range(len(index)):
        start, end, kind, key = index.span_kind_key(i)
        parent = parents[i]
        if kind == "function" and parent < 0 and "private=True" not in text[start : text.find("\n", start)]:
            entry.add(i)
            continue
        top = parent < 0 or parent in entry
        if not top or (embedded and kind != "primfunc"):
            continue
        layers = layers_of[index.origin_sets()[i]]
        piece = text[start:end]
        seen = out.get(key)
        out[key] = (hash((seen[0], piece)) if seen else hash(piece), (seen[1] | layers) if seen else layers)
        if parent in entry and kind == "binding" and len(layers) > 1 and _FUSED_CALL.search(piece):
            calls.append(layers)
    return out, calls
