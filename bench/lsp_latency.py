"""Language server latency, load time and memory on real bundles.

1. Load time of each bundle (what the server does: read and validate every document and
   index; then the layer map built on the first references/code-lens request), in fresh
   processes, with the memory the loaded bundle takes (RSS growth).      goal <= 1 s
2. Server-side latency on the largest bundle: the LSP feature handlers (the code the pygls
   handlers call: position conversion, lookup, answer conversion) called in-process on a
   loaded bundle, at thousands of random positions (random non-blank characters) in every
   document: definition, declaration, hover, references; document symbols once per
   document (several rounds: cold, i.e. built on request; after the outline warm-up the
   server runs after each load; repeated).     goal p99 <= 5 ms, references p99 <= 20 ms
   The loaded bundle is frozen out of the garbage collector's sight, as the server does.
3. A sample of the same requests through the real server process (``tvm-explorer serve``
   over stdio, pygls client): round-trip time compared with the in-process time of the same
   requests, so that nothing in the glue dominates; and the server process's memory.
4. Scale (issue 15), on the largest bundle, for this checkout and, with ``--before CHECKOUT``
   (e.g. /work/main), the same server from another checkout, side by side in one run: the
   first answer (a references request sent right after ``initialized`` and the document's
   didOpen)                                                        goal <= 1.0 s
   server RSS / the bundle's bytes on disk, after the sample        goal <= 1.5x
   beside it the memory floor, measured in the same run: a bare pygls server
   (``bare_pygls_server.py``) and ours with no bundle, and the server's RSS above the floor
   round-trip p50 / p99 per request kind                            goal p99 <= 20 ms

Usage:
    .venv/bin/python bench/lsp_latency.py [--quick] [--bundle DIR ...] [--positions N]
        [--before CHECKOUT] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

GOAL_P99_MS = 5.0
GOAL_REFS_P99_MS = 20.0
GOAL_LOAD_S = 1.0
GOAL_FIRST_ANSWER_S = 1.0
GOAL_RSS_RATIO = 1.5
GOAL_SCALE_P99_MS = 20.0
FEATURES = ("definition", "declaration", "hover", "references")
# (model, target) compiled when no --bundle is given; the largest one is used for latency.
DEFAULT_BUNDLES = [("mobilenet_v1_fp32", "c"), ("mobilenet_v1_fp32", "cuda"), ("mobilenet_v3_small_int8", "c")]
QUICK_BUNDLES = [("mobilenet_v1_fp32", "c")]


def compile_bundles(specs, workdir: Path) -> list[Path]:
    from tvm_explorer.app.compile import compile_model

    out = []
    for model, target in specs:
        dest = workdir / f"{model}.{target}.bundle"
        t0 = time.perf_counter()
        compile_model(bl.MODELS / f"{model}.tflite", dest, target)
        print(f"  compiled {dest.name} in {time.perf_counter() - t0:.1f} s", flush=True)
        out.append(dest)
    return out


# -- in-process server -------------------------------------------------------------------
class InProcess:
    """The server's features on one loaded bundle, without the transport."""

    def __init__(self, root: Path):
        from tvm_explorer.lsp.features.declaration import PreviousStage
        from tvm_explorer.lsp.features.definition import Definition
        from tvm_explorer.lsp.features.hover import Hover
        from tvm_explorer.lsp.features.references import References
        from tvm_explorer.lsp.features.symbols import DocumentSymbols
        from tvm_explorer.lsp.shared import Session
        from tvm_explorer.navigation import registry

        self.session = Session()
        self.view = registry.load(root)
        self.session.registry.install(self.view.root, self.view, registry.signature(self.view.root))
        self.view.layer_map  # noqa: B018 - built on first use by the server too; timed in the load step
        from tvm_explorer.lsp import heap

        heap.settle()  # as the server does after every load
        self.handlers = {
            "definition": Definition(self.session).definition,
            "declaration": PreviousStage(self.session).previous_stage,
            "hover": Hover(self.session).hover,
            "references": References(self.session).references,
            "symbols": DocumentSymbols(self.session).symbols,
        }

    def uri(self, path: str) -> str:
        return self.session.uri(self.view, path)

    def params(self, feature: str, uri: str, line: int, col: int):
        from lsprotocol import types

        doc = types.TextDocumentIdentifier(uri)
        pos = types.Position(line, col)
        if feature == "definition":
            return types.DefinitionParams(text_document=doc, position=pos)
        if feature == "declaration":
            return types.DeclarationParams(text_document=doc, position=pos)
        if feature == "hover":
            return types.HoverParams(text_document=doc, position=pos)
        if feature == "references":
            return types.ReferenceParams(
                text_document=doc, position=pos, context=types.ReferenceContext(include_declaration=True)
            )
        return types.DocumentSymbolParams(text_document=doc)


