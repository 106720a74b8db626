"""Issue 26 item 10: values that pass a schema's shape but no reader can use (``10**400``, NaN,
infinity, ``1e308``, a string for a number, null for an observed layer's cosine, -1 for a
count, an object anywhere) in every field of real ``costs.json``, ``numerics.json`` and
``bisect.json`` sections. Each mutant is checked by the real CLI commands that read the section
and by the real server (hover on every layer of the model document, the Costs and Numerics
views, the pass list, code lenses, kernel heat): never a traceback; a rejected section is one
message naming the file and the field, and the rest of the bundle still answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import run_cli

from tvm_explorer.bundle.sections.bisect import validate as validate_bisect
from tvm_explorer.bundle.sections.costs import validate as validate_costs
from tvm_explorer.bundle.sections.numerics import validate as validate_numerics

from .hostile import HOSTILE_STRINGS, HOSTILE_VALUES, RawServer, linked_bundle, live_markup, mutated, section_fields

HERE = Path(__file__).resolve().parent
NUMERICS_TESTS = HERE.parent / "numerics"


@pytest.fixture(scope="module")
def sources(bundles, gt_model, tmp_path_factory) -> dict[str, Path]:
    """The real bundles whose sections are mutated: a profiled, numerics-checked llvm
    compile, and a ``bisect -o`` bundle with a planted culprit pass."""
    bis = tmp_path_factory.mktemp("bisect-src") / "bisected"
    run_cli(
        "bisect", gt_model, "--pipeline", "planted_pipes:with_planted_add", "-o", bis, cwd=NUMERICS_TESTS, check=True
    )
    nb = bundles.get(gt_model, "llvm", "--numerics", "--profile")
    return {"costs.json": nb, "numerics.json": nb, "bisect.json": bis}


def _accepts(name: str, data, bundle: Path) -> bool:
    """Whether the section's validator takes ``data`` (decides what each reader must do)."""
    index = json.loads((bundle / "index.json").read_text())
    try:
        if name == "costs.json":
            validate_costs(data, len(index["layers"]))
        elif name == "numerics.json":
            validate_numerics(data, {(lay["subgraph"], lay["op_index"]) for lay in index["layers"]})
        else:
            validate_bisect(data)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def mutants(sources, tmp_path_factory) -> list[dict]:
    """One bundle (hard links, one file rewritten) per section, field and hostile value."""
    root = tmp_path_factory.mktemp("mutants")
    out = []
    for name, src in sources.items():
        data = json.loads((src / name).read_text())
        for path in section_fields(name, data):
            for kind, value in HOSTILE_VALUES.items():
                bad = mutated(data, path, value)
                text = json.dumps(bad)
                where = root / f"{name.split('.')[0]}-{len(out)}"
                out.append(
                    {
                        "file": name,
                        "path": path,
                        "kind": kind,
                        "dir": linked_bundle(src, where, {name: text}),
                        "src": src,
                        "accepted": _accepts(name, json.loads(text), src),
                    }
                )
    return out


def _field(m: dict) -> str:
    """The field's name as a message says it."""
    last = [p for p in m["path"] if isinstance(p, str)][-1]
    return last


def _names_the_field(message: str, m: dict) -> bool:
    field = _field(m)
    return field in message or field.replace("_", " ") in message


def _commands(m: dict) -> list[list[str]]:
    d = str(m["dir"])
    if m["file"] == "costs.json":
        return [["costs", d], ["costs", d, "--json"], ["costs", d, "--sort", "memory"], ["compare", str(m["src"]), d]]
    if m["file"] == "numerics.json":
        return [["numerics", d], ["numerics", d, "--json"], ["costs", d]]
    return [["costs", d]]


def _reads_section(argv: list[str], m: dict) -> bool:
    return (argv[0], m["file"]) in (("costs", "costs.json"), ("numerics", "numerics.json"))


