"""``tvm-explorer reduce``: shrink a model that breaks TVM to the smallest sub-model that still
breaks it the same way (docs/reduce.md). ``probe`` is one try in a child process, ``runner``
runs tries in parallel and caches them, ``search`` is the delta debugging, ``outputs`` writes
the model, the report and the reproducer."""
