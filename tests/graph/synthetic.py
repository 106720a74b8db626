"""Graph documents of any size without a compile: the graph app's input (docs/graph.md, "The graph
document") for models too large to compile in a test — a flat chain of thousands of layers with no
scopes (issue 37's blank page) and an LLM-shaped model (decoder layers of attention and MLP with
weight DEQUANTIZEs, residual adds, branching). Groups, repetitions and folded nodes come from the
server's own functions (graphview/structure.py), so the app sees what a real bundle would give it.
Used by tests/graph/test_scale.py and bench/graph_paint.py."""

from __future__ import annotations

import random
from typing import Any

from tvm_explorer.graphview.document import OVERLAYS, VERSION
from tvm_explorer.graphview.structure import (
    Edge,
    Scoped,
    document_edges,
    document_groups,
    folds,
    repetitions,
    scope_groups,
)


class _Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[Edge] = []
        self.scopes: dict[str, list[str]] = {}
        self.io: list[dict[str, str]] = []

    def input(self, name: str, shape: str) -> str:
        nid = f"in:0:{name}"
        self.io.append({"id": nid, "kind": "input", "name": name, "type": shape})
        return nid

    def output(self, src: str, name: str, shape: str) -> None:
        nid = f"out:0:{name}"
        self.io.append({"id": nid, "kind": "output", "name": name, "type": shape})
        self.edges.append(Edge(src, nid, name, shape))

    def op(self, opcode: str, scope: list[str], leaf: str, inputs: list[str], shape: str, weight: bool = False) -> str:
        nid = str(len(self.nodes))
        name = ".".join(scope) + "/" + leaf if scope else leaf
        time = 0.0 if weight else round(self.rng.uniform(0.001, 0.2), 4)
        code = 0 if weight else self.rng.randint(20, 400)
        self.nodes.append(
            {
                "id": nid,
                "subgraph": 0,
                "op_index": len(self.nodes),
                "opcode": opcode,
                "name": name,
                "module": ".".join(scope),
                "module_class": "",
                "source": None,
                "group": None,
                "attributes": {},
                "inputs": [{"name": f"t{i}", "type": shape, "const": False} for i in inputs]
                + ([{"name": f"{name}.weight", "type": shape, "const": True}] if weight else []),
                "outputs": [{"name": f"t{nid}", "type": shape, "const": False}],
                "kernels": [] if weight else [f"fused_{opcode.lower()}_{nid}"],
                "metrics": {
                    "time": time,
                    "share": None,
                    "code": code,
                    "workspace": 0 if weight else self.rng.choice([0, 1024, 65536]),
                    "flops": 0 if weight else self.rng.randint(1000, 10**7),
                    "error": None if weight else self.rng.choice([0.0, 1e-7, 3e-6]),
                    "kernels": 0 if weight else 1,
                    "coverage": "model only" if weight else "to code",
                    "schedule": None if weight else "default",
                },
                "cost": None,
                "numerics": None,
            }
        )
        self.scopes[nid] = scope
        for i in inputs:
            self.edges.append(Edge(i, nid, f"t{i}", shape))
        return nid

    def document(self, file: str) -> dict[str, Any]:
        scoped = [Scoped(int(n["id"]), 0, self.scopes[n["id"]], ".") for n in self.nodes]
        group_list, of_layer = scope_groups(scoped, {})
        repeats = repetitions(group_list, of_layer, {int(n["id"]): n["opcode"] for n in self.nodes})
        folded = folds(
            [n["id"] for n in self.nodes],
            self.edges,
            {io["id"] for io in self.io if io["kind"] == "input"},
            {e.source for e in self.edges if e.target.startswith("out:")},
        )
        total = sum(n["metrics"]["time"] for n in self.nodes)
        for n in self.nodes:
            n["group"] = of_layer[int(n["id"])]
            n["fold"] = folded.get(n["id"])
            n["metrics"]["share"] = n["metrics"]["time"] / total if total else None
        return {
            "format": "tvm-explorer-graph",
            "version": VERSION,
            "model": {
                "file": file,
                "kind": "pt2",
                "unit": "node",
                "target": "c",
                "sha256": file,
                "tool": {},
                "created": "",
            },
            "nodes": self.nodes,
            "io": self.io,
            "edges": document_edges(self.edges),
            "groups": document_groups(group_list, repeats),
            "overlays": [
                {"id": oid, "label": label, "scale": scale, "unit": unit, "available": True, "note": None}
                for oid, label, scale, unit in OVERLAYS
            ],
            "kernels": {},
            "costs_note": "synthetic figures (tests/graph/synthetic.py)",
        }


