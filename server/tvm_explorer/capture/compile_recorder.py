"""One capture: follow a real TVM compile pass by pass and write what it did into a bundle.

``CaptureSession.instrument()`` is a TVM pass instrument. It sees every Relax pass and every
TIR pass (``tirx.build`` runs inside the same PassContext); after each top-level pass it lets
the tracker re-attach provenance, and if the pass changed the module it prints the module
(reusing unchanged functions' text) and indexes it. Passes nested inside another pass
(FoldConstant evaluates subgraphs by building them; FuseTIR runs helper passes) are not part
of the recorded pipeline.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING

import tvm
from tvm import relax

from tvm_explorer.bundle.writer import BundleWriter
from tvm_explorer.capture.codegen_check import bool_arithmetic
from tvm_explorer.capture.dynamic_shapes import dynamic_dimension, unknown_shape_origin
from tvm_explorer.capture.indexer import index_module
from tvm_explorer.capture.parallel_print import DeferredDocuments, print_workers
from tvm_explorer.capture.pass_changes import forget, same_function
from tvm_explorer.capture.printer import ModulePrinter, assemble
from tvm_explorer.capture.structure import write_structure
from tvm_explorer.capture.tracker import ProvenanceTracker
from tvm_explorer.frontends import frontend_of, render_document
from tvm_explorer.frontends.model import Model
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import handle

if TYPE_CHECKING:
    from tvm_explorer.capture.progress import Progress
    from tvm_explorer.capture.schedules import ScheduleRecorder

# Passes that only group other passes; their children are the pipeline's steps.
CONTAINERS = {"sequential", "_pipeline"}


def _stage_of(mod) -> str:
    return "relax" if any(isinstance(f, relax.Function) for f in mod.functions.values()) else "tir"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


class CaptureSession:
    """State of one capture: origins, tracker, printer, and the bundle being written."""

    def __init__(self, model: Model, writer: BundleWriter | None, origins: OriginTable):
        self.model = model
        self.writer = writer
        self.origins = origins
        self.tracker = ProvenanceTracker(origins)
        self.printer = ModulePrinter()
        self.pass_index = 0
        self.last_document: dict[str, str | None] = {"relax": None, "tir": None}
        self._last_funcs: dict[str, dict[str, tuple]] = {}
        self.print_seconds = 0.0
        self.final_tir: tvm.IRModule | None = None  # the last TIR module (what codegen printed)
        self.final_relax: tvm.IRModule | None = None  # the last Relax module (what the VM runs; read by numerics)
        # Passes that only group others (a --pipeline adds its own outer pass's name).
        self.containers = set(CONTAINERS)
        # Called as listener(index, name, stage, mod) after each recorded pass (bisect keeps
        # the Relax snapshots this way).
        self.listeners: list = []
        self.schedules: ScheduleRecorder | None = None  # while GPU schedules are recorded
        self.progress: Progress | None = None  # told after every recorded step
        # Documents printed after the compile, in worker processes (see parallel_print).
        workers = print_workers() if writer is not None else 0
        self.deferred = DeferredDocuments(writer, self.tracker, origins, workers) if workers else None

    # -- documents -------------------------------------------------------------------
    def write_model_document(self) -> None:
        """Render the model document (where 'go to the layer' lands) and write the structure it
        shows as data (``structure.json``)."""
        if self.writer is None:
            return
        path, text, ranges = render_document(self.model, self.origins)
        self.writer.add_document(path, text, ranges, "model")
        write_structure(self.writer, self.model)

    def record(self, name: str, mod, stage: str | None = None, *, merge: bool = False, note: str | None = None) -> None:
        """Record ``mod`` as the result of pass ``name`` (attributing it first).

        ``merge``: ``mod`` holds only some of the functions (after the TIR build split host
        and device code); it updates those in the stage's current module.
        """
        stage = stage or _stage_of(mod)
        if merge and self._last_funcs.get(stage):
            merged = dict(self._last_funcs[stage])
            merged.update({gv.name_hint: (gv, f) for gv, f in mod.functions.items()})
            mod = tvm.IRModule({gv: f for gv, f in merged.values()})
        coverage = self.tracker.after_pass(mod)
        funcs = {gv.name_hint: (gv, f) for gv, f in mod.functions.items()}
        # Whether a pass changed the module only matters for the documents written.
        changed = self.writer is not None and note is None and self._changed(self._last_funcs.get(stage), funcs)
        forget()
        before = self.last_document[stage]
        index = self.pass_index
        self.pass_index += 1
        after = before
        if changed or before is None:
            after = self._write_module(mod, stage, index, name)
            self.last_document[stage] = after
        if note is None:
            self._last_funcs[stage] = funcs
        if stage == "tir":
            self.final_tir = mod
        elif note is None:
            self.final_relax = mod
        entry = {
            "index": index,
            "stage": stage,
            "name": name,
            "changed": bool(changed),
            "before": before,
            "after": after,
            "units": coverage.units,
            "attributed": coverage.attributed,
        }
        if note:
            entry["note"] = note
        if stage == "relax":
            entry["tir_units"] = coverage.extra.get("stores", 0)
            entry["tir_attributed"] = coverage.extra.get("stores_attributed", 0)
        if self.writer is not None:
            self.writer.passes.append(entry)
        if self.progress is not None:
            self.progress.step("import" if name == "import" else stage, name)
        for listener in self.listeners:
            listener(index, name, stage, mod)

    @staticmethod
    def _changed(prev: dict | None, funcs: dict) -> bool:
        """Did a pass change the module? New objects that print the same are no change."""
        if prev is None or prev.keys() != funcs.keys():
            return True
        for name, (_gv, func) in funcs.items():
            if not same_function(prev[name][1], func):  # the pass clock may have asked already
                return True
        return False

    def flush_documents(self) -> None:
        """Print and write the documents kept for after the compile (a no-op when printing
        inline). Call it once TVM's work is done, before any other document is added."""
        if self.deferred is not None:
            started = time.perf_counter()
            self.deferred.flush()
            self.print_seconds += time.perf_counter() - started

    def _write_module(self, mod, stage: str, index: int, name: str) -> str | None:
        if self.writer is None:
            return None
        if self.deferred is not None:
            path = f"{stage}/{index:03d}-{_safe(name)}.{'relax' if stage == 'relax' else 'tir'}"
            self.deferred.add(path, mod, stage, index, name, self.schedules)
            return path
        started = time.perf_counter()
        functions = self.printer.functions(mod)
        text, placed, starts = assemble(functions)
        link = self.schedules.trace_link if self.schedules is not None else None
        ranges = index_module(placed, starts, mod, self.tracker, self.origins, link)
        ext = "relax" if stage == "relax" else "tir"
        path = f"{stage}/{index:03d}-{_safe(name)}.{ext}"
        self.writer.add_document(path, text, ranges, stage, pass_index=index, pass_name=name)
        self.printer.forget_except(set(handle(f) for f in mod.functions.values()))
        self.print_seconds += time.perf_counter() - started
        return path

    def instrument(self) -> PassRecorder:
        """A TVM pass instrument feeding this session."""
        self.recorder = PassRecorder(self)
        return self.recorder

    def failure_context(self, message: str) -> str:
        """Where a compile that raised ``message`` was: `` in pass P`` (the innermost pass
        running, when known) and ``, kernel K (op 3 CONV_2D conv1)`` for the kernel the
        message names, with its layers."""
        out = ""
        recorder = getattr(self, "recorder", None)
        running = [n for n in recorder.stack if n not in self.containers] if recorder else []
        if running:
            out += f" in pass {running[-1]}"
        names: set[str] = set()
        for funcs in self._last_funcs.values():
            names.update(funcs)
        found = [
            n for n in names if re.search(rf"(?<!\w)(?:__tvm_ffi_)?{re.escape(n)}(?:_kernel|_compute_)?(?!\w)", message)
        ]
        why = ""
        dynamic = unknown_shape_origin(message, self.final_relax)
        if dynamic is not None and not found:
            layers = [self.model.layers[i] for i in self.origins.layers(dynamic) if i < len(self.model.layers)]
            if layers:
                unit = frontend_of(self.model).unit
                return out + (
                    f", {_layer_words(unit, layers[0])}: its input has the "
                    f"{dynamic_dimension(layers[0], self.model)}, which TVM cannot lower here; "
                    "pin the model's open input sizes with --input-shape NAME=D1,D2,… (or export the "
                    "model with static shapes: torch.export without dynamic_shapes, one fixed sequence "
                    "length); tvm-explorer reduce cuts a .tflite/.onnx model down to the part that fails"
                )
        if not found:
            culprit = bool_arithmetic(message, self.final_tir)
            if culprit is None:
                return out
            found = [culprit[0]]
            why = (
                f": it {culprit[1]} booleans, which TVM's LLVM code generator cannot"
                " (its C target can; tvm-explorer's own pipeline rewrites the cumsum case, docs/provenance.md)"
            )
        kernel = max(found, key=len)
        layers = [
            self.model.layers[i]
            for i in self.origins.layers(self.tracker.function_set(kernel))
            if i < len(self.model.layers)
        ]
        unit = frontend_of(self.model).unit
        what = ", ".join(_layer_words(unit, lay) for lay in layers[:3])
        more = f" and {len(layers) - 3} more" if len(layers) > 3 else ""
        return out + f", kernel {kernel}" + (f" ({what}{more})" if what else "") + why


