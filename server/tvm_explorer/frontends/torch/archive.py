"""Read a ``.pt2`` archive's graph without PyTorch and without unpickling anything.

A ``.pt2`` written by ``torch.export.save`` is a zip: the program's graph is JSON
(``<archive>/models/model.json``, torch's serialization schema), weights and sample inputs are
pickles beside it. Viewing a model must not run code from the file, so this reads only the
JSON and describes the graph as saved (before the decompositions TVM's importer runs; compiling
shows the decomposed graph in the bundle's ``model.fxgraph``). A graph that compiling would
refuse (a symbolic size, guard or name that torch would evaluate as code, ``program_check``) is
refused here too, with the same message.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from typing import Any

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel, GraphNode, source_and_stack
from tvm_explorer.frontends.model import SubgraphInfo, TensorInfo
from tvm_explorer.frontends.model_file import open_model_file
from tvm_explorer.frontends.torch.loader import DOCUMENT_PATH, _clean_path
from tvm_explorer.frontends.torch.program_check import check_program, short_name

# A graph's JSON is a few MB even for large models (a 32-layer Llama's: ~10 MB); beyond this it
# is not one we can show. Checked before anything is decompressed, as is the ratio: real graph
# JSON compresses ~10x, a decompression bomb (a few KB of zip, hundreds of MB of JSON) 1000x.
MAX_PROGRAM_JSON = 64 * 1024 * 1024
MAX_RATIO = 200
RATIO_FROM = 8 * 1024 * 1024  # below this size any ratio is fine
MAX_LIST_SHOWN = 16  # values of a list argument the document writes (then "… N values")
MAX_OPTION_CHARS = 200  # characters of one argument's value the document writes

# torch/_export/serde/schema.py ScalarType
_DTYPES: dict[object, str] = {  # looked up with whatever the archive holds
    1: "uint8",
    2: "int8",
    3: "int16",
    4: "int32",
    5: "int64",
    6: "float16",
    7: "float32",
    8: "float64",
    9: "complex32",
    10: "complex64",
    11: "complex128",
    12: "bool",
    13: "bfloat16",
    28: "uint16",
    29: "float8_e4m3fn",
    30: "float8_e5m2",
    31: "float8_e4m3fnuz",
    32: "float8_e5m2fnuz",
    33: "float8_e8m0fnu",
    34: "uint32",
    35: "uint64",
}
_WHAT = "a saved torch.export program (.pt2 written by torch.export.save)"


def read_pt2_archive(path: str | os.PathLike) -> GraphModel:
    """The graph of a ``.pt2`` file as saved; ModelError names the file if it is not one."""
    path = os.fspath(path)
    program = _program_json(path)
    try:
        return _describe(path, program)
    except RecursionError:
        raise ModelError(f"{path}: the program's graph JSON is nested too deeply to be shown") from None
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ModelError(
            f"{path}: the program's graph JSON is not in the form torch.export.save "
            f"writes ({type(err).__name__}: {err})"
        ) from None


def _program_json(path: str) -> dict:
    fh = os.fdopen(open_model_file(path, _WHAT), "rb")  # a regular file only: never blocks
    with fh:
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError) as err:
            raise ModelError(f"{path}: not {_WHAT}: not a zip archive ({err})") from None
        with archive:
            entries = [i for i in archive.infolist() if _is_program(i.filename)]
            if not entries:
                raise ModelError(f"{path}: not {_WHAT}: the archive has no models/model.json")
            entry = min(entries, key=lambda i: (not i.filename.endswith("/model.json"), i.filename))
            if entry.file_size > MAX_PROGRAM_JSON:
                raise ModelError(
                    f"{path}: the program's graph ({entry.filename}) is "
                    f"{entry.file_size // 2**20} MB, more than the "
                    f"{MAX_PROGRAM_JSON // 2**20} MB a model document shows"
                )
            if entry.file_size > RATIO_FROM and entry.file_size > MAX_RATIO * max(entry.compress_size, 1):
                raise ModelError(
                    f"{path}: the program's graph ({entry.filename}) would decompress from "
                    f"{entry.compress_size} bytes to {entry.file_size // 2**20} MB, more than {MAX_RATIO} times: "
                    "not read (a decompression bomb?)"
                )
            try:
                with archive.open(entry) as stream:
                    data = stream.read(MAX_PROGRAM_JSON + 1)  # never more than declared and allowed
                if len(data) > MAX_PROGRAM_JSON:
                    raise ModelError(f"{path}: the program's graph ({entry.filename}) is larger than it says")
                program = json.loads(data)
            except RecursionError:
                raise ModelError(
                    f"{path}: {entry.filename} is nested too deeply to be a program's graph JSON"
                ) from None
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
                raise ModelError(
                    f"{path}: {entry.filename} cannot be read ({type(err).__name__}: "
                    f"{' '.join(str(err).split())[:200]}); a truncated file?"
                ) from None
        if not isinstance(program, dict) or "graph_module" not in program:
            raise ModelError(f"{path}: {entry.filename} holds no graph_module: not {_WHAT}")
        # what torch would evaluate when compiling is refused here too, before it is shown
        check_program(path, short_name(entry.filename), program)
        program["_sha256"] = _sha256(fh)
    return program


def _is_program(name: str) -> bool:
    parts = name.split("/")
    return len(parts) >= 2 and parts[-2] == "models" and parts[-1].endswith(".json") and len(parts) <= 3


def _sha256(fh) -> str:
    digest = hashlib.sha256()
    fh.seek(0)
    for block in iter(lambda: fh.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def _describe(path: str, program: dict) -> GraphModel:
    gm = program["graph_module"]
    graph = gm["graph"]
    values = graph.get("tensor_values") or {}
    index: dict[str, int] = {}
    specs = gm.get("signature", {}).get("input_specs", [])
    user = {_arg_name(spec["user_input"]["arg"]) for spec in specs if "user_input" in spec}
    params = {
        name
        for spec in specs
        for kind, body in spec.items()
        if kind != "user_input"
        for name in [_arg_name(body.get("arg", {}))]
        if name
    }

    def tensor(name: str) -> TensorInfo:
        meta: dict[str, Any] = values.get(name) or {}
        shape = tuple(_size(s) for s in meta.get("sizes", ()))
        dtype = _DTYPES.get(meta.get("dtype"), "?") if meta else "?"
        return TensorInfo(index.setdefault(name, len(index)), name, shape, dtype, name in params)

    nodes: list[GraphNode] = []
    for raw in graph.get("nodes", []):
        nid = len(nodes)
        inputs = [tensor(n) for arg in raw.get("inputs", []) for n in _tensor_names(arg.get("arg", {}))]
        outputs = [tensor(n) for arg in raw.get("outputs", []) for n in _tensor_names(arg)]
        meta = raw.get("metadata") or {}
        module, cls = _module(meta.get("nn_module_stack", ""))
        node_name = raw.get("name") or (outputs[0].name if outputs else f"node{nid}")
        source, stack = source_and_stack(meta.get("stack_trace"))
        nodes.append(
            GraphNode(
                id=nid,
                op_index=nid,
                opcode=_op_name(raw.get("target", "?")),
                inputs=inputs,
                outputs=outputs,
                options=_options(raw.get("inputs", [])),
                name=f"{module}/{node_name}" if module else node_name,
                module=module,
                module_class=cls,
                source=source,
                stack=stack,
            )
        )
    inputs = [tensor(n) for arg in graph.get("inputs", []) for n in _tensor_names(arg) if n in user]
    outputs = [tensor(n) for arg in graph.get("outputs", []) for n in _tensor_names(arg)]
    model = GraphModel(
        "torch", path, program["_sha256"], nodes, [SubgraphInfo(0, "forward", inputs, outputs)], None, DOCUMENT_PATH
    )
    version = program.get("torch_version") or "?"
    model.notes = [
        f"the graph as saved by torch {version} (read from the archive's JSON; weights "
        f"not loaded); {len(params)} parameter(s)/buffer(s)",
        "compiling shows the decomposed ATen graph TVM converts in the bundle's model.fxgraph",
    ]
    return model


def _arg_name(arg: dict) -> str:
    if "as_tensor" in arg:
        return arg["as_tensor"]["name"]
    return arg.get("name", "")


def _tensor_names(arg: dict) -> list[str]:
    """The tensors one serialized argument holds (``as_tensor``, ``as_tensors``, optional ones)."""
    if not isinstance(arg, dict):
        return []
    if "as_tensor" in arg:
        return [arg["as_tensor"]["name"]]
    if "as_tensors" in arg:
        return [t["name"] for t in arg["as_tensors"]]
    if "as_optional_tensor" in arg:
        return _tensor_names(arg["as_optional_tensor"])
    if "as_optional_tensors" in arg:
        return [n for t in arg["as_optional_tensors"] for n in _tensor_names(t)]
    return []


def _size(size: dict):
    if "as_int" in size:
        return int(size["as_int"])
    expr = size.get("as_expr", {})
    return str(expr.get("expr_str", "?")) if isinstance(expr, dict) else "?"


def _op_name(target: str) -> str:
    """``aten.conv2d.default`` as the bundle names ATen ops; ``getitem`` for builtins."""
    if target.startswith("torch.ops."):
        return target[len("torch.ops.") :]
    return target.rsplit(".", 1)[-1]


def _module(stack: str) -> tuple[str, str]:
    """The innermost module's path and class of a serialized ``nn_module_stack``
    (``key,path,class`` entries joined by ``;``, the class last)."""
    if not stack:
        return "", ""
    key_path, _, cls = stack.split(";")[-1].rpartition(",")
    path = _clean_path(key_path.partition(",")[2])
    return path, (cls.rsplit(".", 1)[-1] if path else "")


def _options(inputs: list[dict]) -> dict:
    """Non-tensor arguments by their schema names (``stride=[1,1]``)."""
    out = {}
    for arg in inputs:
        body = arg.get("arg", {})
        if not isinstance(body, dict) or _tensor_names(body) or not body:
            continue
        ((kind, value),) = body.items()
        if kind in ("as_none",):
            continue
        out[arg.get("name", "?")] = _text(kind, value)
    return out


def _text(kind: str, value) -> str:
    if kind == "as_scalar_type":
        return _DTYPES.get(value, str(value))
    if isinstance(value, list):
        shown = ",".join(_text(kind, v) for v in value[:MAX_LIST_SHOWN])
        more = f",… {len(value)} values" if len(value) > MAX_LIST_SHOWN else ""
        return f"[{shown}{more}]"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, dict):
        return ",".join(f"{v}"[:MAX_OPTION_CHARS] for v in list(value.values())[:MAX_LIST_SHOWN])[:MAX_OPTION_CHARS]
    return str(value).replace(" ", "")[:MAX_OPTION_CHARS]
