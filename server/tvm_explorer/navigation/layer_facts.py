"""A layer's options and tensor types as the bundle records them (``structure.json``, written at
capture from the model itself), so that hovers can show a layer's attributes without the model
file. A bundle whose structure is missing or damaged answers empty facts (hovers go without
attributes; ``Bundle.section_problems`` says why)."""

from __future__ import annotations

from tvm_explorer.bundle.sections.structure import LayerFacts, TensorFacts
from tvm_explorer.navigation.view import BundleView

__all__ = ["LayerFacts", "TensorFacts", "layer_facts"]


def layer_facts(view: BundleView, layer_id: int) -> LayerFacts:
    """The facts of a layer (empty when the bundle's structure cannot be read)."""
    structure = view.bundle.structure()
    return structure.facts(layer_id) if structure is not None else LayerFacts()
