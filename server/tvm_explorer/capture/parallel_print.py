"""Print the IR of every recorded pass after the compile, in several processes.

Printing every changed function with TVM's printer costs more than the compile itself on
small models (docs/benchmarks.md), and one process prints on one core. TVM IR is immutable:
the functions a pass produced stay exactly as they were as long as someone holds them (a
pass copies a node it does not own alone instead of changing it). So during the compile a
``DeferredDocuments`` only keeps, per recorded pass, the function objects and what may still
change afterwards (the spans the tracker re-stamps in place, the functions' origin sets, the
schedule records); once the compile is done it forks printing workers, which inherit the
kept IR copy-on-write, print their share of the functions and send the text back over a
pipe. The parent assembles and indexes the documents exactly as an inline capture does, so
the bundle is byte-identical.

A worker that dies, hangs or sends something unreadable costs time, never content: the
parent prints its share itself. ``TVMX_PRINT_WORKERS`` sets the number of processes
(``0``: print inline during the compile, as before this module existed; ``1``: print after
the compile in this process only; default: one per idle core, at most 4, and inline when
fewer than two cores are idle).
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from tvm import tirx

from tvm_explorer.capture.indexer import index_module
from tvm_explorer.capture.printer import (
    RELAX_NODES,
    FunctionText,
    assemble,
    content_key,
    function_text,
    nodes_of,
    print_lines,
)
from tvm_explorer.capture.schedules import ScheduleLinks
from tvm_explorer.provenance.spans import read_span

ENV_WORKERS = "TVMX_PRINT_WORKERS"
MAX_WORKERS = 4
# A worker gets this long after the parent printed its own share (plus a multiple of that
# time, for a loaded machine) before its share is printed again by the parent.
WORKER_GRACE_SECONDS = 30.0
_MIN_FUNCTIONS_TO_FORK = 8


def print_workers() -> int:
    """Processes to print with: ``TVMX_PRINT_WORKERS`` if set (``auto``: one per idle core,
    at most 4, or 0 when fewer than two cores are idle); unset: 0, print inline during the
    compile. ``tvm-explorer compile`` sets ``auto`` when unset (a process of its own); the
    Python API stays inline unless asked (forking a host program with threads is not safe).
    With two idle cores the capture takes 0.82-0.90x the inline capture's wall time and up to
    1.10x the stock compile's peak memory (docs/benchmarks.md, seventh round)."""
    value = os.environ.get(ENV_WORKERS, "").strip().lower()
    if not value:
        return 0
    if value != "auto":
        try:
            return max(0, int(value))
        except ValueError:
            return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0] + 0.5)  # this process's own share included
    except OSError:
        busy = 1
    idle = min(MAX_WORKERS, cores - max(1, busy) + 1)
    return idle if idle >= 2 else 0


@dataclass
class _Kept:
    """A function kept for printing after the compile, with its anchored nodes."""

    gv: Any  # a tvm.ir.GlobalVar (TVM is untyped)
    func: Any  # its function
    nodes: list
    spanned: list[int]  # indexes of the nodes whose spans the index reads
    is_relax: bool
    last_spans: tuple | None = None


@dataclass
class _SetsThen:
    """The tracker as the indexer reads it (``FunctionSets``), as it was when the pass ran."""

    function_set: Callable[[str], int]


@dataclass
class _Document:
    path: str
    stage: str
    pass_index: int
    name: str
    keys: list[tuple[tuple, str]]
    spans: list[tuple]  # per function (as keys), the spans of its spanned nodes then
    function_sets: dict[str, int]
    links: _FrozenLinks | None


class _FrozenLinks(ScheduleLinks):
    """The schedule records as they were when a pass ran (later records must not link
    functions of earlier documents)."""


