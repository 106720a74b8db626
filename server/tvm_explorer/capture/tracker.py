"""Keep provenance alive across TVM passes that drop it.

After every pass the tracker looks at the module the pass produced, works out the origin set
of every Relax binding, function, PrimFunc and TIR BufferStore, and stamps it back as a span
so the next pass carries it on. Nothing but spans is ever changed.

Relax bindings, in order of preference: a span we stamped on the binding, its variable or
its value (LegalizeOps keeps variables; FuseOps keeps values); a call to a function whose
origins are known; the same binding (function and variable name) before the pass
(ToNonDataflow renames nothing but replaces every variable); a kernel call writing into a
fresh allocation, the binding that then renames the allocation (CallTIRRewrite); else the
data flow: plumbing (allocations, kills, shape checks) serves the layers whose values it
takes or feeds.

PrimFuncs take the union of their call sites. Each BufferStore carries a unit id that stays
with it through every later pass and into generated code; a store seen in two functions
(FuseTIR copies stores of deduplicated PrimFuncs) gets a fresh id in all but one, and keeps
only the layers the function containing it serves. Stores a pass creates (schedule rules,
lowering) serve the stores they feed or read from. Stores that vanish (inlined epilogues)
hand their layers to the stores that absorbed them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tvm
from tvm import relax, tirx

from tvm_explorer.capture.node_collect import collect
from tvm_explorer.capture.printer import RELAX_NODES
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import handle, origin_span, read_span, set_span


@dataclass
class StoreInfo:
    """What the tracker knows about one TIR store in the current module."""

    node: tirx.BufferStore
    func: str
    origin_set: int
    _writes: str | None = None
    _reads: frozenset[str] | None = None

    @property
    def writes(self) -> str:
        """The buffer the store writes (read on first use: rarely needed)."""
        if self._writes is None:
            self._writes = self.node.buffer.name
        return self._writes

    @property
    def reads(self) -> frozenset[str]:
        """Buffers the store's value loads (computed on first use: rarely needed)."""
        if self._reads is None:
            self._reads = _loaded_buffers(self.node.value)
        return self._reads


@dataclass
class _PrevBinding:
    """A binding as it was before the current pass (for finding regrouped bindings)."""

    var: int
    kind: str
    var_args: frozenset[int]
    sid: int
    keep: object  # holds the variable alive so its handle stays unique


@dataclass
class PassCoverage:
    """Units (Relax bindings or TIR stores) in a module, and how many have origins."""

    units: int = 0
    attributed: int = 0
    extra: dict = field(default_factory=dict)


def _bindings(func) -> list:
    return collect(func.body, RELAX_NODES, "pre")


def _stores(func) -> list:
    return collect(func.body, (tirx.BufferStore,), "pre")


def _refs(expr) -> tuple[list, list]:
    """The variables and the global functions ``expr`` uses (one walk), each in walk order."""
    variables: list = []
    functions: list = []
    for node in collect(expr, (relax.Var, relax.GlobalVar)):
        (functions if isinstance(node, relax.GlobalVar) else variables).append(node)
    return variables, functions


_SHARED_VALUES = (
    tvm.ir.Var,
    tvm.ir.Constant,
    tvm.ir.GlobalVar,
    relax.ShapeExpr,
    relax.ExternFunc,
    tvm.ir.StringImm,
    tvm.ir.Op,
)


def _constants(value) -> list:
    """Constants passed directly to a call (weights, biases), not nested deeper."""
    if not isinstance(value, relax.Call):
        return []
    out: list = []
    for arg in value.args:
        items = arg.fields if isinstance(arg, relax.Tuple) else [arg]
        out.extend(a for a in items if isinstance(a, tvm.ir.GenericConst))
    return out


_ALLOCATIONS = ("relax.builtin.alloc_tensor", "relax.memory.alloc_tensor", "relax.vm.alloc_tensor")


def is_allocation(value) -> bool:
    """A fresh tensor (the destination a lowered kernel call writes into)."""
    return isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in _ALLOCATIONS


def _callee(value):
    """The function a binding calls: ``f(...)`` or ``R.call_tir(f, ...)``."""
    if not isinstance(value, relax.Call):
        return None
    if isinstance(value.op, relax.GlobalVar):
        return value.op
    if value.args and isinstance(value.args[0], relax.GlobalVar):
        return value.args[0]
    return None


