"""``--input-shape NAME=D1,D2,…``: sizes for a model's open input dimensions, pinned before TVM
imports it (as onnxsim's ``--overwrite-input-shape`` and trtexec's ``--shapes`` do).

A model declares each input's shape with some dimensions open: an ONNX ``dim_param`` (``H``)
or no shape at all, a PyTorch dynamic dimension (``s0``, ``2*s1``), a TFLite
``shape_signature`` of ``-1`` (which TVM's importer silently freezes at the converter's
example size). Each frontend says what its inputs declare (``Frontend.input_dims``: a tuple
whose open dimensions are strings, or None when even the rank is open) and applies the sizes
(``Frontend.pin_inputs``); the checks common to all kinds, and the words the model document
and failure messages use for open dimensions, are here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.errors import ExplorerError

OPEN = "?"
"""How a dimension of unknown size and no name is written."""


@dataclass(frozen=True)
class InputShape:
    """One ``--input-shape NAME=D1,D2,…``."""

    name: str
    dims: tuple[int, ...]

    def spec(self) -> str:
        return f"{self.name}={','.join(str(d) for d in self.dims)}"


def parse_input_shape(text: str) -> InputShape:
    """``--input-shape NAME=1,3,640,640`` (the last ``=`` splits, so a name may hold one);
    ValueError saying what is wrong with ``text``."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name:
        raise ValueError(f"{text!r}: give NAME=D1,D2,… (an input's name and its sizes)")
    values = []
    for part in dims.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ValueError(
                f"{text!r}: {part or 'an empty size'!r} is not a size; give whole numbers of at least 1 (NAME=1,3,640,640)"
            )
        values.append(int(part))
    return InputShape(name, tuple(values))


def is_open(dim) -> bool:
    return not isinstance(dim, int) or dim < 0


def shape_text(shape) -> str:
    """``[1,3,H,W]``; ``[?]`` … for an unknown rank."""
    if shape is None:
        return "(no shape)"
    return "[" + ",".join(str(d) for d in shape) + "]"


def open_dims(shape) -> list[str]:
    """The open dimensions of a declared shape, as a message names them (``H``, ``dim 2``)."""
    if shape is None:
        return []
    return [d if isinstance(d, str) and d != OPEN else f"dim {i}" for i, d in enumerate(shape) if is_open(d)]


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def pin_suggestion(declared: list[tuple[str, tuple | None]]) -> str:
    """What to pass for the open inputs among ``declared`` ((name, shape) pairs), or ''."""
    what, specs, placeholders = [], [], []
    for name, shape in declared:
        if shape is None:
            what.append(f"input '{name}' declares no shape")
            specs.append(f"--input-shape {name}=D1,D2,…")
            placeholders.append("D1, D2, …")
            continue
        opened = open_dims(shape)
        if not opened:
            continue
        marks = [d if isinstance(d, str) and d != OPEN else f"D{i}" for i, d in enumerate(shape) if is_open(d)]
        dims = iter(marks)
        what.append(
            f"{_listed(opened)} of input '{name}' {shape_text(shape)} {'is' if len(opened) == 1 else 'are'} open"
        )
        specs.append(f"--input-shape {name}=" + ",".join(next(dims) if is_open(d) else str(d) for d in shape))
        placeholders.append(", ".join(marks))
    if not specs:
        return ""
    return f"{'; '.join(what)}: pin with {' '.join(specs)} (numbers in place of {'; '.join(placeholders)})"


def check_input_shapes(path: str, declared: list[tuple[str, tuple | None]], given: list[InputShape]) -> dict:
    """The checks every model kind shares; ``{name: dims}``. One ExplorerError per mistake:
    an input given twice, an unknown name, a wrong rank, a fixed dimension changed, one open
    dimension (by name) given two sizes."""
    shapes = dict(declared)
    listing = "; ".join(f"{n} {shape_text(s)}" for n, s in declared) or "none"
    out: dict[str, tuple[int, ...]] = {}
    named: dict[str, tuple[int, str]] = {}
    for pin in given:
        where = f"--input-shape {pin.spec()}"
        if pin.name in out:
            raise ExplorerError(f"{where}: input '{pin.name}' is given twice")
        if pin.name not in shapes:
            raise ExplorerError(f"{where}: {path} has no input '{pin.name}'; its inputs: {listing}")
        shape = shapes[pin.name]
        if shape is not None:
            if len(pin.dims) != len(shape):
                raise ExplorerError(
                    f"{where}: input '{pin.name}' has {len(shape)} dimension(s) {shape_text(shape)}, {len(pin.dims)} given"
                )
            for i, (want, have) in enumerate(zip(shape, pin.dims)):
                if not is_open(want) and want != have:
                    opened = open_dims(shape)
                    raise ExplorerError(
                        f"{where}: dimension {i} of input '{pin.name}' {shape_text(shape)} is {want} in the "
                        "model; only open dimensions can be pinned"
                        + (f" ({_listed(opened)})" if opened else " (it has none)")
                    )
                if isinstance(want, str) and want != OPEN and not want.lstrip("-").isdigit():
                    earlier = named.setdefault(want, (have, pin.name))
                    if earlier[0] != have:
                        raise ExplorerError(
                            f"{where}: dimension '{want}' is {earlier[0]} in input '{earlier[1]}' and {have} here; "
                            "one open dimension takes one size"
                        )
        out[pin.name] = pin.dims
    return out


def input_note(declared, compiled, pinned: bool, frozen: bool = False) -> str:
    """What the model document says beside an input whose shape the model leaves open."""
    if pinned:
        return f"  (pinned by --input-shape; the model declares {shape_text(declared)})"
    opened = open_dims(declared)
    if frozen and opened:
        return (
            f"  (shape signature {shape_text(declared)}: {_listed(opened)} dynamic; TVM's importer freezes "
            f"{'it' if len(opened) == 1 else 'them'} at {shape_text(compiled)}; --input-shape pins other sizes)"
        )
    if declared is None:
        return "  (no shape declared: --input-shape gives it one)"
    if opened:
        return f"  ({_listed(opened)} open: --input-shape pins {'it' if len(opened) == 1 else 'them'})"
    return ""
