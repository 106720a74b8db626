"""Load a ``.pt2`` archive without running code from it.

``torch.export.load`` unpickles with ``weights_only=False`` (weights and constants marked
``use_pickle``, and the example inputs when the restricted load fails), unpickles "opaque"
constants with plain ``pickle.loads``, TorchScript custom objects with
``torch._C._pickle_load_obj``, and loads AOTInductor shared libraries: a model file someone
hands you could run anything. Unless the user trusts the file (``--trust-pickle``), every
pickle in the archive is read by torch's restricted unpickler (``weights_only=True``: tensors,
containers and plain values only, never an arbitrary global), and anything that cannot be read
that way is refused with one message naming the archive entry.
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
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = [i for i in self._zip.infolist() if not i.is_dir()]
        except (zipfile.BadZipFile, OSError, ValueError):
            self._zip, infos = None, []  # torch says what the file is not
        self._infos = infos
        for info in infos:
            name = self._short(info)
            self.names.append(name)
            if name.startswith("data/") and name.endswith("_config.json"):
                self._configs(name, self._read(info))

    @staticmethod
    def _short(info) -> str:
        return info.filename.split("/", 1)[1] if "/" in info.filename else info.filename

    def _read(self, info) -> bytes:
        try:
            return self._zip.read(info)
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
                        same.setdefault(hashlib.sha256(self._read(info)).hexdigest(), self._short(info))
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


@contextlib.contextmanager
def _pickles_refused(path: str, entries: _Entries, refused: list):
    """Within: torch unpickles only with its restricted unpickler, and the loaders that run
    arbitrary code refuse; each refusal is also kept in ``refused`` (torch catches some
    exceptions and tries another way: the first refusal is what the user hears)."""
    import torch
    from torch.export.pt2_archive import _package

    real_load, real_obj, real_pickle = torch.load, torch._C._pickle_load_obj, _package.pickle

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

    with _LOCK:
        torch.load, torch._C._pickle_load_obj, _package.pickle = safe_load, no_script_object, NoPickle()
        try:
            yield
        finally:
            torch.load, torch._C._pickle_load_obj, _package.pickle = real_load, real_obj, real_pickle


def load_exported_program(path: str, data: bytes):
    """The ExportedProgram in ``data`` (the bytes of ``path``), loaded without running any of
    its pickles unless ``trust_pickles()`` was called; PickleRefused names what was refused."""
    import torch

    buffer = io.BytesIO(data)
    if pickles_trusted():
        return torch.export.load(buffer)
    entries = _Entries(data)
    compiled = [n for n in entries.names if n.startswith(("data/aotinductor/", "data/executorch/"))]
    if compiled:
        raise PickleRefused(
            path, compiled[0], "is compiled code (AOTInductor/ExecuTorch) that torch would load into this process"
        )
    refused: list[PickleRefused] = []
    try:
        with _pickles_refused(path, entries, refused):
            program = torch.export.load(buffer)
    except Exception:
        if refused:
            raise refused[0] from None
        raise
    if refused:
        raise refused[0]
    return program