def random_positions(
    view, per_document: int, seed: int = 0, documents: list[str] | None = None, keep=None
) -> list[tuple[str, int, int]]:
    """``(path, line, utf16 column)`` at random non-blank characters of every document (or of
    ``documents``; ``keep(path, offset)``: which characters count), shuffled."""
    rng = random.Random(seed)
    out = []
    for path in [d.path for d in view.bundle.documents] if documents is None else documents:
        text = view.bundle.text(path)
        if not text.strip():
            continue
        lines = view.line_index(path, "utf-16")
        picked = 0
        tries = 0
        while picked < per_document and tries < per_document * 50:
            tries += 1
            offset = rng.randrange(len(text))
            if text[offset].isspace() or (keep is not None and not keep(path, offset)):
                continue
            line, col = lines.position(offset)
            out.append((path, line, col))
            picked += 1
    rng.shuffle(out)
    return out


def bundle_bench_args(doc: str, positions: int, positions_help: str) -> argparse.Namespace:
    """The command line of a latency bench on one bundle: ``--bundle DIR``, ``--positions N``,
    ``--json OUT``."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path)
    ap.add_argument("--positions", type=int, default=positions, help=positions_help)
    ap.add_argument("--json")
    return ap.parse_args()


def bundle_or_mobilenet_cuda(bundle: Path | None, tmp: str) -> Path:
    """``--bundle``, else tests/models/mobilenet_v3_small_int8.tflite compiled for cuda (60 MiB)
    in ``tmp``; the machine and the bundle's size printed."""
    root = bundle
    if root is None:
        from tvm_explorer.app.compile import compile_model

        root = Path(tmp) / "mobilenet_v3_small_int8.cuda.bundle"
        compile_model(bl.MODELS / "mobilenet_v3_small_int8.tflite", root, "cuda")
    print(bl.machine_note())
    print(f"bundle {root} ({bl.mib(bl.dir_size(root))})")
    return root


def answer_size(result) -> int:
    if result is None:
        return 0
    if isinstance(result, (list, tuple)):
        return len(result)
    try:
        return len(list(result)) if not hasattr(result, "contents") else 1
    except TypeError:
        return 1


def measure_in_process(server: InProcess, positions, symbol_rounds: int) -> dict:
    import gc

    samples = {f: [] for f in FEATURES}
    sizes = {f: [] for f in FEATURES}
    prepared = [(server.uri(p), line, col) for p, line, col in positions]
    gc.collect()
    for i, (uri, line, col) in enumerate(prepared):
        # Rotate the feature order per position (no feature always runs on a cold cache).
        k = i % len(FEATURES)
        for feature in FEATURES[k:] + FEATURES[:k]:
            params = server.params(feature, uri, line, col)
            t0 = time.perf_counter_ns()
            result = server.handlers[feature](params)
            samples[feature].append(time.perf_counter_ns() - t0)
            sizes[feature].append(answer_size(result))
    # Outlines: the first request per document when nothing was prepared (built then), the
    # first request after the warm-up the server runs on a worker thread after each load,
    # and repeated requests.
    samples["symbols cold"], samples["symbols warmed"], samples["symbols"] = [], [], []
    for rnd in range(symbol_rounds):
        for doc in server.view.bundle.documents:
            params = server.params("symbols", server.uri(doc.path), 0, 0)
            t0 = time.perf_counter_ns()
            server.handlers["symbols"](params)
            samples["symbols cold" if rnd == 0 else "symbols"].append(time.perf_counter_ns() - t0)
    from tvm_explorer.lsp.features.symbols import DocumentSymbols

    warmed = DocumentSymbols(server.session)  # a feature with nothing built yet
    t0 = time.perf_counter()
    warmed.warm(server.view)
    warm_s = time.perf_counter() - t0
    for doc in server.view.bundle.documents:
        params = server.params("symbols", server.uri(doc.path), 0, 0)
        t0 = time.perf_counter_ns()
        warmed.symbols(params)
        samples["symbols warmed"].append(time.perf_counter_ns() - t0)
    out = {f: bl.latency_summary(s) for f, s in samples.items()}
    for f in FEATURES:
        answered = [n for n in sizes[f] if n]
        out[f]["answered"] = len(answered)
        out[f]["max_answer"] = max(sizes[f]) if sizes[f] else 0
    out["warm_up_s"] = warm_s
    return out


