"""Every JSON section of a bundle beside the provenance index: its file name, schema, validation
on load and reading (docs/bundle-format.md). Each section module declares one ``SECTION``, and
``reader.Bundle.section`` reads every one the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tvm_explorer.bundle.files import Budget, read_section
from tvm_explorer.bundle.types import Layer
from tvm_explorer.errors import BundleError


@dataclass(frozen=True)
class Section:
    """How a section is read: its file, what it is called in messages, its check (the
    validated document from the parsed JSON and the bundle's layers; a ValueError says what
    is wrong), when it is read and what its damage does."""

    file: str
    what: str
    check: Callable[[Any, Sequence[Layer]], Any]
    at_load: bool = False
    """Read when the bundle loads (else when first asked)."""
    damage_raises: bool = False
    """Damaged: a BundleError to whoever asks (else left out: None, and the error in
    ``Bundle.section_problems`` under its file name)."""


def read_checked(root: Path, section: Section, layers: Sequence[Layer], budget: Budget | None = None):
    """The section's validated document from the bundle directory ``root``, or None when the
    bundle has none; BundleError naming the file when it is damaged."""
    data = read_section(root, section.file, section.what, budget)
    if data is None:
        return None
    try:
        return section.check(data, layers)
    except ValueError as err:
        raise BundleError(f"{root / section.file}: {err}") from None
