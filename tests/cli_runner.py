"""``tvm-explorer`` run the way its user runs it: a real process of this interpreter. Free of
pytest, since tests/bundle_store.py, which compiles with it, also runs as
``python -m tests.bundle_store`` for the editor tests."""

from __future__ import annotations

import subprocess
import sys

# The CLI as a command line, for tests that drive the process themselves (Popen, a pty).
CLI = [sys.executable, "-m", "tvm_explorer"]


def run_cli(*args, check=False, timeout=900, cwd=None, env=None):
    """Run ``python -m tvm_explorer ARGS`` in a real subprocess (in ``cwd``, with ``env``)."""
    proc = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"tvm-explorer {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return proc
