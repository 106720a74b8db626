"""Typed messages of the ``tvmExplorer/`` custom requests (see docs/lsp-protocol.md).

Results keep the field names of the protocol document exactly (``op_index``, not
``opIndex``): they are unstructured without lsprotocol's camelCase renaming.
"""

from __future__ import annotations

from typing import Any, Optional, Union, is_typeddict

import attrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.language_server import lsp_method

from tvm_explorer.compare.types import ComparisonJson
from tvm_explorer.graphview.types import GraphDocument
from tvm_explorer.lsp.lifecycle import LifecycleProtocol, envelope_problem, invalid_request
from tvm_explorer.navigation.memory_timeline import Timeline

LIST_BUNDLES = "tvmExplorer/listBundles"
LIST_PASSES = "tvmExplorer/listPasses"
ORIGINS = "tvmExplorer/origins"
PREVIOUS_STAGE = "tvmExplorer/previousStage"
PREVIOUS_PASS = "tvmExplorer/previousPass"
NEXT_PASS = "tvmExplorer/nextPass"
LAYER_PLACES = "tvmExplorer/layerPlaces"
NUMERICS = "tvmExplorer/numerics"
BUNDLES_CHANGED = "tvmExplorer/bundlesChanged"
COSTS = "tvmExplorer/costs"
KERNEL_HEAT = "tvmExplorer/kernelHeat"
KERNEL_START = "tvmExplorer/kernelStart"
SHOW_REFERENCES_COMMAND = "tvmExplorer.showReferences"
MODEL_DOCUMENT = "tvmExplorer/modelDocument"
MODEL_KINDS = "tvmExplorer/modelKinds"
EXTRACT_REPRODUCER_COMMAND = "tvmExplorer.extractReproducer"
COMPARE_BUNDLES = "tvmExplorer/compareBundles"
COMPARE_LAYER_CODE = "tvmExplorer/compareLayerCode"
STAGE_DOCUMENTS = "tvmExplorer/stageDocuments"
STAGE_RANGES = "tvmExplorer/stageRanges"
MODEL_GRAPH = "tvmExplorer/modelGraph"
LAYER_HISTORY = "tvmExplorer/layerHistory"
MEMORY_TIMELINE = "tvmExplorer/memoryTimeline"
SHOW_LAYER_HISTORY_COMMAND = "tvmExplorer.showLayerHistory"
PASS_DIFF_ALIGNMENT = "tvmExplorer/passDiffAlignment"


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: the request was valid but cannot be answered (two bundles that
    share no layer, a bundle without a memory timeline); the message says why, and the
    client shows it. pygls answers the request with this error when a handler raises it."""

    CODE = -32803
    MESSAGE = "Request failed"


@attrs.define
class ListBundlesParams:
    """``tvmExplorer/listBundles`` params: none."""


@attrs.define
class BundleInfo:
    """One loaded bundle."""

    uri: str
    root: str
    model: str
    target: str
    passes: int
    documents: int
    problems: list[str] = attrs.field(factory=list)


@attrs.define
class ListBundlesResult:
    """``tvmExplorer/listBundles`` result."""

    bundles: list[BundleInfo]


@attrs.define
class ListPassesParams:
    """``tvmExplorer/listPasses`` params: the bundle's URI (its directory, or any of its
    documents)."""

    bundle: str


@attrs.define
class PassInfo:
    """One pass of the recorded pipeline."""

    index: int
    stage: str
    name: str
    changed: bool
    before: str | None
    after: str | None
    ms: float | None = None  # the pass's compile time (costs.json)
    changed_functions: int | None = None
    culprit: bool = False  # the pass ``tvm-explorer bisect`` found (bisect.json)


@attrs.define
class ListPassesResult:
    """``tvmExplorer/listPasses`` result."""

    passes: list[PassInfo]


@attrs.define
class OriginInfo:
    """One origin layer of a position."""

    subgraph: int
    op_index: int
    opcode: str
    outputs: list[str]
    is_output: bool
    location: types.Location | None


@attrs.define
class OriginsResult:
    """``tvmExplorer/origins`` result."""

    origins: list[OriginInfo]


@attrs.define
class ModelDocumentParams:
    """``tvmExplorer/modelDocument`` params: a ``.tflite``, ``.onnx`` or ``.pt2`` file's URI."""

    uri: str


@attrs.define
class ModelDocumentResult:
    """``tvmExplorer/modelDocument`` result: the model document's text."""

    text: str


