"""PyTorch models (``torch.export`` ExportedPrograms, saved as ``.pt2``): reading them
(``loader``) and importing them with spans (``importer``). PyTorch is an optional extra."""
