"""What the graph document says about drawing (graphview/structure.py), on small hand-made graphs:
which nodes fold into the node they prepare a constant for, and which groups are repetitions."""

from __future__ import annotations

from tvm_explorer.graphview.structure import Edge, Scoped, folds, repetitions, scope_groups


def edge(a: str, b: str) -> Edge:
    return Edge(a, b, f"{a}>{b}", "f32[1]")


def test_weights_fold_into_their_consumer_and_dead_ends_into_their_producer():
    # in -> 2 (conv) <- 1 (reshape) <- 0 (dequantize); 3: an assert joined to nothing;
    # 4 (arange, no input) -> 5 (where) <- 2; 5 -> out; 2 -> 6 (an assert: read by nothing)
    edges = [edge("in:0:x", "2"), edge("0", "1"), edge("1", "2"), edge("4", "5"), edge("2", "5"), edge("5", "out:0:y"), edge("2", "6")]
    got = folds([str(i) for i in range(7)], edges, {"in:0:x"}, {"5"})
    assert got == {"0": "2", "1": "2", "3": "5", "4": "5", "6": "2"}
    assert folds(["0", "1"], [edge("0", "1")], set(), set()) == {}  # no graph input known: nothing folded


def test_decoder_layers_are_repetitions_and_lookalike_names_are_not():
    layers = []
    for i in range(3):  # three identical decoder layers
        layers += [Scoped(len(layers) + k, 0, ["model", "layers", str(i)], ".") for k in range(3)]
    for name, n in (("block_1", 3), ("block_2", 4)):  # named alike, not the same operators
        layers += [Scoped(len(layers) + k, 0, ["model", name], ".") for k in range(n)]
    group_list, of_layer = scope_groups(layers, {})
    opcodes = {lay.id: ("MATMUL", "ADD", "ADD", "ADD")[lay.id % 3] if lay.id < 9 else "CONV" for lay in layers}
    got = repetitions(group_list, of_layer, opcodes)
    paths = {g.id: g.path for g in group_list}
    assert {paths[g]: r for g, r in got.items()} == {
        f"model.layers.{i}": {"pattern": "model.layers.{0..2}", "index": i, "count": 3} for i in range(3)
    }
