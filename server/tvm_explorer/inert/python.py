"""Untrusted text in a Python script the user runs: it must run only what tvm-explorer wrote.

``comment`` makes any text fit for a ``#`` comment: one line, line breaks and other
unprintable characters (also lone surrogates) written as escapes (a newline used to end the
comment, and the next line ran as a statement). Values in code are ``repr`` literals.
"""

from __future__ import annotations

_REPLACED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def comment(value: object) -> str:
    """``value`` as text fit for a ``#`` comment: one line, every unprintable character
    escaped (``\\n``, ``\\x1b``, ``\\u2028``, ``\\ud800``), and ``"`` as ``\\"`` (TVMScript
    finds a class's source by counting ``\"\"\"`` on every line, comments included)."""
    text = str(value).replace('"', '\\"')
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else _REPLACED.get(ch) or ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        for ch in text
    )
