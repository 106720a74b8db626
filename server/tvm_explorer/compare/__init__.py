"""Comparing two bundles layer by layer: which layers match, their kernels, code lines and
costs on each side, and whether their generated code changed (see docs/compare.md)."""