@attrs.define
class ModelKindsParams:
    """``tvmExplorer/modelKinds`` params: none."""


@attrs.define
class ModelKindInfo:
    """A kind of model file the compiler reads: its manifest name, file suffix, what its
    layers are called, and whether ``reduce`` can cut it."""

    kind: str
    suffix: str
    unit: str
    reducible: bool


@attrs.define
class ModelKindsResult:
    """``tvmExplorer/modelKinds`` result."""

    kinds: list[ModelKindInfo]


@attrs.define
class LayerRef:
    """A layer of ``tvmExplorer/layerPlaces``: its operator and TF name."""

    subgraph: int
    op_index: int
    opcode: str
    name: str


@attrs.define
class PassRef:
    """The pass that produced a document."""

    index: int
    name: str


@attrs.define
class LayerPlaceInfo:
    """One place of a layer (``pass_`` is sent as ``pass``)."""

    stage: str
    pass_: PassRef | None
    uri: str
    range: types.Range
    last_of_stage: bool
    changed: bool
    role: str = "compute"
    function: str = ""
    note: str = ""  # a function holding only a part of the layer (its input dequantize): what it is


@attrs.define
class LayerPlacesResult:
    """``tvmExplorer/layerPlaces`` result (``summary``: the code lens's text for these
    layers)."""

    layers: list[LayerRef]
    places: list[LayerPlaceInfo]
    summary: str = ""
    labels: list[str] = attrs.field(factory=list)  # the layers, repeated blocks named once


@attrs.define
class NumericsLayer:
    """One layer of ``tvmExplorer/numerics``: its ``numerics.json`` entry, a one-line
    summary, whether it is the first divergence, and its model-document location."""

    subgraph: int
    op_index: int
    opcode: str
    name: str
    observed: bool
    observed_by: str | None
    diverges: bool
    first: bool
    summary: str
    max_abs: float | None = None
    max_rel: float | None = None
    cosine: float | None = None
    steps: float | None = None
    location: types.Location | None = None
    hint: str | None = None
    step_budget: float | None = None  # the steps allowed (null: steps not judged)
    spread_steps: float | None = None  # how far the reference's own engines are apart, in steps
    spread_cosine: float | None = None  # ... and their lowest cosine similarity
    judged: bool = True  # false: the reference's own engines are too far apart to judge it


@attrs.define
class NumericsResult:
    """``tvmExplorer/numerics`` result (``reference`` empty: the bundle has no numerics)."""

    reference: str = ""
    mode: str = ""
    inputs: str = ""
    first_divergence: dict | None = None
    layers: list[NumericsLayer] = attrs.field(factory=list)
    problem: str = ""  # why a bundle's numerics.json was left out (it is damaged)
    headline: str = ""  # "53/65 layers observed (102 more folded into constants …)"
    budgets: list[str] = attrs.field(factory=list)  # where the budgets come from; layers not judged


@attrs.define
class CostsParams:
    """``tvmExplorer/costs`` params: the bundle's URI (its directory, or any document), and
    how rows are grouped: ``layer`` (default), or ``module[:DEPTH]`` (costs rolled up the module
    tree, the modules repeated across layers merged into one row)."""

    bundle: str
    group: str = "layer"


@attrs.define
class LayerCostInfo:
    """One layer's costs, for the Hot Layers view."""

    rank: int
    id: int
    subgraph: int
    op_index: int
    opcode: str
    name: str
    time_ms: float | None
    share: float | None
    code_lines: int
    workspace_bytes: int
    kernels: list[str]
    shared_kernels: list[str]
    summary: str
    location: types.Location | None
    layer_ids: list[int] = attrs.field(factory=list)  # grouped by module: the layers summed
    members: list[str] = attrs.field(factory=list)  # grouped by module: the modules summed
    label: str = ""  # a PyTorch / nn layer: its module path as the row names it (layers.0.mlp.down_proj)
    node: str = ""  # ... and its graph node (mm_6), said after the figures


@attrs.define
class CostsResult:
    """``tvmExplorer/costs`` result."""

    measured: bool
    total_ms: float | None
    status: str
    reason: str | None
    layers: list[LayerCostInfo]
    lines: str = "lines"
    note: str = ""
    group: str = "layer"  # how ``layers`` is grouped: ``layer`` or ``module[:DEPTH]``
    scope: str = ""  # the module scope the rows' ``label`` leave out (``m.model.``)


@attrs.define
class HeatMark:
    """A kernel's range in a document and how hot it is (0..1)."""

    range: types.Range
    kernel: str
    heat: float
    label: str


