"""NVTX ranges per layer call, for a GPU profiler.

While the device timer runs a model (``profile.DeviceTimer``), every kernel call that computes
layers is wrapped in an NVTX range named after them (``op 3 CONV_2D model/conv1 + op 4 ADD
model/add``), in the domain ``tvm-explorer``. Under Nsight Systems or Nsight Compute (``nsys
profile --trace=cuda,nvtx``, ``ncu --nvtx``) a kernel row then sits under its layers' names
instead of only ``fused_conv2d_add_relu_kernel``. Without a profiler attached, NVTX calls are
no-ops. Needs the ``nvtx`` package (the ``[sass]`` extra); without it no range is opened and the
profile says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

DOMAIN = "tvm-explorer"
MAX_LABEL = 240  # characters: a kernel fused from many layers names the first ones and a count


def layer_labels(kernel_layers: Mapping[str, Iterable[int]], layers) -> dict[str, str]:
    """Kernel (PrimFunc) name -> the range name of its calls: its layers, in model order.
    ``layers``: the model's layers (``id``, ``label``, ``name``)."""
    by_id = {lay.id: lay for lay in layers}
    out: dict[str, str] = {}
    for kernel, ids in kernel_layers.items():
        named = [by_id[i] for i in sorted(set(ids)) if i in by_id]
        if not named:
            continue
        parts = [f"{lay.label} {lay.name}".strip() for lay in named]
        label = " + ".join(parts)
        if len(label) > MAX_LABEL:
            kept: list[str] = []
            for part in parts:
                if len(" + ".join([*kept, part])) > MAX_LABEL - 20:
                    break
                kept.append(part)
            label = " + ".join(kept) + f" + {len(parts) - len(kept)} more"
        out[kernel] = label
    return out


class LayerRanges:
    """Opens and closes the range of a kernel call; counts what it opened."""

    def __init__(self, labels: Mapping[str, str]):
        self.labels = dict(labels)
        self.opened = 0
        try:
            import importlib.metadata

            import nvtx

            self._nvtx = nvtx
            self.library: str | None = f"nvtx {importlib.metadata.version('nvtx')}"
        except ImportError:
            self._nvtx, self.library = None, None

    def push(self, symbol: str) -> bool:
        """Open the range of a call of ``symbol`` (False: no layer to name, or no library)."""
        label = self.labels.get(symbol)
        if label is None or self._nvtx is None:
            return False
        self._nvtx.push_range(label, domain=DOMAIN)
        self.opened += 1
        return True

    def pop(self) -> None:
        if self._nvtx is not None:
            self._nvtx.pop_range(domain=DOMAIN)

    def summary(self) -> dict:
        """What the profile records: the domain, the library, how many ranges were opened
        (over every instrumented run) and how many kernels carry a layer name."""
        return {
            "domain": DOMAIN,
            "library": self.library,
            "ranges": self.opened,
            "kernels": len(self.labels),
            "reason": None if self.library else "the nvtx package is not installed (pip install 'tvm-explorer[sass]')",
        }