# -- the real server process -------------------------------------------------------------
async def _real_server(root: Path, positions, server: InProcess, checkout: Path | None = None) -> dict:
    """The server of this checkout (or of ``checkout``'s ``server/``) over stdio."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("tvm-explorer-bench", "1")
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout / "server"), env.get("PYTHONPATH")]))
    await client.start_io(sys.executable, "-m", "tvm_explorer", "serve", "--poll-interval", "0", env=env)
    proc = client._server
    drain = asyncio.create_task(proc.stderr.read())  # keep the server's log pipe from filling
    t0 = time.perf_counter()
    # No workspace folder: opening one document of the bundle makes the server load it.
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            initialization_options={"pollInterval": 0},
        )
    )
    client.initialized(types.InitializedParams())
    t_init = time.perf_counter()
    first_path, first_line, first_col = positions[0]
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=server.uri(first_path), language_id="plaintext", version=1, text=server.view.bundle.text(first_path)
            )
        )
    )
    # The first answer: a references request (the one needing the most of the bundle).
    first_answer = await client.text_document_references_async(
        server.params("references", server.uri(first_path), first_line, first_col)
    )
    first_s = time.perf_counter() - t_init
    while True:
        got = await client.protocol.send_request_async("tvmExplorer/listBundles", {})
        bundles = getattr(got, "bundles", None) or (got.get("bundles") if isinstance(got, dict) else [])
        if bundles:
            break
        await asyncio.sleep(0.05)
    ready = time.perf_counter() - t0
    send = {
        "definition": client.text_document_definition_async,
        "declaration": client.text_document_declaration_async,
        "hover": client.text_document_hover_async,
        "references": client.text_document_references_async,
    }
    remote = {f: [] for f in FEATURES}
    local = {f: [] for f in FEATURES}
    mismatches: list = []
    for path, line, col in positions:
        uri = server.uri(path)
        for feature in FEATURES:
            params = server.params(feature, uri, line, col)
            t1 = time.perf_counter_ns()
            got = await send[feature](params)
            remote[feature].append(time.perf_counter_ns() - t1)
            t1 = time.perf_counter_ns()
            expected = server.handlers[feature](params)
            local[feature].append(time.perf_counter_ns() - t1)
            if answer_size(got) != answer_size(expected):
                mismatches.append((feature, path, line, col, answer_size(got), answer_size(expected)))
    mem = bl.proc_status(proc.pid)
    idle = await _idle_rss(proc.pid)
    peak = bl.proc_status(proc.pid).get("VmHWM", 0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    return {
        "first_answer_s": first_s,
        "first_answer_size": answer_size(first_answer),
        "ready_s": ready,
        "remote": {f: bl.latency_summary(s) for f, s in remote.items()},
        "local": {f: bl.latency_summary(s) for f, s in local.items()},
        "mismatches": mismatches,
        "server_rss": mem.get("VmRSS", 0),
        "server_hwm": peak,
        "server_rss_idle": idle,
    }


async def _floor_rss(command: list[str]) -> int:
    """RSS of a server that holds no bundle, once idle after ``initialize`` and one hover: the
    bare pygls server (``bare_pygls_server.py``), or ours started with nothing to load."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("tvm-explorer-bench", "1")
    with tempfile.TemporaryDirectory(prefix="tvmx-floor-") as empty:
        await client.start_io(*command, cwd=empty)
        proc = client._server
        drain = asyncio.create_task(proc.stderr.read())
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), initialization_options={"pollInterval": 0})
        )
        client.initialized(types.InitializedParams())
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=Path(empty, "x.txt").as_uri()),
                position=types.Position(line=0, character=0),
            )
        )
        rss = await _idle_rss(proc.pid)
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        drain.cancel()
    return rss


