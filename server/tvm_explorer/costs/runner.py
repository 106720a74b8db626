"""The profiling process of ``profile.measure_on_device``:
``python -m tvm_explorer.costs.runner LIB INPUTS.npz REPEAT DEVICE RESULT.json``.

Loads the library exported by the compile (a temporary file, never a bundle), times every
kernel call and writes the result, or ``{"error": reason}``, to ``RESULT.json``.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Profile once; the exit code is 0 whenever a result (or a reason) was written."""
    lib_path, inputs, repeat, device, result = argv
    from .profile import ProfileFailed, first_line, measure_loaded

    try:
        import numpy as np
        import tvm

        with np.load(inputs) as npz:
            arrays = [npz[f"arr_{i}"] for i in range(len(npz.files))]
        got = measure_loaded(tvm.runtime.load_module(lib_path), device, arrays, int(repeat))
    except ProfileFailed as err:
        got = {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - one line for the user
        got = {"error": f"the model failed while running: {first_line(err)}"}
    with open(result, "w", encoding="utf-8") as fh:
        json.dump(got, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
