"""Untrusted text made fit for an XML 1.0 document (the JUnit report of ``compare``).

The XML writer (``xml.etree``) escapes ``&``, ``<``, ``>`` and quotes, but writes every other
character as it is, and XML 1.0 has no way to write most control characters (``\\x00``–
``\\x1f`` but tab and line breaks, ``\\ufffe``, lone surrogates), escaped or not: one of them in
a layer name made the whole report unreadable to a CI system. They are written as visible
escapes (``\\x1b``, ``\\ud800``) instead.
"""

from __future__ import annotations

import re

_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")


def _escape(match: re.Match) -> str:
    return match.group(0).encode("unicode_escape", "backslashreplace").decode("ascii")


def text(value: object) -> str:
    """``value`` with every character XML 1.0 cannot hold written as a visible escape."""
    return _NOT_XML.sub(_escape, str(value))


def line(value: object) -> str:
    """``value`` as one line of XML text (an attribute such as a test case's name): line
    breaks become spaces, then as ``text``."""
    return text(_LINE_BREAKS.sub(" ", str(value)))
