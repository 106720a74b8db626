"""Numerical error per layer: the compiled model and the reference (the model's own framework)
run on the same inputs, compared layer by layer (docs/numerics.md)."""
