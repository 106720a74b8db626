"""Machine code per layer: the bundle's CUDA compiled to SASS with NVIDIA's own tools, every
instruction joined to the CUDA line it came from (``nvcc -lineinfo``, ``nvdisasm -gi``) and so
to its layer; each kernel's registers, spills, shared and local memory and an occupancy
estimate (docs/sass.md). Needs no GPU and no TVM: only the tools (``tools.py``)."""
