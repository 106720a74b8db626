"""Issue 37, item 5: a layer name of a megabyte — half a million nested scopes, or a few
scopes of 250 000 characters each — costs memory linear in its length in ``report``, in the
CLI tables and in Show Model Graph (``tvmExplorer/modelGraph`` through the real server), and
what is displayed is bounded. Before, scope handling kept a tuple per prefix: a 46 KiB name
took 3.4 GB, a 1 MB name got the CLI killed at 23.7 GB. The processes here run under a 4 GiB
address-space limit, so that the old behaviour fails (MemoryError) instead of exhausting the
machine."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys

import pytest
from tests.lsp.conftest import uri
from tests.lsp.hostile import RawServer

from tvm_explorer.graphview.structure import MAX_GROUP_PATH
from tvm_explorer.tablenames import MAX_SHOWN_NAME

LIMIT = 4 << 30
DEEP = "a/" * 500_000  # 1 MB: half a million nested scopes
WIDE = ("s" * 250_000 + "/") * 4  # 1 MB: four scopes of 250 000 characters

_MEASURE = f"""
import json, resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))
from tvm_explorer.cli.options import load_bundle
from tvm_explorer.graphview.document import graph_document
from tvm_explorer.navigation.view import BundleView
from tvm_explorer.tablenames import NameColumn
view = BundleView(load_bundle(sys.argv[1]))
tracemalloc.start()
doc = graph_document(view)
names = [layer.name for layer in view.bundle.layers]
column = NameColumn(names, 40)
shown = [column.show(n) for n in names]
print(json.dumps({{
    "peak_mib": tracemalloc.get_traced_memory()[1] / 2**20,
    "name": max(len(n["name"]) for n in doc["nodes"]),
    "labels": [g["label"][:8] for g in doc["groups"]],
    "label": max(len(g["label"]) for g in doc["groups"]),
    "path": max(len(g["path"]) for g in doc["groups"]),
    "shown": max(map(len, shown)),
}}))
"""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.fixture(scope="module")
def deep(bundles, models_dir, tmp_path_factory):
    """small_cnn (c) with every layer renamed to a 1 MB name: four deep, four wide."""
    bundle = tmp_path_factory.mktemp("deep-names") / "deep.bundle"
    shutil.copytree(bundles.get(models_dir / "small_cnn_fp32.tflite", "c"), bundle)
    for name in ("index.json", "costs.json"):
        data = json.loads((bundle / name).read_text())
        for i, layer in enumerate(data["layers"]):
            layer["name"] = (DEEP if i < 4 else WIDE) + f"op{i}"
        (bundle / name).write_text(json.dumps(data))
    return bundle


def test_the_graph_document_and_tables_of_megabyte_names_stay_small(deep):
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(deep)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    # 8 MB of names: the graph document and the table column of them, well under 100 MiB.
    assert got["peak_mib"] < 100, got
    assert got["name"] <= MAX_SHOWN_NAME and got["label"] <= MAX_SHOWN_NAME and got["path"] <= MAX_GROUP_PATH, got
    assert got["labels"] == ["a", "ssssssss"], got  # each kind of name is a group
    assert got["shown"] <= 40, got


def test_report_of_megabyte_names_finishes(deep, tmp_path):
    out = tmp_path / "deep.html"
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_explorer", "report", str(deep), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited,
    )
    assert proc.returncode == 0 and "Report written" in proc.stdout, proc.stderr[-2000:]
    assert out.stat().st_size < 8 * 2**20  # the names are shown cut, not whole


def test_show_model_graph_of_megabyte_names(deep):
    srv = RawServer(
        cmd=[
            sys.executable,
            "-c",
            f"import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}));"
            "sys.argv = ['tvm-explorer', 'serve']; runpy.run_module('tvm_explorer', run_name='__main__')",
        ]
    )
    try:
        srv.initialize(deep.parent)
        srv.wait_bundles(1, timeout=120)
        base = srv.peak_mib()
        got = srv.reply(srv.request("tvmExplorer/modelGraph", {"bundle": uri(deep / "code" / "module.c")}), timeout=120)
        doc = got["result"]["document"]
        assert len(doc["nodes"]) == 8 and all(len(n["name"]) <= MAX_SHOWN_NAME for n in doc["nodes"]), got
        assert srv.peak_mib() - base < 200, (base, srv.peak_mib())
    finally:
        srv.close()