@attrs.define
class KernelHeatResult:
    """``tvmExplorer/kernelHeat`` result."""

    marks: list[HeatMark]


@attrs.define
class KernelStartResult:
    """``tvmExplorer/kernelStart`` result: where to open a generated-code document — its
    hottest kernel when the bundle was profiled, else the first kernel in the document; in C
    the kernel's first loop (its argument checks skipped), else its definition."""

    kernel: str
    range: types.Range
    profiled: bool


@attrs.define
class BundlesChangedParams:
    """``tvmExplorer/bundlesChanged`` notification params."""

    bundles: list[str]


@attrs.define
class CompareBundlesParams:
    """``tvmExplorer/compareBundles`` params: the two bundles' URIs (directories or any of
    their documents)."""

    a: str
    b: str


@attrs.define
class CompareLayerCodeParams:
    """``tvmExplorer/compareLayerCode`` params: a matched layer (by its A side) and a side."""

    a: str
    b: str
    subgraph: int
    op_index: int
    side: str


@attrs.define
class StageDocumentsParams:
    """``tvmExplorer/stageDocuments`` params: the bundle's URI (its directory, or any of its
    documents)."""

    bundle: str


@attrs.define
class StageDocumentInfo:
    """One stage document: ``stage`` is "model", "relax", "tir" or "code"."""

    stage: str
    uri: str
    path: str


@attrs.define
class StageDocumentsResult:
    """``tvmExplorer/stageDocuments`` result: model, last Relax, final TIR, then the generated
    code (the main document first)."""

    documents: list[StageDocumentInfo]


@attrs.define
class StageLayer:
    """A layer of ``tvmExplorer/stageRanges``: its id in the bundle (``index.json``'s layer
    number), operator and name."""

    id: int
    subgraph: int
    op_index: int
    opcode: str
    name: str


@attrs.define
class StageNote:
    """A range of ``tvmExplorer/stageRanges`` in a function holding only a part of the layers
    (an int8 layer's input dequantize in the previous layer's kernel), and what it is."""

    range: types.Range
    text: str


@attrs.define
class StageRangesInDocument:
    """The ranges of the position's layers in one stage document, in document order;
    ``focus``: what to show of them (the same statement as the position's, else the first
    layer's own kernel, entry or binding); ``notes``: the first range of each function holding
    only a part of the layers, and what it is."""

    stage: str
    uri: str
    ranges: list[types.Range]
    truncated: bool = False
    focus: types.Range | None = None
    notes: list[StageNote] = attrs.field(factory=list)


@attrs.define
class StageRangesResult:
    """``tvmExplorer/stageRanges`` result (both lists empty: the position has no origin)."""

    layers: list[StageLayer]
    documents: list[StageRangesInDocument]


@attrs.define
class CompareLayerCodeResult:
    """``tvmExplorer/compareLayerCode`` result: the side's code and its editor language."""

    text: str
    language: str


@attrs.define
class ModelGraphParams:
    """``tvmExplorer/modelGraph`` params: the bundle's URI (its directory, or any of its
    documents)."""

    bundle: str


@attrs.define
class ModelGraphResult:
    """``tvmExplorer/modelGraph`` result: the bundle's URI (the places' paths are relative to
    it) and its graph document (``graphview/types.py``)."""

    root: str
    document: GraphDocument


@attrs.define
class MemoryTimelineParams:
    """``tvmExplorer/memoryTimeline`` params: the bundle's URI (its directory, or any of its
    documents) and how many storages get a band of their own (the rest are summed as other)."""

    bundle: str
    bands: int = 16


@attrs.define
class HistorySide:
    """One side of a history step: the document and the whole lines of the layer's code in it
    (in order, none touching another: a diff shows a gap line between two)."""

    uri: str
    ranges: list[types.Range]


@attrs.define
class HistoryLines:
    """How many lines the layer's code has before and after a step, and how many the step
    added and removed (whitespace aside)."""

    before: int
    after: int
    added: int
    removed: int


@attrs.define
class HistoryStep:
    """One pass that changed the layer's code (``pass_`` is sent as ``pass``)."""

    pass_: PassRef | None
    stage: str
    summary: str
    changes: list[str]
    lines: HistoryLines
    before: HistorySide
    after: HistorySide
    marks: list[str] = attrs.field(factory=list)


@attrs.define
class HistoryMark:
    """A pass where the layer's code size, measured cost or numerics changed most (``step``:
    its number in ``steps``, null when that pass did not change the layer's code)."""

    kind: str
    text: str
    pass_: PassRef | None
    step: int | None


