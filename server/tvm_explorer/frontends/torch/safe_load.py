"""Load a ``.pt2`` archive without running code from it.

``torch.export.load`` unpickles with ``weights_only=False`` (weights and constants marked
``use_pickle``, and the example inputs when the restricted load fails), unpickles "opaque"
constants with plain ``pickle.loads``, TorchScript custom objects with
``torch._C._pickle_load_obj``, and loads AOTInductor shared libraries: a model file someone
hands you could run anything. Unless the user trusts the file (``--trust-pickle``), every
pickle in the archive is read by torch's restricted unpickler (``weights_only=True``: tensors,
containers and plain values only, never an arbitrary global), and anything that cannot be read
that way is refused with one message naming the archive entry.

Trusted or not, the program's graph JSON is checked before torch parses it (``program_check``:
torch would evaluate its symbolic sizes, guards and names as Python), both as this module reads
the zip and on the very bytes torch's own zip reader hands its deserializer.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import threading
import zipfile

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.torch.program_check import check_archive, check_program_bytes, short_name

TRUST_FLAG = "--trust-pickle"
_trusted = {"all": False}
_LOCK = threading.Lock()


class PickleRefused(ModelError):
    """A ``.pt2`` holds a pickle (or compiled code) that would run code when loaded; the
    CLI exits with ``EXIT_UNTRUSTED`` so a front end can ask the user and retry with
    ``--trust-pickle``."""

    def __init__(self, path: str, entry: str, why: str):
        self.path, self.entry = path, entry
        super().__init__(
            f"{path}: archive entry {entry} {why}; a model file is data, so "
            f"tvm-explorer does not run it. Only if you trust who made this file, "
            f"load it anyway with {TRUST_FLAG}"
        )


def trust_pickles(on: bool = True) -> None:
    """Let this process load ``.pt2`` pickles as ``torch.export.load`` does (the user said
    ``--trust-pickle``)."""
    _trusted["all"] = bool(on)


def pickles_trusted() -> bool:
    return _trusted["all"]


class _Entries:
    """The archive's entries, to name the one whose bytes torch was about to unpickle."""

    def __init__(self, data: bytes):
        self.names: list[str] = []
        self.fqn: dict[str, str] = {}  # "data/weights/weight_0" -> "weight 'stem.weight'"
        self._digests: dict[int, dict[str, str]] = {}  # size -> digest -> name
        try:
            self.archive: zipfile.ZipFile | None = zipfile.ZipFile(io.BytesIO(data))
            infos = [i for i in self.archive.infolist() if not i.is_dir()]
        except (zipfile.BadZipFile, OSError, ValueError):
            self.archive, infos = None, []  # torch says what the file is not
        self._infos = infos
        for info in infos:
            name = short_name(info.filename)
            self.names.append(name)
            if name.startswith("data/") and name.endswith("_config.json"):
                self._configs(name, self._read(info))

    def _read(self, info) -> bytes:
        try:
            return self.archive.read(info) if self.archive is not None else b""
        except Exception:  # noqa: BLE001 - a damaged entry: torch reports it
            return b""

    def _configs(self, name: str, raw: bytes) -> None:
        folder = name.rsplit("/", 1)[0]
        kind = "weight" if folder.endswith("weights") else "constant"
        try:
            config = json.loads(raw).get("config", {})
            for fqn, meta in config.items():
                self.fqn.setdefault(f"{folder}/{meta['path_name']}", f"{kind} {fqn!r}")
        except (ValueError, AttributeError, KeyError, TypeError):
            pass

    def name_of(self, raw) -> str:
        """``data/weights/weight_0 (weight 'fc.weight')`` for the entry holding ``raw`` (the
        entries are hashed only when something was refused)."""
        name = None
        if isinstance(raw, (bytes, bytearray, memoryview)):
            raw = bytes(raw)
            if len(raw) not in self._digests:
                same = self._digests[len(raw)] = {}
                for info in self._infos:
                    if info.file_size == len(raw):
                        same.setdefault(hashlib.sha256(self._read(info)).hexdigest(), short_name(info.filename))
            name = self._digests[len(raw)].get(hashlib.sha256(raw).hexdigest())
        if name is None:
            return "(an entry of the archive)"
        return f"{name} ({self.fqn[name]})" if name in self.fqn else name


