"""The model as a graph: a bundle turned into a graph document (``document.py``: nodes, tensor
edges, scope groups, per-layer overlays and places) that one web app draws in a VS Code webview
and in a self-contained HTML report (``report.py``). Editor half: never imports TVM."""
