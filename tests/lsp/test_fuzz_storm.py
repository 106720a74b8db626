"""LSP fuzzing against the real server process: random documents, positions and edits
(didOpen/didChange/didClose) interleaved with definition, declaration, hover, references,
symbols, lenses, links and the custom requests, many in flight at once, some cancelled with
``$/cancelRequest``. Meanwhile one bundle is replaced on disk again and again (atomic swaps
of two versions, and a real recompile).

Checked: no error response other than the LSP-legal ones (RequestCancelled, ContentModified,
ServerCancelled, and InvalidParams for the deliberately invalid requests); the server never
exits; its memory stays bounded; every probe of the bundle being replaced answers exactly
as the old or the new bundle does, never a mix.

Bounded by default (a few thousand requests); ``TVMX_FUZZ_LONG=1`` sends tens of thousands.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from tests.conftest import CLI
from tests.tflite_builder import chain, conv_add_relu_dense

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.writer import _exchange

from .conftest import MODELS_DIR, SERVER, cancel, compile_bundle, send_raw, session_bundle, start_session, uri

LONG = os.environ.get("TVMX_FUZZ_LONG") == "1"
REQUESTS = int(os.environ.get("TVMX_STORM_REQUESTS", 40000 if LONG else 3000))
ANSWER_TIMEOUT = float(
    os.environ.get("TVMX_STORM_ANSWER_TIMEOUT", 60)
)  # seconds; a request unanswered for this long is a failure
IN_FLIGHT = 24
RSS_GROWTH_LIMIT_MB = 80
LEGAL = {-32800: "RequestCancelled", -32801: "ContentModified", -32802: "ServerCancelled"}
INVALID_PARAMS = -32602
PROBE_DOCS = ("model.tflgraph", "relax/000-import.relax", "tir/000-input.tir", "code/module.c")
STATS: Counter = Counter()


@pytest.fixture(scope="module")
def storm_ws(tmp_path_factory, bundles):
    """static/ (small_cnn_fp32 and the ground-truth model), live/gt (the bundle that gets
    replaced: version A = ground truth, B = a 6-layer chain), .stage/ (the other version)."""
    folder = tmp_path_factory.mktemp("storm-ws")
    models = tmp_path_factory.mktemp("storm-models")
    gt_a = models / "gt_a.tflite"
    conv_add_relu_dense(gt_a)
    gt_b = models / "gt_b.tflite"
    chain(6, gt_b)
    for sub in ("static", "live", ".stage"):
        (folder / sub).mkdir()
    session_bundle(bundles, MODELS_DIR / "small_cnn_fp32.tflite", folder / "static" / "small_cnn")
    compile_bundle(gt_a, folder / "static" / "gt")
    shutil.copytree(folder / "static" / "gt", folder / "live" / "gt")  # the same compile
    compile_bundle(gt_b, folder / ".stage" / "gt")
    outside = tmp_path_factory.mktemp("storm-outside")
    for k in range(12):  # bundles outside the workspace, loaded when a document is opened
        shutil.copytree(folder / "static" / "gt", outside / f"gt{k}")
    return {
        "folder": folder,
        "live": (folder / "live" / "gt").resolve(),
        "outside": [(outside / f"gt{k}").resolve() for k in range(12)],
        "stage": (folder / ".stage" / "gt").resolve(),
        "model_b": gt_b,
        "static": [(folder / "static" / n).resolve() for n in ("small_cnn", "gt")],
    }


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, storm_ws):
    await start_session(lsp_client, storm_ws["folder"], expect=3)
    yield
    await lsp_client.shutdown_session()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _unlike(got, a, b) -> str:
    """What of ``got`` is in neither version's answer (its lines, for a hover)."""
    if not all(isinstance(x, str) for x in (got, a, b)):
        return f"{got!r} (A: {a!r}, B: {b!r})"
    theirs = set(a.splitlines()) | set(b.splitlines())
    new = [line for line in got.splitlines() if line not in theirs]
    missing = [line for line in a.splitlines() if line not in got.splitlines()]
    return f"lines in neither: {new}; lines of A not in it: {missing}"


def norm(result):
    """A comparable form of an answer."""
    if result is None:
        return None
    if isinstance(result, list):
        return tuple(sorted(norm(r) for r in result))
    if isinstance(result, types.Location):
        r = result.range
        return (result.uri, r.start.line, r.start.character, r.end.line, r.end.character)
    if isinstance(result, types.Hover):
        return str(result.contents.value if hasattr(result.contents, "value") else result.contents)
    return repr(result)


