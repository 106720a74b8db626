"""What one pass did to a layer's code, in one line of an engineer's words:
"fused with op 1 (ADD) and op 2 (RELU) into fused_conv2d_add_add_relu", "2 bindings → call_tir
conv2d, add", "2 PrimFuncs → 1 (fused_conv2d_add_add_relu)", "4 statements changed"."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tvm_explorer.bundle.types import Layer
from tvm_explorer.history.code import LayerCode, Unit
from tvm_explorer.navigation.places import binding_is_bookkeeping

CREATED, REWRITTEN, FUSED, SPLIT, MOVED, DELETED = "created", "rewritten", "fused", "split", "moved", "deleted"
CHANGES = (CREATED, REWRITTEN, FUSED, SPLIT, MOVED, DELETED)
"""What a step may have done to the layer's code (``Step.changes``), in this order."""

_NOUNS = {
    "binding": ("binding", "bindings"),
    "stmt": ("statement", "statements"),
    "loop": ("loop", "loops"),
    "block": ("block", "blocks"),
}
_LANGUAGES = {".c": "C", ".cu": "CUDA", ".ll": "LLVM IR"}
_CALLEE = re.compile(r"^(?:[\w.]+(?::.*?)? = )?((?:R\.)?[\w.]+)\(\s*(?:\"([\w.]+)\"|(?:cls\.)?(\w+))?")
_MAX_NAMES = 4


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 binding``, ``2 bindings``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def names(items: list[str], limit: int = _MAX_NAMES) -> str:
    """Names joined with commas, at most ``limit`` of them, then "…"."""
    unique = list(dict.fromkeys(items))
    return ", ".join(unique[:limit]) + (", …" if len(unique) > limit else "")


def layer_word(layer: Layer) -> str:
    """``op 3 (ADD)`` (``op 1:3`` in another subgraph)."""
    where = f"{layer.subgraph}:{layer.op_index}" if layer.subgraph else str(layer.op_index)
    return f"op {where} ({layer.opcode})"