async def _idle_rss(pid: int, settle_s: float = 1.5, longest_s: float = 20.0) -> int:
    """The server's RSS once it is idle: after the sample, its background warm-ups may still
    run (and hold what they work on); read until it has not moved by more than 0.5 MiB for
    ``settle_s``."""
    t0 = time.perf_counter()
    last, since = bl.proc_status(pid).get("VmRSS", 0), time.perf_counter()
    while time.perf_counter() - t0 < longest_s:
        await asyncio.sleep(0.25)
        now = bl.proc_status(pid).get("VmRSS", 0)
        if abs(now - last) > 2**19:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= settle_s:
            break
    return last


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="mobilenet_v1 (c) only, fewer positions")
    ap.add_argument("--bundle", action="append", help="use this bundle (repeatable) instead of compiling")
    ap.add_argument("--positions", type=int, help="random positions per document (default 200; quick 60)")
    ap.add_argument("--load-reps", type=int, help="fresh-process loads per bundle (default 5; quick 3)")
    ap.add_argument("--sample", type=int, help="positions sent to the real server (default 300; quick 100)")
    ap.add_argument("--before", help="also run the real server of this checkout (e.g. /work/main), side by side")
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    per_doc = args.positions or (60 if args.quick else 200)
    load_reps = args.load_reps or (3 if args.quick else 5)
    sample = args.sample or (100 if args.quick else 300)
    print(f"# Language server latency — {bl.machine_note()}\n")

    with tempfile.TemporaryDirectory(prefix="tvmx-bench-") as tmp:
        if args.bundle:
            roots = [Path(b).resolve() for b in args.bundle]
        else:
            print("compiling bundles ...", flush=True)
            roots = compile_bundles(QUICK_BUNDLES if args.quick else DEFAULT_BUNDLES, Path(tmp))
        results: dict = {"bundles": {}}

        print("\n### Load (fresh process each; CPU / wall seconds, median (min–max))\n")
        rows = []
        for root in roots:
            loads = [bl.run_worker("load", bundle=str(root)) for _ in range(load_reps)]
            size = bl.dir_size(root)
            wall = bl.Summary.of(r["wall"] for r in loads)
            lm = bl.Summary.of(r["layer_map_wall"] for r in loads)
            growth = bl.Summary.of(r["growth"] for r in loads)
            results["bundles"][root.name] = {
                "bytes": size,
                "documents": loads[0]["value"],
                "load_wall": wall,
                "load_cpu": bl.Summary.of(r["cpu"] for r in loads),
                "layer_map_wall": lm,
                "memory_growth": growth,
            }
            rows.append(
                [
                    root.name,
                    bl.mib(size),
                    loads[0]["value"],
                    wall.fmt(2, " s"),
                    lm.fmt(2, " s"),
                    bl.mib(growth.median),
                    bl.verdict(wall.median + lm.median, GOAL_LOAD_S),
                ]
            )
        print(
            bl.table(
                [
                    "bundle",
                    "size",
                    "documents",
                    "load",
                    "+ layer map",
                    "memory (RSS growth)",
                    f"load ≤ {GOAL_LOAD_S} s",
                ],
                rows,
            )
        )

        largest = max(roots, key=bl.dir_size)
        print(f"\n### Server-side latency on {largest.name} (in-process feature handlers)\n", flush=True)
        server = InProcess(largest)
        positions = random_positions(server.view, per_doc)
        lat = measure_in_process(server, positions, symbol_rounds=3 if args.quick else 10)
        results["latency"] = lat
        rows = []
        notes = {
            "symbols cold": "first request per document, nothing prepared",
            "symbols warmed": "first request per document after the load's warm-up",
            "symbols": "repeated, per document",
        }
        for feature in (*FEATURES, *notes):
            s = lat[feature]
            goal = GOAL_REFS_P99_MS if feature == "references" else GOAL_P99_MS
            extra = (
                f"{s.get('answered', '-')} answered, largest {s.get('max_answer', '-')}"
                if feature in FEATURES
                else notes[feature]
            )
            rows.append(
                [
                    feature,
                    s["n"],
                    f"{s['p50']:.3f}",
                    f"{s['p99']:.3f}",
                    f"{s['max']:.2f}",
                    extra,
                    f"≤ {goal:g} ms: {bl.verdict(s['p99'], goal)}",
                ]
            )
        print(bl.table(["request", "n", "p50 ms", "p99 ms", "max ms", "answers", "goal (p99)"], rows))
        print(
            f"\noutline warm-up of all {len(server.view.bundle.documents)} documents (the server runs it "
            f"on a worker thread after loading): {lat['warm_up_s']:.2f} s"
        )

        print(f"\n### Real server process (stdio, pygls client), {min(sample, len(positions))} positions\n", flush=True)
        real = asyncio.run(_real_server(largest, positions[:sample], server))
        results["real_server"] = real
        rows = []
        for feature in FEATURES:
            r, l = real["remote"][feature], real["local"][feature]
            rows.append(
                [
                    feature,
                    f"{r['p50']:.2f}",
                    f"{r['p99']:.2f}",
                    f"{l['p50']:.3f}",
                    f"{l['p99']:.3f}",
                    f"{r['p50'] - l['p50']:.2f}",
                ]
            )
        print(
            bl.table(
                ["request", "round trip p50 ms", "p99 ms", "in-process p50 ms", "p99 ms", "glue + transport p50 ms"],
                rows,
            )
        )
        print(
            f"\nserver ready (initialize → bundle listed) in {real['ready_s']:.2f} s; server RSS "
            f"{bl.mib(real['server_rss'])} (once idle {bl.mib(real['server_rss_idle'])}, peak "
            f"{bl.mib(real['server_hwm'])}); answers differing in "
            f"size from in-process: {len(real['mismatches'])} {real['mismatches'][:5]}"
        )
        results["scale"] = scale_section(
            largest, positions[:sample], server, real, Path(args.before).resolve() if args.before else None
        )
    bl.save_json(args.json, results)
    return 0


