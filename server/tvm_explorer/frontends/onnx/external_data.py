"""Tensors whose data an ONNX model keeps in another file (``data_location: EXTERNAL``),
read from the model's own folder and embedded in the ModelProto before anyone else sees it.

TVM's importer (``numpy_helper.to_array(tensor)`` with base dir ``""``) and onnxruntime (given
the serialized model) would resolve a relative ``location`` against the current directory: a
``model.onnx`` + ``model.onnx.data`` pair compiled from elsewhere fails, and a location like
``.ssh/id_rsa`` reads whatever the user's current directory holds into the bundle. Here every
location is resolved against the folder of the model file and must stay inside it: an absolute
path, a ``..`` component or a symlink leading out is refused with one message naming the
tensor and its location. The check and the read are one step (``bundle/safe_open.py``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath

from tvm_explorer.bundle.safe_open import open_inside
from tvm_explorer.errors import BundleError, ModelError


def _tensors(graph):
    """Every TensorProto of a graph and its subgraphs: initializers, sparse initializers and
    tensor attributes (``Constant`` values)."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("sparse_tensor"):
                yield attr.sparse_tensor.values
                yield attr.sparse_tensor.indices
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from _tensors(sub)


def embed_external_data(proto, path: str) -> None:
    """Read every external tensor of ``proto`` (loaded from ``path``) from the model's folder
    into the tensor itself; ModelError names the tensor and location that cannot be."""
    from onnx import TensorProto

    root = Path(os.path.realpath(os.path.dirname(os.path.abspath(path))))
    for tensor in _tensors(proto.graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        info = {entry.key: entry.value for entry in tensor.external_data}
        tensor.raw_data = _read(path, root, tensor.name, info)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]


def _refuse(path: str, name: str, location: str, why: str) -> ModelError:
    return ModelError(
        f"{path}: tensor '{name}' keeps its data in {location!r}, which {why}; "
        f"external data is read only from files inside the model's folder"
    )


def _read(path: str, root: Path, name: str, info: dict) -> bytes:
    location = info.get("location", "")
    if not location:
        raise ModelError(f"{path}: tensor '{name}' is marked external but names no location")
    pieces = set(PurePosixPath(location).parts) | set(PureWindowsPath(location).parts)
    if (
        os.path.isabs(location)
        or PureWindowsPath(location).is_absolute()
        or PureWindowsPath(location).drive
        or location.startswith(("/", "\\"))
    ):
        raise _refuse(path, name, location, "is an absolute path")
    if ".." in pieces:
        raise _refuse(path, name, location, "leads out of the model's folder ('..')")
    try:
        offset = int(info.get("offset", 0) or 0)
        length = int(info["length"]) if info.get("length") not in (None, "") else None
    except ValueError:
        raise ModelError(
            f"{path}: tensor '{name}': external data offset/length "
            f"{info.get('offset')!r}/{info.get('length')!r} are not numbers"
        ) from None
    if offset < 0 or (length is not None and length < 0):
        raise ModelError(f"{path}: tensor '{name}': negative external data offset or length")
    target = root / location
    try:
        fd = open_inside(root, target, f"external data of tensor '{name}'")
    except BundleError:
        raise _refuse(path, name, location, f"leads out of the model's folder {root}") from None
    except FileNotFoundError:
        raise ModelError(
            f"{path}: tensor '{name}' keeps its data in {location!r}, which is not in the model's folder {root}"
        ) from None
    except OSError as err:
        raise ModelError(
            f"{path}: tensor '{name}': cannot read its external data {location!r} ({err.strerror})"
        ) from None
    try:
        info_stat = os.fstat(fd)
        if not stat.S_ISREG(info_stat.st_mode):
            raise _refuse(path, name, location, "is not a regular file")
        size = info_stat.st_size
        want = size - offset if length is None else length
        if offset + want > size or want < 0:
            raise ModelError(
                f"{path}: tensor '{name}': external data {location!r} holds "
                f"{size} bytes, fewer than offset {offset} + length {want}"
            )
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], want
        while left:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                raise ModelError(f"{path}: tensor '{name}': external data {location!r} ended early")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
