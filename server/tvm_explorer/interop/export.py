"""``tvm-explorer overlays BUNDLE -o DIR``: a bundle's figures as Model Explorer node data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.numerics import NUMERICS_FILE
from tvm_explorer.errors import BundleError, ExplorerError
from tvm_explorer.frontends import frontend_of
from tvm_explorer.interop.instructions import readme_text
from tvm_explorer.interop.model_explorer import Overlays, build_overlays
from tvm_explorer.interop.output import README, write_overlays


@dataclass
class Exported:
    """What was written where, and what was not."""

    folder: Path
    overlays: Overlays
    model_file: str
    adapter: str


def export_overlays(bundle_path: str, out: Path) -> Exported:
    """Write the overlays of the bundle at ``bundle_path`` into ``out``; ExplorerError with one
    message when there is nothing to write or the bundle or folder is unusable."""
    bundle = Bundle(bundle_path)
    model = bundle.manifest.get("model") or {}
    model_file = str(model.get("file") or "MODEL")
    if all(lay.explorer_key is None for lay in bundle.layers):
        raise ExplorerError(
            f"{bundle_path}: the bundle does not record Model Explorer's node ids (compiled by an "
            "earlier tvm-explorer); compile the model again"
        )
    costs_problem = numerics_problem = None
    try:
        costs = bundle.costs()
    except BundleError as err:  # damaged: its overlays are skipped, saying why
        costs, costs_problem = None, str(err)
    numerics = bundle.numerics
    if numerics is None and NUMERICS_FILE in bundle.section_problems:
        numerics_problem = str(bundle.section_problems[NUMERICS_FILE])
    overlays = build_overlays(bundle, costs, numerics, costs_problem, numerics_problem)
    if not overlays.written:
        why = "; ".join(f"{s.file}: {s.reason}" for s in overlays.skipped)
        raise ExplorerError(f"{bundle_path}: nothing to write ({why})")
    frontend = frontend_of(str(model.get("kind") or ""))
    readme = readme_text(
        str(bundle_path),
        model_file,
        frontend.explorer_adapter,
        frontend.explorer_extension,
        frontend.explorer_extension_module,
        overlays,
    )
    about = {"bundle": str(Path(bundle_path).resolve()), "model": model_file, "adapter": frontend.explorer_adapter}
    write_overlays(out, overlays, readme, about)
    return Exported(out, overlays, model_file, frontend.explorer_adapter)


__all__ = ["README", "Exported", "export_overlays"]
