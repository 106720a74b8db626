"""Tools of the hostile-review tests (issue 18): a raw JSON-RPC client that can send what no
well-behaved client would, and bundles crafted to be expensive."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from .fake_bundle import write_fake_bundle

SERVER_CMD = [sys.executable, "-m", "tvm_explorer", "serve"]


def frame(body: bytes | dict) -> bytes:
    """One LSP message: headers and body."""
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawServer:
    """The real server process on pipes; replies are parsed by a reader thread."""

    def __init__(
        self,
        cwd: Path | None = None,
        args: list[str] | None = None,
        cmd: list[str] | None = None,
        env: dict | None = None,
    ):
        self.proc = subprocess.Popen(
            (cmd or SERVER_CMD) + (args or []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.messages: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ids = iter(range(1, 10**9))
        self.notifications: list[dict] = []  # every notification seen while waiting

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
            self.messages.put(json.loads(out.read(length)))

    def send(self, data: bytes | dict) -> None:
        """Send a message (a dict is framed; bytes go out as they are)."""
        self.proc.stdin.write(frame(data) if isinstance(data, dict) else data)
        self.proc.stdin.flush()

    def request(self, method: str, params=None, msg_id=None) -> int | str:
        """Send a request; returns its id."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params=None) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, msg_id=None, timeout: float = 30.0, match=None) -> dict:
        """The next reply with ``msg_id`` (or the next message ``match(m)`` accepts);
        server-to-client requests and notifications in between are skipped (requests are
        answered with null so the server does not wait)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no reply {msg_id!r} within {timeout} s")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if "method" in msg and "id" in msg:  # e.g. window/workDoneProgress/create
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "method" in msg:
                self.notifications.append(msg)
            if match is not None:
                if match(msg):
                    return msg
                continue
            if "method" not in msg and msg.get("id") == msg_id:
                return msg

    def initialize(self, folder: Path | None = None, **options) -> dict:
        """``initialize`` + ``initialized`` (workspace ``folder``)."""
        params = {
            "processId": os.getpid(),
            "capabilities": {},
            "rootUri": None,
            "initializationOptions": {"pollInterval": 0.2, **options},
        }
        if folder is not None:
            params["workspaceFolders"] = [{"uri": folder.as_uri(), "name": folder.name}]
        got = self.reply(self.request("initialize", params))
        self.notify("initialized", {})
        return got

    def wait_bundles(self, count: int, timeout: float = 60.0, predicate=None) -> list:
        """Poll ``tvmExplorer/listBundles`` until ``count`` bundles are listed."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.reply(self.request("tvmExplorer/listBundles", {}))["result"]["bundles"]
            if len(got) == count and (predicate is None or predicate(got)):
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} bundles, got {got}")
            time.sleep(0.1)

    def rss_mib(self) -> float:
        """Resident memory of the server process."""
        return self._status_mib("VmRSS:")

    def peak_mib(self) -> float:
        """Highest resident memory of the server process so far (``VmHWM``)."""
        return self._status_mib("VmHWM:")

    def _status_mib(self, field: str) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
        return 0.0

    def close(self) -> int:
        """End the process (EOF, then kill if it lingers); returns its status."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def stderr(self) -> str:
        """What the server logged (after ``close``)."""
        return self.proc.stderr.read().decode("utf-8", "replace")


def plant_package(folder: Path, marker: Path, name: str = "tvm_explorer") -> Path:
    """A package ``name`` planted in ``folder`` whose import (or ``-m`` run) writes ``marker``:
    a bundle, workspace or working directory handed to the user with code in it."""
    pkg = folder / name
    pkg.mkdir(parents=True, exist_ok=True)
    plant = f"open({str(marker)!r}, 'w').write('ran')\n"
    for module in ("__init__.py", "__main__.py"):
        (pkg / module).write_text(plant)
    return pkg


def code_payloads(marker: str = "PWNED") -> list[str]:
    """Bundle strings that run ``open(marker, 'w')`` if they reach Python source as code: a
    line break of each kind Python (or an editor) honours, a quote or bracket closing a
    literal, a lone surrogate (UTF-8 cannot write it)."""
    run = f"open({marker!r}, 'w')"
    return [
        f"x\nimport os; {run}",
        f"x\r{run}",
        f"x\r\n{run}  #",
        f"x\u2028\n{run}",
        f"x\x0c\n{run}",
        f"x\\\n{run}",
        f"x'); {run}  # ",
        f'x"""; {run}  # ',
        f"x\x1b[2K\n{run}",
        "X\ud800",
    ]


