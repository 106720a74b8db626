"""Errors that reach the user as one clear message (never a traceback)."""


class ExplorerError(Exception):
    """A failure the user can act on; ``str(err)`` is the whole message."""


class ModelError(ExplorerError):
    """The model file cannot be read or imported."""


class BundleError(ExplorerError):
    """A bundle is missing, damaged, or of an unknown schema."""


class RemoteError(ExplorerError):
    """A remote device (TVM RPC) could not be reached, given out, used or kept: the message
    names the device or key and what to do."""


EXIT_ERROR = 2
EXIT_CRASH = 3
EXIT_TIMEOUT = 4
EXIT_UNTRUSTED = 5  # a .pt2 holds a pickle: refused unless --trust-pickle (VS Code asks, retries)
EXIT_REGRESSION = 6  # compare --fail-on: a layer or the model grew beyond a rule (docs/compare.md)
EXIT_REMOTE = 7  # a remote device (--rpc, --rpc-tracker) failed; no measurement was recorded
EXIT_INTERRUPTED = 130


def fail(message: str, code: int = EXIT_ERROR) -> int:
    """Print the one message of a failed command; returns its exit code."""
    import sys

    print(f"tvm-explorer: error: {message}", file=sys.stderr)
    return code
