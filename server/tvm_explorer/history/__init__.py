"""A layer's history through the passes (issue 41): every pass that created, rewrote, fused,
split, moved or deleted anything of a layer (or a group of layers), in pipeline order, with a
one-line summary, the layer's own lines before and after, and the passes where its code size,
measured cost or numerics changed most. Protocol-free; computed from the bundle's index on
first use (never at load). Also the per-pass state of every layer the graph's pass slider
shows (``pipeline.py``). docs/navigation.md, "Layer history"."""
