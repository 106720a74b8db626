"""The TFLite reference: LiteRT's interpreter run on the same inputs, keeping every tensor.

LiteRT's default XNNPACK delegate would compute whole delegated subgraphs without writing
their intermediate tensors, so the reference runs with the builtin kernels only
(``BUILTIN_WITHOUT_DEFAULT_DELEGATES``): every layer output is kept and readable by name.

Integer kernels of two faithful engines do not agree to the step: each rescales its int32
accumulators its own way (fixed point in the builtin kernels, float in XNNPACK and in TVM),
and the differences grow layer after layer. So a quantized model also runs on LiteRT's two
other int8 paths: its reference kernels (``BUILTIN_REF``, every tensor kept) and the default
XNNPACK delegate (on a copy of the model whose every operator output is a graph output, so
that the delegate writes each of them). Per tensor, how far those runs land from the
reference run is the reference's own *spread* on this input (``reference_run.Spread``): a
compiled layer is judged against it (``numerics/compare.py``). On an int8 MobileNet v1 the
builtin and reference kernels agree to the step on every layer but the last three while
XNNPACK is 62 steps away from them by the last block: TVM, which requantizes in float as
XNNPACK does, lands on XNNPACK's integers.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings

import numpy as np

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.reference_run import Quantization, ReferenceRun, Spread, engine_on, measure_spread
from tvm_explorer.frontends.tflite.loader import LoadedModel

BUILTIN = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def _interpreter(path: str, resolver: str = BUILTIN, content: bytes | None = None):
    """LiteRT's interpreter on the model at ``path`` (or on ``content``, a copy of it): every
    tensor kept, except with ``AUTO`` (the default XNNPACK delegate, which keeps only the
    graph outputs)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise ExplorerError("--numerics needs the LiteRT interpreter: pip install ai-edge-litert") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "preserve_all_tensors is for debugging": we are
        try:
            it = Interpreter(
                model_path=None if content is not None else path,
                model_content=content,
                experimental_preserve_all_tensors=resolver != "AUTO",
                experimental_op_resolver_type=getattr(OpResolverType, resolver),
            )
            it.allocate_tensors()
        except (ValueError, RuntimeError) as err:
            raise _failed(path, "cannot load the model", err) from None
    return it


def _failed(path: str, what: str, err: BaseException) -> ExplorerError:
    """``PATH: the LiteRT interpreter WHAT (its message, on one line)``."""
    return ExplorerError(f"{path}: the LiteRT interpreter {what} ({' '.join(str(err).split())[:300]})")


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


def _invoke(path: str, inputs: dict[str, np.ndarray], resolver: str, content: bytes | None = None):
    it = _interpreter(path, resolver, content)
    resized = False
    for d in it.get_input_details():
        if d["name"] in inputs and tuple(d["shape"]) != np.shape(inputs[d["name"]]):
            it.resize_tensor_input(d["index"], list(np.shape(inputs[d["name"]])))  # --input-shape
            resized = True
    if resized:
        try:
            it.allocate_tensors()
        except (ValueError, RuntimeError) as err:
            raise _failed(path, "cannot run the model at the input sizes given", err) from None
    for d in it.get_input_details():
        if d["name"] not in inputs:
            raise ExplorerError(f"{path}: input '{d['name']}' has no value")
        it.set_tensor(d["index"], inputs[d["name"]])
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            it.invoke()
    except (ValueError, RuntimeError) as err:
        raise _failed(path, "failed to run the model", err) from None
    return it


def _tensors(it) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
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
    it = _invoke(path, inputs, BUILTIN)
    tensors = _tensors(it)
    quant = _quantization(it)
    spread, engines = _spread(path, inputs, tensors, quant)
    return ReferenceRun(path, tensors, quant, spread, engines)


def _spread(path: str, inputs, tensors: dict[str, np.ndarray], quant) -> tuple[dict[str, Spread], str | None]:
    """For a quantized model: per tensor, how far LiteRT's reference kernels and its XNNPACK
    delegate land from the builtin kernels' run (float models: nothing, the fixed tolerance
    applies)."""
    if not any(n in tensors and np.issubdtype(tensors[n].dtype, np.integer) for n in quant):
        return {}, None
    others, ran = [], []
    try:
        others.append(_tensors(_invoke(path, inputs, "BUILTIN_REF")))
        ran.append("reference kernels")
    except ExplorerError:
        pass  # an operator without a reference kernel: the other engine alone
    try:
        with _native_stderr_quiet():
            others.append(_outputs(_invoke(path, inputs, "AUTO", _every_output_a_graph_output(path))))
        ran.append("XNNPACK delegate")
    except (ExplorerError, ValueError, RuntimeError):
        pass  # a model the delegate or the rewrite cannot take
    if not others:
        return {}, None  # no second opinion: the fixed budgets alone apply
    return measure_spread(tensors, others, quant), f"LiteRT's {' and its '.join(ran)} against its builtin kernels"


@contextlib.contextmanager
def _native_stderr_quiet():
    """LiteRT's C++ prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." on the
    process's stderr when the delegate is made: not a line for the compile's output."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _outputs(it) -> dict[str, np.ndarray]:
    """The graph outputs of a run, by tensor name."""
    return {d["name"]: np.array(it.get_tensor(d["index"]), copy=True) for d in it.get_output_details()}


def _every_output_a_graph_output(path: str) -> bytes:
    """A copy of the model whose main subgraph outputs every operator's outputs: a delegate
    then writes each of them (it keeps only graph outputs). Raises ValueError when the model
    cannot be rewritten."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    from tvm_explorer.frontends.model_file import read_model_bytes

    try:
        model = schema.ModelT.InitFromPackedBuf(read_model_bytes(path, "a TFLite model"), 0)
        sg = model.subgraphs[0]
        outputs = [int(t) for t in (sg.outputs if sg.outputs is not None else [])]
        for op in sg.operators or []:
            outputs += [int(t) for t in (op.outputs if op.outputs is not None else []) if t >= 0 and t not in outputs]
        sg.outputs = outputs
        model.signatureDefs = None  # they name the outputs by index: the copy has more
        builder = flatbuffers.Builder(0)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())
    except Exception as err:  # noqa: BLE001 - any unpacking or packing failure: no such engine
        raise ValueError(f"cannot rewrite {path}: {err}") from None


def quantization_of(path: str | os.PathLike) -> dict[str, Quantization]:
    """Every quantized tensor's parameters in the model at ``path`` (nothing is run)."""
    return _quantization(_interpreter(os.fspath(path)))


def _quantization(it) -> dict[str, Quantization]:
    """Every quantized tensor's parameters the interpreter ``it`` reports, by tensor name."""
    out: dict[str, Quantization] = {}
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


def describe(path) -> str:
    """What ``--numerics`` compares a TFLite model with (``ReferenceEngine.describe``)."""
    return engine_on("LiteRT interpreter", path)
