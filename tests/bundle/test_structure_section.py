"""The bundle carries the model's structure as data (``structure.json``, issue 44 item 2):
hovers and the graph read it, never the model document's text; a bundle of the schema before
it is refused with one message; a damaged structure is left out, named."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import run_cli
from tvm_explorer.bundle.format import SCHEMA_VERSION
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError
from tvm_explorer.graphview.structure import read_structure
from tvm_explorer.navigation.layer_facts import layer_facts
from tvm_explorer.navigation.view import BundleView


@pytest.fixture(scope="module")
def good(gt_model, bundles):
    return bundles.get(gt_model, "c")


def _copy(good, tmp_path, name="b"):
    out = tmp_path / name
    shutil.copytree(good, out)
    return out


def _facts(root):
    view = BundleView(Bundle(root))
    return [layer_facts(view, layer.id) for layer in view.bundle.layers], read_structure(view)


def test_an_old_schema_bundle_gets_one_message(good, tmp_path):
    old = _copy(good, tmp_path)
    # what a bundle of schema 1 is: no structure.json, schema_version 1
    (old / "structure.json").unlink()
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["schema_version"] = 1
    manifest["files"].remove("structure.json")
    (old / "manifest.json").write_text(json.dumps(manifest))
    expected = (
        f"{old / 'manifest.json'}: schema version 1 is not supported "
        f"(this tvm-explorer reads version {SCHEMA_VERSION}); recompile the bundle"
    )
    with pytest.raises(BundleError) as err:
        Bundle(old)
    assert str(err.value) == expected
    proc = run_cli("coverage", old, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert expected in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr


def test_facts_are_read_from_the_data_not_the_model_document(good, tmp_path):
    facts, structure = _facts(good)
    conv = facts[0]
    assert [t.type_text for t in conv.inputs][:1] == ["float32[1,8,8,3]"] and conv.inputs[1].const
    assert conv.options["padding"] == "VALID" and conv.options["stride_h"] == "1"
    assert [io.kind for io in structure.io] == ["input", "output"] and structure.subgraph_names
    # The model document reworded (same length, so its index still fits): the facts stay.
    blank = _copy(good, tmp_path)
    doc = next(d.path for d in Bundle(blank).documents if d.stage == "model")
    text = (blank / doc).read_text(encoding="utf-8")
    (blank / doc).write_text("".join(c if c == "\n" else "x" for c in text), encoding="utf-8")
    assert _facts(blank) == (facts, structure)


def test_each_tensor_is_written_once(good):
    data = json.loads((good / "structure.json").read_text())
    rows = [json.dumps(t) for t in data["tensors"]]
    assert len(rows) == len(set(rows))
    assert len(data["layers"]) == len(Bundle(good).layers)


def test_a_damaged_structure_is_left_out_and_named(good, tmp_path):
    bad = _copy(good, tmp_path)
    data = json.loads((bad / "structure.json").read_text())
    data["layers"][0]["inputs"] = [10**6]
    (bad / "structure.json").write_text(json.dumps(data))
    bundle = Bundle(bad)
    view = BundleView(bundle)
    assert layer_facts(view, 0).inputs == [] and read_structure(view).io == []
    problem = str(bundle.section_problems["structure.json"])
    assert str(bad / "structure.json") in problem and "layer 0: 'inputs'" in problem
