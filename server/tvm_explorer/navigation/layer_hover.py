"""The layer part of a hover, for a compiler engineer: TF name, opcode, key attributes, input ->
output types, quantization, and the PrimFunc or kernel the position is in."""

from __future__ import annotations

import os
from bisect import bisect_left

from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.types import Origin
from tvm_explorer.inert.markdown import code
from tvm_explorer.inert.markdown import text as md
from tvm_explorer.navigation.layer_facts import LayerFacts, layer_facts
from tvm_explorer.navigation.sources import chain_text, group_caption, layer_caption, repeated_groups
from tvm_explorer.navigation.view import BundleView

MAX_LAYERS = 6
MAX_KERNELS = 3  # shared PrimFuncs a model layer's hover names


def _pair(options: dict, a: str, b: str) -> str | None:
    if a in options and b in options:
        return options[a] if options[a] == options[b] else f"{options[a]}×{options[b]}"
    return None


def attributes(opcode: str, facts: LayerFacts) -> list[str]:
    """Key attributes: kernel size, stride, padding, dilation, groups, fused activation, units
    (TFLite options, ONNX attributes, PyTorch ATen arguments)."""
    if opcode in _GRAPH_OPS:
        return _graph_attributes(opcode, facts)
    o = facts.options
    out = []
    kernel = None
    if opcode in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV") and len(facts.inputs) > 1:
        weights = facts.inputs[1] if opcode != "TRANSPOSE_CONV" else facts.inputs[1]
        if len(weights.shape) == 4:
            kernel = f"{weights.shape[1]}×{weights.shape[2]}"
    elif "filter_height" in o and "filter_width" in o:
        kernel = f"{o['filter_height']}×{o['filter_width']}"
    if kernel:
        out.append(f"{kernel} kernel")
    if opcode == "FULLY_CONNECTED" and len(facts.inputs) > 1 and facts.inputs[1].shape:
        out.append(f"{facts.inputs[1].shape[0]} units")
    if stride := _pair(o, "stride_h", "stride_w"):
        out.append(f"stride {stride}")
    if "padding" in o:
        out.append(f"padding {o['padding']}")
    if (dilation := _pair(o, "dilation_h_factor", "dilation_w_factor")) and dilation != "1":
        out.append(f"dilation {dilation}")
    if "depth_multiplier" in o and o["depth_multiplier"] != "1":
        out.append(f"depth multiplier {o['depth_multiplier']}")
    act = o.get("fused_activation_function")
    if act and act != "NONE":
        out.append(act)
    return out


# ONNX op types and PyTorch ATen targets -> what they are (conv, pool or dense)
_GRAPH_OPS = {
    "Conv": "conv",
    "ConvTranspose": "conv",
    "MaxPool": "pool",
    "AveragePool": "pool",
    "LpPool": "pool",
    "Gemm": "dense",
    "MatMul": "dense",
    "aten.convolution.default": "conv",
    "aten.conv2d.default": "conv",
    "aten.conv1d.default": "conv",
    "aten.conv_transpose2d.input": "conv",
    "aten.max_pool2d.default": "pool",
    "aten.max_pool2d_with_indices.default": "pool",
    "aten.avg_pool2d.default": "pool",
    "aten.linear.default": "dense",
    "aten.addmm.default": "dense",
}


def _numbers(value: str | None) -> list[str]:
    """``[2,2]`` -> ["2", "2"]; ``3`` -> ["3"]; anything else -> []."""
    if not value:
        return []
    items = value.strip("[]()").split(",")
    return [x.strip() for x in items] if all(x.strip().lstrip("-").isdigit() for x in items) else []


def _spatial(value: str | None) -> str | None:
    """``[2,2]`` -> "2", ``[3,1]`` -> "3×1"."""
    nums = _numbers(value)
    if not nums:
        return None
    return nums[0] if len(set(nums)) == 1 else "×".join(nums)


