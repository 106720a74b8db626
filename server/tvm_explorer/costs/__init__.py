"""Costs per layer: measured run time, generated code size, workspace memory, FLOPs and
compile time per pass (``costs.json`` in a bundle; see docs/costs.md)."""
