"""What ``--profile`` asks for (kept free of TVM so that the CLI starts fast)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_REPEAT = 10


@dataclass
class ProfileRequest:
    """``--profile [--repeat N] [--inputs FILE.npz]``."""

    repeat: int = DEFAULT_REPEAT
    inputs: str | None = None
