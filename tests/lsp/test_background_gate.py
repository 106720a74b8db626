"""Background warm-ups give way to requests (issue 15, goal 1: the first answer on a large
bundle waited for symbol tables lexed by the warm-up at the same time), and answers that
need no symbol table do not build one."""

from __future__ import annotations

import threading
import time

from tvm_explorer.navigation import irsymbols, registry
from tvm_explorer.navigation.background import REQUESTS, RequestGate
from tvm_explorer.navigation.irsymbols.navigate import symbol_references


def _tiny(fake_workspace):
    return registry.load((fake_workspace / "bundles" / "tiny").resolve())


def test_yielding_work_waits_at_checkpoints_while_a_request_is_in_flight():
    gate = RequestGate()
    passed = threading.Event()

    def background():
        with gate.yielding():
            gate.checkpoint()
            passed.set()

    with gate.request():
        gate.checkpoint()  # the request's own thread never waits
        worker = threading.Thread(target=background)
        worker.start()
        assert not passed.wait(0.3)
    assert passed.wait(10)
    worker.join(10)


def test_a_message_arriving_pauses_yielding_work_for_a_while(monkeypatch):
    from tvm_explorer.navigation import background

    monkeypatch.setattr(background, "ARRIVAL_HOLD_S", 0.3)
    gate = RequestGate()
    waited: list[float] = []

    def background_work():
        with gate.yielding():
            t0 = time.monotonic()
            gate.checkpoint()
            waited.append(time.monotonic() - t0)

    gate.arriving()  # bytes of a message read: work pauses before the request even begins
    worker = threading.Thread(target=background_work)
    worker.start()
    worker.join(10)
    assert 0.2 <= waited[0] < 5
    gate.checkpoint()  # not yielding: never waits


def test_the_stdio_reader_marks_messages_arriving(monkeypatch):
    import io

    from tvm_explorer.lsp import transport

    marked: list[bool] = []
    monkeypatch.setattr(transport.REQUESTS, "arriving", lambda: marked.append(True))
    reader = transport.StdinReader(io.BytesIO(b"Content-Length: 2\r\n\r\n{}"), None)
    assert reader._readline(100) == b"Content-Length: 2\r\n" and marked


def test_symbol_table_warm_up_builds_nothing_until_requests_end(fake_workspace):
    view = _tiny(fake_workspace)
    worker = threading.Thread(target=irsymbols.warm, args=(view,))
    with REQUESTS.request():
        worker.start()
        time.sleep(0.3)
        assert not irsymbols._TABLES.get(view)
    worker.join(30)
    assert not worker.is_alive()
    assert irsymbols._TABLES.get(view)


def test_references_off_any_name_build_no_symbol_table(fake_workspace):
    view = _tiny(fake_workspace)
    doc = next(d for d in view.bundle.documents if d.stage in ("relax", "tir"))
    text = view.bundle.text(doc.path)
    offset = text.index(" = ") + 1  # on "=", a blank before it
    assert symbol_references(view, doc.path, offset, True) is None
    assert doc.path not in irsymbols._TABLES.get(view, {})
    name = next(i for i, c in enumerate(text) if c.isalpha() and i > text.index("def "))
    symbol_references(view, doc.path, name, True)
    assert doc.path in irsymbols._TABLES.get(view, {})


def test_messages_without_a_pause_still_let_background_work_move(monkeypatch):
    from tvm_explorer.navigation import background

    monkeypatch.setattr(background, "ARRIVAL_HOLD_S", 0.05)
    gate = RequestGate()
    done = threading.Event()

    def background_work():
        with gate.yielding():
            for _ in range(200):  # ~0.2 s of work in 1 ms steps
                gate.checkpoint()
                time.sleep(0.001)
        done.set()

    worker = threading.Thread(target=background_work)
    worker.start()
    deadline = time.monotonic() + 20
    while not done.is_set() and time.monotonic() < deadline:
        gate.arriving()  # a client sending all the time
        time.sleep(0.002)
    assert done.is_set()
    worker.join(10)


def test_freed_memory_is_given_back_once_requests_stop(monkeypatch):
    import asyncio

    from tvm_explorer.lsp import heap

    trims = []
    monkeypatch.setattr(heap, "give_back", lambda: trims.append(1))

    async def burst():
        trim = heap.QuietTrim(quiet_s=0.05)
        loop = asyncio.get_running_loop()
        for _ in range(5):  # requests 20 ms apart: never quiet for 50 ms
            trim.request_done(loop)
            await asyncio.sleep(0.02)
        assert trims == []
        await asyncio.sleep(0.1)
        assert trims == [1]  # once, after the burst
        await asyncio.sleep(0.1)
        assert trims == [1]

    asyncio.run(burst())


def test_warm_ups_keep_no_texts(fake_workspace):
    """A warm-up walks every document: the texts it reads pass through (the cache keeps what
    requests read)."""
    view = _tiny(fake_workspace)
    bundle = view.bundle
    kept_before = dict(bundle._texts)
    irsymbols.warm(view)
    assert dict(bundle._texts) == kept_before
    path = bundle.documents[-1].path
    bundle._texts.clear()
    with bundle.passing_through():
        assert bundle.text(path) == bundle.text(path)  # read once, kept for this thread only
        other = threading.Thread(target=bundle.text, args=(path,))
        other.start()
        other.join()
    assert list(bundle._texts) == [path]  # the other thread's read was kept as usual


def test_warm_ups_start_after_the_requests_that_waited_for_the_load(tmp_path):
    """Requests waiting for a bundle are answered before its warm-ups start (a warm-up thread
    competing for the interpreter delayed the first answer by ~50 ms), and so is the heap's
    post-load collection."""
    import asyncio

    from tvm_explorer.lsp.features.bundles import BundleWatcher
    from tvm_explorer.lsp.shared import Session

    root = tmp_path / "bundle"
    root.mkdir()
    order: list[str] = []

    async def main():
        watcher = BundleWatcher(None, Session(), poll_interval=0)
        loop = asyncio.get_running_loop()
        watcher._pending[root] = loop.create_future()

        async def request():
            await watcher.wait_for((root / "tir" / "a.tir").as_uri())
            order.append("request")

        requests = [loop.create_task(request()) for _ in range(3)]
        await asyncio.sleep(0.01)
        watcher._loaded(root)
        watcher._in_background(lambda view: order.append("warm-up"), None)
        watcher._keep(loop.create_task(watcher._when_none_waiting(lambda: order.append("settle"))))
        await asyncio.gather(*requests)
        for _ in range(100):
            if len(order) == 5:
                break
            await asyncio.sleep(0.01)
        watcher.stop()

    asyncio.run(main())
    assert order[:3] == ["request"] * 3 and sorted(order[3:]) == ["settle", "warm-up"]
