"""ONNX models: reading them (``loader``) and importing them with spans (``importer``)."""
