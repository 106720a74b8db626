"""Our graph beside Netron and Model Explorer, side by side in one run (bench/graph_paint.py
``--peers``, issue 39): each model file opened in Netron (PyPI ``netron``, its web app served on
loopback by its own Python package) and in Model Explorer (``ai-edge-model-explorer``, likewise),
and its bundle's ``tvm-explorer report`` from disk, in the same headless chromium, the three in an
order rotating from one repetition to the next (``graph_peers.mjs``): first paint, main thread,
heap, zoom/pan frames. Peers are pinned in pyproject.toml (``bench``, ``test`` extras). Nothing
leaves the machine: every page request off loopback is refused and Model Explorer's check for a
newer version is turned off."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

NETRON = "import netron, sys; netron.serve(sys.argv[1], address=('127.0.0.1', int(sys.argv[2]))); netron.wait()"
# Model Explorer's command line, without its check for a newer version (a request to GitHub).
EXPLORER = (
    "import sys; model, port = sys.argv[1:3]; "
    "sys.argv = ['model-explorer', model, '--no_open_in_browser', '--host', '127.0.0.1', '--port', port]; "
    "import model_explorer.server as s; s._check_new_version = lambda print_msg=True: {}; "
    "from model_explorer import cmdline; cmdline.main()"
)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(code: str, model: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, model, str(port)], stdout=log.open("w"), stderr=subprocess.STDOUT, text=True
    )
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"{log.read_text()[-2000:]}") from None
            time.sleep(0.5)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(120):  # Model Explorer prints the URL that opens the model
        found = [line for line in log.read_text().splitlines() if line.startswith(f"http://127.0.0.1:{port}/?")]
        if found or code is NETRON:
            url = found[0] if found else url
            break
        time.sleep(0.5)
    return proc, url


def _page(kind: str, url: str, shot: Path | None) -> dict:
    proc = subprocess.run(
        ["node", str(BENCH / "graph_peers.mjs"), kind, url],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **({"SHOT": str(shot)} if shot else {})},
    )
    if proc.returncode != 0:
        return {"kind": kind, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    return json.loads(proc.stdout)


def compare(models: list[tuple[str, Path, Path]], reps: int, work: Path) -> list[dict]:
    """``models``: (label, model file, our report of its bundle). One row per model and viewer."""
    rows = []
    for label, model, report in models:
        servers = {}
        for kind, code in (("netron", NETRON), ("explorer", EXPLORER)):
            try:
                servers[kind] = _serve(code, str(model), work / f"{model.stem}.{kind}.log")
            except (RuntimeError, OSError) as err:
                print(f"{kind} did not start on {model.name}: {err}", file=sys.stderr)
        urls = {"ours": report.as_uri(), **{k: url for k, (_, url) in servers.items()}}
        kinds = list(urls)
        runs: dict[str, list[dict]] = {k: [] for k in kinds}
        try:
            for rep in range(reps):
                for kind in kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]:
                    shot = work / f"{model.stem}-{kind}.png" if rep == 0 else None
                    runs[kind].append(_page(kind, urls[kind], shot))
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(timeout=30)
        for kind in kinds:
            good = [r for r in runs[kind] if "error" not in r]
            row: dict = {"model": label, "viewer": kind, "runs": len(good)}
            if not good:
                row["error"] = runs[kind][0].get("error") if runs[kind] else "not run"
            else:
                for k in ("first_paint_ms", "main_thread_ms", "heap_mib", "frame_p50_ms", "frame_p95_ms"):
                    row[k] = statistics.median(r[k] for r in good)
                row["best_paint_ms"] = min(r["first_paint_ms"] for r in good)
            rows.append(row)
    names = {"ours": "TVM Explorer", "netron": "Netron 9.3.3", "explorer": "Model Explorer 0.1.34"}
    print(
        "\n| model | viewer | first paint (best) | main thread | heap | frame p50 / p95 | first paint vs the faster peer |"
    )
    print("|---|---|---|---|---|---|---|")
    for label in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == label]
        peers = [r["first_paint_ms"] for r in mine if r["viewer"] != "ours" and "first_paint_ms" in r]
        for r in mine:
            if "error" in r:
                print(f"| {label} | {names[r['viewer']]} | failed: {r['error'][:80]} | | | | |")
                continue
            ratio = f"{r['first_paint_ms'] / min(peers):.2f}×" if r["viewer"] == "ours" and peers else ""
            print(
                f"| {label} | {names[r['viewer']]} | {r['first_paint_ms']:.0f} ms ({r['best_paint_ms']:.0f}) "
                f"| {r['main_thread_ms']:.0f} ms | {r['heap_mib']:.0f} MiB "
                f"| {r['frame_p50_ms']:.0f} / {r['frame_p95_ms']:.0f} ms | {ratio} |"
            )
    return rows