def _layer_words(unit: str, lay) -> str:
    """``op 3 CONV_2D conv1`` / ``node 11 aten.cumsum.default m.model/cumsum at modeling_llama.py:390``."""
    text = f"{unit} {lay.op_index} {lay.opcode}{' ' + lay.name if lay.name else ''}"
    source = getattr(lay, "source", None)
    return text + (f" at {os.path.basename(source[0])}:{source[1]}" if source else "")


@tvm.ir.instrument.pass_instrument
class PassRecorder:
    """Records the top-level passes of a compile (not passes nested inside another)."""

    def __init__(self, session: CaptureSession):
        self.session = session
        self.stack: list[str] = []
        self.started_tir = False
        self.split = False

    def _top_level(self) -> bool:
        return all(name in self.session.containers for name in self.stack)

    def run_before_pass(self, mod, info):
        if self._top_level() and info.name not in self.session.containers:
            stage = _stage_of(mod)
            if not self.started_tir and stage == "tir":
                self.started_tir = True
                self.session.record("input", mod, "tir")
            if self.session.progress is not None:
                self.session.progress.begin(stage, info.name)
        self.stack.append(info.name)

    def run_after_pass(self, mod, info):
        self.stack.pop()
        if info.name in self.session.containers or not self._top_level():
            return
        if info.name == "tirx.Filter":
            # The TIR build splits host and device functions into two modules here; each
            # half goes on through its own passes, and we keep showing the whole.
            self.split = True
            self.session.record(info.name, mod, merge=True, note="splits host and device code")
            return
        self.session.record(info.name, mod, merge=self.split)