class DeferredDocuments:
    """Keeps what each recorded pass's document needs; ``flush`` prints and writes them all."""

    def __init__(self, writer, tracker, origins, workers: int):
        self.writer = writer
        self.tracker = tracker
        self.origins = origins
        self.workers = workers
        self._kept: dict[tuple[tuple, str], _Kept] = {}
        self._documents: list[_Document] = []
        self._links: _FrozenLinks | None = None
        self.fallbacks = 0  # worker shares the parent had to print itself (for tests)

    def add(self, path: str, mod, stage: str, pass_index: int, name: str, schedules) -> None:
        """Remember the document of ``mod`` (the module after pass ``name``)."""
        keys, spans, fsets = [], [], {}
        for gv, func in sorted(mod.functions.items(), key=lambda kv: kv[0].name_hint):
            fname = gv.name_hint
            # By content, not identity: a rebuilt function made of the same parts prints the
            # same text with the same nodes (printer.content_key); the kept function holds
            # those parts alive.
            key = (content_key(func), fname)
            kept = self._kept.get(key)
            if kept is None:
                nodes = nodes_of(func)
                is_relax = not isinstance(func, tirx.PrimFunc)
                wanted = RELAX_NODES if is_relax else (tirx.BufferStore,)
                spanned = [i for i, node in enumerate(nodes) if isinstance(node, wanted)]
                kept = self._kept[key] = _Kept(gv, func, nodes, spanned, is_relax)
            keys.append(key)
            spans.append(self._spans_now(kept))
            fsets[fname] = self.tracker.function_set(fname)
        links = None
        if schedules is not None:
            if self._links is None or self._links.records != schedules.records:
                self._links = _FrozenLinks(dict(schedules.records))
            links = self._links
        self._documents.append(_Document(path, stage, pass_index, name, keys, spans, fsets, links))

    @staticmethod
    def _spans_now(kept: _Kept) -> tuple:
        nodes = kept.nodes
        if kept.is_relax:
            now = tuple(read_span(nodes[i]) or read_span(nodes[i].var) for i in kept.spanned)
        else:
            now = tuple(read_span(nodes[i]) for i in kept.spanned)
        if now == kept.last_spans:
            return kept.last_spans  # one tuple shared by every document where nothing moved
        kept.last_spans = now
        return now

    def flush(self) -> None:
        """Print every kept function (in worker processes when allowed) and write the
        documents, in pass order. Call it when no TVM work is running."""
        if not self._documents:
            return
        order: list[tuple[tuple, str]] = []
        seen = set()
        for doc in self._documents:
            for key in doc.keys:
                if key not in seen:
                    seen.add(key)
                    order.append(key)
        printed = self._print(order)
        texts: dict[tuple[tuple, str], FunctionText] = {}
        for key in order:
            kept = self._kept[key]
            texts[key] = function_text(key[1], kept.func, kept.nodes, *printed[key])
        for doc in self._documents:
            self._write(doc, texts)
        self._documents = []
        self._kept = {}

    def _write(self, doc: _Document, texts) -> None:
        functions = [texts[key] for key in doc.keys]
        text, placed, starts = assemble(functions)
        then: dict[int, tuple | None] = {}
        for key, spans in zip(doc.keys, doc.spans):
            kept = self._kept[key]
            nodes = kept.nodes
            for i, span in zip(kept.spanned, spans):
                then[id(nodes[i])] = span
        # What the indexer reads of the module: which of its functions are PrimFuncs.
        module_then = SimpleNamespace(functions={self._kept[key].gv: self._kept[key].func for key in doc.keys})
        tracker_then = _SetsThen(doc.function_sets.__getitem__)
        link = doc.links.trace_link if doc.links is not None else None
        ranges = index_module(
            placed, starts, module_then, tracker_then, self.origins, link, read=lambda node: then.get(id(node))
        )
        self.writer.add_document(doc.path, text, ranges, doc.stage, pass_index=doc.pass_index, pass_name=doc.name)

    # -- printing ------------------------------------------------------------------------
    def _print(self, order: list[tuple[tuple, str]]) -> dict:
        jobs = [(key, self._kept[key]) for key in order]
        if self.workers <= 1 or len(jobs) < _MIN_FUNCTIONS_TO_FORK:
            return _print_share(jobs)
        shares = _split(jobs, self.workers)
        return self._print_forked(shares)

    def _print_forked(self, shares: list[list]) -> dict:
        children = []
        results: dict = {}
        try:
            for share in shares[1:]:
                try:
                    child = _start_worker(share)
                except OSError:  # no process to be had (limits, memory): print it here
                    self.fallbacks += 1
                    results.update(_print_share(share))
                    continue
                children.append((child, share))
            started = time.perf_counter()
            results.update(_print_share(shares[0]))
            own = time.perf_counter() - started
            deadline = time.monotonic() + WORKER_GRACE_SECONDS + 4 * own
            for child, share in children:
                got = _collect(child, deadline)
                if got is None or any(key not in got for key, _kept in share):
                    self.fallbacks += 1
                    got = _print_share(share)
                results.update(got)
            children = []
        finally:
            for (pid, fd), _share in children:  # only on an error in this process
                _end(pid, fd)
        return results


def _print_share(jobs) -> dict:
    """``{key: print_lines(...)}`` for one share of the functions."""
    return {key: print_lines(kept.gv, kept.func, kept.nodes) for key, kept in jobs}


def _split(jobs, n: int) -> list[list]:
    """``n`` shares of about equal printing cost (nodes printed), largest functions first."""
    shares: list[list] = [[] for _ in range(n)]
    loads = [0] * n
    for job in sorted(jobs, key=lambda j: -len(j[1].nodes)):
        k = loads.index(min(loads))
        shares[k].append(job)
        loads[k] += len(job[1].nodes) + 20
    return [s for s in shares if s] or [[]]


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _start_worker(share) -> tuple[int, int]:
    """Fork a process printing ``share``; returns its pid and the pipe it answers on."""
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # the worker: print, send, leave without running any of the parent's exit code
        status = 1
        try:
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _die_with_parent()
            gc.disable()  # collections would touch (and copy) every inherited object
            data = pickle.dumps(_print_share(share), protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def _collect(child: tuple[int, int], deadline: float) -> dict | None:
    """A worker's results, or None if it died, failed, hung past ``deadline`` or sent
    something unreadable (the worker is ended and reaped in every case)."""
    pid, fd = child
    chunks = []
    complete = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                complete = True
                break
            chunks.append(chunk)
    except OSError:
        complete = False
    status = _end(pid, fd, kill=not complete)
    if not complete or status != 0:
        return None
    try:
        got = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a damaged answer means printing the share here
        return None
    return got if isinstance(got, dict) else None


def _end(pid: int, fd: int, kill: bool = True) -> int | None:
    """Close the pipe, end the worker if asked, reap it; its exit status (None if killed)."""
    try:
        os.close(fd)
    except OSError:
        pass
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        _pid, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)
