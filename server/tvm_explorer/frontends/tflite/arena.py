"""LiteRT's own memory plan of a TFLite model: the size of the arena its interpreter lays the
model's tensors out in (``tvm-explorer compile --profile``, docs/memory.md).

LiteRT does not report its arena's size to Python, but every tensor's data can be seen where
the interpreter put it (``Interpreter.tensor(i)()`` is a view of it): after
``allocate_tensors`` the non-constant tensors (inputs, activations, outputs, the kernels'
temporaries such as im2col buffers) all lie in one arena, so the span of their addresses is
the arena the plan needs. Constants stay in the model file's buffer and are left out. The
interpreter runs with its builtin kernels (no XNNPACK delegate, which plans its own memory),
as the numerics reference does.

**TFLite Micro** (the ``[micro]`` extra: the ``tflite-micro`` package) lays the same model
out for a microcontroller: its interpreter allocates every tensor and kernel buffer in one
arena when it is made, and its RecordingMicroAllocator reports what that took
(``print_allocations``: total, head — the non-persistent plan: activations, scratch —, tail —
what persists: tensor structs, kernels' data). The model then runs once on zeros, so that an
operator TFLite Micro lacks is said instead of a figure for a model that cannot run there.

Reading tensors through the interpreter's native views can crash on a malformed model, so
this runs in a child process: ``python -m tvm_explorer.frontends.tflite.arena MODEL`` prints
one JSON object (LiteRT's arena, with TFLite Micro's under ``micro``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT = 120.0
MICRO_ARENA = 256 * 1024**2  # bytes offered to TFLite Micro (a model needing more is said)
_MICRO_LINE = re.compile(r"\[RecordingMicroAllocator\] Arena allocation (total|head|tail) (\d+) bytes")


def _constant_tensors(data: bytes) -> set[int]:
    """Indices of subgraph 0's tensors whose data is in the model file."""
    import tflite

    model = tflite.Model.GetRootAsModel(data, 0)
    if model.SubgraphsLength() == 0:
        return set()
    sg = model.Subgraphs(0)
    out = set()
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        buf = t.Buffer()
        if 0 < buf < model.BuffersLength():
            b = model.Buffers(buf)
            if b.DataLength() > 0 or b.Size() > 0:
                out.add(i)
    return out


def measure(path: str) -> dict:
    """``{"engine", "arena_bytes", "tensors", "method", "micro"}`` of the model at ``path``
    (``micro``: TFLite Micro's arena, ``measure_micro``)."""
    import ai_edge_litert
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    with open(path, "rb") as fh:
        data = fh.read()
    constants = _constant_tensors(data)
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    low, high, count = None, None, 0
    for d in it.get_tensor_details():
        index = d["index"]
        if index in constants or d.get("shape") is None:
            continue
        try:
            view = it.tensor(index)()
        except (ValueError, RuntimeError):
            continue  # no data (an optional or dynamic tensor)
        if view.nbytes == 0:
            continue
        start = view.__array_interface__["data"][0]
        low = start if low is None else min(low, start)
        high = start + view.nbytes if high is None else max(high, start + view.nbytes)
        count += 1
    version = getattr(ai_edge_litert, "__version__", "")
    return {
        "engine": f"LiteRT {version} interpreter, builtin kernels".replace("  ", " "),
        "arena_bytes": (high - low) if low is not None else 0,
        "tensors": count,
        "method": "span of the addresses of its non-constant tensors after allocate_tensors",
        "micro": measure_micro(data),
    }


def measure_micro(data: bytes) -> dict:
    """``{"engine", "arena_bytes", "head_bytes", "tail_bytes", "method"}`` of TFLite Micro's arena
    for the model ``data``, or ``{"error": reason}``."""
    try:
        import importlib.metadata

        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        return {"error": "TFLite Micro is not installed (pip install 'tvm-explorer[micro]')"}
    version = importlib.metadata.version("tflite-micro")
    try:
        it = runtime.Interpreter.from_bytes(data, arena_size=MICRO_ARENA)
    except Exception as err:  # noqa: BLE001 - TFLite Micro's own words, one line
        return {"error": f"TFLite Micro could not lay the model out: {' '.join(str(err).split())[:300]}"}
    printed = _stderr_of(it.print_allocations)
    got = {kind: int(n) for kind, n in _MICRO_LINE.findall(printed)}
    if "total" not in got:
        return {"error": "TFLite Micro did not report its arena"}
    try:
        it.invoke()
    except Exception as err:  # noqa: BLE001 - an operator it lacks, said in its words
        return {"error": f"TFLite Micro laid the model out but could not run it: {' '.join(str(err).split())[:300]}"}
    return {
        "engine": f"TFLite Micro {version}",
        "arena_bytes": got["total"],
        "head_bytes": got.get("head", 0),
        "tail_bytes": got.get("tail", 0),
        "method": "its RecordingMicroAllocator's arena allocation total after the interpreter was made",
    }


def _stderr_of(call) -> str:
    """What ``call()`` writes to the process's standard error (native code writes there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return sink.read().decode("utf-8", "replace")


def arena_of(path) -> dict:
    """LiteRT's arena for the model at ``path``, measured in a child process, or
    ``{"error": reason}``."""
    from tvm_explorer.supervise.child_python import python_module_command

    cmd = python_module_command("tvm_explorer.frontends.tflite.arena", os.fspath(path))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"LiteRT did not lay the model out within {TIMEOUT:g} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return {"error": f"LiteRT could not lay the model out: {last[:300]}"}
    try:
        got = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "LiteRT's arena could not be read"}
    return got if isinstance(got, dict) else {"error": "LiteRT's arena could not be read"}


def main(argv: list[str]) -> int:
    try:
        got = measure(argv[0])
    except Exception as err:  # noqa: BLE001 - one line back to the compile
        print(" ".join(str(err).split())[:300] or type(err).__name__, file=sys.stderr)
        return 1
    print(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
