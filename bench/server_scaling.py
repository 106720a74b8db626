"""Server scaling past the real bundles: first-answer time and server memory against bundle size.

A synthetic bundle k times larger than a real one is the real bundle with its Relax, TIR and
code documents repeated k times (copy i under ``tile<i>/``, copies of the same files, their
index entries repeated, the layers and origin sets shared): every document is real TVM output,
so per-document costs are the real ones and only their number grows. For each factor k this
starts ``tvm-explorer serve`` (a fresh process), sends ``initialize``/``initialized``, opens
one document of the bundle and asks for hover at an indexed position until it answers:
**first answer** is the time from ``initialized`` to that answer (the median of ``--reps``
fresh servers, 3 by default: one run on these machines can be 20 % off); **server memory** is the
server's RSS then, and its peak (VmHWM) after a few more requests and one second of idle
(the server builds outlines on a worker thread after a load).

Used by ``bench/scaling.py`` (the ``--server-base`` part); runs alone too:
    .venv/bin/python bench/server_scaling.py BUNDLE [--factors 1,2,5,10]
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from tvm_explorer.bundle.manifest import read_manifest  # noqa: E402

FIRST_ANSWER_TIMEOUT_S = 300.0
REFUSED_TIMEOUT_S = 20.0  # a bundle over the reader's size limit never answers: do not wait long


def tile(base: Path, factor: int, out: Path) -> Path:
    """A bundle at ``out`` holding ``base``'s non-model documents ``factor`` times."""
    from tvm_explorer.bundle.format import INDEX, MANIFEST

    manifest = json.loads((base / MANIFEST).read_text())
    index = json.loads((base / INDEX).read_text())
    out.mkdir(parents=True)
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            src = Path(dirpath) / name
            rel = src.relative_to(base)
            if rel.as_posix() in (MANIFEST, INDEX):
                continue
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / rel)
    docs = manifest["documents"]
    tiled = []
    for stage in ("model", "relax", "tir", "code"):
        own = [d for d in docs if d["stage"] == stage]
        tiled += own
        if stage == "model":
            continue
        for i in range(1, factor):
            for d in own:
                copy = dict(d, path=f"tile{i:02d}/{d['path']}")
                (out / copy["path"]).parent.mkdir(parents=True, exist_ok=True)
                # A copy, not a hard link: the reader's up-front size check counts each
                # inode once, so linked tiles would pass it and be refused only mid-read.
                shutil.copyfile(base / d["path"], out / copy["path"])
                tiled.append(copy)
                if d["path"] in index["documents"]:
                    index["documents"][copy["path"]] = index["documents"][d["path"]]
    manifest["documents"] = tiled
    (out / INDEX).write_text(json.dumps(index, separators=(",", ":")))
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return out


def probe(root: Path) -> tuple[str, int, int]:
    """A document and a (line, column) in it where hover answers: the start of the first
    indexed range with known origins in the last TIR document."""
    from tvm_explorer.bundle.reader import Bundle

    bundle = Bundle(root)
    tir = [d.path for d in bundle.documents if d.stage == "tir" and "/" in d.path and not d.path.startswith("tile")]
    path = tir[-1] if tir else bundle.documents[-1].path
    text = bundle.text(path)
    for r in bundle.index(path).ranges:
        if r.origin_set and text[r.start : r.start + 1].strip():
            line = text.count("\n", 0, r.start)
            return path, line, r.start - (text.rfind("\n", 0, r.start) + 1)
    raise RuntimeError(f"{root}: no indexed position with origins in {path}")


