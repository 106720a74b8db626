"""What the graph document says about drawing (graphview/structure.py), on small hand-made graphs:
which nodes fold into the node they prepare a constant for, and which groups are repetitions."""

from __future__ import annotations

from tvm_explorer.graphview.structure import Edge, Scoped, folds, repetitions, scope_groups


def edge(a: str, b: str) -> Edge:
    return Edge(a, b, f"{a}>{b}", "f32[1]")


def test_weights_fold_into_their_consumer_and_dead_ends_into_their_producer():
    # in -> 2 (conv) <- 1 (reshape) <- 0 (dequantize); 3: an assert joined to nothing;
    # 4 (arange, no input) -> 5 (where) <- 2; 5 -> out; 2 -> 6 (an assert: read by nothing)
    edges = [
        edge("in:0:x", "2"),
        edge("0", "1"),
        edge("1", "2"),
        edge("4", "5"),
        edge("2", "5"),
        edge("5", "out:0:y"),
        edge("2", "6"),
    ]
    got = folds([str(i) for i in range(7)], edges, {"in:0:x"}, {"5"})
    assert got == {"0": "2", "1": "2", "3": "5", "4": "5", "6": "2"}
    assert folds(["0", "1"], [edge("0", "1")], set(), set()) == {}  # no graph input known: nothing folded


def test_decoder_layers_are_repetitions_and_lookalike_names_are_not():
    layers: list[Scoped] = []
    ops: dict[int, str] = {}

    def scope(path: list[str], opcodes: list[str]) -> None:
        for op in opcodes:
            ops[len(layers)] = op
            layers.append(Scoped(len(layers), 0, path, "."))

    for i in range(3):  # three identical decoder layers, numbered 0, 1, 2
        scope(["model", "layers", str(i)], ["MATMUL", "ADD", "SOFTMAX", "ADD"])
    scope(["model", "block_1"], ["CONV", "ADD", "RELU", "ADD"])  # named alike, other operators
    scope(["model", "block_2"], ["CONV", "RELU", "RELU", "ADD"])
    scope(["model", "conv2d_3"], ["CONV", "ADD", "RELU", "ADD"])  # Keras numbering: gaps
    scope(["model", "conv2d_7"], ["CONV", "ADD", "RELU", "ADD"])
    group_list, of_layer = scope_groups(layers, {})
    got = repetitions(group_list, of_layer, ops)
    paths = {g.id: g.path for g in group_list}
    assert {paths[g]: r for g, r in got.items()} == {
        f"model.layers.{i}": {"pattern": "model.layers.{0..2}", "index": i, "count": 3} for i in range(3)
    }