def scale_section(root: Path, positions, server: InProcess, after: dict, before_checkout: Path | None) -> dict:
    """Issue 15's figures for the largest bundle: this checkout, and ``before_checkout``'s
    server measured in the same run."""
    size = bl.dir_size(root)
    runs = {}
    if before_checkout is not None:
        print(f"\n(running the server of {before_checkout} on the same positions ...)", flush=True)
        runs["before"] = asyncio.run(_real_server(root, positions, server, before_checkout))
    runs["after" if before_checkout is not None else "this checkout"] = after
    bare = asyncio.run(_floor_rss([sys.executable, str(Path(__file__).resolve().parent / "bare_pygls_server.py")]))
    empty = asyncio.run(_floor_rss([sys.executable, "-m", "tvm_explorer", "serve", "--poll-interval", "0"]))
    print(f"\n### Scale on {root.name} ({bl.mib(size)} on disk), real server process\n")
    names = list(runs)
    rows = [
        [
            "first answer (references, after initialized)",
            *(f"{r['first_answer_s']:.2f} s" for r in runs.values()),
            f"≤ {GOAL_FIRST_ANSWER_S:g} s: {bl.verdict(runs[names[-1]]['first_answer_s'], GOAL_FIRST_ANSWER_S)}",
        ],
        [
            "server RSS / bundle bytes, once idle after the sample",
            *(f"{r['server_rss_idle'] / size:.2f}× ({bl.mib(r['server_rss_idle'])})" for r in runs.values()),
            f"≤ {GOAL_RSS_RATIO:g}×: {bl.verdict(runs[names[-1]]['server_rss_idle'] / size, GOAL_RSS_RATIO)}",
        ],
        [
            "server RSS / bundle bytes, right after the sample",
            *(f"{r['server_rss'] / size:.2f}× ({bl.mib(r['server_rss'])})" for r in runs.values()),
            "",
        ],
        [
            "server peak RSS / bundle bytes",
            *(f"{r['server_hwm'] / size:.2f}× ({bl.mib(r['server_hwm'])})" for r in runs.values()),
            "",
        ],
        [
            "floor: a bare pygls server (no bundle) / bundle bytes",
            *(f"{bare / size:.2f}× ({bl.mib(bare)})" for _ in runs),
            "(any server on pygls + lsprotocol)",
        ],
        ["our server with no bundle / bundle bytes", *(f"{empty / size:.2f}× ({bl.mib(empty)})" for _ in runs), ""],
        [
            "server RSS once idle above the floor / bundle bytes",
            *(f"{(r['server_rss_idle'] - bare) / size:.2f}×" for r in runs.values()),
            "",
        ],
    ]
    for feature in FEATURES:
        last = runs[names[-1]]["remote"][feature]
        rows.append(
            [
                f"{feature} p50 / p99",
                *(f"{r['remote'][feature]['p50']:.2f} / {r['remote'][feature]['p99']:.2f} ms" for r in runs.values()),
                f"p99 ≤ {GOAL_SCALE_P99_MS:g} ms: {bl.verdict(last['p99'], GOAL_SCALE_P99_MS)}",
            ]
        )
    rows.append(["answers differing in size from in-process", *(str(len(r["mismatches"])) for r in runs.values()), ""])
    print(bl.table(["figure", *names, "goal"], rows))
    return {"bytes": size, "bare_pygls_rss": bare, "empty_server_rss": empty, **runs}


if __name__ == "__main__":
    sys.exit(main())
