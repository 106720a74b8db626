"""Finding, loading and watching bundles: progress while loading, a notification after every
change, a message for every damaged bundle."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types

from tvm_explorer.errors import BundleError
from tvm_explorer.lsp import heap
from tvm_explorer.lsp.protocol import BUNDLES_CHANGED, BundlesChangedParams
from tvm_explorer.lsp.shared import Session, uri_to_path
from tvm_explorer.navigation import irsymbols
from tvm_explorer.navigation import registry as reg

logger = logging.getLogger(__name__)
RESCAN_EVERY = 5  # polls between two walks of the workspace folders
MAX_PARALLEL_LOADS = 3
"""Bundles loaded at once, each on a thread of its own: a bundle of 100,000 documents takes
most of a minute, and one found meanwhile (copied in, opened) must not wait for it."""


class BundleWatcher:
    """Keeps ``session.registry`` in step with the bundles on disk."""

    def __init__(self, server, session: Session, poll_interval: float = 1.0):
        self.server = server
        self.session = session
        self.poll_interval = poll_interval
        self.folders: list[Path] = []
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self._tokens = itertools.count(1)
        self._initial: asyncio.Task | None = None
        self._opening: dict[Path, asyncio.Task] = {}
        # Roots being (re)loaded now, each by a task of its own (``_load_root``); a refresh
        # only decides what to load and never waits for another bundle's load.
        self._loads: dict[Path, asyncio.Task] = {}
        self._load_slots = asyncio.Semaphore(MAX_PARALLEL_LOADS)
        # Roots found but not loaded yet, each with a future done when its load ends: a
        # request waits for its own bundle only, never for another (large) one.
        self._pending: dict[Path, asyncio.Future] = {}
        self._discovered: asyncio.Event | None = None
        # Work to do for each freshly loaded bundle on the loading thread, before it is
        # installed (what its first requests need anyway, kept off the event loop where
        # it held up every other bundle's requests): ``fn(view)``.
        self.before_install: list = []
        # Work to do for each freshly loaded bundle, off the event loop, after it is
        # installed (requests are answered meanwhile): ``fn(view)``.
        self.after_load: list = []
        # Warm-ups pause while requests are answered (navigation/background.py): on threads of
        # their own, so that paused ones never hold the threads loads and file reads run on.
        self._warmups = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tvmx-warm-up")
        self._stopped = False
        # Called at once, on the event loop, with each newly installed view (cheap work only).
        self.on_installed: list = []
        self._background: set[asyncio.Task] = set()
        # Requests waiting in ``wait_for`` for a load: warm-ups start once none is left, so
        # that the first requests after a load are answered before a warm-up thread competes
        # with them for the interpreter (it cost the first answer ~50 ms).
        self._waiting = 0
        self._none_waiting = asyncio.Event()
        self._none_waiting.set()

    # -- lifecycle ---------------------------------------------------------------------
    def configure(self, params: types.InitializeParams) -> None:
        """Take the workspace folders and options of ``initialize``."""
        folders = [f.uri for f in params.workspace_folders or ()]
        if not folders and params.root_uri:
            folders = [params.root_uri]
        self.folders = [p for uri in folders if (p := uri_to_path(uri)) and p.is_dir()]
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("pollInterval"), (int, float)):
            self.poll_interval = max(0.05, float(options["pollInterval"]))

    async def start(self) -> None:
        """Load the workspace's bundles, then poll for changes."""
        self._initial = asyncio.current_task()
        self._discovered = asyncio.Event()
        await self.refresh(rescan=True)
        if self.poll_interval > 0:
            self._task = asyncio.get_running_loop().create_task(self._poll())

    def stop(self) -> None:
        """Stop polling, and drop the warm-ups not started yet (the process's exit would wait
        for every queued one: seconds each on a large bundle)."""
        if self._task is not None:
            self._task.cancel()
        self._stopped = True
        self._warmups.shutdown(wait=False, cancel_futures=True)

    async def wait_for(self, uri: str | None, timeout: float = 120.0) -> None:
        """Wait until ``uri``'s bundle is loaded (the first time: found by the first walk of
        the workspace, or newly opened), so that the first requests get answers instead of
        empty results. Only that bundle is waited for, not the others being loaded. Without
        a URI (``listBundles``) the whole first load is waited for. Reloads of known bundles
        are not waited for: requests meanwhile are answered from the old bundle."""
        initial = self._initial
        first_load = initial is not None and not initial.done() and initial is not asyncio.current_task()
        path = uri_to_path(uri) if uri else None
        if path is None:
            if first_load and initial is not None:
                await asyncio.wait([initial], timeout=timeout)
            return
        if first_load and self._discovered is not None and not self._discovered.is_set():
            try:
                await asyncio.wait_for(self._discovered.wait(), timeout)
            except asyncio.TimeoutError:
                return
        pending: list[asyncio.Future] = [
            t for root, t in self._opening.items() if root in path.parents and not t.done()
        ]
        pending += [f for root, f in self._pending.items() if root in path.parents and not f.done()]
        if pending:
            self._waiting += 1
            self._none_waiting.clear()
            try:
                await asyncio.wait(pending, timeout=timeout)
            finally:
                self._waiting -= 1
                if not self._waiting:
                    self._none_waiting.set()

    async def _poll(self) -> None:
        for tick in itertools.count(1):
            await asyncio.sleep(self.poll_interval)
            try:
                await self.refresh(rescan=tick % RESCAN_EVERY == 0)
            except Exception:  # a watcher that dies silently would be worse than a log line
                logger.exception("bundle refresh failed")

    # -- events ------------------------------------------------------------------------
    def folders_changed(self, event: types.WorkspaceFoldersChangeEvent) -> None:
        """Apply ``workspace/didChangeWorkspaceFolders``."""
        removed = {uri_to_path(f.uri) for f in event.removed}
        added = [p for f in event.added if (p := uri_to_path(f.uri)) and p.is_dir()]
        self.folders = [f for f in self.folders if f not in removed] + added
        self._soon(rescan=True)

    def files_changed(self) -> None:
        """``workspace/didChangeWatchedFiles``: check now instead of at the next poll."""
        self._soon(rescan=True)

    def document_opened(self, uri: str) -> None:
        """Load the bundle of an opened document if it is not known yet; in a loaded bundle,
        lex the document's functions in the background ahead of its requests."""
        path = uri_to_path(uri)
        if path is None:
            return
        found = self.session.registry.find(path)
        if found is not None:
            view, rel = found
            self._in_background(
                lambda v: irsymbols.warm_document(v, rel, lambda: self.session.registry.is_current(v)), view
            )
            return
        root = reg.enclosing_root(path)
        if root is not None and root not in self.session.registry.signatures:
            self._opening[root] = self._soon(extra=[root])

    def _soon(self, rescan: bool = False, extra: list[Path] | None = None) -> asyncio.Task:
        return asyncio.get_running_loop().create_task(self.refresh(rescan=rescan, extra=extra))

    # -- loading -----------------------------------------------------------------------
    async def refresh(self, rescan: bool = False, extra: list[Path] | None = None) -> None:
        """Load new bundles, reload changed ones, forget vanished ones. Each load is a task of
        its own: the first refresh (and one for an opened document) waits for its loads, the
        polls do not, so a bundle found while a large one loads is loaded beside it."""
        async with self._lock:  # the looking only, never the loading
            registry = self.session.registry
            todo = set(extra or ())
            if rescan and self.folders:
                found = await asyncio.to_thread(reg.discover, self.folders)
                new = [r for r in found if r not in registry.signatures and r not in self._loads]
                if asyncio.current_task() is not self._initial:
                    # found later: maybe still being copied in; loaded once it has settled
                    new = await asyncio.to_thread(registry.settled, new)
                todo.update(new)
            loading = set(self._loads)  # looked at again once their load is done
            todo.update(await asyncio.to_thread(registry.changed, loading))
            todo -= loading
            loop = asyncio.get_running_loop()
            for root in todo:
                if root not in registry.bundles and root not in self._pending:
                    self._pending[root] = loop.create_future()
            if self._discovered is not None:
                self._discovered.set()
            if not todo:
                return
            # Small bundles first (the load slots are taken in this order).
            order = await asyncio.to_thread(lambda: sorted(todo, key=lambda r: (reg.size_hint(r), r)))
            tasks = [self._start_load(root) for root in order]
        if asyncio.current_task() is self._initial or extra:
            await asyncio.wait(tasks)

    def _start_load(self, root: Path) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(self._load_root(root))
        self._loads[root] = task

        def done(_task: asyncio.Task, root: Path = root) -> None:
            if self._loads.get(root) is task:
                del self._loads[root]

        task.add_done_callback(done)
        return task

    async def _load_root(self, root: Path) -> None:
        """(Re)load one bundle when a load slot is free; then tell the client."""
        try:
            async with self._load_slots:
                changed = await self._load_all([root])
        except Exception:  # a load that dies silently would leave its requests waiting
            logger.exception("loading %s failed", root)
            return
        if changed:
            loop = asyncio.get_running_loop()
            # A full collection takes tens of milliseconds on the event loop: the requests
            # that waited for this bundle go first, and it is made once the loads are done.
            if all(task is asyncio.current_task() for task in self._loads.values()):
                self._keep(loop.create_task(self._when_none_waiting(heap.settle)))
            uris = [self.session.uri_of_root(r) for r in changed]
            self.server.protocol.notify(BUNDLES_CHANGED, BundlesChangedParams(uris))

    async def _load_all(self, roots: list[Path]) -> list[Path]:
        try:
            return await self._load_each(roots)
        finally:
            for root in roots:
                waiting = self._pending.pop(root, None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(None)

    def _loaded(self, root: Path) -> None:
        waiting = self._pending.pop(root, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    async def _load_each(self, roots: list[Path]) -> list[Path]:
        registry = self.session.registry
        progress = await self._progress_begin(len(roots))
        changed = []
        for i, root in enumerate(roots):
            sig = await asyncio.to_thread(reg.signature, root)  # a walk of the bundle: off the loop
            if sig is None:
                if root in registry.bundles:
                    changed.append(root)
                registry.forget(root)
                continue
            loop = asyncio.get_running_loop()

            def on_document(k: int, n: int, path: str, i=i, root=root) -> None:
                # Called from the loading thread; notifications go out from the event loop.
                done = (i + k / max(n, 1)) / len(roots)
                loop.call_soon_threadsafe(self._progress_report, progress, f"{root.name}: {path}", done)

            started = time.perf_counter()
            try:
                view = await asyncio.to_thread(self._load_and_prepare, root, on_document)
            except BundleError as err:
                had = root in registry.bundles
                registry.install(root, None, sig, str(err))
                self._loaded(root)
                self._report(f"TVM Explorer: cannot load bundle: {err}")
                if had:
                    changed.append(root)
                continue
            except Exception as err:  # never let a hostile bundle take the server down
                logger.exception("loading %s failed", root)
                registry.install(root, None, sig, repr(err))
                self._loaded(root)
                self._report(f"TVM Explorer: cannot load bundle {root}: {err!r}")
                continue
            # The version read may be newer than the one seen before the load (swapped while
            # it was read): remember its own signature, or a swap back to the older one
            # would look like "unchanged" and the newer version would stay loaded for good.
            registry.install(root, view, view.signature or sig)
            self._loaded(root)
            logger.info(
                "loaded bundle %s: %d documents in %.0f ms",
                root,
                len(view.bundle.documents),
                1000 * (time.perf_counter() - started),
            )
            changed.append(root)
            for listener in self.on_installed:
                try:
                    listener(view)
                except Exception:  # a listener's bug must not stop the other bundles loading
                    logger.exception("after loading %s", root)
            for work in self.after_load:
                self._in_background(work, view)
            # A large bundle's documents its load did not read (the warm-ups above read most).
            self._in_background(lambda v, loop=loop: self._check_rest(v, loop), view)
            if view.problems:
                self._report_damaged(view, view.problems)
        self._progress_end(progress, f"{len(self.session.registry.bundles)} bundle(s) loaded")
        return changed

    def _report_damaged(self, view: reg.BundleView, problems: list) -> None:
        """One message per bundle, however many documents are damaged (the list is in
        tvmExplorer/listBundles and the log)."""
        for problem in problems:
            logger.warning("damaged document in %s: %s", view.root, problem)
        shown = "; ".join(str(p) for p in problems[:3])
        more = len(problems) - 3
        self._report(
            f"TVM Explorer: {len(problems)} damaged document(s) in "
            f"{view.root.name}: {shown}" + (f"; and {more} more" if more > 0 else ""),
            types.MessageType.Warning,
        )

    def _check_rest(self, view: reg.BundleView, loop: asyncio.AbstractEventLoop) -> None:
        """Check the documents of a large bundle that its load left to their first read
        (``Bundle.check_rest``), giving way to requests; damage found is listed with the
        bundle's problems and said in one message, as a load's is."""
        from tvm_explorer.navigation.background import REQUESTS

        def go_on() -> bool:
            REQUESTS.checkpoint()
            return self.session.registry.is_current(view)

        with REQUESTS.yielding():
            found = view.bundle.check_rest(go_on)
        if found and self.session.registry.is_current(view):
            view.problems.extend(found)
            loop.call_soon_threadsafe(self._report_damaged, view, found)

    def _load_and_prepare(self, root: Path, on_document) -> reg.BundleView:
        started = time.perf_counter()
        view = reg.load(root, on_document)
        logger.debug("%s read and checked in %.0f ms", root, 1000 * (time.perf_counter() - started))
        for prepare in self.before_install:
            started = time.perf_counter()
            try:
                prepare(view)
                logger.debug(
                    "%s prepared (%s) in %.0f ms",
                    root,
                    getattr(prepare, "__name__", prepare),
                    1000 * (time.perf_counter() - started),
                )
            except BundleError as err:  # changed since: the watcher reloads it
                logger.info("preparing %s: %s", root, err)
            except Exception:  # preparing is an optimization: its bug must not refuse a bundle
                logger.exception("preparing %s failed", root)
        return view

    async def _when_none_waiting(self, work) -> None:
        """Run ``work()`` on the event loop once no request waits in ``wait_for``."""
        await self._none_waiting.wait()
        work()

    def _keep(self, task: asyncio.Task) -> None:
        self._background.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._background.discard)

    def _in_background(self, work, view) -> None:
        async def run() -> None:
            # After the requests that waited for this load (they go on without another
            # ``await`` once woken, so from then on the warm-up's checkpoints see them).
            await self._none_waiting.wait()
            if self._stopped:
                return  # shut down: nothing more to prepare
            try:
                await asyncio.get_running_loop().run_in_executor(self._warmups, work, view)
            except asyncio.CancelledError:
                pass  # dropped by ``stop`` before it started
            except Exception:  # background preparation is an optimization, never an error
                logger.exception("preparing %s failed", view.root)

        self._keep(asyncio.get_running_loop().create_task(run()))

    def _report(self, message: str, kind=types.MessageType.Error) -> None:
        logger.warning(message)
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # -- $/progress ----------------------------------------------------------------------
    async def _progress_begin(self, count: int) -> str | None:
        caps = self.server.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return None
        token = f"tvm-explorer-load-{next(self._tokens)}"
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception:  # noqa: BLE001 - the client refused: load without a progress bar
            return None
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title="Loading TVM Explorer bundles", message=f"{count} bundle(s)", percentage=0
            ),
        )
        return token

    def _progress_report(self, token: str | None, message: str, done: float) -> None:
        if token is not None:
            self.server.work_done_progress.report(
                token, types.WorkDoneProgressReport(message=message, percentage=int(done * 100))
            )

    def _progress_end(self, token: str | None, message: str) -> None:
        if token is not None:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
