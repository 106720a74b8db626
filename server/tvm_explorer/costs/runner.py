"""The profiling process of ``profile.measure_on_device``:
``python -m tvm_explorer.costs.runner LIB INPUTS.npz REPEAT DEVICE RESULT.json [LABELS.json]``.

Loads the library exported by the compile (a temporary file, never a bundle), times every
kernel call and writes the result, or ``{"error": reason}``, to ``RESULT.json``.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Profile once; the exit code is 0 whenever a result (or a reason) was written."""
    lib_path, inputs, repeat, device, result, *more = argv
    from tvm_explorer.costs.profile import measure_loaded, write_outcome

    def measure():
        import numpy as np
        import tvm

        with np.load(inputs) as npz:
            arrays = [npz[f"arr_{i}"] for i in range(len(npz.files))]
        labels = {}
        if more:
            with open(more[0], encoding="utf-8") as fh:
                labels = json.load(fh)  # kernel name -> NVTX range name, written by the compile
        return measure_loaded(tvm.runtime.load_module(lib_path), device, arrays, int(repeat), labels)

    write_outcome(result, measure)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