def test_cli_commands_never_trace_back(mutants):
    """Every mutant through ``costs``, ``numerics`` and ``compare``, run as ``python -m
    tvm_explorer`` runs them (``cli.main``, many in one process: see cli_batch.py)."""
    jobs = [(m, argv) for m in mutants for argv in _commands(m)]
    proc = subprocess.run(
        [sys.executable, str(HERE / "cli_batch.py")],
        input=json.dumps([a for _, a in jobs]),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    bad = []
    for (m, argv), got in zip(jobs, results):
        what = f"{m['file']} {m['path']} = {m['kind']}: tvm-explorer {' '.join(argv[:1])}"
        err = got["stderr"]
        if got["traceback"] or "Traceback" in err:
            bad.append(f"{what}: traceback\n{got['traceback'] or err}")
        elif m["accepted"] or not _reads_section(argv, m):
            if got["status"] != 0:
                bad.append(f"{what}: status {got['status']}: {err}")
        elif got["status"] != 2 or m["file"] not in err or not _names_the_field(err, m) or err.strip().count("\n"):
            bad.append(
                f"{what}: expected one message naming {m['file']} and {_field(m)!r}, got status {got['status']}: {err}"
            )
    assert not bad, f"{len(bad)} of {len(jobs)} runs failed:\n" + "\n".join(bad[:20])


def test_real_subprocess_runs_agree(mutants):
    """A few mutants through the installed entry point itself (``python -m tvm_explorer``)."""
    picked = {}
    for m in mutants:
        picked.setdefault((m["file"], m["accepted"]), m)
    for m in picked.values():
        for argv in _commands(m)[:1]:
            proc = subprocess.run(
                [sys.executable, "-m", "tvm_explorer", *argv], capture_output=True, text=True, timeout=300
            )
            assert "Traceback" not in proc.stderr, proc.stderr
            assert proc.returncode in (0, 2), proc.stderr


def _model_positions(bundle: Path) -> tuple[str, list[dict]]:
    index = json.loads((bundle / "index.json").read_text())
    text = (bundle / "model.tflgraph").read_text()
    out = []
    for start, _end, _set, kind, _key in index["documents"]["model.tflgraph"]["ranges"]:
        if kind == "layer":
            out.append({"line": text.count("\n", 0, start), "character": start - text.rfind("\n", 0, start) - 1})
    return "model.tflgraph", out


def _server_mutants(mutants: list[dict]) -> list[dict]:
    """Every mutant the validators accept (the readers must cope with each), and one rejected
    mutant per section and kind of value (each must be reported and left out)."""
    out, seen = [], set()
    for m in mutants:
        key = (m["file"], m["kind"])
        if m["accepted"] or key not in seen:
            out.append(m)
            seen.add(key) if not m["accepted"] else None
    return out


def test_server_answers_every_mutant(mutants, tmp_path):
    chosen = _server_mutants(mutants)
    ws = tmp_path / "ws"
    ws.mkdir()
    for i, m in enumerate(chosen):
        m["served"] = (ws / f"m{i}").resolve()
        m["dir"].rename(m["served"])
    srv = RawServer()
    try:
        srv.initialize(ws)
        listed = {Path(b["root"]).resolve(): b for b in srv.wait_bundles(len(chosen), timeout=600)}
        bad = []
        for m in chosen:
            what = f"{m['file']} {m['path']} = {m['kind']} ({'accepted' if m['accepted'] else 'rejected'})"
            root = m["served"]
            info = listed[root]
            problems = " ".join(info["problems"])
            if not m["accepted"] and not (m["file"] in problems and _names_the_field(problems, m)):
                bad.append(f"{what}: not reported: {info['problems']}")
            replies = {}
            model, positions = _model_positions(root)
            doc = {"uri": (root / model).as_uri()}
            for pos in positions:
                got = srv.reply(srv.request("textDocument/hover", {"textDocument": doc, "position": pos}))
                if "error" in got or not got.get("result"):
                    bad.append(f"{what}: hover at {pos}: {got}")
            for method, params in (
                ("tvmExplorer/costs", {"bundle": root.as_uri()}),
                ("tvmExplorer/numerics", {"bundle": root.as_uri()}),
                ("tvmExplorer/listPasses", {"bundle": root.as_uri()}),
                ("textDocument/codeLens", {"textDocument": doc}),
            ):
                got = srv.reply(srv.request(method, params))
                replies[method] = got
                if "error" in got:
                    bad.append(f"{what}: {method}: {got['error']}")
            costs = replies["tvmExplorer/costs"].get("result") or {}
            numerics = replies["tvmExplorer/numerics"].get("result") or {}
            if m["file"] == "costs.json" and not m["accepted"]:
                if "costs.json" not in (costs.get("reason") or ""):
                    bad.append(f"{what}: the Costs view does not say why it is empty: {costs}")
            elif not costs.get("layers"):
                bad.append(f"{what}: the Costs view is empty: {costs}")
            if m["file"] == "numerics.json" and not m["accepted"]:
                if "numerics.json" not in (numerics.get("problem") or ""):
                    bad.append(f"{what}: the Numerics view does not say why it is empty: {numerics}")
            elif m["file"] != "bisect.json" and not numerics.get("layers"):
                bad.append(f"{what}: the Numerics view is empty: {numerics}")
            if m["file"] == "bisect.json":
                after = root / "relax/003-PlantedAddToSubtract.relax"
                text = after.read_text()
                line = next(i for i, x in enumerate(text.split("\n")) if "R.subtract" in x)
                got = srv.reply(
                    srv.request(
                        "textDocument/hover",
                        {
                            "textDocument": {"uri": after.as_uri()},
                            "position": {"line": line, "character": text.split("\n")[line].index("R.subtract") + 2},
                        },
                    )
                )
                if "error" in got or not got.get("result"):
                    bad.append(f"{what}: hover in the culprit's diff: {got}")
        assert srv.proc.poll() is None
        assert not bad, f"{len(bad)} failures of {len(chosen)} bundles:\n" + "\n".join(bad[:20])
    finally:
        srv.close()
    assert "Traceback" not in srv.stderr()


def _with_strings(src: Path, dst: Path, s: str, files: tuple[str, ...]) -> Path:
    """Bundle ``src`` with ``s`` in every string field of its sections that an editor shows."""
    replace = {}
    if "numerics.json" in files:
        n = json.loads((src / "numerics.json").read_text())
        n["reference"] = s
        for e in n["layers"]:
            if e["observed"]:
                e["note"] = s
            else:
                e["hidden_in"], e["note"] = s, s
            e["name"] = s
        replace["numerics.json"] = json.dumps(n)
    if "costs.json" in files:
        c = json.loads((src / "costs.json").read_text())
        c["total_ms"] = None  # not measured: the hover and the view show the profile's reason
        c["profile"].update(status=s, reason=s)
        for lay in c["layers"]:
            lay["name"] = s
        replace["costs.json"] = json.dumps(c)
    if "bisect.json" in files:
        b = json.loads((src / "bisect.json").read_text())
        b["baseline"] = s
        b["culprit"]["name"] = s
        replace["bisect.json"] = json.dumps(b)
    if "structure.json" in files:
        st = json.loads((src / "structure.json").read_text())
        for t in st["tensors"]:
            t[1] = s  # the dtype: hovers show every type
        for lay in st["layers"]:
            lay["options"] = {k: s for k in lay.get("options", {})}
        replace["structure.json"] = json.dumps(st)
    return linked_bundle(src, dst, replace)


def test_hostile_strings_are_inert_in_every_hover(sources, tmp_path):
    """Issue 26 item 13: numerics.json ``reference``/``note``/``hidden_in``, costs.json
    ``profile.reason``/``status``, bisect.json ``baseline`` and ``culprit.name`` (and since
    issue 44, structure.json's types and options, which hovers show) reached the
    hover Markdown raw (a ``command:`` link, a remote image, ``onerror`` HTML, a code span closed
    by a backtick). Every hover of the model document and of the culprit's diff, on every
    hostile string, through the real server."""
    ws = tmp_path / "ws"
    made = []
    for i, s in enumerate(HOSTILE_STRINGS):
        made.append(
            (
                s,
                _with_strings(
                    sources["costs.json"], ws / f"n{i}", s, ("numerics.json", "costs.json", "structure.json")
                ),
            )
        )
        made.append((s, _with_strings(sources["bisect.json"], ws / f"b{i}", s, ("bisect.json",))))
    srv = RawServer()
    try:
        srv.initialize(ws)
        listed = srv.wait_bundles(len(made), timeout=600)
        assert not [b for b in listed if b["problems"]], [b["problems"] for b in listed if b["problems"]][:3]
        bad, seen = [], 0
        for s, root in made:
            root = root.resolve()
            model, positions = _model_positions(root)
            targets = [((root / model).as_uri(), pos) for pos in positions]
            if (root / "bisect.json").exists():
                after = root / "relax/003-PlantedAddToSubtract.relax"
                text = after.read_text().split("\n")
                line = next(i for i, x in enumerate(text) if "R.subtract" in x)
                targets.append((after.as_uri(), {"line": line, "character": text[line].index("R.subtract") + 2}))
            for doc, pos in targets:
                got = srv.reply(srv.request("textDocument/hover", {"textDocument": {"uri": doc}, "position": pos}))
                value = (got.get("result") or {}).get("contents", {}).get("value", "")
                if not value:
                    bad.append(f"{s!r}: no hover at {doc} {pos}: {got}")
                    continue
                seen += ("Numerics of" in value) + ("Bisect" in value) + ("not measured" in value)
                live = live_markup(value)
                broken = [frag for frag in ("\nline two", "\n# heading", "\n- item", "\n|---") if frag in value]
                if live or broken:
                    bad.append(f"{s!r} at {doc} {pos}: {live + broken}:\n{value}")
        assert not bad, f"{len(bad)} hovers:\n" + "\n".join(bad[:8])
        assert seen > len(HOSTILE_STRINGS) * 3  # the hostile fields were really shown
    finally:
        srv.close()
