"""``tvm-explorer bisect``: the first pass after which the model computes something else."""
