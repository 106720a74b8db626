"""A bundle of many documents beside a small one copied in later (issue 37, item 11).

The big bundle is the test suite's fake bundle (``tests/lsp/fake_bundle.py``) plus N small TIR
documents, each listed in the manifest and indexed; they are hard links of one file, so that
100,000 of them are made in seconds. For each checkout (this one, and ``--before CHECKOUT``)
a fresh ``tvm-explorer serve`` is started on a workspace holding the big bundle; right after
``initialized`` (one second after, when the big one is being loaded) a small bundle is
written into the workspace (and ``didChangeWatchedFiles`` sent every half second, as VS
Code's watcher would). Measured, per run:

- **big listed**: from ``initialized`` until ``tvmExplorer/listBundles`` lists the big bundle;
- **small answers**: from the small bundle's copy until a hover in it answers.

    .venv/bin/python bench/many_documents.py --documents 100000 [--distinct] [--before /work/main] [--reps 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.lsp.fake_bundle import write_fake_bundle  # noqa: E402

COPY_AFTER_S = 1.0


def write_many(root: Path, count: int, distinct: bool = False) -> Path:
    """The fake bundle plus ``count`` TIR documents, hard links of a few files (``distinct``:
    a file each)."""
    write_fake_bundle(root)
    manifest = json.loads((root / "manifest.json").read_text())
    index = json.loads((root / "index.json").read_text())
    many = root / "tir" / "many"
    many.mkdir(parents=True)
    text = "# one of many documents\n"
    first = many / "000000.tir"
    for i in range(count):
        rel = f"tir/many/{i:06d}.tir"
        if distinct or i % 60_000 == 0:  # a file system allows some 65,000 links to one file
            first = root / rel
            first.write_text(text)
        else:
            os.link(first, root / rel)
        manifest["documents"].append({"path": rel, "stage": "tir", "language": "tvm-tir"})
        index["documents"][rel] = {"length": len(text), "ranges": []}
    (root / "index.json").write_text(json.dumps(index))
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


class Server:
    """``tvm-explorer serve`` on pipes (``pythonpath``: the checkout's ``server/``)."""

    def __init__(self, pythonpath: Path):
        env = {**os.environ, "PYTHONPATH": str(pythonpath)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tvm_explorer", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.replies: dict[int, dict] = {}
        self.ready = threading.Condition()
        self.ids = iter(range(1, 10**9))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "id" in msg and "method" in msg:  # a request of the server's: answer null
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "id" in msg:
                with self.ready:
                    self.replies[msg["id"]] = msg
                    self.ready.notify_all()

    def send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: dict, timeout: float = 600.0) -> dict:
        msg_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        with self.ready:
            if not self.ready.wait_for(lambda: msg_id in self.replies, timeout):
                raise TimeoutError(f"no answer to {method} in {timeout} s")
            return self.replies.pop(msg_id)

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def run_once(checkout: Path, big: Path, work: Path) -> dict:
    ws = work / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir()
    os.rename(big, ws / "a-big")  # moved in for the run, and back after it
    server = Server(checkout / "server")
    try:
        server.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {},
                "rootUri": None,
                "workspaceFolders": [{"uri": ws.as_uri(), "name": "ws"}],
                "initializationOptions": {"pollInterval": 0.2},
            },
        )
        server.notify("initialized", {})
        started = time.monotonic()
        time.sleep(COPY_AFTER_S)  # the first look at the workspace is over: the big one loads
        small = write_fake_bundle(ws / "b-small")
        copied = time.monotonic()
        small_s = None
        big_s = None
        uri = (small / "relax/000-import.relax").as_uri()
        listing: dict = {}

        def list_until_big() -> None:
            while True:
                got = server.request("tvmExplorer/listBundles", {})["result"]["bundles"]
                if any(b["root"].endswith("a-big") for b in got):
                    listing["at"] = time.monotonic()
                    return
                time.sleep(0.1)

        lister = threading.Thread(target=list_until_big, daemon=True)
        lister.start()
        last_notice = 0.0
        while small_s is None and time.monotonic() - copied < 600:
            if time.monotonic() - last_notice > 0.5:
                server.notify("workspace/didChangeWatchedFiles", {"changes": []})
                last_notice = time.monotonic()
            got = server.request(
                "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 14}}
            )
            if got.get("result"):
                small_s = time.monotonic() - copied
            else:
                time.sleep(0.1)
        lister.join(timeout=600)
        big_s = listing["at"] - started if "at" in listing else None
        return {"big_listed_s": big_s, "small_answers_s": small_s}
    finally:
        server.close()
        if (ws / "a-big").exists():
            os.rename(ws / "a-big", big)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--before", type=Path, help="a checkout of the code before, run side by side")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--distinct", action="store_true", help="a file per document, not hard links")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tvmx-many-") as tmp:
        work = Path(tmp)
        made = time.monotonic()
        big = write_many(work / "big", args.documents, args.distinct)
        print(f"bundle of {args.documents} documents written in {time.monotonic() - made:.1f} s", flush=True)
        checkouts = [("after", REPO)] + ([("before", args.before)] if args.before else [])
        results: dict[str, list[dict]] = {name: [] for name, _ in checkouts}
        for _ in range(args.reps):
            for name, checkout in checkouts:  # side by side, alternating
                got = run_once(checkout, big, work)
                results[name].append(got)
                print(
                    f"{name}: big listed {got['big_listed_s']:.1f} s, small answers {got['small_answers_s']:.1f} s "
                    "after its copy",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({"documents": args.documents, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
