"""Untrusted text shown as plain text (a model document, a terminal line): one line, every
line break, escape sequence and other unprintable character written as an escape (``\\n``,
``\\x1b``, ``\\u2028``), so a name from a model file can neither forge a line nor control a
terminal. Printable text is left exactly as it is."""

from __future__ import annotations


def one_line(value: object) -> str:
    """``value`` as one printable line (see above)."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode() for ch in text)