@attrs.define
class LayerHistoryResult:
    """``tvmExplorer/layerHistory`` result (no layers: the position has no origin)."""

    layers: list[StageLayer]
    steps: list[HistoryStep]
    passes: int = 0
    hidden: int = 0
    marks: list[HistoryMark] = attrs.field(factory=list)
    labels: list[str] = attrs.field(factory=list)
    bundle: str = ""


@attrs.define
class PassDiffAlignmentParams:
    """``tvmExplorer/passDiffAlignment`` params: the URIs of a pass's two documents (``before``
    and ``after`` of ``listPasses``)."""

    before: str
    after: str


@attrs.define
class AlignedFunctionInfo:
    """A function of a pass diff: ``change`` is ``changed``, ``added``, ``removed`` or
    ``unchanged``; its range in each document (null on the side that lacks it), from its
    decorator to the end of its body."""

    name: str
    change: str
    before: types.Range | None
    after: types.Range | None


@attrs.define
class PassDiffAlignmentResult:
    """``tvmExplorer/passDiffAlignment`` result: every function of the two documents, in the
    after-document's order, the removed ones last; each document's module header (the text
    before its first function); how many functions the pass left unchanged."""

    before_header: types.Range
    after_header: types.Range
    functions: list[AlignedFunctionInfo]
    unchanged: int


def _request(method: str, params_type: Any) -> type:
    """The JSON-RPC request message class of a custom method."""
    return attrs.make_class(
        method.split("/")[-1] + "Request",
        {
            # attrs keeps any runtime type (cattrs structures by it); its stubs accept classes only.
            "id": attrs.field(type=Union[int, str]),  # type: ignore[call-overload]  # noqa: UP007 - a runtime type
            "params": attrs.field(type=Optional[params_type], default=None),  # type: ignore[call-overload]  # noqa: UP045
            "method": attrs.field(type=str, default=method),
            "jsonrpc": attrs.field(type=str, default="2.0"),
        },
    )


MESSAGE_TYPES = {
    LIST_BUNDLES: (_request(LIST_BUNDLES, ListBundlesParams), ListBundlesResult),
    LIST_PASSES: (_request(LIST_PASSES, ListPassesParams), ListPassesResult),
    ORIGINS: (_request(ORIGINS, types.TextDocumentPositionParams), OriginsResult),
    PREVIOUS_STAGE: (
        _request(PREVIOUS_STAGE, types.TextDocumentPositionParams),
        list[types.Location],
    ),
    PREVIOUS_PASS: (_request(PREVIOUS_PASS, types.TextDocumentPositionParams), list[types.Location]),
    NEXT_PASS: (_request(NEXT_PASS, types.TextDocumentPositionParams), list[types.Location]),
    LAYER_PLACES: (_request(LAYER_PLACES, types.TextDocumentPositionParams), LayerPlacesResult),
    MODEL_DOCUMENT: (_request(MODEL_DOCUMENT, ModelDocumentParams), ModelDocumentResult),
    MODEL_KINDS: (_request(MODEL_KINDS, ModelKindsParams), ModelKindsResult),
    NUMERICS: (_request(NUMERICS, ListPassesParams), NumericsResult),
    COSTS: (_request(COSTS, CostsParams), CostsResult),
    KERNEL_HEAT: (_request(KERNEL_HEAT, types.TextDocumentIdentifier), KernelHeatResult),
    KERNEL_START: (_request(KERNEL_START, types.TextDocumentIdentifier), Optional[KernelStartResult]),  # noqa: UP045
    COMPARE_BUNDLES: (_request(COMPARE_BUNDLES, CompareBundlesParams), ComparisonJson),
    COMPARE_LAYER_CODE: (_request(COMPARE_LAYER_CODE, CompareLayerCodeParams), CompareLayerCodeResult),
    STAGE_DOCUMENTS: (_request(STAGE_DOCUMENTS, StageDocumentsParams), StageDocumentsResult),
    STAGE_RANGES: (_request(STAGE_RANGES, types.TextDocumentPositionParams), StageRangesResult),
    MODEL_GRAPH: (_request(MODEL_GRAPH, ModelGraphParams), ModelGraphResult),
    MEMORY_TIMELINE: (_request(MEMORY_TIMELINE, MemoryTimelineParams), Timeline),
    LAYER_HISTORY: (_request(LAYER_HISTORY, types.TextDocumentPositionParams), LayerHistoryResult),
    PASS_DIFF_ALIGNMENT: (
        _request(PASS_DIFF_ALIGNMENT, PassDiffAlignmentParams),
        Optional[PassDiffAlignmentResult],  # noqa: UP045
    ),
}

