"""The command line of every Python child process the product starts: this interpreter, running
one of our modules, with the current directory kept off ``sys.path``.

``python -m MODULE`` puts the working directory first on ``sys.path``; run inside a bundle
or a workspace, a ``tvm_explorer/`` (or ``tvm/``, ``numpy/``) package planted there was
imported instead of the installed one, i.e. code from the folder ran. Python 3.11+ has ``-P``
for exactly this; on 3.10 a tiny ``-c`` bootstrap removes the entry (``-c`` always puts ``''``
first there) and then runs the module as ``-m`` would. ``PYTHONPATH`` is honoured either way:
TVM built from source is often found only through it.
"""

from __future__ import annotations

import sys

# sys.argv is ['-c', MODULE, ARGS...]: drop the cwd entry, then run MODULE as __main__ with
# sys.argv = [its file, ARGS...], as ``python -m MODULE ARGS`` would.
_BOOTSTRAP = (
    "import runpy, sys\n"
    "if not getattr(sys.flags, 'safe_path', False): del sys.path[0]\n"
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def python_module_command(module: str, *args: str, site: bool = True, safe_path_flag: bool | None = None) -> list[str]:
    """``[python, ..., -m, module, *args]`` immune to packages in the working directory.
    ``site=False`` adds ``-S`` (no site-packages: the child needs only the standard library
    and what ``PYTHONPATH`` names). ``safe_path_flag`` forces the 3.11+ (True) or the 3.10
    (False) form; tests run both."""
    use_flag = sys.version_info >= (3, 11) if safe_path_flag is None else safe_path_flag
    head = [sys.executable] + ([] if site else ["-S"])
    if use_flag:
        return head + ["-P", "-m", module, *args]
    return head + ["-c", _BOOTSTRAP, module, *args]
