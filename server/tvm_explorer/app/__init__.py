"""The application layer: a whole compile (import, pipeline, codegen, costs, numerics) into a bundle."""