def _value_kind(value, callee) -> str:
    """What a binding computes, coarsely: the operator or function (``callee``) it calls."""
    if isinstance(value, relax.Call):
        if callee is not None:
            return callee.name_hint
        return getattr(value.op, "name", None) or type(value.op).__name__
    return type(value).__name__


@dataclass
class _Facts:
    """What the tracker needs to know about a binding's value; values survive most passes
    unchanged (the same object), so this is computed once per value, not once per pass."""

    value: object  # keeps the value alive so its handle stays unique
    kind: str
    callee: str | None
    var_refs: tuple[int, ...]
    constants: tuple
    global_refs: tuple[str, ...]
    var_set: frozenset[int]


def _facts_of(value) -> _Facts:
    callee = _callee(value)
    variables, functions = _refs(value)
    var_refs = tuple(handle(v) for v in variables)
    return _Facts(
        value,
        _value_kind(value, callee),
        callee.name_hint if callee is not None else None,
        var_refs,
        tuple(_constants(value)),
        tuple(gv.name_hint for gv in functions),
        frozenset(var_refs),
    )


def _call_counts(relax_funcs, bindings_of, facts) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _gv, func in relax_funcs:
        for b in bindings_of(func):
            callee = facts(b).callee
            if callee is not None:
                counts[callee] = counts.get(callee, 0) + 1
    return counts


def _loaded_buffers(expr) -> frozenset[str]:
    return frozenset(getattr(load.source, "name", "") for load in collect(expr, (tvm.ir.TensorLoad,)))


