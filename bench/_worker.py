"""One measurement in a fresh process: ``_worker.py TASK JSON-PARAMS``; prints one JSON line.

Tasks:
  import   {"model", "variant": "stock"|"spans"}           TFLite import only
  compile  {"model", "target", "variant": "stock"|"reader"|"printer"|"kept"|"capture"|
            "capture_inline"|"dumpir", "out"?}
           stock: stock import + compile (no provenance); reader: stock + reading the span
           of every binding and store each pass rebuilt (the floor of any tracker); printer:
           stock + TVM's printer on
           every function a pass rebuilt (the floor of printing every pass's IR); kept:
           provenance kept through every pass, nothing written (``bundle=None``); capture:
           the full bundle written to ``out`` (IR printed after the compile by forked
           workers, one process per core, whatever the load); capture_inline: the same, printed inline during the compile
           (``TVMX_PRINT_WORKERS=0``, as before parallel printing); dumpir: stock + TVM's own
           ``DumpIR`` instrument (the whole module printed after every pass) into ``out``
  load     {"bundle"}                                     what the language server does on load

Everything the measured step needs is imported before the clock starts; peak memory is the
process's peak RSS (``VmHWM``, reset just before the step) and the step's growth above the
RSS it started from. CPU time includes that of child processes the step started and reaped
(the capture's printing workers): ``cpu`` is the whole cost, ``children_cpu`` their part.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402


def _measure(fn) -> dict:
    gc.collect()
    before = benchlib.proc_status()
    reset = benchlib.reset_peak_rss()
    t0, w0 = os.times(), time.perf_counter()
    value = fn()
    t1, wall = os.times(), time.perf_counter() - w0
    own = (t1.user - t0.user) + (t1.system - t0.system)
    children = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    cpu = own + children
    after = benchlib.proc_status()
    peak = after.get("VmHWM", 0) if reset else benchlib.maxrss_bytes()
    return {
        "cpu": cpu,
        "children_cpu": children,
        "wall": wall,
        "rss_before": before.get("VmRSS", 0),
        "peak": peak,
        "maxrss": benchlib.maxrss_bytes(),
        "peak_reset": reset,
        "growth": max(0, peak - before.get("VmRSS", 0)),
        "value": value,
    }


def task_import(model: str, variant: str) -> dict:
    from tvm_explorer.frontends.tflite.importer import import_tflite
    from tvm_explorer.frontends.tflite.loader import load_model
    from tvm_explorer.provenance import OriginTable

    loaded = load_model(model)
    if variant == "stock":
        return _measure(lambda: bool(import_tflite(loaded, None, fill_spans=False)))
    return _measure(lambda: bool(import_tflite(loaded, OriginTable())))


def _after_top_level_passes(step):
    """A pass instrument calling ``step(mod)`` after every top-level pass of a compile (the
    passes the capture records; not those nested inside another pass)."""
    import tvm

    from tvm_explorer.capture.compile_recorder import CONTAINERS

    @tvm.ir.instrument.pass_instrument
    class AfterTopLevel:
        def __init__(self):
            self.stack: list[str] = []

        def run_before_pass(self, mod, info):
            self.stack.append(info.name)

        def run_after_pass(self, mod, info):
            self.stack.pop()
            if info.name not in CONTAINERS and all(n in CONTAINERS for n in self.stack):
                step(mod)

    return AfterTopLevel()


def _printer_floor_instrument():
    """Prints, with TVM's own printer, every function object rebuilt by a top-level pass that
    changed the module, and nothing else: the printing any capture of every changed pass's
    IR through TVM's printer must pay (no markers, no provenance, no index, nothing written)."""
    import tvm

    from tvm_explorer.capture.compile_recorder import CaptureSession
    from tvm_explorer.provenance.spans import handle

    state = {"last": None, "printed": {}}

    def step(mod):
        funcs = {gv.name_hint: (gv, func) for gv, func in mod.functions.items()}
        if not CaptureSession._changed(state["last"], funcs):
            return
        state["last"] = funcs
        printed = {}
        for gv, func in funcs.values():
            key = handle(func)
            if key not in state["printed"]:
                tvm.IRModule({gv: func}).script()
            printed[key] = func
        state["printed"] = printed

    return _after_top_level_passes(step)


def _tracker_floor_instrument():
    """After every top-level pass, reads the span of each binding and store in every function
    object the pass rebuilt, and nothing else: the least any tracker that looks at what a
    pass produced must do (it attributes and stamps nothing)."""
    from tvm import relax

    from tvm_explorer.capture.tracker import _bindings, _stores
    from tvm_explorer.provenance.spans import handle, read_span

    state = {"seen": {}}

    def step(mod):
        seen = {}
        for _gv, func in mod.functions.items():
            key = handle(func)
            if key not in state["seen"]:
                nodes = _bindings(func) if isinstance(func, relax.Function) else _stores(func)
                for node in nodes:
                    read_span(node)
            seen[key] = func
        state["seen"] = seen

    return _after_top_level_passes(step)


def task_compile(model: str, target: str, variant: str, out: str | None = None) -> dict:
    from tvm_explorer.capture.parallel_print import ENV_WORKERS, MAX_WORKERS

    if variant == "capture_inline":
        os.environ[ENV_WORKERS] = "0"
    elif variant == "capture" and ENV_WORKERS not in os.environ:
        # Parallel printing whatever the load (by default a capture prints inline when the
        # machine has no idle core): the figure is about the parallel path.
        os.environ[ENV_WORKERS] = str(min(MAX_WORKERS, len(os.sched_getaffinity(0))))
    import tvm_explorer.app.compile as api
    from tvm_explorer.capture.pipeline import build
    from tvm_explorer.frontends.tflite.importer import import_tflite
    from tvm_explorer.frontends.tflite.loader import load_model

    def run():
        if variant == "stock":
            api.compile_model(model, None, target, fill_spans=False)
        elif variant in ("printer", "reader"):
            mod = import_tflite(load_model(model), None, fill_spans=False)
            floor = _printer_floor_instrument if variant == "printer" else _tracker_floor_instrument
            build(mod, target, [floor()])
        elif variant == "kept":
            api.compile_model(model, None, target)
        elif variant == "dumpir":
            from tvm.ir.instrument import DumpIR

            mod = import_tflite(load_model(model), None, fill_spans=False)
            build(mod, target, [DumpIR(out)])
        else:
            api.compile_model(model, out, target)
        return None

    result = _measure(run)
    result["package"] = str(Path(api.__file__).resolve().parents[1])  # which checkout ran
    if variant in ("capture", "capture_inline"):
        result["bundle_bytes"] = benchlib.dir_size(Path(out))
        result["bundle_files"] = sum(1 for p in Path(out).rglob("*") if p.is_file())
    return result


def task_load(bundle: str) -> dict:
    from tvm_explorer.navigation import registry

    holder = {}

    def run():
        holder["view"] = registry.load(Path(bundle))
        return len(holder["view"].bundle.documents)

    result = _measure(run)
    lm = _measure(lambda: len(holder["view"].layer_map.model_places))
    result["layer_map_cpu"], result["layer_map_wall"] = lm["cpu"], lm["wall"]
    result["rss_loaded"] = benchlib.proc_status().get("VmRSS", 0)
    return result


def main() -> None:
    task, params = sys.argv[1], json.loads(sys.argv[2])
    keep = params.pop("keep", False)
    result = {"import": task_import, "compile": task_compile, "load": task_load}[task](**params)
    if task == "compile" and params.get("variant") in ("capture", "capture_inline", "dumpir") and not keep:
        shutil.rmtree(params["out"], ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
