"""Run many ``tvm-explorer`` command lines in one process (each exactly as ``python -m
tvm_explorer`` runs it: ``cli.main``), so a test can run thousands without paying the start-up
of each. Reads a JSON list of argument lists on stdin; writes, per command line, its exit status,
what it printed on stderr, and the traceback of anything that escaped ``main``."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback

from tvm_explorer.cli import main


def run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    status, tb = None, ""
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:
            status = exc.code
        except BaseException:  # noqa: BLE001 - exactly what the user would see as a traceback
            tb = traceback.format_exc()
    return {"argv": argv, "status": status, "stderr": err.getvalue(), "traceback": tb}


if __name__ == "__main__":
    print(json.dumps([run(argv) for argv in json.load(sys.stdin)]))
