"""Sub-commands that sit beside the core CLI: maintenance windows, the sandbox, the demo."""

from __future__ import annotations

from typing import Any


def register(commands: Any) -> None:
    return None
