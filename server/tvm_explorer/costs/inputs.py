"""Inputs for a profiled run: read from ``--inputs FILE.npz`` and checked against the model's
inputs, or seeded random values of the right shapes and dtypes."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

import numpy as np

from ..errors import ExplorerError
from ..model.loader import LoadedModel

RANDOM_SEED = 0


@dataclass(frozen=True)
class ModelInput:
    """One input of the model's main subgraph."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def describe(self) -> str:
        """``float32 [1, 224, 224, 3]``."""
        return f"{self.dtype} [{', '.join(str(d) for d in self.shape)}]"


def model_inputs(model: LoadedModel) -> list[ModelInput]:
    """The inputs of the main subgraph, in order."""
    return [ModelInput(t.name, tuple(int(d) for d in t.shape), t.dtype) for t in model.subgraphs[0].inputs]


def random_inputs(inputs: list[ModelInput], seed: int = RANDOM_SEED) -> list[np.ndarray]:
    """Seeded random values: standard normal floats, small integers, random booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in inputs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            arr = rng.standard_normal(spec.shape).astype(dtype)
        elif dtype.kind == "b":
            arr = rng.integers(0, 2, spec.shape).astype(dtype)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            arr = rng.integers(max(info.min, -100), min(info.max, 100) + 1, spec.shape).astype(dtype)
        else:
            raise ExplorerError(f"input {spec.name!r}: cannot make random values of dtype {spec.dtype}; "
                                "give them with --inputs FILE.npz")
        out.append(arr)
    return out


def read_inputs(path: str, inputs: list[ModelInput]) -> list[np.ndarray]:
    """The arrays of ``path`` for each model input (by name; ``arr_0``, ``arr_1``... by
    position when the file was saved without names). Raises ExplorerError naming the input
    and what was expected."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise ExplorerError(f"{path}: --inputs file not found") from None
    except OSError as err:
        raise ExplorerError(f"{path}: cannot read the --inputs file ({err.strerror})") from None
    if magic[:2] != b"PK":
        raise ExplorerError(f"{path}: not an .npz file (arrays saved with numpy.savez)")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise ExplorerError(f"{path}: --inputs file not found") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise ExplorerError(f"{path}: not a readable .npz file ({' '.join(str(err).split())[:200]})") from None
    if not isinstance(arrays, dict):
        raise ExplorerError(f"{path}: expected an .npz file of named arrays")
    out = []
    for i, spec in enumerate(inputs):
        arr = arrays.get(spec.name, arrays.get(f"arr_{i}"))
        if arr is None:
            have = ", ".join(sorted(arrays)) or "no arrays"
            raise ExplorerError(f"{path}: input {spec.name!r} is missing (expected {spec.describe()}); "
                                f"the file has: {have}")
        if tuple(arr.shape) != spec.shape or str(arr.dtype) != spec.dtype:
            got = f"{arr.dtype} [{', '.join(str(d) for d in arr.shape)}]"
            raise ExplorerError(f"{path}: input {spec.name!r} is {got}, expected {spec.describe()}")
        out.append(np.ascontiguousarray(arr))
    return out
