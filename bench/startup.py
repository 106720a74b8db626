"""Start-up time and idle memory of the command line and the language server, for this
checkout and, with ``--before CHECKOUT``, another one, side by side in one run.

What a user waits for before anything happens: ``tvm-explorer --version`` (the CLI's import),
``tvm-explorer coverage`` of a small bundle (a query: parse, load, print), and the language
server from its start to the answer to ``initialize``, then to the first answer on a bundle
(``tvmExplorer/listBundles`` once the workspace's bundle is loaded), with its RSS then. Each
repetition runs every variant in a rotating order (bench/benchlib.py); ratios are the median
of the per-repetition ratios ``this / before``, with their spread.

    .venv/bin/python bench/startup.py --before /tmp/before-checkout [--reps 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib as bl

SMALL_MODEL = bl.MODELS / "small_cnn_fp32.tflite"


def _env(checkout: Path | None) -> dict:
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout / "server"), env.get("PYTHONPATH")]))
    return env


def _timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return took


def _message(body: dict) -> bytes:
    data = json.dumps(body).encode()
    return f"Content-Length: {len(data)}\r\n\r\n".encode() + data


def _read_message(stream) -> dict:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise SystemExit("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def _answer(proc, want_id: int) -> dict:
    while True:
        msg = _read_message(proc.stdout)
        if msg.get("id") == want_id and "method" not in msg:
            return msg
        if "method" in msg and "id" in msg:  # a request of the server's (progress): accept it
            proc.stdin.write(_message({"jsonrpc": "2.0", "id": msg["id"], "result": None}))
            proc.stdin.flush()


def _rss(pid: int) -> int:
    return bl.proc_status(pid).get("VmRSS", 0)


def _serve(env: dict, workspace: Path) -> dict:
    """Seconds to the answer to ``initialize`` and to the first answer on the bundle, and the
    server's RSS then."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tvm_explorer", "serve", "--poll-interval", "0"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        uri = workspace.as_uri()
        init = {
            "processId": os.getpid(),
            "rootUri": uri,
            "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": "ws"}],
        }
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        proc.stdin.flush()
        _answer(proc, 1)
        initialized = time.perf_counter() - t0
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 2, "method": "tvmExplorer/listBundles", "params": {}}))
        proc.stdin.flush()
        got = _answer(proc, 2)
        first = time.perf_counter() - t0
        if not (got.get("result") or {}).get("bundles"):
            raise SystemExit(f"the server listed no bundle: {got}")
        rss = _rss(proc.pid)
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return {"initialize_s": initialized, "first_answer_s": first, "rss": rss}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="the other checkout (its server/ is imported)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args(argv)
    variants = {"this": None}
    if args.before:
        variants = {"before": args.before.resolve(), "this": None}
    with tempfile.TemporaryDirectory() as tmp:
        # Each checkout reads the bundle it compiles itself (their bundle schemas may differ).
        workspaces = {name: Path(tmp) / name for name in variants}
        for name, workspace in workspaces.items():
            workspace.mkdir()
            _timed(
                [
                    sys.executable,
                    "-m",
                    "tvm_explorer",
                    "compile",
                    str(SMALL_MODEL),
                    "-o",
                    str(workspace / "small.bundle"),
                ],
                _env(variants[name]),
            )
        figures = ("version_s", "coverage_s", "initialize_s", "first_answer_s", "rss")
        got: dict[str, dict[str, list[float]]] = {v: {f: [] for f in figures} for v in variants}
        for _rep, order in bl.rotations(list(variants), args.reps):
            for name in order:
                env = _env(variants[name])
                workspace = workspaces[name]
                bundle = workspace / "small.bundle"
                got[name]["version_s"].append(_timed([sys.executable, "-m", "tvm_explorer", "--version"], env))
                got[name]["coverage_s"].append(
                    _timed([sys.executable, "-m", "tvm_explorer", "coverage", str(bundle)], env)
                )
                for key, value in _serve(env, workspace).items():
                    got[name][key].append(value)
    labels = {
        "version_s": "tvm-explorer --version (s)",
        "coverage_s": "tvm-explorer coverage BUNDLE (s)",
        "initialize_s": "server: start to initialize answered (s)",
        "first_answer_s": "server: start to first answer on the bundle (s)",
        "rss": "server RSS after that answer (MiB)",
    }
    rows = []
    for f in figures:
        scale = 1 / 2**20 if f == "rss" else 1
        row = [labels[f]] + [bl.Summary.of(v * scale for v in got[n][f]).fmt(3 if f != "rss" else 1) for n in variants]
        if args.before:
            row.append(bl.paired_ratios(got["before"][f], got["this"][f]).fmt(2) + "×")
        rows.append(row)
    headers = ["figure", *variants] + (["this / before"] if args.before else [])
    print(f"{args.reps} repetitions, side by side; {bl.machine_note()}\n")
    print(bl.table(headers, rows))
    bl.save_json(args.json, got)
    return 0


if __name__ == "__main__":
    sys.exit(main())