def probes(live: Path, rng: random.Random) -> list[tuple[str, str, dict]]:
    """(method, uri, position) probes on documents both versions have."""
    out = []
    for path in PROBE_DOCS:
        for line in range(0, 40, 3):
            for col in (2, 6, 12, 20):
                method = rng.choice(
                    [
                        types.TEXT_DOCUMENT_DEFINITION,
                        types.TEXT_DOCUMENT_HOVER,
                        types.TEXT_DOCUMENT_DECLARATION,
                        types.TEXT_DOCUMENT_REFERENCES,
                    ]
                )
                out.append((method, uri(live / path), {"line": line, "character": col}))
    return out


async def ask(client: LanguageClient, method: str, doc_uri: str, position: dict, **extra):
    params = {"textDocument": {"uri": doc_uri}, "position": position, **extra}
    if method == types.TEXT_DOCUMENT_REFERENCES:
        params.setdefault("context", {"includeDeclaration": True})
    return await send_raw(client, method, params)


async def answer_all(client, probe_list) -> list:
    return [norm(await asyncio.wait_for(ask(client, m, u, p), ANSWER_TIMEOUT)) for m, u, p in probe_list]


async def wait_for_live(client, live: Path, model_file: str, timeout: float = 60.0):
    """Wait until the server has loaded ``model_file``'s bundle at ``live``."""
    deadline = time.monotonic() + timeout
    while True:
        result = await client.protocol.send_request_async("tvmExplorer/listBundles", {})
        if any(b.root == str(live) and b.model == model_file for b in result.bundles):
            return
        assert time.monotonic() < deadline, f"{model_file} never loaded at {live}"
        await asyncio.sleep(0.1)


