"""A layer's history: the passes that changed its code, in pipeline order.

Each document of the bundle is compared with the one before it in the pipeline: a Relax
document with the previous Relax document (the first with the model document: the import), the
first TIR document with the PrimFuncs the last Relax document prints (the TIR handed to the TIR
build), a TIR document with the previous one, each generated-code document with the last TIR
document. A pass whose document holds the layer's code unchanged (whitespace aside) left it
alone and is not a step.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace

from tvm_explorer.bundle.types import Document, Layer
from tvm_explorer.history.code import LayerCode, layer_code
from tvm_explorer.history.summary import line_changes, summarize
from tvm_explorer.navigation.places import producing_pass
from tvm_explorer.navigation.view import BundleView

HISTORIES_KEPT = 32
"""Histories remembered per bundle (the ones asked for last)."""


@dataclass(frozen=True)
class Step:
    """One pass that changed the layer's code."""

    pass_index: int | None
    pass_name: str
    stage: str
    before: LayerCode
    after: LayerCode
    summary: str
    changes: tuple[str, ...]
    added: int
    """Lines of the layer's code after the pass that were not there before (whitespace aside)."""
    removed: int


@dataclass(frozen=True)
class Mark:
    """A pass where the layer's code size, measured cost or numerics changed most."""

    kind: str
    """``size``, ``cost`` or ``numerics``."""
    text: str
    pass_index: int | None
    pass_name: str
    step: int | None
    """The step of that pass (None: the pass did not change the layer's code)."""


@dataclass(frozen=True)
class History:
    """Every pass that changed the code of ``layers``, in pipeline order."""

    layers: tuple[Layer, ...]
    steps: tuple[Step, ...]
    passes: int
    """How many passes the pipeline ran (the manifest's ``passes``)."""
    marks: tuple[Mark, ...] = ()

    def marks_of(self, step: int) -> list[Mark]:
        """The marks on step number ``step``."""
        return [m for m in self.marks if m.step == step]


def transitions(view: BundleView) -> list[tuple[Document, bool, Document]]:
    """``(before, embedded_only, after)`` for each document after the model: what each pass
    document is compared with (``embedded_only``: the PrimFuncs of the last Relax document)."""
    out: list[tuple[Document, bool, Document]] = []
    model: Document | None = None
    prev_relax: Document | None = None
    prev_tir: Document | None = None
    for doc in view.bundle.documents:
        if doc.stage == "model":
            model = doc
            continue
        if doc.stage == "relax":
            before, embedded = prev_relax or model, False
            prev_relax = doc
        elif doc.stage == "tir":
            before, embedded = prev_tir or prev_relax, prev_tir is None
            prev_tir = doc
        else:
            before, embedded = prev_tir or prev_relax, False
        if before is not None:
            out.append((before, embedded, doc))
    return out


def layer_history(view: BundleView, layer_ids) -> History:
    """The history of the layers ``layer_ids`` (one layer, or a fused group together),
    remembered per bundle."""
    group = tuple(sorted(set(layer_ids)))
    cache = _cache(view)
    with _LOCK:
        got = cache.get(group)
        if got is not None:
            cache.move_to_end(group)
            return got
    from tvm_explorer.history.marks import marks

    with _collections_paused():
        history = _compute(view, frozenset(group))
        found = tuple(marks(view, history))
        # Kept: the steps' lines only, not the ranges and units the summaries were made of.
        steps = tuple(replace(s, before=_slim(s.before), after=_slim(s.after)) for s in history.steps)
        history = History(history.layers, steps, history.passes, found)
    with _LOCK:
        cache[group] = history
        while len(cache) > HISTORIES_KEPT:
            cache.popitem(last=False)
    return history


def _slim(code: LayerCode) -> LayerCode:
    return LayerCode(code.path, code.stage, code.pieces)


_PAUSES = [0, False]  # how many computations pause the collector; whether it ran before
_PAUSE_LOCK = threading.Lock()


@contextlib.contextmanager
def _collections_paused():
    """No cyclic garbage collection while a history is computed: it makes tens of thousands
    of short-lived objects and no cycles, and the full collections they triggered walked every
    object of the loaded bundles (a history's slowest answers were 2.5x slower with them)."""
    with _PAUSE_LOCK:
        if _PAUSES[0] == 0:
            _PAUSES[1] = gc.isenabled()
            gc.disable()
        _PAUSES[0] += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSES[0] -= 1
            if _PAUSES[0] == 0 and _PAUSES[1]:
                gc.enable()


def _compute(view: BundleView, group: frozenset[int]) -> History:
    bundle = view.bundle
    layers = [bundle.layers[i] for i in sorted(group) if 0 <= i < len(bundle.layers)]
    codes: dict[tuple[str, bool], LayerCode] = {}

    def code(doc: Document, embedded: bool) -> LayerCode:
        key = (doc.path, embedded)
        got = codes.get(key)
        if got is None:
            got = codes[key] = layer_code(view, doc.path, group, embedded)
        return got

    steps = []
    for before_doc, embedded, after_doc in transitions(view):
        after = code(after_doc, False)
        before = code(before_doc, embedded)
        if after.empty and (before.empty or after_doc.stage == "code" or before_doc.stage == "model"):
            continue  # nothing of it here (a generated file it did not reach, an op the import dropped)
        if after_doc.stage != "code" and after.same_as(before):
            continue
        index, name = producing_pass(view, after_doc)
        summary = summarize(before, after, group, bundle.layers)
        added, removed = line_changes(before, after)
        steps.append(
            Step(
                index,
                name or after_doc.path,
                after_doc.stage,
                before,
                after,
                summary.text,
                summary.changes,
                added,
                removed,
            )
        )
    passes = bundle.manifest.get("passes")
    return History(tuple(layers), tuple(steps), len(passes) if isinstance(passes, list) else 0)


_CACHES: weakref.WeakKeyDictionary[BundleView, OrderedDict[tuple[int, ...], History]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _cache(view: BundleView) -> OrderedDict[tuple[int, ...], History]:
    with _LOCK:
        return _CACHES.setdefault(view, OrderedDict())