def chain_document(layers: int) -> dict[str, Any]:
    """``layers`` operators one after the other, no scopes: nothing to group by (issue 37: the app
    overflowed its stack laying this out at ~4 500 layers and stayed blank)."""
    b = _Builder(0)
    x = b.input("x", "float32[1,64]")
    for i in range(layers):
        x = b.op(("ADD", "MUL", "TANH")[i % 3], [], f"op_{i}", [x], "float32[1,64]")
    b.output(x, "y", "float32[1,64]")
    return b.document(f"chain{layers}.tflite")


def llm_document(decoder_layers: int, seed: int = 0) -> dict[str, Any]:
    """An LLM-shaped graph: embedding, ``decoder_layers`` decoder layers (RMS norms, q/k/v/o
    projections each with its weight's DEQUANTIZE, rotary embedding, attention with softmax, a
    gated MLP, residual adds), final norm and head; module paths as ``torch.export`` gives them
    (``model.layers.7.self_attn.q_proj``). About 60 layers per decoder layer, 12 of them weights."""
    b = _Builder(seed)
    hid, att = "float32[1,16,512]", "float32[1,8,16,16]"
    ids = b.input("ids", "int64[1,16]")

    def linear(scope: list[str], x: str) -> str:
        w = b.op("DEQUANTIZE", scope, "weight_dequantize", [], hid, weight=True)
        t = b.op("TRANSPOSE", scope, "t", [w], hid)
        y = b.op("MATMUL", scope, "mm", [x, t], hid)
        return b.op("RESHAPE", scope, "view", [y], hid)

    def norm(scope: list[str], x: str) -> str:
        p = b.op("POW", scope, "pow", [x], hid)
        m = b.op("MEAN", scope, "mean", [p], hid)
        r = b.op("RSQRT", scope, "rsqrt", [m], hid)
        y = b.op("MUL", scope, "mul", [x, r], hid)
        w = b.op("DEQUANTIZE", scope, "weight_dequantize", [], hid, weight=True)
        return b.op("MUL", scope, "mul_1", [y, w], hid)

    def rotary(scope: list[str], x: str, add: str, times_cos: str, times_sin: str) -> str:
        """x·cos + x·sin, the rotary embedding, with the node names the model gives them."""
        return b.op(
            "ADD",
            scope,
            add,
            [b.op("MUL", scope, times_cos, [x, cos], att), b.op("MUL", scope, times_sin, [x, sin], att)],
            att,
        )

    x = b.op("EMBEDDING", ["model", "embed_tokens"], "embedding", [ids], hid)
    pos = b.op("ARANGE", ["model", "rotary_emb"], "arange", [], hid, weight=True)
    cos = b.op("COS", ["model", "rotary_emb"], "cos", [pos], hid)
    sin = b.op("SIN", ["model", "rotary_emb"], "sin", [pos], hid)
    for i in range(decoder_layers):
        layer = ["model", "layers", str(i)]
        h = norm([*layer, "input_layernorm"], x)
        attn = [*layer, "self_attn"]
        q = linear([*attn, "q_proj"], h)
        k = linear([*attn, "k_proj"], h)
        v = linear([*attn, "v_proj"], h)
        qr = rotary(attn, q, "add", "mul", "mul_1")
        kr = rotary(attn, k, "add_1", "mul_2", "mul_3")
        s = b.op("BATCH_MATMUL", attn, "bmm", [qr, b.op("TRANSPOSE", attn, "transpose", [kr], att)], att)
        p = b.op("SOFTMAX", attn, "softmax", [b.op("MUL", attn, "scale", [s], att)], att)
        o = b.op("BATCH_MATMUL", attn, "bmm_1", [p, v], att)
        o = linear(
            [*attn, "o_proj"], b.op("RESHAPE", attn, "view", [b.op("TRANSPOSE", attn, "transpose_1", [o], att)], hid)
        )
        x = b.op("ADD", layer, "add", [x, o], hid)
        h = norm([*layer, "post_attention_layernorm"], x)
        mlp = [*layer, "mlp"]
        g = linear([*mlp, "gate_proj"], h)
        u = linear([*mlp, "up_proj"], h)
        m = b.op("MUL", mlp, "mul", [b.op("SILU", mlp, "silu", [g], hid), u], hid)
        x = b.op("ADD", layer, "add_1", [x, linear([*mlp, "down_proj"], m)], hid)
    x = norm(["model", "norm"], x)
    y = linear(["lm_head"], x)
    b.output(y, "logits", "float32[1,16,4096]")
    return b.document(f"llm{decoder_layers}.pt2")
