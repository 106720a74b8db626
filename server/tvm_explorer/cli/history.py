"""``tvm-explorer history BUNDLE LAYER``: every pass that changed a layer's code, in pipeline
order, each with a one-line summary (and ``--diff``: the layer's own lines before and after)."""

from __future__ import annotations

import json

from tvm_explorer.cli.options import load_bundle
from tvm_explorer.errors import ExplorerError
from tvm_explorer.errors import fail as _fail


def add_parser(sub) -> None:
    """Register ``tvm-explorer history``."""
    p = sub.add_parser(
        "history",
        help="every pass that changed a layer's code, with what it did (fused, legalized, split, rewritten)",
        description="The passes that created, rewrote, fused, split, moved or deleted anything of a layer "
        "(Relax bindings, PrimFuncs, TIR statements, kernels), in pipeline order; passes that left it alone "
        "are not listed. Marks the pass where its code size, measured cost or numerics changed most.",
    )
    p.add_argument("bundle")
    p.add_argument(
        "layer",
        help="an op number (2), SUBGRAPH:OP (1:2), a layer name or output tensor (or a part of one that "
        "names one layer); several joined by commas follow a fused group together (0,1,2)",
    )
    p.add_argument("--diff", action="store_true", help="print each step's diff of the layer's own lines")
    p.add_argument("--json", action="store_true", help="JSON (schema: docs/navigation.md, 'Layer history')")
    p.set_defaults(run=_run_history)


def _run_history(args) -> int:
    from tvm_explorer.history.naming import resolve_layers
    from tvm_explorer.history.output import history_json, history_text
    from tvm_explorer.history.steps import layer_history
    from tvm_explorer.navigation.view import BundleView

    try:
        bundle = load_bundle(args.bundle)
        layers = resolve_layers(bundle, args.layer)
        view = BundleView(bundle)
        history = layer_history(view, layers)
        out = json.dumps(history_json(view, history, args.diff), indent=1) if args.json else None
        text = out if out is not None else history_text(view, history, args.diff)
    except ExplorerError as err:
        return _fail(str(err))
    print(text)
    return 0