def and_list(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def callee(unit: Unit) -> str:
    """What a Relax binding calls: ``R.nn.conv2d``, ``call_tir conv2d``,
    ``fused_conv2d_add_relu``, ``vm.builtin.match_shape``; "" for an alias."""
    if unit.link and unit.link.startswith("prim:") and "call_tir" in unit.text:
        return "call_tir " + unit.link[len("prim:") :]
    value = unit.text.split(" = ", 1)[1] if " = " in unit.text else unit.text
    found = _CALLEE.match(value)
    if not found:
        return ""
    head = found.group(1)
    if head in ("R.call_packed", "R.call_pure_packed") and found.group(2):
        return found.group(2)
    if head in ("R.call_tir", "R.call_tir_inplace", "R.call_dps_packed") and found.group(3):
        return f"{head[2:]} {found.group(3)}"
    return head


@dataclass(frozen=True)
class Summary:
    """A step's one-line summary and what it did (``CHANGES``)."""

    text: str
    changes: tuple[str, ...]


def summarize(before: LayerCode, after: LayerCode, group: frozenset[int], layers: list[Layer]) -> Summary:
    """What the pass from ``before`` to ``after`` did to the code of the layers ``group``
    (``layers``: the bundle's layers, to name the ones it was fused with)."""
    if before.stage == "model":
        return _imported(after)
    if after.stage == "code":
        return _generated(after)
    if after.empty:
        return _deleted(before)
    headline: list[str] = []
    changes: set[str] = set()
    fused = _fusion(before, after, group, layers)
    if fused:
        headline.append(fused)
        changes.update((FUSED, MOVED))
    legalized = _legalized(before, after)
    if legalized:
        headline.append(legalized)
        changes.update((CREATED, REWRITTEN))
    prims = _primfuncs(before, after, bool(legalized))
    if prims:
        headline.append(prims[0])
        changes.update(prims[1])
    # What the headline says made the rest (the bindings FuseOps moved, the loops LegalizeOps
    # or FuseTIR wrote): counted in ``changes``, not repeated in the line.
    details = _bindings(before, after, changes) + _statements(before, after, changes)
    phrases = headline or details
    if not phrases:
        added, removed = line_changes(before, after)
        where = _rewritten_functions(before, after) or list(
            dict.fromkeys(u.function for u in after.units if u.whole and u.function)
        )
        phrases = [f"{plural(max(added, removed), 'line')} changed" + (f" in {names(where, 3)}" if where else "")]
        changes.add(REWRITTEN)
    return Summary("; ".join(phrases), tuple(c for c in CHANGES if c in changes))


def _rewritten_functions(before: LayerCode, after: LayerCode) -> list[str]:
    """The functions and PrimFuncs whose text (or header) this pass changed."""
    old = {u.key: u.text for u in before.of_kind("function", "primfunc")}
    return [u.name for u in after.of_kind("function", "primfunc") if u.key in old and old[u.key] != u.text]


def line_changes(before: LayerCode, after: LayerCode) -> tuple[int, int]:
    """Lines of ``after`` not in ``before`` and lines of ``before`` not in ``after`` (as
    multisets, whitespace aside)."""
    count = Counter(before.normalized_lines)
    count.subtract(after.normalized_lines)
    return -sum(n for n in count.values() if n < 0), sum(n for n in count.values() if n > 0)


def _imported(after: LayerCode) -> Summary:
    calls = [callee(u) for u in _compute_bindings(after)]
    calls = [c for c in calls if c]
    text = plural(len(_compute_bindings(after)), "binding")
    return Summary(f"{text}: {names(calls)}" if calls else text, (CREATED,))


def _generated(after: LayerCode) -> Summary:
    language = next((v for k, v in _LANGUAGES.items() if after.path.endswith(k)), "code")
    functions = [u.name for u in after.of_kind("primfunc")]
    kernels = [f for f in functions if f.endswith("_kernel")]
    what = (
        f"{plural(len(kernels), 'kernel')} {names(kernels)}"
        + (f" + {plural(len(functions) - len(kernels), 'host function')}" if len(functions) > len(kernels) else "")
        if kernels
        else f"{plural(len(functions), 'function')} {names(functions)}"
    )
    stmts, loops = len(after.of_kind("stmt")), len(after.of_kind("loop"))
    body = ", ".join(
        x for x in (plural(stmts, "statement") if stmts else "", plural(loops, "loop") if loops else "") if x
    )
    return Summary(f"{language}: {what}" + (f" ({body})" if body else ""), (CREATED,))


def _deleted(before: LayerCode) -> Summary:
    parts = [
        plural(n, *_NOUNS.get(kind, (kind, kind + "s")))
        for kind, n in Counter(u.kind for u in before.units if u.whole and u.kind in ("binding", "stmt")).items()
    ]
    prims = {u.name for u in before.of_kind("primfunc")}
    if prims:
        parts.append(plural(len(prims), "PrimFunc"))
    return Summary("removed all of its code" + (f" ({', '.join(parts)})" if parts else ""), (DELETED,))


def _fusion(before: LayerCode, after: LayerCode, group: frozenset[int], layers: list[Layer]) -> str:
    """A private Relax function made by this pass that holds the layer(s): FuseOps."""
    old = {u.name for u in before.of_kind("function")}
    made = [u for u in after.of_kind("function") if u.private and u.name not in old]
    if not made:
        return ""
    phrases = []
    for fn in made:
        others = sorted(fn.layers - group)
        if others:
            words = [layer_word(layers[i]) for i in others if 0 <= i < len(layers)]
            phrases.append(f"fused with {and_list(words)} into {fn.name}")
        elif len(group) > 1:
            words = [layer_word(layers[i]) for i in sorted(group) if 0 <= i < len(layers)]
            phrases.append(f"{and_list(words)} fused into {fn.name}")
        else:
            own = [u for u in after.of_kind("binding") if u.whole and u.function == fn.name]
            if len(own) > 1:
                phrases.append(f"its {len(own)} bindings fused into {fn.name} (no other layer)")
            else:
                phrases.append(f"put into a function of its own, {fn.name}")
    return "; ".join(phrases)


def _compute_bindings(code: LayerCode) -> list[Unit]:
    return [u for u in code.of_kind("binding") if u.whole and not binding_is_bookkeeping(u.text)]


def _legalized(before: LayerCode, after: LayerCode) -> str:
    """Bindings that call PrimFuncs now and did not before: LegalizeOps."""
    if any(u.link for u in before.of_kind("binding")):
        return ""
    calling = [u for u in _compute_bindings(after) if u.link and u.link.startswith("prim:")]
    if not calling:
        return ""
    was = len(_compute_bindings(before))
    head = f"{plural(was, 'binding')} → " if was else ""
    return head + "call_tir " + names([u.link[len("prim:") :] for u in calling if u.link])


def _primfuncs(before: LayerCode, after: LayerCode, legalized: bool) -> tuple[str, set[str]] | None:
    """PrimFuncs holding the layer merged (FuseTIR), split (SplitHostDevice), made or gone."""
    old = list(dict.fromkeys(u.name for u in before.of_kind("primfunc")))
    new = list(dict.fromkeys(u.name for u in after.of_kind("primfunc")))
    if old == new or (not old and legalized):
        return None
    made = [n for n in new if n not in old]
    if not old:
        return f"{plural(len(new), 'PrimFunc')} created ({names(new)})", {CREATED}
    if not new:
        return f"{plural(len(old), 'PrimFunc')} removed ({names(old)})", {DELETED}
    if len(new) < len(old):
        return f"{len(old)} PrimFuncs → {len(new)} ({names(made or new)})", {FUSED}
    if len(new) > len(old):
        kernels = [n for n in made if n.endswith("_kernel")]
        if kernels and all(n[: -len("_kernel")] in old for n in kernels):
            return f"split into host and device: {names(kernels)}", {SPLIT, CREATED}
        return f"{plural(len(old), 'PrimFunc')} → {len(new)} (split: {names(made)})", {SPLIT, CREATED}
    gone = [n for n in old if n not in new]
    return f"PrimFunc {names(gone)} → {names(made)}", {MOVED}


def _bindings(before: LayerCode, after: LayerCode, changes: set[str]) -> list[str]:
    """Bindings computing the layer rewritten (same name, other text), added, removed; the
    bookkeeping around them (allocations, kills, shape checks) counted by what it calls. Names
    repeat (``_`` for every call without a result) and are recycled from pass to pass, so
    bindings are compared by text first, then paired by name."""
    out = []
    old = [u for u in before.of_kind("binding") if u.whole]
    new = [u for u in after.of_kind("binding") if u.whole]
    gone, came = _unmatched(old, new)
    old_c = [u for u in gone if not binding_is_bookkeeping(u.text)]
    new_c = [u for u in came if not binding_is_bookkeeping(u.text)]
    rewritten = []
    for u in new_c[:]:
        twin = next((o for o in old_c if o.key == u.key), None)
        if twin is not None:
            rewritten.append(_call_change(callee(twin), callee(u)))
            old_c.remove(twin)
            new_c.remove(u)
    if rewritten:
        calls = [c for c in rewritten if c]
        out.append(f"{plural(len(rewritten), 'binding')} rewritten" + (f" ({names(calls)})" if calls else ""))
        changes.add(REWRITTEN)
    added, removed = [callee(u) for u in new_c], [callee(u) for u in old_c]
    if added and removed:
        counts = "" if len(added) == len(removed) else f"{plural(len(removed), 'binding')} → {len(added)}: "
        out.append(f"{counts}{names(removed)} → {names(added)}")
        changes.update((REWRITTEN, MOVED))
    elif added:
        _counted(out, changes, CREATED, plural(len(added), "binding"), names(added))
    elif removed:
        _counted(out, changes, DELETED, plural(len(removed), "binding"), names(removed))
    kept_old = Counter(callee(u) or "alias" for u in gone if binding_is_bookkeeping(u.text))
    kept_new = Counter(callee(u) or "alias" for u in came if binding_is_bookkeeping(u.text))
    more, fewer = kept_new - kept_old, kept_old - kept_new
    if more:
        _counted(out, changes, CREATED, f"{sum(more.values())} bookkeeping", names(list(more)))
    if fewer:
        _counted(out, changes, DELETED, f"{sum(fewer.values())} bookkeeping", names(list(fewer)))
    if not out and (gone or came):
        out.append(f"{plural(max(len(gone), len(came)), 'bookkeeping binding')} rewritten")
        changes.add(REWRITTEN)
    return out


def _counted(out: list[str], changes: set[str], change: str, count: str, what: str) -> None:
    """``+3 bindings (R.add, R.multiply)`` for what was created, ``−…`` for what was deleted."""
    out.append(f"{'+' if change == CREATED else '−'}{count} ({what})")
    changes.add(change)


def _unmatched(old: list[Unit], new: list[Unit]) -> tuple[list[Unit], list[Unit]]:
    """The units of ``old`` and of ``new`` whose text the other side does not have (as
    multisets)."""
    return _missing_from(new, old), _missing_from(old, new)


def _missing_from(other: list[Unit], units: list[Unit]) -> list[Unit]:
    """The units whose text ``other`` does not have, one match used up per unit of ``other``."""
    left = Counter(u.text for u in other)
    out = []
    for u in units:
        if left[u.text]:
            left[u.text] -= 1
        else:
            out.append(u)
    return out


def _call_change(old: str, new: str) -> str:
    """``R.memory.alloc_tensor → R.vm.alloc_tensor``; the call itself when it stayed."""
    if old == new:
        return new
    return f"{old or 'alias'} → {new or 'alias'}"


def _by_key(code: LayerCode, kind: str) -> dict[str, list[Unit]]:
    out: dict[str, list[Unit]] = {}
    for u in code.units:
        if u.kind == kind and u.whole:
            out.setdefault(u.key, []).append(u)
    return out


def _differ(kind: str, old: list[Unit], new: list[Unit]) -> bool:
    """Whether the units of one key differ: a statement's text, a loop's or a block's header
    (a loop whose statements changed is counted by them), indentation aside."""
    if kind == "stmt":
        return sorted(u.raw.strip() for u in old) != sorted(u.raw.strip() for u in new)
    return sorted(u.head for u in old) != sorted(u.head for u in new)


def _statements(before: LayerCode, after: LayerCode, changes: set[str]) -> list[str]:
    """Counts of TIR (or generated) statements, loops and blocks changed, added, removed,
    and moved to another function."""
    out = []
    for kind in ("stmt", "loop", "block"):
        old, new = _by_key(before, kind), _by_key(after, kind)
        if not old and not new:
            continue
        changed = sum(1 for k in new if k in old and _differ(kind, old[k], new[k]))
        moved = sum(1 for k in new if k in old and {u.function for u in new[k]} != {u.function for u in old[k]})
        added = sum(len(v) for k, v in new.items() if k not in old)
        removed = sum(len(v) for k, v in old.items() if k not in new)
        one, many = _NOUNS[kind]
        counts = [
            (n, word)
            for n, word in ((changed, "changed"), (added, "added"), (removed, "removed"), (moved, "moved"))
            if n
        ]
        changes.update(
            tag for n, tag in ((changed, REWRITTEN), (added, CREATED), (removed, DELETED), (moved, MOVED)) if n
        )
        if counts:
            (n, word), rest = counts[0], counts[1:]
            out.append(f"{n} {one if n == 1 else many} {word}" + "".join(f", {m} {w}" for m, w in rest))
    return out
