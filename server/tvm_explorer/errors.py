"""Errors that reach the user as one clear message (never a traceback)."""


class ExplorerError(Exception):
    """A failure the user can act on; ``str(err)`` is the whole message."""


class ModelError(ExplorerError):
    """The model file cannot be read or imported."""


class BundleError(ExplorerError):
    """A bundle is missing, damaged, or of an unknown schema."""