def _graph_attributes(opcode: str, facts: LayerFacts) -> list[str]:
    """The attributes of an ONNX node or a PyTorch ATen call (options by their ONNX / ATen
    names: kernel_shape / kernel_size, strides / stride, pads / padding, dilations / dilation,
    group / groups)."""
    kind = _GRAPH_OPS[opcode]
    o = facts.options
    out = []
    weights = facts.inputs[1] if len(facts.inputs) > 1 else None
    if opcode == "aten.addmm.default":  # addmm(bias, x, weight^T): weight^T is [K, N]
        weights = facts.inputs[2] if len(facts.inputs) > 2 else None
        if weights is not None and len(weights.shape) == 2:
            out.append(f"{weights.shape[1]} units")
        return out
    if kind == "dense":
        if weights is not None and len(weights.shape) == 2:
            # ATen linear's weight is [N, K]; ONNX Gemm's B is [K, N] unless transB=1, MatMul's
            # B is [K, N]
            rows = opcode.startswith("aten.") or o.get("transB") == "1"
            out.append(f"{weights.shape[0] if rows else weights.shape[1]} units")
        return out
    kernel = _numbers(o.get("kernel_shape") or o.get("kernel_size"))
    if not kernel and kind == "conv" and weights is not None and len(weights.shape) >= 3:
        kernel = list(weights.shape[2:])
    if kernel:
        out.append(f"{'×'.join(kernel)} kernel")
    if stride := _spatial(o.get("strides") or o.get("stride")):
        out.append(f"stride {stride}")
    pads = o.get("pads") or o.get("padding")
    if pads is not None and (padding := _spatial(pads)):
        out.append(f"padding {padding}" if "×" not in padding else f"pads {pads}")
    if o.get("auto_pad") not in (None, "NOTSET", "b'NOTSET'"):
        out.append(f"auto_pad {o['auto_pad']}")
    if (dilation := _spatial(o.get("dilations") or o.get("dilation"))) and dilation != "1":
        out.append(f"dilation {dilation}")
    groups = o.get("group") or o.get("groups")
    if groups and groups != "1":
        out.append(f"groups {groups}")
    return out


def _types(facts: LayerFacts) -> str | None:
    ins = [code(t.type_text) for t in facts.inputs if not t.const]
    outs = [code(t.type_text) for t in facts.outputs]
    if not ins and not outs:
        return None
    return f"{', '.join(ins) or '—'} → {', '.join(outs) or '—'}"


def _quantization(facts: LayerFacts) -> str | None:
    parts = []
    data = [t for t in facts.inputs if not t.const and t.quantization]
    weights = [t for t in facts.inputs if t.const and t.quantization]
    if data:
        parts.append("in " + _short_quant(data[0].quantization))
    if weights:
        parts.append("weights " + _short_quant(weights[0].quantization))
    if facts.outputs and facts.outputs[0].quantization:
        parts.append("out " + _short_quant(facts.outputs[0].quantization))
    return "quantized: " + " · ".join(parts) if parts else None


def _short_quant(text: str) -> str:
    return text.replace("zero_point=", "zp ").replace("scale=", "scale ")


def _name(origin: Origin) -> str:
    """The layer's name: the bundle's (TF layer, ONNX node, PyTorch module path), else the TF
    name read from its output tensors."""
    return origin.layer.display_name


def _where(layer) -> str:
    """`` (Conv2d) — net.py:23``: the module class and the user's source line, when known."""
    out = f" ({md(layer.module_class)})" if getattr(layer, "module_class", "") else ""
    source = getattr(layer, "source", None)
    if source is not None:
        out += f" — {md(os.path.basename(source[0]))}:{source[1]}"
    return out


def layer_lines(view: BundleView, origins: list[Origin], in_model: bool) -> list[str]:
    """The hover lines about the origin layers: a short block for one layer, one line each
    for several."""
    if not origins:
        return ["_No origin layer recorded here._"]
    if len(origins) == 1:
        o = origins[0]
        layer = o.layer
        facts = layer_facts(view, layer.id)
        role = "" if in_model else (", layer output" if o.is_output else ", part of layer")
        lines = [
            f"**{md(layer.opcode)}** {code(_name(o))} — op {layer.op_index}"
            f"{f' (subgraph {layer.subgraph})' if layer.subgraph else ''}{role}"
        ]
        if _where(layer):  # ONNX / PyTorch: "block1.act (ReLU) — net.py:22"
            lines.append(md(layer_caption(layer)))
        if chain := chain_text(layer):
            lines.append(f"called from {code(chain)}")
        if attrs := attributes(layer.opcode, facts):
            lines.append(md(" · ".join(attrs)))
        if types := _types(facts) or _output_types(o):
            lines.append(types)
        if quant := _quantization(facts):
            lines.append(md(quant))
        return [line + "  " for line in lines[:-1]] + lines[-1:]
    lines = []
    groups = repeated_groups(origins)
    for members in groups[:MAX_LAYERS]:
        o, path = members[0]
        layer = o.layer
        facts = layer_facts(view, layer.id)
        bits = attributes(layer.opcode, facts)
        types = _types(facts) or _output_types(o)
        tail = " · ".join([md(b) for b in bits] + ([types] if types else []))
        role = "" if in_model else (", layer output" if o.is_output else ", part of layer")
        ops = ", ".join(str(m.layer.op_index) for m, _ in members)
        name = md(group_caption(layer, path)) if _where(layer) else code(path if len(members) > 1 else _name(o))
        count = f" ×{len(members)}" if len(members) > 1 else ""
        lines.append(
            f"- **{md(layer.opcode)}** {name}{count} (op{'s' if len(members) > 1 else ''} {ops}{role})"
            f"{': ' + tail if tail else ''}"
        )
        if chain := chain_text(layer):
            lines[-1] += "  "  # a line break inside the list item
            lines.append(f"  called from {code(chain)}")
    if len(groups) > MAX_LAYERS:
        rest = sum(len(g) for g in groups[MAX_LAYERS:])
        lines.append(f"- … and {rest} more layers")
    return lines