def console_script() -> Path:
    """The installed ``tvm-explorer`` command (next to this interpreter, as pip puts it)."""
    script = Path(sys.executable).parent / "tvm-explorer"
    assert script.exists(), f"{script} is missing: install the package (pip install -e .)"
    return script


def documented_server_launches(repo: Path) -> list[list[str]]:
    """Every server command line the docs give (README.md, docs/vscode.md's Neovim configs),
    with ``~/src/tvm-explorer/.venv/bin/`` and ``.venv/bin/`` made this interpreter's folder."""
    bin_dir = Path(sys.executable).parent
    found = []
    vscode = (repo / "docs" / "vscode.md").read_text()
    for m in re.finditer(
        r"cmd = \{ vim\.fn\.expand\('~/src/tvm-explorer/\.venv/bin/([^']+)'\)"
        r"((?:, '[^']*')*) \}",
        vscode,
    ):
        found.append([str(bin_dir / m.group(1)), *re.findall(r"'([^']*)'", m.group(2))])
    for m in re.finditer(r"^\.venv/bin/(\S+) (serve)\b", (repo / "README.md").read_text(), re.M):
        found.append([str(bin_dir / m.group(1)), m.group(2)])
    return found


def pad_index(bundle: Path, size: int) -> None:
    """Grow ``index.json`` to at least ``size`` bytes with trailing whitespace (still the same
    JSON): a small real bundle whose index a worker process parses."""
    index = bundle / "index.json"
    with open(index, "ab") as f:
        f.write(b" " * max(0, size - index.stat().st_size))


def write_nested_bundle(root: Path, depth: int, doc: str = "tir/000-input.tir") -> Path:
    """The fake bundle, with document ``doc`` replaced by ``depth`` nested ``block`` ranges,
    each with a layer of its own (layers 3.. of a model document listing them all)."""
    write_fake_bundle(root)
    index = json.loads((root / "index.json").read_text())
    layers = index["layers"]
    base = len(layers)
    model_lines, model_ranges = [], []
    model_text = (root / "model.tflgraph").read_text()
    offset = len(model_text)
    for i in range(depth):
        line = f"  op {base + i}  ADD  (a{i}) -> t{i}\n"
        model_ranges.append([offset, offset + len(line) - 1, 0, "layer", f"layer:0:{base + i}"])
        model_lines.append(line)
        offset += len(line)
        layers.append(
            {
                "id": base + i,
                "subgraph": 0,
                "op_index": base + i,
                "opcode": "ADD",
                "outputs": [f"t{i}"],
                "output_types": [],
            }
        )
    model_text += "".join(model_lines)
    (root / "model.tflgraph").write_text(model_text)
    sets = index["origin_sets"]
    ranges = []
    for i in range(depth):
        sets.append([[base + i, True]])
        ranges.append([i, 2 * depth - i, len(sets) - 1, "block", f"block:{i}"])
    for r in model_ranges:
        sets.append([[int(r[4].split(":")[2]), True]])
        r[2] = len(sets) - 1
    text = "(" * depth + ")" * depth + "\n"
    (root / doc).write_text(text)
    index["documents"][doc] = {"length": len(text), "ranges": ranges}
    index["documents"]["model.tflgraph"]["length"] = len(model_text)
    index["documents"]["model.tflgraph"]["ranges"] += model_ranges
    (root / "index.json").write_text(json.dumps(index))
    return root


def write_many_documents_bundle(root: Path, count: int) -> Path:
    """The fake bundle plus ``count`` small TIR documents (``tir/many/NNNNNN.tir``), each
    listed in the manifest and indexed (no ranges)."""
    write_fake_bundle(root)
    manifest = json.loads((root / "manifest.json").read_text())
    index = json.loads((root / "index.json").read_text())
    (root / "tir" / "many").mkdir(parents=True)
    for i in range(count):
        rel = f"tir/many/{i:06d}.tir"
        text = f"# document {i}\n"
        (root / rel).write_text(text)
        manifest["documents"].append({"path": rel, "stage": "tir", "language": "tvm-tir"})
        index["documents"][rel] = {"length": len(text), "ranges": []}
    (root / "index.json").write_text(json.dumps(index))
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


