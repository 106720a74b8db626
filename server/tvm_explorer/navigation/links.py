"""Document links: from a Relax call to its PrimFunc, from a scheduled loop to its trace."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

from tvm_explorer.bundle.files import MAX_SECTION_BYTES, read_regular, resolve_inside
from tvm_explorer.errors import BundleError
from tvm_explorer.navigation.hover import trace_entry
from tvm_explorer.navigation.irsymbols.navigate import definition_offset
from tvm_explorer.navigation.view import BundleView


@dataclass(frozen=True)
class Link:
    """A clickable ``[start, end)`` in a document leading to ``target`` (bundle path) at
    character offset ``target_offset`` (None: the top of the file)."""

    start: int
    end: int
    target: str
    target_offset: int | None
    tooltip: str
    # For targets that are not bundle documents (schedule traces): 0-based line and column.
    target_line: tuple[int, int] | None = None


def document_links(view: BundleView, path: str) -> list[Link]:
    """Links of one document (computed from its index and text, once per request)."""
    bundle = view.bundle
    text = bundle.text(path)
    out = []
    for rng in bundle.index(path).ranges:
        link = rng.link
        if not link:
            continue
        if link.startswith("prim:"):
            name = link[len("prim:") :]
            target = _primfunc_definition(view, path, link)
            match = re.search(r"\b" + re.escape(name) + r"\b", text[rng.start : rng.end])
            if target and match:
                out.append(
                    Link(
                        rng.start + match.start(),
                        rng.start + match.end(),
                        target[0],
                        target[1],
                        f"PrimFunc {name} in {target[0]}",
                    )
                )
        elif link.startswith("trace:"):
            primfunc, _, step = link[len("trace:") :].rpartition(":")
            trace = trace_entry(view, primfunc)
            word = re.match(r"\s*\w+", text[rng.start : rng.end])
            if trace and word and _inside(view, trace.get("path")):
                at = trace_step_line(view, trace, step)
                what = f"step {step} of the schedule trace" if step and at else "schedule trace"
                out.append(
                    Link(
                        rng.start,
                        rng.start + word.end(),
                        trace["path"],
                        None,
                        f"{what[0].upper()}{what[1:]} of {primfunc}",
                        at,
                    )
                )
    return out


def trace_step_line(view: BundleView, trace: dict, step: str) -> tuple[int, int] | None:
    """0-based (line, column) of schedule step ``step`` in a trace file (the manifest says step
    *k* is 1-based line ``first_step_line + k``), or None without a step."""
    try:
        line = int(trace["first_step_line"]) + int(step) - 1
    except (KeyError, TypeError, ValueError):
        return None
    lines = _trace_lines(view, trace.get("path"))
    if not 0 <= line < len(lines):
        return None
    return line, len(lines[line]) - len(lines[line].lstrip())


def _trace_lines(view: BundleView, rel) -> list[str]:
    cache = _TRACES.setdefault(view, {})
    if rel not in cache:
        try:
            data = read_regular(resolve_inside(view.root, rel, "trace"), "schedule trace", view.root, MAX_SECTION_BYTES)
            cache[rel] = data.decode("utf-8", "replace").split("\n")
        except (BundleError, OSError):
            cache[rel] = []
    return cache[rel]


_TRACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _primfunc_definition(view: BundleView, path: str, key: str) -> tuple[str, int] | None:
    """The ``def`` line of PrimFunc ``key`` in this document if printed here, else in the
    first later document that defines it (not its ``@T.prim_func`` decorator)."""
    bundle = view.bundle
    start = view.document_order(path)
    name = key[len("prim:") :]
    for doc in bundle.documents[start:]:
        found = bundle.index(doc.path).by_key(key)
        if found:
            at = definition_offset(view, doc.path, name)
            inside = at is not None and found[0].start <= at < found[0].end
            return doc.path, at if at is not None and inside else found[0].start
    return None


def _inside(view: BundleView, rel) -> bool:
    try:
        return resolve_inside(view.root, rel).is_file()
    except BundleError:
        return False
