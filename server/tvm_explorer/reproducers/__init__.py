"""Reproducers: one kernel (or one layer's kernels) of a bundle as a standalone Python script
that rebuilds it with TVM, runs it on seeded inputs, checks it against the layer's own Relax
ops and times it (see docs/reproducers.md). Nothing here imports TVM."""