class Storm:
    """Random traffic; every response is checked as it arrives."""

    def __init__(self, client: LanguageClient, ws: dict, seed: int):
        self.client = client
        self.rng = random.Random(seed)
        self.ws = ws
        self.texts = {}
        for root in ws["static"]:
            bundle = Bundle(root)
            for doc in bundle.documents:
                self.texts[uri(root / doc.path)] = bundle.text(doc.path)
        self.uris = sorted(self.texts)
        self.open: dict[str, tuple[int, str]] = {}
        self.bad: list[str] = []
        self.next_id = 0

    # -- documents -----------------------------------------------------------------------
    def random_uri(self) -> str:
        r = self.rng.random()
        if r < 0.8:
            return self.rng.choice(self.uris)
        return self.rng.choice(
            [
                uri(self.ws["folder"] / "notes.txt"),
                "file:///etc/passwd",
                "untitled:Untitled-1",
                "file:///%00/x",
                "not a uri",
                uri(self.ws["static"][0] / "manifest.json"),
                uri(self.ws["static"][0] / "code" / "nope.c"),
                "file:///" + "a/" * 300 + "x.c",
                uri(self.ws["static"][0]) + "/code/%E2%82%AC.c",
            ]
        )

    def random_text(self, base: str) -> str:
        r = self.rng.random()
        if r < 0.5:
            return base
        if r < 0.7:
            i = self.rng.randrange(len(base) + 1)
            return base[:i] + self.rng.choice(["x", "\n", "é", "😀", "\r\n", "\t\t", ""]) + base[i:]
        if r < 0.85:
            return "".join(self.rng.choice("ab \n\t{}();😀é") for _ in range(self.rng.randrange(200)))
        return base[: self.rng.randrange(len(base) + 1)]

    def did_open(self):
        doc_uri = self.random_uri()
        text = self.random_text(self.texts.get(doc_uri, "hello\n"))
        self.open[doc_uri] = (1, text)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "plaintext", 1, text))
        )
        STATS["notifications"] += 1

    def did_change(self):
        if not self.open:
            return self.did_open()
        doc_uri = self.rng.choice(sorted(self.open))
        version, text = self.open[doc_uri]
        lines = text.split("\n")
        if self.rng.random() < 0.2:
            change = types.TextDocumentContentChangeWholeDocument(text=self.random_text(text))
            new_text = change.text
        else:
            l0 = self.rng.randrange(len(lines) + 2)  # sometimes past the end
            c0 = self.rng.randrange(120)
            l1, c1 = l0 + self.rng.randrange(3), self.rng.randrange(120)
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(l0, c0), types.Position(l1, c1)),
                text=self.rng.choice(["", "x", "\n", "lv1", "😀", "// edit\n"]),
            )
            new_text = text  # the server's idea of the text is what counts; not tracked here
        self.open[doc_uri] = (version + 1, new_text)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=doc_uri, version=version + 1), [change]
            )
        )
        STATS["notifications"] += 1

    def did_close(self):
        if not self.open:
            return
        doc_uri = self.rng.choice(sorted(self.open))
        del self.open[doc_uri]
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(doc_uri)))
        STATS["notifications"] += 1

    async def open_outside(self):
        """Open a document of a bundle nobody loaded yet: requests wait for its load, and
        cancelling them then really cancels."""
        if not self.ws["outside"]:
            return
        root = self.ws["outside"].pop()
        doc_uri = uri(root / "relax" / "000-import.relax")
        text = (root / "relax" / "000-import.relax").read_text()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "tvm-relax", 1, text))
        )
        futures = []
        for k in range(6):
            self.next_id += 1
            msg_id = f"storm-{self.next_id}"
            params = {"textDocument": {"uri": doc_uri}, "position": {"line": 5 + k, "character": 8}}
            futures.append(
                self.check(
                    send_raw(self.client, types.TEXT_DOCUMENT_DEFINITION, params, msg_id),
                    types.TEXT_DOCUMENT_DEFINITION,
                    False,
                    params,
                )
            )
            if k % 2:
                cancel(self.client, msg_id)
                STATS["cancel sent"] += 1
        await asyncio.gather(*futures)
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(doc_uri)))

    # -- requests ------------------------------------------------------------------------
    def random_position(self, doc_uri: str) -> dict:
        text = self.open.get(doc_uri, (0, self.texts.get(doc_uri, "")))[1]
        n_lines = text.count("\n") + 1
        r = self.rng.random()
        if r < 0.8:
            return {"line": self.rng.randrange(n_lines), "character": self.rng.randrange(100)}
        if r < 0.95:
            return {
                "line": self.rng.choice([n_lines, n_lines + 5, 2**31 - 1]),
                "character": self.rng.choice([0, 2**31 - 1]),
            }
        return {"line": -1, "character": "x"}  # invalid on purpose: InvalidParams is legal

    async def request(self):
        method = self.rng.choice(
            [
                types.TEXT_DOCUMENT_DEFINITION,
                types.TEXT_DOCUMENT_DECLARATION,
                types.TEXT_DOCUMENT_HOVER,
                types.TEXT_DOCUMENT_REFERENCES,
                types.TEXT_DOCUMENT_DEFINITION,
                types.TEXT_DOCUMENT_HOVER,
                types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
                types.TEXT_DOCUMENT_CODE_LENS,
                types.TEXT_DOCUMENT_DOCUMENT_LINK,
                "tvmExplorer/origins",
                "tvmExplorer/previousStage",
                "tvmExplorer/listPasses",
                "tvmExplorer/listBundles",
            ]
        )
        doc_uri = self.random_uri()
        position = self.random_position(doc_uri)
        if method in (
            types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
            types.TEXT_DOCUMENT_CODE_LENS,
            types.TEXT_DOCUMENT_DOCUMENT_LINK,
        ):
            params = {"textDocument": {"uri": doc_uri}}
        elif method == "tvmExplorer/listPasses":
            params = {"bundle": doc_uri}
        elif method == "tvmExplorer/listBundles":
            params = {}
        else:
            params = {"textDocument": {"uri": doc_uri}, "position": position}
            if method == types.TEXT_DOCUMENT_REFERENCES:
                params["context"] = {"includeDeclaration": self.rng.random() < 0.5}
        invalid = position.get("line") == -1 and "position" in params
        self.next_id += 1
        msg_id = f"storm-{self.next_id}"
        future = send_raw(self.client, method, params, msg_id)
        if self.rng.random() < 0.1:
            if self.rng.random() < 0.5:
                await asyncio.sleep(0)  # else: right behind the request, often still pending
            cancel(self.client, msg_id)
            STATS["cancel sent"] += 1
        await self.check(future, method, invalid, params)

    async def check(self, future, method, invalid=False, params=None):
        STATS["requests"] += 1
        try:
            await asyncio.wait_for(future, ANSWER_TIMEOUT)
            STATS["answered"] += 1
        except asyncio.TimeoutError:
            self.bad.append(f"{method} {params}: no answer within {ANSWER_TIMEOUT} s")
        except JsonRpcException as err:
            code = getattr(err, "code", None)
            if code in LEGAL:
                STATS[LEGAL[code]] += 1
            elif code == INVALID_PARAMS and invalid:
                STATS["InvalidParams (invalid on purpose)"] += 1
            else:
                self.bad.append(f"{method}: {code} {err}")
        except asyncio.CancelledError:
            STATS["cancelled locally"] += 1


