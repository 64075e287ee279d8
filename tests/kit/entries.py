"""A function's entry module imported as a platform imports it on a cold start: afresh, as a new module object."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType

_fresh = itertools.count()


def cold_import(entry: Path) -> ModuleType:
    """Import `entry` (a `functions/<check>/main.py`) as a module of its own, whatever was imported before."""
    spec = importlib.util.spec_from_file_location(f"outpost_entry_{entry.parent.name}_{next(_fresh)}", entry)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