class ProvenanceTracker:
    """Attributes and re-stamps modules pass after pass for one capture."""

    def __init__(self, origins: OriginTable):
        self.origins = origins
        self.func_origin: dict[str, int] = {}
        self._prev_binding: dict[tuple[str, str], tuple[int, str]] = {}
        self._const_owner: dict[int, tuple[object, int]] = {}
        self._prev_calls: dict[str, list[_PrevBinding]] = {}
        self._next_unit = 1
        self._stores: dict[int, StoreInfo] = {}
        self._fused_calls: dict[str, list[tuple[str, int]]] = {}
        # Walk results of the last pass, by node identity (the node is kept alive with its
        # result, so its handle cannot be reused): most TIR passes hand most function bodies
        # and store values on unchanged.
        self._store_lists: dict[int, tuple[object, list]] = {}
        self._binding_lists: dict[int, tuple[object, list]] = {}
        self._facts: dict[int, _Facts] = {}
        self._facts_before: dict[int, _Facts] = {}
        self._relax_key: tuple = ()
        self._tir_cache: dict[str, tuple] = {}  # name -> (body handle, layers, stores, body)
        self._relax_call_sites: dict[str, list[int]] = {}
        self._relax_units = (0, 0)
        self._relax_funcs_alive: list = []
        self._within_memo: dict[tuple[int, int], int] = {}

    # -- public ----------------------------------------------------------------------
    def after_pass(self, mod) -> PassCoverage:
        """Attribute everything in ``mod`` (just produced by a pass) and stamp it back."""
        relax_funcs = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, relax.Function)]
        prim_funcs = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)]
        cov = PassCoverage()
        self._binding_lists = {}
        binding_sets: dict[tuple[str, str], tuple[int, str]] = {}
        call_sites: dict[str, list[int]] = {}
        relax_key = tuple(sorted((gv.name_hint, handle(f)) for gv, f in relax_funcs))
        if relax_funcs and relax_key == self._relax_key:
            # The pass left every Relax function alone (it worked on PrimFuncs): the bindings
            # and their spans are exactly as attributed after the previous pass.
            call_sites = self._relax_call_sites
            cov.units, cov.attributed = self._relax_units
        elif relax_funcs:
            self._facts_before, self._facts = self._facts, {}
            # Callees before callers so a call to a fused function finds its origins.
            relax_funcs.sort(key=lambda gf: gf[0].name_hint == "main")
            sites = _call_counts(relax_funcs, self._bindings_of, self._facts_for)
            computed = {gv.name_hint: self._relax_sets(gv.name_hint, f, mod, sites) for gv, f in relax_funcs}
            self._widen_shared_functions(computed, mod)
            const_owner: dict[int, tuple[object, int]] = {}
            prim_names = {gv.name_hint for gv, _f in prim_funcs}
            for name, (bindings, sets) in computed.items():
                self._stamp_relax(name, bindings, sets, prim_names, call_sites)
                for b, sid in zip(bindings, sets):
                    binding_sets[(name, b.var.name)] = (sid, self._facts_for(b).kind)
                    cov.units += 1
                    cov.attributed += bool(sid)
                    if sid:
                        for c in self._facts_for(b).constants:
                            old = const_owner.get(handle(c))
                            const_owner[handle(c)] = (c, self.origins.union([old[1], sid]) if old else sid)
            self._prev_binding = binding_sets
            self._const_owner = const_owner
            self._prev_calls = {
                name: [
                    _PrevBinding(handle(b.var), self._facts_for(b).kind, self._facts_for(b).var_set, sid, b.var)
                    for b, sid in zip(bindings, sets)
                ]
                for name, (bindings, sets) in computed.items()
            }
            self._relax_key = relax_key
            self._relax_call_sites = call_sites
            self._relax_units = (cov.units, cov.attributed)
            self._relax_funcs_alive = relax_funcs  # their handles stay unique while remembered
        for gv, _func in prim_funcs:
            prim_sites = call_sites.get(gv.name_hint)
            if prim_sites:
                self.func_origin[gv.name_hint] = self.origins.union(prim_sites)
        self._attribute_tir(prim_funcs)
        stores = [s for s in self._stores.values()]
        cov.extra["stores"] = len(stores)
        cov.extra["stores_attributed"] = sum(1 for s in stores if s.origin_set)
        if not relax_funcs:
            cov.units, cov.attributed = cov.extra["stores"], cov.extra["stores_attributed"]
        return cov

    def function_set(self, name: str) -> int:
        """Origin set of a function by name, deriving it for split-off functions."""
        if name in self.func_origin:
            return self.func_origin[name]
        for known in sorted(self.func_origin, key=len, reverse=True):
            if name.startswith(known + "_"):
                return self.func_origin[known]
        return 0

    # -- Relax -----------------------------------------------------------------------
    def _bindings_of(self, func) -> list:
        """``_bindings(func)``, walked once per function object per pass."""
        key = handle(func)
        got = self._binding_lists.get(key)
        if got is None:
            got = self._binding_lists[key] = (func, _bindings(func))
        return got[1]

    def _facts_for(self, binding) -> _Facts:
        """Facts about a binding's value, reused while the value object lives on."""
        value = binding.value
        key = handle(value)
        got = self._facts.get(key)
        if got is None:
            got = self._facts_before.get(key) or _facts_of(value)
            self._facts[key] = got
        return got

    def _relax_sets(self, fname, func, mod, sites):
        bindings = self._bindings_of(func)
        sets = self._regrouped_sets(fname, bindings, mod)
        sets = [sid or self._direct_set(fname, b, mod, sites) for b, sid in zip(bindings, sets)]
        by_var = {handle(b.var): i for i, b in enumerate(bindings)}
        self._fill_destination_calls(bindings, sets, by_var)
        self._fill_by_dataflow(bindings, sets, by_var)
        if not all(sets):
            rest = self.origins.as_parts(self.origins.union(sets)) if any(sets) else self.function_set(fname)
            sets = [s or rest for s in sets]
        self.func_origin[fname] = self.origins.union(sets)
        return bindings, sets

    def _regrouped_sets(self, fname, bindings, mod) -> list[int]:
        """Origins of calls to functions a pass just built out of this function's bindings.

        FuseOps replaces each group of bindings by one call to a new function (new variable,
        no span, and one function may serve several identical groups). Every group is found
        again among the bindings before the pass: walking in order, a call's group is made of
        not yet claimed bindings that compute what the callee's body computes, in that order,
        from the call's arguments (or from the group itself)."""
        prev = self._prev_calls.get(fname)
        sets = [0] * len(bindings)
        if not prev:
            return sets
        prev_by_var = {p.var: p for p in prev}
        # A binding the pass kept (same variable) is nobody's group member: an unfused
        # ``dequantize10(lv27)`` kept in main must not be claimed by a fused group that
        # dequantizes the same tensor (then the group's own binding is left over, the group
        # no longer matches, and its layers' output marks are lost — MobileNetV3's
        # squeeze-excite blocks, and every kernel after them).
        kept = {handle(b.var) for b in bindings}
        claimed: set[int] = {k for k, p in enumerate(prev) if p.var in kept}
        alias: dict[int, int] = {}  # variable now -> variable before
        for i, b in enumerate(bindings):
            var = handle(b.var)
            if var in prev_by_var:
                alias[var] = var
                continue
            callee = b.value.op if isinstance(b.value, relax.Call) else None
            if not (
                isinstance(callee, relax.GlobalVar)
                and callee in mod.functions
                and isinstance(mod[callee], relax.Function)
            ):
                continue
            body = [self._facts_for(x).kind for x in self._bindings_of(mod[callee])]
            available = {alias.get(v, v) for v in self._facts_for(b).var_refs}
            group: list[_PrevBinding] = []
            for kind in body:
                k, found = next(
                    (
                        (k, p)
                        for k, p in enumerate(prev)
                        if k not in claimed and p.kind == kind and p.var_args <= available
                    ),
                    (None, None),
                )
                if found is None:
                    group = []
                    break
                assert k is not None  # found with its index
                claimed.add(k)
                available.add(found.var)
                group.append(found)
            if group and all(p.sid for p in group):
                sets[i] = self.origins.union(p.sid for p in group)
                alias[var] = group[-1].var
        return sets

    def _widen_shared_functions(self, computed, mod) -> None:
        """A Relax function called from several places (FuseOps reuses one fused function for
        identical groups) serves every caller: its bindings get each caller's layers."""
        sites: dict[str, list[int]] = {}
        for bindings, sets in computed.values():
            for b, sid in zip(bindings, sets):
                callee = b.value.op if isinstance(b.value, relax.Call) else None
                if isinstance(callee, relax.GlobalVar) and callee.name_hint in computed and sid:
                    sites.setdefault(callee.name_hint, []).append(sid)
        for name, callers in sites.items():
            if len(set(callers)) < 2:
                continue
            bindings, sets = computed[name]
            widened = [self._widen(sid, callers) for sid in sets]
            computed[name] = (bindings, widened)
            self.func_origin[name] = self.origins.union(widened)

    def _widen(self, sid: int, callers: list[int]) -> int:
        """``sid`` (written for one caller) extended to the matching layers of the others:
        identical groups come from repeated blocks, so the r-th layer of one caller's group
        plays the role of the r-th layer of another's."""
        if not sid:
            return sid
        mine = set(self.origins.layers(sid))
        own = max(callers, key=lambda c: len(mine & set(self.origins.layers(c))))
        own_layers = sorted(self.origins.layers(own))
        parts = [sid]
        for caller in set(callers):
            if caller == own:
                continue
            theirs = sorted(self.origins.layers(caller))
            if len(theirs) == len(own_layers) and mine <= set(own_layers):
                rank = dict(zip(own_layers, theirs))
                parts.append(self.origins.intern((rank[l], out) for l, out in self.origins.get(sid)))
            else:
                parts.append(self.origins.as_parts(caller))
        return self.origins.union(parts)

    def _stamp_relax(self, fname, bindings, sets, prim_names, call_sites) -> None:
        calls: list[tuple[str, int]] = []
        for b, sid in zip(bindings, sets):
            if sid:
                self._stamp_binding(b, sid)
            for name in self._facts_for(b).global_refs:
                if name in prim_names:
                    call_sites.setdefault(name, []).append(sid)
                    calls.append((name, sid))
        if calls and fname != "main":
            # FuseTIR will inline these PrimFuncs into one named like this function, in
            # this order: remember which call each copied store comes from.
            self._fused_calls[fname] = calls

    def _direct_set(self, fname, b, mod, sites: dict[str, int]) -> int:
        for node in (b, b.var, b.value):
            got = read_span(node)
            if got and got[0]:
                return got[0]
        facts = self._facts_for(b)
        # Weights and biases are the same Constant objects before and after a pass that
        # regroups calls (FuseOps makes new variables and renumbers their names).
        owners = [self._const_owner[handle(c)][1] for c in facts.constants if handle(c) in self._const_owner]
        if owners:
            return self.origins.union(owners)
        if facts.callee is not None and sites.get(facts.callee) == 1:
            known = self.func_origin.get(facts.callee)
            if known:
                return known
        prev = self._prev_binding.get((fname, b.var.name))
        if prev and prev[1] == facts.kind:
            # Same name, same kind of value: a pass that replaced the variable objects but
            # kept names (ToNonDataflow).
            return prev[0]
        return 0

    def _fill_destination_calls(self, bindings, sets, by_var) -> None:
        """A kernel call writing into a fresh allocation computes what the allocation is then
        renamed to. CallTIRRewrite turns ``lv = R.call_tir(f, args)`` into ``alloc =
        alloc_tensor(...)``, ``_ = f(args, alloc)``, ``lv = alloc``: ``lv`` keeps its name and
        origins, and the new call (no span, a new variable) takes them, its layers' outputs
        marked. The data flow would make it plumbing of the layers it reads instead: a bias
        ``add`` whose bias went through a ``reshape`` (PyTorch, without constant folding) was
        its convolution's inner work, and ``--numerics`` could not see the layer's output."""
        renamed: dict[int, int] = {}  # allocation variable -> origins of the binding renaming it
        for b, sid in zip(bindings, sets):
            if sid and isinstance(b.value, relax.Var):
                renamed.setdefault(handle(b.value), sid)
        if not renamed:
            return
        written: set[int] = set()
        for i, b in enumerate(bindings):
            value = b.value
            if not isinstance(value, relax.Call):
                continue
            fresh = []
            for arg in value.args:
                var = handle(arg) if isinstance(arg, relax.Var) else None
                if (
                    var in renamed
                    and var not in written
                    and var in by_var
                    and is_allocation(bindings[by_var[var]].value)
                ):
                    fresh.append(var)
            written.update(fresh)  # only the first call using an allocation writes it
            if fresh and not sets[i]:
                sets[i] = self.origins.union(renamed[v] for v in fresh)

    def _fill_by_dataflow(self, bindings, sets, by_var) -> None:
        uses = [[by_var[v] for v in self._facts_for(b).var_refs if v in by_var] for b in bindings]
        for _ in range(3):
            if all(sets):
                return
            for i in range(len(bindings)):
                if sets[i]:
                    continue
                producers = [sets[j] for j in uses[i] if sets[j]]
                if not producers:
                    producers = [sets[k] for k, used in enumerate(uses) if i in used and sets[k]]
                if producers:
                    sets[i] = self.origins.as_parts(self.origins.union(producers))

    @staticmethod
    def _stamp_binding(b, sid: int) -> None:
        span = origin_span(sid)
        value = b.value
        # Leaves (variables, constants, functions) are shared with other bindings: only the
        # binding, its own variable and a value it alone holds carry its origins.
        nodes = [b, b.var] if isinstance(value, _SHARED_VALUES) else [b, b.var, value]
        for node in nodes:
            got = read_span(node)
            if got is None or got[0] != sid:
                set_span(node, span)

    # -- TIR -------------------------------------------------------------------------
    def _attribute_tir(self, prim_funcs) -> None:
        previous = self._stores
        current: dict[int, StoreInfo] = {}
        fresh: list[tuple[str, tirx.BufferStore]] = []
        spanned: dict[str, int] = {}
        occurrences: dict[tuple[str, int], int] = {}
        params: dict[str, set[str]] = {}
        funcs: dict[str, tirx.PrimFunc] = {}
        store_lists: dict[int, tuple[object, list]] = {}
        fsets: dict[str, int] = {}
        for gv, func in sorted(prim_funcs, key=lambda gf: gf[0].name_hint):
            name = gv.name_hint
            fset = fsets[name] = self.function_set(name)
            funcs[name] = func
            body = func.body
            key = handle(body)
            reuse = self._tir_cache.get(name)
            if (
                reuse is not None
                and reuse[0] == key
                and reuse[1] == fset
                and not any(info_unit in current for info_unit, _ in reuse[2])
            ):
                # Same body, same layers: its stores are exactly as attributed last pass.
                for info_unit, info in reuse[2]:
                    current[info_unit] = info
                spanned[name] = len(reuse[2])
                store_lists[key] = self._store_lists.get(key) or (body, [i.node for _, i in reuse[2]])
                continue
            cached = self._store_lists.get(key) or store_lists.get(key)
            if cached is None:
                cached = (body, _stores(func))
            store_lists[key] = cached
            for store in cached[1]:
                got = read_span(store)
                if got is None or got[1] == 0:
                    fresh.append((name, store))
                    continue
                spanned[name] = spanned.get(name, 0) + 1
                sid, unit = got
                origin_func = previous[unit].func if unit in previous else None
                if origin_func and origin_func != name and name in self._fused_calls:
                    sid = self._call_site_set(name, origin_func, unit, sid, occurrences)
                    if sid != got[0]:
                        set_span(store, origin_span(sid, unit))
                        got = (sid, unit)
                if unit in current:
                    # The same store in a second function: a copy (FuseTIR, cloning).
                    fresh.append((name, store))
                    continue
                sid = self._within(sid, fset)
                current[unit] = StoreInfo(store, name, sid)
                if got[0] != sid:
                    set_span(store, origin_span(sid, unit))
        for name, store in fresh:
            got = read_span(store)
            fset = self.function_set(name)
            if got and got[0]:
                sid = self._within(got[0], fset)
            elif spanned.get(name):
                sid = self._serving(name, store, current)  # made by a pass among known stores
            else:
                sid = 0
            if not sid:
                # A new PrimFunc (LegalizeOps, TE): the store writing a result computes the
                # call's output; the others are steps towards it.
                if name not in params:
                    params[name] = {getattr(p, "name", "") for p in funcs[name].params}
                writes_result = store.buffer.name in params[name]
                sid = fset if writes_result else self.origins.as_parts(fset)
            unit = self._next_unit
            self._next_unit += 1
            set_span(store, origin_span(sid, unit))
            current[unit] = StoreInfo(store, name, sid)
        self._absorb_vanished(previous, current)
        by_func: dict[str, list] = {}
        for info_unit, info in current.items():
            by_func.setdefault(info.func, []).append((info_unit, info))
        self._tir_cache = {
            name: (handle(func.body), fsets[name], by_func.get(name, []), func.body) for name, func in funcs.items()
        }
        self._stores = current
        self._store_lists = store_lists
        for name, infos in by_func.items():  # in store order: origin set ids stay deterministic
            if name not in self.func_origin:
                self.func_origin[name] = self.origins.union(info.origin_set for _unit, info in infos)

    def _call_site_set(self, fused: str, prim: str, unit: int, sid: int, occurrences) -> int:
        """Origins of the k-th copy of a store of ``prim`` inlined into ``fused``: the k-th
        call of ``prim`` in the fused function (a deduplicated PrimFunc serves many layers)."""
        k = occurrences.get((fused, unit), 0)
        occurrences[(fused, unit)] = k + 1
        sites = [site for callee, site in self._fused_calls[fused] if callee == prim]
        if k >= len(sites) or not sites[k]:
            return sid
        produces = any(out for _, out in self.origins.get(sid))
        return sites[k] if produces else self.origins.as_parts(sites[k])

    def _within(self, sid: int, fset: int) -> int:
        """``sid`` narrowed to the layers its function serves (if that leaves any)."""
        if not fset or not sid:
            return sid
        got = self._within_memo.get((sid, fset))
        if got is None:
            allowed = set(self.origins.layers(fset))
            kept = [(layer, out) for layer, out in self.origins.get(sid) if layer in allowed]
            got = self._within_memo[(sid, fset)] = self.origins.intern(kept) if kept else sid
        return got

    def _serving(self, name, store, current) -> int:
        """Origins of a store a pass created: the stores it reads from, else those reading it."""
        reads = _loaded_buffers(store.value)
        writes = store.buffer.name
        same = [info for info in current.values() if info.func == name and info.origin_set]
        producers = [info.origin_set for info in same if info.writes in reads and info.writes != writes]
        consumers = [info.origin_set for info in same if writes in info.reads]
        picked = consumers or producers
        return self.origins.as_parts(self.origins.union(picked)) if picked else 0

    def _absorb_vanished(self, previous, current) -> None:
        if all(unit in current or not old.origin_set for unit, old in previous.items()):
            return  # nothing vanished (most passes)
        by_func: dict[str, list[StoreInfo]] = {}
        for info in current.values():
            by_func.setdefault(info.func, []).append(info)
        for unit, old in previous.items():
            if unit in current or not old.origin_set:
                continue
            family = [i for f, infos in by_func.items() if f == old.func or f.startswith(old.func + "_") for i in infos]
            # A store now writing the vanished one's buffer computes its result (reverse
            # inlining); one reading its inputs merely absorbed its computation (inlining).
            takers = [i for i in family if i.writes == old.writes]
            given = old.origin_set
            if not takers:
                takers = [i for i in family if old.reads & i.reads]
                given = self.origins.as_parts(old.origin_set)
            for info in takers:
                merged = self.origins.union([info.origin_set, given])
                if merged != info.origin_set:
                    info.origin_set = merged
                    stamped = read_span(info.node)
                    assert stamped is not None  # every store of the module was stamped above
                    set_span(info.node, origin_span(merged, stamped[1]))
