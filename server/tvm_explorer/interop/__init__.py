"""Interop with other tools' views of the original model.

``model_explorer.py`` turns a bundle's per-layer costs and numerics into Model Explorer
node-data files (its ``ModelNodeData`` JSON), keyed by the node ids Model Explorer's own
adapters give the original model file; ``output.py`` writes them, with a README, into a folder
it owns (``tvm-explorer overlays``, docs/model-explorer.md). Reads bundles only: no TVM here.
"""
