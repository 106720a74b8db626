"""Run reproducer scripts one after another in this (fresh) interpreter, each as ``__main__``
in a namespace of its own, and print one JSON line per script: its exit code and output.
(Starting TVM once instead of once per script keeps the test bounded.)"""

import contextlib
import io
import json
import runpy
import sys


def run(path: str) -> dict:
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException as err:  # noqa: BLE001 - a crashing script is a failed script
            print(f"{type(err).__name__}: {err}")
            code = 1
    return {"path": path, "code": code, "output": out.getvalue()}


if __name__ == "__main__":
    for script in sys.argv[1:]:
        print(json.dumps(run(script)), flush=True)
