"""``memory.json`` as every reader takes it: hostile values in each field (no traceback: one
message naming the field, or an answer), references between entries checked, and the file
read lazily (a bundle loads and serves without touching it)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from tests.lsp.hostile import HOSTILE_VALUES, mutated, section_fields

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.memory import MEMORY_FILE, MemoryError_, validate
from tvm_explorer.errors import BundleError
from tvm_explorer.memory.table import as_json, render


@pytest.fixture(scope="module")
def real(chain_bundle) -> dict:
    return json.loads((chain_bundle / MEMORY_FILE).read_text())


def _label(lid: int) -> str:
    return f"layer {lid}"


def test_every_field_with_every_hostile_value_is_refused_by_name_or_answered(real):
    layers = 4
    validate(real, layers)
    fields = section_fields(MEMORY_FILE, real)
    assert len(fields) > 60
    refused = 0
    for path in fields:
        for what, value in HOSTILE_VALUES.items():
            data = mutated(real, path, value)
            try:
                validate(data, layers)
            except MemoryError_ as err:
                refused += 1
                key = [k for k in path if isinstance(k, str)][-1]
                assert key in str(err) or key.replace("_", " ") in str(err), (path, what, err)
                continue
            # accepted: every reader answers from it
            for step in (None, 0):
                assert render(data, _label, step)
                json.dumps(as_json(data, _label, step))
    assert refused > len(fields) * 3


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("tensors", 0, "storage"), 99, "'storage'"),
        (("tensors", 0, "layer"), 4, "'layer'"),
        (("storages", 0, "tensors"), [0, 99], "'tensors'"),
        (("storages", 1, "first_step"), 3, "'first_step'"),  # after its last_step (2)
        (("steps", 1, "index"), 5, "'index'"),
        (("peak", "step"), 4, "'step'"),
        (("measured", "steps"), [1, 2], "'steps'"),
        (("measured", "where"), ["127.0.0.1:9190"], "'where'"),
        (("tensors", 0, "shape"), [1.5], "'shape'"),
        (("schema_version",), 2, "schema version"),
    ],
)
def test_references_between_entries_are_checked(real, path, value, field):
    with pytest.raises(MemoryError_, match=field):
        validate(mutated(real, path, value), 4)


def test_the_bundle_loads_without_reading_it_and_a_damaged_one_is_named(chain_bundle, tmp_path):
    copy = tmp_path / "damaged.bundle"
    shutil.copytree(chain_bundle, copy)
    text = (copy / MEMORY_FILE).read_text()
    (copy / MEMORY_FILE).write_text(text.replace('"live_bytes": 1048576', '"live_bytes": NaN', 1))
    bundle = Bundle(copy)
    assert bundle.preload() == [] and MEMORY_FILE not in bundle.section_problems
    assert not hasattr(bundle, "_memory")  # nothing read at load
    with pytest.raises(BundleError, match=r"memory\.json: step entry 0: 'live_bytes'"):
        bundle.memory()
    with pytest.raises(BundleError):  # and again, not a half-read answer
        bundle.memory()
    (copy / MEMORY_FILE).unlink()
    assert Bundle(copy).memory() is None


def test_an_oversized_file_is_refused_by_name_without_being_read(chain_bundle, tmp_path):
    copy = tmp_path / "big.bundle"
    shutil.copytree(chain_bundle, copy)
    with open(copy / MEMORY_FILE, "w") as fh:
        fh.write('{"notes": [' + '"x",' * (9 * 2**20 // 2) + '"x"]}')  # ~18 MiB
    with pytest.raises(BundleError, match=r"memory\.json: memory timeline is 18 MiB, more than the 16 MiB"):
        Bundle(copy).memory()


def test_the_timeline_picture_and_the_report_say_why_there_is_none(chain_bundle, tmp_path):
    """``tvmExplorer/memoryTimeline``'s answer and the report's section: drawn from a sound
    file (bands + other + scratch = each step's bytes), one message naming a damaged file's
    field, and no section at all without the file."""
    from tvm_explorer.graphview.document import report_sections
    from tvm_explorer.navigation import registry
    from tvm_explorer.navigation.memory_timeline import NoTimeline, timeline

    copy = tmp_path / "pictured.bundle"
    shutil.copytree(chain_bundle, copy)
    got = timeline(registry.load(copy), lambda place: place.path, bands=1)
    memory = json.loads((copy / MEMORY_FILE).read_text())
    for i, step in enumerate(got["steps"]):
        held = sum(b["bytes"] for b in got["bands"] if b["first_step"] <= i <= b["last_step"])
        assert held + step["other"] + step["scratch"] == step["total"] == memory["steps"][i]["total_bytes"]
    assert got["bands"][0]["alloc"] == memory["analysed"]["document"]
    text = (copy / MEMORY_FILE).read_text()
    (copy / MEMORY_FILE).write_text(text.replace('"live_bytes": 1048576', '"live_bytes": NaN', 1))
    damaged = registry.load(copy)
    with pytest.raises(NoTimeline, match=r"memory\.json: step entry 0: 'live_bytes'"):
        timeline(damaged, str)
    assert re.search(r"memory\.json: step entry 0: 'live_bytes'", report_sections(damaged)["memory"]["error"])
    (copy / MEMORY_FILE).unlink()
    gone = registry.load(copy)
    with pytest.raises(NoTimeline, match=r"no memory timeline \(memory\.json\)"):
        timeline(gone, str)
    assert report_sections(gone)["memory"] is None


def test_the_picture_draws_the_measured_run_over_the_plan_or_says_why_not(chain_bundle, tmp_path):
    """The timeline picture and the report's section carry what the profiled run measured: the
    naive allocator's bytes after each step (the run that frees as the plan does), the step of
    its largest sample, and one caption line — where, the peak beside the static figure, the
    verdict; a device's description is one inert line. Without a measurement: no line, and
    the caption says why (and, not asked for, that ``--profile`` measures it)."""
    from tvm_explorer.graphview.document import report_sections
    from tvm_explorer.navigation import registry
    from tvm_explorer.navigation.memory_timeline import timeline

    copy = tmp_path / "measured.bundle"
    shutil.copytree(chain_bundle, copy)
    memory = json.loads((copy / MEMORY_FILE).read_text())
    m, predicted = memory["measured"], memory["predicted"]
    assert m["status"] == "measured" and m["naive_within"] is True
    got = timeline(registry.load(copy), str)["measured"]
    assert got["steps"] == m["steps"] and any(v is not None for v in got["steps"])
    assert got["replayed"] == [s["runtime_bytes"] for s in memory["steps"]]
    samples = [(v, i) for i, v in enumerate(m["steps"]) if v is not None]
    assert got["peak_step"] == max(samples, key=lambda vi: (vi[0], -vi[1]))[1]
    assert (got["allocator"], got["where"], got["within"]) == ("naive", "this machine", True)
    assert (got["peak_bytes"], got["static_bytes"]) == (m["naive_peak_bytes"], predicted["naive_peak_bytes"])
    mib = predicted["naive_peak_bytes"] / 2**20
    assert got["caption"] == (
        f"measured on this machine: peak {m['naive_peak_bytes'] / 2**20:.2f} MiB (static {mib:.2f} MiB, "
        f"within the tolerance of 5 % + 256.0 KiB), VM naive allocator; pooled (TVM's default): "
        f"{m['pooled_bytes'] / 2**20:.2f} MiB held (static {predicted['pooled_bytes'] / 2**20:.2f} MiB, within)"
    ), got["caption"]
    assert report_sections(registry.load(copy))["memory"]["measured"] == got

    # measured on a device whose description forges lines and markup, and found too far off
    m.update(where="dev\n</script><b>x</b>\x1b[2J (10.0.0.1:9190)", naive_within=False)
    (copy / MEMORY_FILE).write_text(json.dumps(memory))
    got = timeline(registry.load(copy), str)["measured"]
    assert got["where"] == "dev\\n</script><b>x</b>\\x1b[2J (10.0.0.1:9190)" and "\n" not in got["caption"]
    assert f"(static {mib:.2f} MiB, NOT within the tolerance of 5 % + 256.0 KiB)" in got["caption"]

    # compiled without --profile, and a target where nothing is measured
    for measured, caption in (
        (
            {"status": "not_requested", "reason": "compiled without --profile"},
            "not measured: compiled without --profile; tvm-explorer compile --profile (llvm or c) "
            "or tvm-explorer profile BUNDLE measures what a run allocates",
        ),
        (
            {"status": "unavailable", "reason": "target cuda: the memory of a run is measured on the CPU targets only"},
            "not measured: target cuda: the memory of a run is measured on the CPU targets only",
        ),
    ):
        memory["measured"] = measured
        (copy / MEMORY_FILE).write_text(json.dumps(memory))
        got = report_sections(registry.load(copy))["memory"]["measured"]
        assert got == {
            "status": measured["status"],
            "allocator": None,
            "where": None,
            "steps": [],
            "replayed": [],
            "peak_step": None,
            "peak_bytes": None,
            "static_bytes": None,
            "within": None,
            "caption": caption,
        }