def _buffer_bytes(f):
    if isinstance(f, io.BytesIO):
        return f.getvalue()
    return f if isinstance(f, (bytes, bytearray, memoryview)) else None


def _refusal_reason(err: BaseException) -> str:
    text = " ".join(str(err).split())
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    if found:
        return f"is a Python pickle that would call {found.group(1)} when loaded"
    return "is a Python pickle that torch's restricted unpickler cannot load (it is not plain tensors and values)"


def _pickle_patches(path: str, entries: _Entries, refused: list) -> list[tuple[object, str, object]]:
    """What makes torch unpickle only with its restricted unpickler, the loaders that run
    arbitrary code refuse, and each refusal be kept in ``refused`` (torch catches some
    exceptions and tries another way: the first refusal is what the user hears)."""
    import torch
    from torch.export.pt2_archive import _package

    real_load, real_pickle = torch.load, _package.pickle

    def refuse(raw, why: str):
        err = PickleRefused(path, entries.name_of(raw), why)
        refused.append(err)
        raise err

    def safe_load(f, *args, **kwargs):
        kwargs.pop("pickle_module", None)
        kwargs["weights_only"] = True
        raw = _buffer_bytes(f)
        try:
            return real_load(f, *args, **kwargs)
        except Exception as err:  # noqa: BLE001 - UnpicklingError and whatever torch wraps it in
            if isinstance(err, PickleRefused):
                raise
            refuse(raw, _refusal_reason(err))

    class NoPickle:
        def __getattr__(self, name):
            return getattr(real_pickle, name)

        @staticmethod
        def loads(raw, *a, **k):
            refuse(raw, "is a Python pickle of an opaque object (plain pickle.loads would run any code in it)")

        load = Unpickler = loads

    def no_script_object(raw, *a, **k):
        refuse(raw, "is a TorchScript custom object (its unpickler constructs registered C++ classes)")

    return [
        (torch, "load", safe_load),
        (torch._C, "_pickle_load_obj", no_script_object),
        (_package, "pickle", NoPickle()),
    ]


def _program_patch(path: str, entries: _Entries, checked: set[bytes], refused: list) -> tuple[object, str, object]:
    """What makes every program JSON torch parses pass ``check_program`` first: the bytes torch
    itself read (its zip reader is not Python's), unless they are those checked already."""
    from torch._export.serde import serialize

    real = serialize._bytes_to_dataclass

    def checked_first(cls, raw, *args, **kwargs):
        if not isinstance(raw, (bytes, bytearray)) or hashlib.sha256(raw).digest() not in checked:
            try:
                check_program_bytes(path, entries.name_of(raw), bytes(raw))
            except ModelError as err:
                refused.append(err)
                raise
        return real(cls, raw, *args, **kwargs)

    return (serialize, "_bytes_to_dataclass", checked_first)


@contextlib.contextmanager
def _patched(build):
    """Within: the ``(owner, attribute, value)`` patches ``build()`` makes (built under the
    lock, so what they wrap is torch's own), then torch as it was."""
    with _LOCK:
        patches = build()
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        try:
            for owner, name, value in patches:
                setattr(owner, name, value)
            yield
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)


def load_exported_program(path: str, data: bytes):
    """The ExportedProgram in ``data`` (the bytes of ``path``), loaded without evaluating any
    string of its graph that is not in the form torch writes (``program_check``, always) and
    without running any of its pickles unless ``trust_pickles()`` was called; PickleRefused or
    ProgramRefused names what was refused."""
    import torch

    buffer = io.BytesIO(data)
    entries = _Entries(data)
    checked = check_archive(path, entries.archive) if entries.archive is not None else set()
    refused: list[ModelError] = []
    trusted = pickles_trusted()
    compiled = [n for n in entries.names if n.startswith(("data/aotinductor/", "data/executorch/"))]
    if compiled and not trusted:
        raise PickleRefused(
            path, compiled[0], "is compiled code (AOTInductor/ExecuTorch) that torch would load into this process"
        )

    def patches():
        programs = [_program_patch(path, entries, checked, refused)]
        return programs if trusted else programs + _pickle_patches(path, entries, refused)

    try:
        with _patched(patches):
            program = torch.export.load(buffer)
    except Exception:
        if refused:
            raise refused[0] from None
        raise
    if refused:
        raise refused[0]
    return program