async def swapper(ws: dict, stop: asyncio.Event, state: dict):
    """Replace live/gt by the other version again and again; once, by a real recompile."""
    live, stage = ws["live"], ws["stage"]
    recompile = None
    while not stop.is_set():
        await asyncio.sleep(0.4)
        if recompile is None and state["swaps"] == 5:
            # A real compile of version B replacing whatever is live (the CLI's own swap).
            recompile = await asyncio.create_subprocess_exec(
                *CLI,
                "compile",
                str(ws["model_b"]),
                "-o",
                str(live),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            state["recompiles"] += 1
            await recompile.wait()
            assert recompile.returncode == 0
            STATS["real recompiles during the storm"] += 1
            # B is live now; make the stage hold A again.
            if Bundle(stage).manifest["model"]["file"] != "gt_a.tflite":
                shutil.rmtree(stage)
                shutil.copytree(ws["live"].parent.parent / "static" / "gt", stage)
            continue
        assert _exchange(stage, live), "renameat2(RENAME_EXCHANGE) is needed for this test"
        state["swaps"] += 1
        STATS["atomic swaps during the storm"] += 1


async def test_request_storm_with_bundle_reloads(client: LanguageClient, storm_ws):
    ws = storm_ws
    live = ws["live"]
    rng = random.Random(7)
    probe_list = probes(live, rng)
    # The answers of each version, asked while nothing changes.
    await wait_for_live(client, live, "gt_a.tflite")
    answers_a = await answer_all(client, probe_list)
    assert _exchange(ws["stage"], live)
    await wait_for_live(client, live, "gt_b.tflite")
    answers_b = await answer_all(client, probe_list)
    differ = sum(a != b for a, b in zip(answers_a, answers_b))
    assert differ >= 30, "the two versions must be told apart by the probes"
    STATS["probes that tell the versions apart"] = differ

    pid = client._server.pid
    storm = Storm(client, ws, seed=11)
    stop = asyncio.Event()
    state = {"swaps": 0, "recompiles": 0}
    swap_task = asyncio.create_task(swapper(ws, stop, state))
    rss, mixed = [], []
    t0 = time.monotonic()

    async def probe():
        i = rng.randrange(len(probe_list))
        method, doc_uri, position = probe_list[i]
        try:
            got = norm(await asyncio.wait_for(ask(client, method, doc_uri, position), ANSWER_TIMEOUT))
        except asyncio.TimeoutError:
            storm.bad.append(f"probe {method} {doc_uri} {position}: no answer")
            return
        except JsonRpcException as err:
            if getattr(err, "code", None) not in LEGAL:
                storm.bad.append(f"probe {method}: {err}")
            return
        STATS["probes during reloads"] += 1
        if got not in (answers_a[i], answers_b[i]):
            mixed.append((method, doc_uri, position, _unlike(got, answers_a[i], answers_b[i])))

    sent = 0
    while sent < REQUESTS:
        batch = []
        for _ in range(IN_FLIGHT):
            r = storm.rng.random()
            if r < 0.08:
                storm.did_open()
            elif r < 0.16:
                storm.did_change()
            elif r < 0.2:
                storm.did_close()
            elif r < 0.202:
                batch.append(storm.open_outside())
            elif r < 0.35:
                batch.append(probe())
                sent += 1
            else:
                batch.append(storm.request())
                sent += 1
        await asyncio.gather(*batch)
        if sent % (IN_FLIGHT * 20) < IN_FLIGHT:
            rss.append(rss_mb(pid))
            assert client._server.returncode is None, "the server exited"
        if swap_task.done():
            swap_task.result()  # re-raise a failure of the swapper
    stop.set()
    await swap_task
    elapsed = time.monotonic() - t0
    STATS["requests incl. probes"] = sent
    STATS["seconds"] = round(elapsed, 1)
    assert client._server.returncode is None, "the server exited"
    assert state["swaps"] >= 3 and state["recompiles"] == 1
    assert not storm.bad, storm.bad[:10]
    assert not mixed, "\n".join(map(str, mixed[:5]))
    # Memory: after the warm-up (a quarter of the storm) the server grows by little.
    warm = rss[len(rss) // 4] if rss else 0
    STATS["server RSS MB (warm, max, end)"] = (round(warm), round(max(rss)), round(rss[-1]))
    assert max(rss) - warm < RSS_GROWTH_LIMIT_MB, rss
    # Quiet again: close everything; answers are exactly those of the version now live.
    for doc_uri in list(storm.open):
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(doc_uri)))
    model = Bundle(live).manifest["model"]["file"]
    await wait_for_live(client, live, model)
    await asyncio.sleep(0.5)
    final = await answer_all(client, probe_list)
    assert final == (answers_a if model == "gt_a.tflite" else answers_b)
    print("\nLSP storm:", dict(sorted(STATS.items())))
