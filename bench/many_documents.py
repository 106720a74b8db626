"""A bundle of many documents beside a small one copied in later (issue 37, item 11).

The big bundle is the test suite's fake bundle (``tests/lsp/fake_bundle.py``) plus N small TIR
documents, each listed in the manifest and indexed; they are hard links of one file, so that
100,000 of them are made in seconds. For each checkout (this one, and ``--before CHECKOUT``)
a fresh ``tvm-explorer serve`` is started on a workspace holding the big bundle; right after
``initialized`` (one second after, when the big one is being loaded) a small bundle is
written into the workspace (and ``didChangeWatchedFiles`` sent every half second, as VS
Code's watcher would). Measured, per run:

- **big listed**: from ``initialized`` until ``tvmExplorer/listBundles`` (sent at once, which
  waits for the first load) answers;
- **small answers**: from the small bundle's copy until a hover in it answers.

    .venv/bin/python bench/many_documents.py --documents 100000 [--distinct] [--before /work/main] [--reps 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.lsp.fake_bundle import write_fake_bundle  # noqa: E402
from tests.lsp.hostile import RawServer  # noqa: E402

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


class Replies:
    """Replies of a ``RawServer`` by id, each with when it was first seen (requests may be
    answered out of order: a listBundles sent first comes back once the first load is over)."""

    def __init__(self, srv: RawServer):
        self.srv, self.seen = srv, {}

    def _note(self, msg: dict) -> None:
        if "method" not in msg and "id" in msg:
            self.seen.setdefault(msg["id"], (time.monotonic(), msg))

    def wait(self, msg_id, timeout: float = 600) -> tuple[float, dict]:
        if msg_id not in self.seen:
            self.srv.reply(
                match=lambda m: self._note(m) or (m.get("id") == msg_id and "method" not in m), timeout=timeout
            )
        return self.seen[msg_id]


def copied_in_while_loading(srv: RawServer, ws: Path, wait_s: float = COPY_AFTER_S) -> dict:
    """On a server just initialized on ``ws`` (holding the big bundle): write a small bundle into
    ``ws`` after ``wait_s`` and hover in it until it answers. Returns when it answered and when
    the first load (the big bundle) was over, both as seconds after the copy, and the listing
    the first load's ``listBundles`` answered."""
    replies = Replies(srv)
    initialized = time.monotonic()
    first_load = srv.request("tvmExplorer/listBundles", {})  # answered once the first load is over
    time.sleep(wait_s)  # the first look at the workspace is over: the big bundle is loading
    small = write_fake_bundle(ws / "b-small")
    copied = time.monotonic()
    answered = None
    while answered is None and time.monotonic() - copied < 600:
        srv.notify("workspace/didChangeWatchedFiles", {"changes": []})  # as VS Code's watcher would
        at, hover = replies.wait(
            srv.request(
                "textDocument/hover",
                {
                    "textDocument": {"uri": (small / "relax/000-import.relax").as_uri()},
                    "position": {"line": 5, "character": 14},
                },
            )
        )
        if hover.get("result"):
            answered = at
        else:
            time.sleep(0.3)
    loaded, listing = replies.wait(first_load)
    return {
        "small_answers_s": None if answered is None else answered - copied,
        "big_listed_s": loaded - initialized,
        "loaded_after_copy_s": loaded - copied,
        "listing": listing,
    }


def run_once(checkout: Path, big: Path, work: Path) -> dict:
    ws = work / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir()
    os.rename(big, ws / "a-big")  # moved in for the run, and back after it
    srv = RawServer(env={**os.environ, "PYTHONPATH": str(checkout / "server")})
    try:
        srv.initialize(ws)
        got = copied_in_while_loading(srv, ws)
        del got["listing"]
        return got
    finally:
        srv.close()
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
