"""The TFLite reference: LiteRT's interpreter run on the same inputs, keeping every tensor.

LiteRT's default XNNPACK delegate would compute whole delegated subgraphs without writing
their intermediate tensors, so the interpreter runs with the builtin kernels only
(``BUILTIN_WITHOUT_DEFAULT_DELEGATES``): every layer output is kept and readable by name.

Integer kernels of two faithful engines do not agree to the step: each rounds its fixed-point
rescaling its own way, and the differences grow layer after layer (on MobileNetV3-small int8
LiteRT's optimized and reference kernels differ by 5 steps at op 4 and by 100+ deep in the
net). So quantized models also run with LiteRT's reference kernels (``BUILTIN_REF``, every
tensor kept too); per quantized tensor the largest difference between the two, in steps, is
the reference's own *spread* on this input: a compiled layer further from the reference than
that is a divergence, one within it is not (``compare.py``).
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings

import numpy as np

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.reference_run import Quantization, ReferenceRun
from tvm_explorer.frontends.tflite.loader import LoadedModel


def _interpreter(path: str, resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"):
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise ExplorerError("--numerics needs the LiteRT interpreter: pip install ai-edge-litert") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "preserve_all_tensors is for debugging": we are
        try:
            it = Interpreter(
                model_path=path,
                experimental_preserve_all_tensors=True,
                experimental_op_resolver_type=getattr(OpResolverType, resolver),
            )
            it.allocate_tensors()
        except (ValueError, RuntimeError) as err:
            raise ExplorerError(
                f"{path}: the LiteRT interpreter cannot load the model ({' '.join(str(err).split())[:300]})"
            ) from None
    return it


def _details(it) -> list[dict]:
    return [d for d in it.get_tensor_details() if d.get("name") is not None]


def check_same_graph(model: LoadedModel, reference_path: str) -> None:
    """Raise ExplorerError naming the first tensor the reference lacks or shapes differently."""
    it = _interpreter(reference_path)
    by_name = {d["name"]: d for d in _details(it)}
    sg = model.subgraphs[0] if model.subgraphs else None
    wanted = [(t, "input") for t in (sg.inputs if sg else [])]
    wanted += [(t, f"output of {lay.label}") for lay in model.layers if lay.subgraph == 0 for t in lay.outputs]
    for t, role in wanted:
        d = by_name.get(t.name)
        if d is None:
            raise ExplorerError(
                f"{reference_path}: no tensor named '{t.name}' ({role} in "
                f"{model.path}); --reference must be the same graph"
            )
        ref_shape = [int(x) for x in d["shape"]]
        if ref_shape != [int(x) for x in t.shape]:
            raise ExplorerError(
                f"{reference_path}: tensor '{t.name}' ({role}) has shape {ref_shape}, "
                f"{list(t.shape)} in {model.path}; --reference must be the same graph"
            )
        ref_dtype = np.dtype(d["dtype"]).name
        if ref_dtype != t.dtype:
            raise ExplorerError(
                f"{reference_path}: tensor '{t.name}' ({role}) has dtype {ref_dtype}, "
                f"{t.dtype} in {model.path}; --reference must be the same graph"
            )


def _invoke(path: str, inputs: dict[str, np.ndarray], resolver: str):
    it = _interpreter(path, resolver)
    resized = False
    for d in it.get_input_details():
        if d["name"] in inputs and tuple(d["shape"]) != np.shape(inputs[d["name"]]):
            it.resize_tensor_input(d["index"], list(np.shape(inputs[d["name"]])))  # --input-shape
            resized = True
    if resized:
        try:
            it.allocate_tensors()
        except (ValueError, RuntimeError) as err:
            raise ExplorerError(
                f"{path}: the LiteRT interpreter cannot run the model at the input sizes given "
                f"({' '.join(str(err).split())[:300]})"
            ) from None
    for d in it.get_input_details():
        if d["name"] not in inputs:
            raise ExplorerError(f"{path}: input '{d['name']}' has no value")
        it.set_tensor(d["index"], inputs[d["name"]])
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            it.invoke()
    except (ValueError, RuntimeError) as err:
        raise ExplorerError(
            f"{path}: the LiteRT interpreter failed to run the model ({' '.join(str(err).split())[:300]})"
        ) from None
    return it


def _tensors(it) -> dict[str, np.ndarray]:
    out = {}
    for d in _details(it):
        try:
            value = it.get_tensor(d["index"])
        except ValueError:  # a tensor without data (unused optional input)
            continue
        out.setdefault(d["name"], np.array(value, copy=True))
    return out


def run_reference(path: str | os.PathLike, inputs: dict[str, np.ndarray]) -> ReferenceRun:
    """Run the interpreter on ``inputs`` (by input tensor name) and keep every tensor; for a
    quantized model also the spread of LiteRT's reference kernels around it."""
    path = os.fspath(path)
    it = _invoke(path, inputs, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    tensors, quant = _tensors(it), {}
    for d in _details(it):
        q = d.get("quantization_parameters") or {}
        scales = np.asarray(q.get("scales", []))
        if scales.size:
            quant.setdefault(
                d["name"],
                Quantization(
                    scales, np.asarray(q.get("zero_points", [0] * scales.size)), int(q.get("quantized_dimension", 0))
                ),
            )
    return ReferenceRun(path, tensors, quant, _spread(path, inputs, tensors, quant))


def _spread(path: str, inputs, tensors: dict[str, np.ndarray], quant) -> dict[str, float]:
    """Steps between the optimized and the reference kernels, per quantized integer tensor."""
    quantized = [n for n in quant if n in tensors and np.issubdtype(tensors[n].dtype, np.integer)]
    if not quantized:
        return {}
    try:
        other = _tensors(_invoke(path, inputs, "BUILTIN_REF"))
    except ExplorerError:
        return {}  # no second opinion: the fixed budget alone applies
    out = {}
    for name in quantized:
        b = other.get(name)
        if b is not None and b.shape == tensors[name].shape:
            diff = np.abs(tensors[name].astype(np.int64) - b.astype(np.int64))
            out[name] = float(diff.max(initial=0))
    return out


def quantization_of(path: str | os.PathLike) -> dict[str, Quantization]:
    """Every quantized tensor's parameters in the model at ``path`` (nothing is run)."""
    it = _interpreter(os.fspath(path))
    out = {}
    for d in _details(it):
        q = d.get("quantization_parameters") or {}
        scales = np.asarray(q.get("scales", []))
        if scales.size:
            out.setdefault(
                d["name"],
                Quantization(
                    scales, np.asarray(q.get("zero_points", [0] * scales.size)), int(q.get("quantized_dimension", 0))
                ),
            )
    return out
