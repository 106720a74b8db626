"""Memory of a compiled model: the step-by-step timeline of what is allocated while its entry
function runs (storages, the tensors placed in them, each kernel's scratch, what stays
resident), read from TVM's own IR at capture (``plan.py``, ``scratch.py``), joined to layers
and checked against a real run (``timeline.py``, ``assemble.py``, ``record.py``); written as
``memory.json`` (docs/memory.md). ``table.py`` (no TVM) is what the CLI and the editor show."""
