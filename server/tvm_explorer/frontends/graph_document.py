"""The model document of an ONNX or PyTorch model (``model.onnxgraph`` / ``model.fxgraph``).

Like ``model.tflgraph``: a header, the graph's inputs and outputs, then one entry per node —
``node N OP name  attr=value…`` with ``in``/``out`` tensor lines (name, dtype[shape]) and,
when known, the user's source line. Nodes are grouped under ``module PATH`` headings where
the model carries a module hierarchy. The node entry is where "go to the layer" lands; each
tensor name is indexed so that "go to definition" on it reaches the node producing it.
"""

from __future__ import annotations

from tvm_explorer.bundle.index import Range
from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel, GraphNode
from tvm_explorer.frontends.input_shapes import input_note
from tvm_explorer.frontends.model import TensorInfo
from tvm_explorer.inert.text import one_line
from tvm_explorer.provenance import OriginTable

MAX_DOCUMENT_CHARS = 128 * 1024 * 1024
"""Most characters a model document is rendered to (a 32-layer Llama's is ~10 MB): a graph that
would write more (a few KB of hostile JSON can name a tensor a million times) is refused with
one message instead of being rendered into the server's memory."""

_TITLES = {"onnx": "ONNX model", "torch": "PyTorch ExportedProgram", "nn": "tvm.relax.frontend.nn module"}


def _type(t: TensorInfo) -> str:
    return f"{t.dtype}[{','.join(str(d) for d in t.shape)}]"


def _short(path: str) -> str:
    """A source file as the document shows it (the last two path parts)."""
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def render_graph_document(model: GraphModel, origins: OriginTable) -> tuple[str, list[Range]]:
    """The document's text and its ranges (node entries and tensor names)."""
    producer = {t.name: node.id for node in model.layers for t in node.outputs}
    node_sets = {node.id: origins.intern([(node.id, True)]) for node in model.layers}
    parts: list[str] = []
    ranges: list[Range] = []
    offset = 0

    def write(text: str) -> int:
        nonlocal offset
        start = offset
        parts.append(text)
        offset += len(text)
        if offset > MAX_DOCUMENT_CHARS:
            raise ModelError(
                f"{model.path}: its model document would be more than {MAX_DOCUMENT_CHARS // 2**20} MB of text "
                f"({len(model.layers)} nodes): not rendered"
            )
        return start

    declared = dict(model.declared_inputs)

    def tensor_line(prefix: str, t: TensorInfo, width: int, note: str = "") -> None:
        write(prefix)
        shown = one_line(t.name)
        start = write(shown)
        owner = producer.get(t.name)
        ranges.append(
            Range(
                start, start + len(shown), node_sets[owner] if owner is not None else 0, "tensor", f"tensor:0:{t.name}"
            )
        )
        extra = " const" if t.is_constant else ""
        write(f"{' ' * max(1, width - len(shown) + 1)}{one_line(_type(t))}{extra}{one_line(note)}\n")

    write(f"# {_TITLES.get(model.kind, model.kind)} {one_line(model.name)}\n")
    write(f"# sha256 {model.sha256}\n")
    write(f"# {len(model.layers)} node(s). Go to definition on a tensor name reaches the node that produces it.\n")
    for note in model.notes:
        write(f"# {one_line(note)}\n")
    for sg in model.subgraphs:
        write(f'\ngraph "{one_line(sg.name)}"\n')
        width = max([len(one_line(t.name)) for t in sg.inputs + sg.outputs] + [0])
        for t in sg.inputs:
            note = input_note(declared.get(t.name, t.shape), t.shape, t.name in model.pinned) if sg.index == 0 else ""
            tensor_line("  input  ", t, width, note)
        for t in sg.outputs:
            tensor_line("  output ", t, width)
    module = None
    for node in model.layers:
        if node.module != module:
            module = node.module
            heading = one_line(module) or "(top level)"
            cls = f" ({one_line(node.module_class)})" if node.module_class and module else ""
            write(f"\nmodule {heading}{cls}\n")
        write("\n")
        start = write(_node_head(node))
        width = max([len(one_line(t.name)) for t in node.inputs + node.outputs] + [0])
        for t in node.inputs:
            tensor_line("    in   ", t, width)
        for t in node.outputs:
            tensor_line("    out  ", t, width)
        if node.source:
            write(f"    source {one_line(_short(node.source[0]))}:{node.source[1]}  ({one_line(node.source[0])})\n")
        ranges.append(Range(start, offset - 1, node_sets[node.id], "layer", f"layer:0:{node.op_index}"))
    return "".join(parts), ranges


def _node_head(node: GraphNode) -> str:
    """Its first line; every string from the model on one line, escaped (``inert/text.py``)."""
    head = f"  node {node.op_index} {one_line(node.opcode)}"
    if node.name:
        head += f" {one_line(node.name)}"
    opts = one_line(" ".join(f"{k}={v}" for k, v in node.options.items()))
    return head + (f"  {opts}\n" if opts else "\n")


def render_document(model: GraphModel, origins: OriginTable) -> tuple[str, str, list[Range]]:
    """``(path, text, ranges)`` of the model's document in the bundle (``Frontend.render_document``)."""
    return (model.document_path, *render_graph_document(model, origins))