_PLAIN_NAMES = (
    BundleInfo,
    ListBundlesResult,
    PassInfo,
    ListPassesResult,
    OriginInfo,
    OriginsResult,
    BundlesChangedParams,
    LayerRef,
    PassRef,
    LayerPlacesResult,
    ModelDocumentResult,
    NumericsLayer,
    NumericsResult,
    LayerCostInfo,
    CostsResult,
    HeatMark,
    KernelHeatResult,
    StageDocumentInfo,
    StageDocumentsResult,
    StageLayer,
    StageNote,
    StageRangesInDocument,
    StageRangesResult,
    HistorySide,
    HistoryLines,
    LayerHistoryResult,
    CompareLayerCodeResult,
    ModelGraphResult,
    KernelStartResult,
    ModelKindInfo,
    ModelKindsResult,
    AlignedFunctionInfo,
    PassDiffAlignmentResult,
)


def converter_factory():
    """pygls' converter, plus the custom messages with their documented field names."""
    converter = default_converter()
    # The JSON documents of the domain (a comparison, a graph document) are typed dicts of
    # plain JSON values already: sent as they are.
    converter.register_unstructure_hook_func(is_typeddict, lambda value: value)
    # Before the classes holding it: their hooks take the item hook when they are made.
    for renamed in (LayerPlaceInfo, HistoryStep, HistoryMark):
        converter.register_unstructure_hook(
            renamed, make_dict_unstructure_fn(renamed, converter, pass_=override(rename="pass"))
        )
    for params in (CompareBundlesParams, CompareLayerCodeParams):  # ``op_index`` as documented
        converter.register_structure_hook(params, make_dict_structure_fn(params, converter))
    for cls in _PLAIN_NAMES:
        converter.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, converter))
    return converter


class _AnsweredRequest:
    """Stands for a request already answered with an error while it was read."""

    jsonrpc = None


class ExplorerProtocol(LifecycleProtocol, LanguageServerProtocol):
    """The LSP protocol, knowing the types of the ``tvmExplorer/`` requests (and keeping the
    lifecycle the specification states: see ``lifecycle.py``)."""

    def structure_message(self, data):
        """Read one message. A request whose params do not fit its method is answered with
        InvalidParams: pygls 2.1 would log it and never answer, and a client waiting for
        that answer would wait forever (LSP: every request gets a response). An envelope
        that is not JSON-RPC 2.0 (``"jsonrpc": "1.0"``, a ``method`` that is not a string,
        an ``id`` that is neither integer nor string) is answered with InvalidRequest, with
        the request's id when it is usable and ``null`` otherwise."""
        if isinstance(data, dict) and "jsonrpc" in data:
            problem = envelope_problem(data)
            if problem is not None:
                self._send_data(invalid_request(data, problem))
                return _AnsweredRequest()
            if "method" in data and "params" not in data:
                data = {**data, "params": None}  # JSON-RPC: params may be omitted
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if not (isinstance(data, dict) and "method" in data and "id" in data):
                raise
            msg_id = data["id"] if isinstance(data["id"], (int, str)) else None
            self._send_response(msg_id, None, err.to_response_error())
            return _AnsweredRequest()

    def handle_message(self, message):
        """Handle a message (one already answered while it was read needs nothing more)."""
        if isinstance(message, _AnsweredRequest):
            return
        super().handle_message(message)

    # The open documents' text is kept by the document tracker (features/documents.py, cheap
    # incremental edits): pygls' own copy re-split the whole text at every change.
    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        """Hand ``didOpen`` to the tracker only."""
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        """Hand ``didChange`` to the tracker only."""
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        """Hand ``didClose`` to the tracker only."""
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    # typeshed types pygls' lru_cache'd methods as ``_lru_cache_wrapper`` attributes, which no
    # plain method matches; called the same way, these override them.
    def get_message_type(self, method: str):  # type: ignore[override]
        """Request type of a method (custom ones first)."""
        if method in MESSAGE_TYPES:
            return MESSAGE_TYPES[method][0]
        return super().get_message_type(method)

    def get_result_type(self, method: str):  # type: ignore[override]
        """Result type of a method (custom ones first)."""
        if method in MESSAGE_TYPES:
            return MESSAGE_TYPES[method][1]
        return super().get_result_type(method)
