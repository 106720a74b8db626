"""One measurement in a fresh process: ``_worker.py TASK JSON-PARAMS``; prints one JSON line.

Tasks:
  import   {"model", "variant": "stock"|"spans"}           TFLite import only
  compile  {"model", "target", "variant": "stock"|"kept"|"capture", "out"?}
           stock: stock import + compile (no provenance); kept: provenance kept through every
           pass, nothing written (``bundle=None``); capture: the full bundle written to ``out``
  load     {"bundle"}                                     what the language server does on load

Everything the measured step needs is imported before the clock starts; peak memory is the
process's peak RSS (``VmHWM``, reset just before the step) and the step's growth above the
RSS it started from.
"""

from __future__ import annotations

import gc
import json
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
    c0, w0 = time.process_time(), time.perf_counter()
    value = fn()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    after = benchlib.proc_status()
    peak = after.get("VmHWM", 0) if reset else benchlib.maxrss_bytes()
    return {"cpu": cpu, "wall": wall, "rss_before": before.get("VmRSS", 0), "peak": peak,
            "maxrss": benchlib.maxrss_bytes(), "peak_reset": reset,
            "growth": max(0, peak - before.get("VmRSS", 0)), "value": value}


def task_import(model: str, variant: str) -> dict:
    from tvm_explorer.capture.importer import import_tflite
    from tvm_explorer.model.loader import load_model
    from tvm_explorer.provenance import OriginTable

    loaded = load_model(model)
    if variant == "stock":
        return _measure(lambda: bool(import_tflite(loaded, None, fill_spans=False)))
    return _measure(lambda: bool(import_tflite(loaded, OriginTable())))


def task_compile(model: str, target: str, variant: str, out: str | None = None) -> dict:
    import tvm_explorer.capture.api as api

    def run():
        if variant == "stock":
            api.compile_model(model, None, target, fill_spans=False)
        elif variant == "kept":
            api.compile_model(model, None, target)
        else:
            api.compile_model(model, out, target)
        return None

    result = _measure(run)
    if variant == "capture":
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
    lm = _measure(lambda: len(holder["view"].layer_map.places))
    result["layer_map_cpu"], result["layer_map_wall"] = lm["cpu"], lm["wall"]
    result["rss_loaded"] = benchlib.proc_status().get("VmRSS", 0)
    return result


def main() -> None:
    task, params = sys.argv[1], json.loads(sys.argv[2])
    keep = params.pop("keep", False)
    result = {"import": task_import, "compile": task_compile, "load": task_load}[task](**params)
    if task == "compile" and params.get("variant") == "capture" and not keep:
        shutil.rmtree(params["out"], ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