def _output_types(origin: Origin) -> str | None:
    outs = []
    for typ in origin.layer.output_types:
        if isinstance(typ, dict) and isinstance(typ.get("shape"), list):
            outs.append(code(f"{typ.get('dtype', '')}[{','.join(str(d) for d in typ['shape'])}]"))
    return f"→ {', '.join(outs)}" if outs else None


def container_line(view: BundleView, path: str, ranges: list[Range], shown: set[int]) -> str | None:
    """The PrimFunc or kernel the position is in (or the PrimFunc a binding calls), with the
    other layers it computes when it is shared."""
    doc = view.bundle.document(path)
    prim = next((r for r in ranges if r.kind == "primfunc"), None)
    if prim is not None:
        name = prim.key[len("prim:") :]
        what = "kernel" if doc is not None and doc.stage == "code" and path.endswith(".cu") else "PrimFunc"
        if doc is not None and doc.stage == "code" and what == "kernel" and not name.endswith("_kernel"):
            what = "function"
        head = f"In {what} {code(name)}"
    else:
        calls = next((r for r in ranges if r.kind == "binding" and r.link and r.link.startswith("prim:")), None)
        if calls is None or calls.link is None:
            return None
        prim = calls
        head = f"Calls PrimFunc {code(calls.link[len('prim:') :])}"
    others = sorted(primfunc_layers(view, path, prim) - shown)
    if others and prim.kind == "primfunc":
        head += f", shared with {_layer_names(view, others)}"
    return head


def primfunc_layers(view: BundleView, path: str, prim: Range) -> set[int]:
    """Every layer a PrimFunc (or binding) range computes: its own origins and those of the
    ranges inside it."""
    layers = view.layer_map.layers_of_set
    index = view.bundle.index(path)
    inside = set(layers[prim.origin_set])
    for rng in index.ranges[bisect_left(index.ranges, prim.start, key=lambda r: r.start) :]:
        if rng.start >= prim.end:
            break
        if rng.start >= prim.start and rng.end <= prim.end:
            inside |= layers[rng.origin_set]
    return inside


def _layer_names(view: BundleView, lids: list[int]) -> str:
    """``op 0 CONV_2D, op 2 RELU``; the same layer of repeated blocks once: ``ops 67, 170
    aten.mm.default m.model.layers.{0..1}.self_attn.k_proj``."""
    layers = [view.bundle.layers[lid] for lid in lids]
    groups = repeated_groups([Origin(lay, False) for lay in layers])
    names = []
    for group in groups[:4]:
        lay, path = group[0][0].layer, group[0][1]
        if len(group) == 1:
            names.append(f"op {lay.op_index} {md(lay.opcode)}")
        else:
            ops = ", ".join(str(o.layer.op_index) for o, _ in group)
            names.append(f"ops {ops} {md(lay.opcode)} {code(path)}")
    rest = sum(len(g) for g in groups[4:])
    more = f" and {rest} more" if rest else ""
    return ", ".join(names) + more


def shared_kernel_lines(view: BundleView, layer_id: int) -> list[str]:
    """On a model layer: each PrimFunc of the final TIR computing it that also computes other
    layers (a fused or shared kernel), naming them. Go to definition from such a kernel lists
    every layer it computes; this says which entries of that list come with this one."""
    tir = [d.path for d in view.bundle.documents if d.stage == "tir"]
    if not tir:
        return []
    path = tir[-1]
    out, seen, last = [], set(), None
    for rng in view.layer_map.ranges(layer_id, path):  # in document order
        if last is not None and last.start <= rng.start and rng.end <= last.end:
            continue  # another statement of the PrimFunc just looked at
        prim = (
            rng
            if rng.kind == "primfunc"
            else next((r for r in view.enclosing(path, rng.start) if r.kind == "primfunc"), None)
        )
        if prim is None:
            continue
        last = prim
        # A CUDA host PrimFunc X and its device X_kernel are one kernel: name it once.
        base = prim.key.removesuffix("_kernel")
        if base in seen:
            continue
        seen.add(base)
        others = sorted(primfunc_layers(view, path, prim) - {layer_id})
        if others:
            out.append(
                f"Computed in PrimFunc {code(prim.key[len('prim:') :])}, shared with {_layer_names(view, others)}."
            )
    if len(out) > MAX_KERNELS:
        out[MAX_KERNELS:] = [f"… and {len(out) - MAX_KERNELS} more shared PrimFuncs."]
    return out
