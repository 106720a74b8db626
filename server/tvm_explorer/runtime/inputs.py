"""Inputs a compiled model is run on (``--profile``, ``--numerics``, ``bisect``): seeded random
ones, or the user's ``--inputs X.npz``.

Random inputs are reproducible (one seed) and stay within each input's range: integer
inputs (quantized ones included) span their dtype's whole range, except plain ``int32`` /
``int64`` inputs (indices, token ids), which take values in ``[0, 10)`` so that they stay
valid indices; float inputs are uniform in ``[-1, 1)``; bool inputs are fair coin flips.

A given ``.npz`` must name every input of the model's main subgraph by its TFLite tensor
name (``serving_default_x:0``) or, for a model with inputs whose names ``np.savez`` cannot
keep, by position (``arr_0``, ``arr_1`` ... as ``np.savez(path, a, b)`` writes them), with
the input's shape and dtype. Any mismatch is one ``ExplorerError`` naming the file and the
input.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass

import numpy as np

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.model import Model

DEFAULT_SEED = 0
FLOAT_RANGE = (-1.0, 1.0)
INDEX_RANGE = (0, 10)  # plain int32/int64 inputs: small non-negative values (valid indices)


@dataclass(frozen=True)
class ModelInput:
    """One input of the model's main subgraph, in the order the compiled ``main`` takes it."""

    name: str
    shape: tuple  # ints; a symbolic dimension (ONNX ``batch``) stays its name
    dtype: str
    quantized: bool

    @property
    def symbolic(self) -> list[str]:
        """Names of the dimensions whose size the model leaves open."""
        return [d for d in self.shape if isinstance(d, str)]

    def accepts(self, shape: tuple) -> bool:
        """Does an array of ``shape`` fit (any size where a dimension is symbolic)?"""
        return len(shape) == len(self.shape) and all(
            isinstance(want, str) or int(have) == want for have, want in zip(shape, self.shape)
        )

    def describe(self) -> str:
        """``float32 [1, 224, 224, 3]``."""
        return f"{self.dtype} {list(self.shape)}"


def model_inputs(model: Model) -> list[ModelInput]:
    """The inputs of subgraph 0, in order."""
    if not model.subgraphs:
        return []
    return [
        ModelInput(
            t.name,
            tuple(d if isinstance(d, str) else max(int(d), 1) for d in t.shape),
            t.dtype,
            getattr(t, "quantized", False),
        )
        for t in model.subgraphs[0].inputs
    ]


def random_inputs(model: Model, seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """Seeded random inputs by tensor name (see the module docstring for the ranges)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for inp in model_inputs(model):
        if inp.symbolic:
            raise ExplorerError(
                f"{model.path}: input '{inp.name}' has a dimension of open size "
                f"('{inp.symbolic[0]}'), which random inputs cannot choose; pin its size with "
                f"--input-shape {inp.name}=… or give inputs with --inputs X.npz"
            )
        dt = np.dtype(inp.dtype) if inp.dtype in _NUMPY_DTYPES else None
        if dt is None:
            raise ExplorerError(
                f"{model.path}: input '{inp.name}' has type {inp.dtype}, "
                "which cannot be generated; give inputs with --inputs X.npz"
            )
        if dt == np.bool_:
            value = rng.integers(0, 2, size=inp.shape).astype(np.bool_)
        elif np.issubdtype(dt, np.floating):
            value = rng.uniform(*FLOAT_RANGE, size=inp.shape).astype(dt)
        elif dt in (np.dtype("int32"), np.dtype("int64")) and not inp.quantized:
            value = rng.integers(*INDEX_RANGE, size=inp.shape).astype(dt)
        else:
            info = np.iinfo(dt)
            value = rng.integers(int(info.min), int(info.max) + 1, size=inp.shape).astype(dt)
        out[inp.name] = value
    return out


_NUMPY_DTYPES = {
    "float32",
    "float16",
    "float64",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bool",
}


def load_inputs(path: str | os.PathLike, model: Model) -> dict[str, np.ndarray]:
    """The inputs stored in ``path`` (an ``.npz``), checked against the model's inputs."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != b"PK":
                raise ExplorerError(f"{path}: not a readable .npz file (arrays saved with numpy.savez)")
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ExplorerError(f"{path}: not an .npz archive of named arrays (np.savez)")
        with data:
            stored = {k: data[k] for k in data.files}
    except ExplorerError:
        raise
    except FileNotFoundError:
        raise ExplorerError(f"{path}: no such inputs file") from None
    except IsADirectoryError:
        raise ExplorerError(f"{path}: is a directory, not an .npz inputs file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise ExplorerError(f"{path}: not a readable .npz inputs file ({err})") from None
    expected = model_inputs(model)
    names = [i.name for i in expected]
    positional = [f"arr_{k}" for k in range(len(expected))]
    if set(stored) == set(positional) and set(stored) != set(names):
        stored = {names[k]: stored[positional[k]] for k in range(len(expected))}
    missing = [i for i in expected if i.name not in stored]
    if missing:
        have = ", ".join(sorted(stored)) or "no arrays"
        raise ExplorerError(
            f"{path}: no array for model input '{missing[0].name}' (expected "
            f"{missing[0].describe()}; the file has: {have})"
        )
    extra = [k for k in stored if k not in names]
    if extra:
        raise ExplorerError(
            f"{path}: array '{extra[0]}' is not an input of the model "
            f"(the model's inputs: {', '.join(repr(n) for n in names)})"
        )
    out = {}
    for inp in expected:
        value = stored[inp.name]
        if not inp.accepts(tuple(value.shape)):
            raise ExplorerError(f"{path}: input '{inp.name}' has shape {list(value.shape)}, expected {inp.describe()}")
        if str(value.dtype) != inp.dtype:
            raise ExplorerError(f"{path}: input '{inp.name}' has dtype {value.dtype}, expected {inp.describe()}")
        out[inp.name] = np.ascontiguousarray(value)
    return out


def inputs_for(model: Model, path: str | os.PathLike | None = None, seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """The given inputs if ``path`` is set, else seeded random ones."""
    return load_inputs(path, model) if path else random_inputs(model, seed)