async def _first_answer(root: Path, path: str, line: int, col: int, timeout: float) -> dict:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    logging.getLogger("pygls").setLevel(logging.ERROR)  # the client ignores server notifications
    client = LanguageClient("tvm-explorer-bench", "1")
    await client.start_io(sys.executable, "-m", "tvm_explorer", "serve", "--poll-interval", "0")
    proc = client._server
    drain = asyncio.create_task(proc.stderr.read())  # keep the server's log pipe from filling
    uri = (root / path).resolve().as_uri()
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), initialization_options={"pollInterval": 0})
    )
    before = bl.proc_status(proc.pid).get("VmRSS", 0)
    t0 = time.perf_counter()
    client.initialized(types.InitializedParams())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=(root / path).read_text())
        )
    )
    params = types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, col))
    answer = None
    while answer is None:
        answer = await client.text_document_hover_async(params)
        if answer is None:
            if time.perf_counter() - t0 > timeout:
                break
            await asyncio.sleep(0.02)
    first = time.perf_counter() - t0
    at_first = bl.proc_status(proc.pid).get("VmRSS", 0)
    for _ in range(20):
        await client.text_document_hover_async(params)
    await asyncio.sleep(1.0)
    mem = bl.proc_status(proc.pid)
    # Measured: end the server now. A graceful exit waits for its background outline builds,
    # minutes for the largest bundles here, and tells nothing about the first answer.
    proc.kill()
    await client.stop()
    drain.cancel()
    return {
        "first_answer_s": first if answer is not None else None,
        "rss_at_first": at_first,
        "rss_before": before,
        "rss_settled": mem.get("VmRSS", 0),
        "hwm": mem.get("VmHWM", 0),
    }


def measure(base: Path, factors: list[int], workdir: Path, reps: int = 1) -> list[dict]:
    """First answer and server memory for ``base`` tiled by each factor: the run with the
    median first answer of ``reps`` fresh servers (``first_answers`` lists them all)."""
    from tvm_explorer.bundle.files import MAX_BUNDLE_BYTES

    path, line, col = probe(base)
    rows = []
    for k in factors:
        root = base if k == 1 else tile(base, k, workdir / f"{base.name}.x{k}")
        size = bl.dir_size(root)
        over = size > MAX_BUNDLE_BYTES
        runs = [
            asyncio.run(_first_answer(root, path, line, col, REFUSED_TIMEOUT_S if over else FIRST_ANSWER_TIMEOUT_S))
            for _ in range(1 if over else reps)
        ]
        runs.sort(key=lambda run: run["first_answer_s"] if run["first_answer_s"] is not None else float("inf"))
        r = runs[len(runs) // 2]
        r.update(
            factor=k,
            bundle_bytes=size,
            over_limit=over,
            first_answers=[x["first_answer_s"] for x in runs],
            documents=len(read_manifest(root)["documents"]),
        )
        if k > 1:
            shutil.rmtree(root)
        rows.append(r)
        first = (
            ("no answer" + (f" (over the reader's {bl.mib(MAX_BUNDLE_BYTES)} limit)" if over else ""))
            if r["first_answer_s"] is None
            else f"{r['first_answer_s']:.2f} s"
        )
        spread = (
            " (of " + ", ".join(f"{x:.2f}" for x in r["first_answers"] if x is not None) + ")" if len(runs) > 1 else ""
        )
        print(
            f"  ×{k:<3d} {bl.mib(size):>10}: first answer {first}{spread}, server RSS "
            f"{bl.mib(r['rss_at_first'])} (peak {bl.mib(r['hwm'])})",
            flush=True,
        )
    return rows


def report(rows: list[dict]) -> None:
    print(
        bl.table(
            [
                "factor",
                "bundle",
                "documents",
                "first answer s (goal ≤ 1.0 up to 100 MB)",
                "server RSS before open",
                "RSS at first answer",
                "peak RSS",
                "peak / bundle (goal ≤ 1.5)",
            ],
            [
                [
                    f"×{r['factor']}",
                    bl.mib(r["bundle_bytes"]),
                    r["documents"],
                    ("refused (over the size limit)" if r["over_limit"] else "no answer")
                    if r["first_answer_s"] is None
                    else f"{r['first_answer_s']:.2f}",
                    bl.mib(r["rss_before"]),
                    bl.mib(r["rss_at_first"]),
                    bl.mib(r["hwm"]),
                    f"{r['hwm'] / r['bundle_bytes']:.2f}",
                ]
                for r in rows
            ],
        )
    )


def main(argv=None) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("--factors", default="1,2,5,10")
    ap.add_argument("--reps", type=int, default=3, help="fresh servers per factor (the median is kept)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tvmx-tile-") as tmp:
        rows = measure(Path(args.bundle), [int(x) for x in args.factors.split(",")], Path(tmp), args.reps)
    report(rows)
    bl.save_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
