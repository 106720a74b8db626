"""The shape of a comparison as ``tvm-explorer compare --json`` prints it and
``tvmExplorer/compareBundles`` answers it (docs/compare.md), mirrored field for field by
``vscode-extension/src/lsp_ext.ts`` (``tests/lsp/test_protocol_names.py`` compares them)."""

from __future__ import annotations

from typing import Any, TypedDict

from tvm_explorer.bundle.sections.sass import SassLayer


class BundleSummary(TypedDict):
    """A bundle's manifest, as a comparison sums it up."""

    model: str | None
    sha256: str | None
    target: str | None
    options: dict[str, Any]
    tvm: str | None


class _CompareSideFields(TypedDict):
    subgraph: int
    op_index: int
    kernels: list[str]
    code_lines: int
    shared_code_lines: int


class CompareSide(_CompareSideFields, total=False):
    """One side of a matched layer: its kernels, code lines and (if recorded) its costs."""

    costs: dict[str, Any]


class MachineSides(TypedDict):
    """A matched layer's machine code on each side (``--sass`` bundles) and what grew."""

    a: SassLayer | None
    b: SassLayer | None
    grew: list[str]


class _CompareRowFields(TypedDict):
    subgraph: int
    op_index: int
    opcode: str
    name: str
    a: CompareSide
    b: CompareSide
    changed: bool | None
    kernels_changed: bool


class LayerTuning(TypedDict):
    """What tuning did to a layer in one bundle (``tuning.json``; state ``no tuning`` when the
    bundle was compiled without ``--tune``, null when no kernel computes the layer)."""

    state: str | None
    speedup: float | None
    us: float | None


class TuningPair(TypedDict):
    """A layer's tuning on both sides and its kernels' measured time change (B / A)."""

    a: LayerTuning
    b: LayerTuning
    time_ratio: float | None


class CompareRow(_CompareRowFields, total=False):
    """A layer matched in both bundles, named by its A side."""

    machine: MachineSides
    tuning: TuningPair  # when either bundle has tuning.json


class LayerRefJson(TypedDict):
    """A layer of one side."""

    subgraph: int
    op_index: int
    opcode: str
    name: str


class CodeKinds(TypedDict):
    """The kind of code each side's lines are (``c``, ``cuda``, ``ll``; null: no code)."""

    a: str | None
    b: str | None


class Unmatched(TypedDict):
    """The layers of each side the other side lacks."""

    a: list[LayerRefJson]
    b: list[LayerRefJson]


class ComparisonJson(TypedDict):
    """The whole comparison (``a`` and ``b``: the bundles' directories)."""

    a: str
    b: str
    matched_by: str
    a_info: BundleSummary
    b_info: BundleSummary
    code_kinds: CodeKinds
    code_compared: bool
    tuning_compared: bool
    layers: list[CompareRow]
    unmatched: Unmatched