BAD_ENVELOPES = [  # (message, the id its InvalidRequest answer must carry)
    ({"jsonrpc": "1.0", "id": 5, "method": "tvmExplorer/listBundles", "params": {}}, 5),
    ({"id": 6, "method": "tvmExplorer/listBundles", "params": {}}, 6),
    ({"jsonrpc": "2.0", "id": 7, "method": 7, "params": {}}, 7),
    ({"jsonrpc": "2.0", "id": 8, "method": None, "params": {}}, 8),
    ({"jsonrpc": "2.0", "id": 9, "method": ["textDocument/hover"]}, 9),
    ({"jsonrpc": "2.0", "id": 10, "method": {"x": 1}}, 10),
    ({"jsonrpc": "2.0", "id": [1], "method": "tvmExplorer/listBundles"}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "tvmExplorer/listBundles"}, None),
    ({"jsonrpc": "2.0", "id": 12.5, "method": "tvmExplorer/listBundles"}, None),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": 3}, None),
    ({"jsonrpc": "2.0", "id": 11, "method": "tvmExplorer/listBundles", "params": 5}, 11),
    ({"jsonrpc": 2, "id": "s", "method": "tvmExplorer/listBundles"}, "s"),
    ({"jsonrpc": "2.0", "method": 7}, None),  # a notification with a bad method: still answered
]


# -- hostile values in a bundle's sections (issue 26 item 10) ---------------------------------
HOSTILE_VALUES = {  # what replaces one field of costs.json, numerics.json or bisect.json
    "a string": "x",
    "null": None,
    "a huge int": 10**400,  # float() overflows
    "NaN": float("nan"),  # Python's json writes and reads NaN and Infinity
    "infinity": float("inf"),
    "a huge float": 1e308,
    "negative": -1,
    "an object": {"a": 1},
}


def section_fields(name: str, data: dict) -> list[tuple]:
    """Paths (tuples of keys and indexes) of every field of a real section that a reader uses:
    the top level, and each field of the objects and first list entries below it."""
    paths = [(key,) for key in data]
    for key, value in data.items():
        if isinstance(value, dict):
            paths += [(key, sub) for sub in value]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            i = 0
            if name == "numerics.json":  # the first observed layer: the one with figures
                i = next((n for n, e in enumerate(value) if e.get("observed")), 0)
            if name == "costs.json" and key == "passes":  # one with a time
                i = next((n for n, e in enumerate(value) if e.get("ms") is not None), 0)
            paths += [(key, i, sub) for sub in value[i]]
    return paths


def mutated(data: dict, path: tuple, value) -> dict:
    """A deep copy of ``data`` with the field at ``path`` set to ``value``."""
    import copy

    out = copy.deepcopy(data)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return out


def linked_bundle(src: Path, dst: Path, replace: dict[str, str]) -> Path:
    """A copy of bundle ``src`` at ``dst`` made of hard links (cheap), with the files named in
    ``replace`` written anew."""
    for here, _dirs, files in os.walk(src):
        rel = Path(here).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for f in files:
            if str(rel / f) not in replace:
                os.link(Path(here) / f, dst / rel / f)
    for name, text in replace.items():
        (dst / name).write_text(text)
    return dst


# -- hostile strings shown in hovers, lenses, views and tooltips (issue 26 item 13) -----------
HOSTILE_STRINGS: list[str] = json.loads((Path(__file__).parent / "hostile_strings.json").read_text())
"""Backticks that close a code span, ``command:`` links, remote images, HTML with ``onerror``,
newlines, lone surrogates (shared with tests/e2e/markdown.test.mjs)."""


def live_markup(markdown: str) -> list[str]:
    """What a Markdown renderer would act on in ``markdown`` outside its code spans and
    backslash escapes: links, images, HTML tags, ``command:`` or ``http:`` targets."""
    import re

    outside = re.sub(r"(?<!`)(`+)(?!`)(.*?)(?<!`)\1(?!`)", "", markdown, flags=re.S)
    plain = re.sub(r"\\[\s\S]", "", outside)
    found = [p for p in (r"\[[^\]]*\]\(", r"!\[", r"<[a-zA-Z/!?]", r"command:", r"https?:") if re.search(p, plain)]
    if re.search("[\ud800-\udfff]", markdown):
        found.append("lone surrogate")
    return found
