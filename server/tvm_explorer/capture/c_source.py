"""Compiling TVM's generated C into a library the VM can load: the one place that does it
(``--profile``, ``--numerics``, ``bisect``, devices through ``remote/``, ``reduce``'s repro
script and ``extract``'s reproducers all go through ``export_c_library``).

TVM 0.27's C code generator spells some float constants the way its C++ printer does,
which C and C++ do not know: infinity as ``inff`` (float32) and ``inf`` (float64), NaN as
``nanf`` and ``nan`` (a masking kernel of an attention block compares with ``-inff``). The
source is compiled with a prelude, inserted after TVM's own ``#include`` lines, that defines
exactly the spellings the source uses as the compiler's own constants (``__builtin_inff()``
…): the same values, so the meaning of the code does not change. Nothing else is touched.
Which definitions were added is returned, and recorded in ``costs.json`` / ``numerics.json``
(``c_fixes``; docs/costs.md, "Compiling TVM's C").

This module needs only ``re`` and ``tvm``: reproducer scripts copy its source verbatim.
"""

import re

# spelling in TVM's C -> the compiler's constant of the same value
C_SPELLINGS = {
    "inff": "__builtin_inff()",
    "inf": "__builtin_inf()",
    "nanf": '__builtin_nanf("")',
    "nan": '__builtin_nan("")',
}


def c_fixes_for(source):
    """The ``#define`` lines ``source`` needs: one per spelling it uses as a bare name (not
    called, not a member, not part of a longer name), unless the source already defines or
    declares that name itself (then it is not TVM's constant and is left alone)."""
    fixes = []
    for name, value in C_SPELLINGS.items():
        bare = re.search(r"(?<![\w.>$])" + name + r"\b(?!\s*\()", source)
        own = re.search(
            r"#\s*define\s+" + name + r"\b|\b(?!return\b)\w+\s*\*?\s*" + name + r"\s*(?:=|;|\[|,|\))", source
        )
        if bare and not own:
            fixes.append(f"#define {name} ({value})")
    return fixes


def with_c_fixes(source, fixes):
    """``source`` with ``fixes`` inserted after its last top-of-file ``#include`` line."""
    if not fixes:
        return source
    lines = source.splitlines(keepends=True)
    at = 0
    for i, line in enumerate(lines[:200]):
        if line.lstrip().startswith("#include"):
            at = i + 1
    prelude = "// tvm-explorer: C spellings of TVM's float constants (same values)\n" + "\n".join(fixes) + "\n"
    return "".join(lines[:at]) + prelude + "".join(lines[at:])


def export_c_library(executable, lib_path, options=None, fcompile=None):
    """Compile ``executable`` (built for target ``c``; or any module TVM exports) into the
    shared library ``lib_path`` with TVM's ``export_library`` and the system compiler (or
    ``fcompile``, e.g. a cross compiler from ``tvm.support.cc.cross_compiler``), TVM's C fixed
    as above. Returns the ``#define`` lines added (empty when the source needed none)."""
    from tvm.support import cc

    link = fcompile or cc.create_shared
    applied: list[str] = []

    def compile_fixed(output, files, **kwargs):
        for path in files:
            if str(path).endswith((".c", ".cc", ".cpp")) and not str(path).endswith("devc.c"):
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                fixes = c_fixes_for(text)
                if fixes:
                    with open(path, "w", encoding="utf-8") as fh:
                        fh.write(with_c_fixes(text, fixes))
                    applied.extend(f for f in fixes if f not in applied)
        return link(output, files, **kwargs)

    for attr in ("get_target_triple", "output_format", "object_format"):
        if hasattr(link, attr):
            setattr(compile_fixed, attr, getattr(link, attr))
    kwargs = {"options": list(options)} if options else {}
    executable.export_library(lib_path, fcompile=compile_fixed, **kwargs)
    return applied


def script_source():
    """This module's functions as Python source, for a standalone script (needs ``re``)."""
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    body = text[text.index("C_SPELLINGS = {") : text.index("\ndef script_source")]
    return "# How tvm-explorer compiles TVM's C (its capture/c_source.py)\n" + body.rstrip() + "\n"
