"""Upstream test vectors, ported once and kept as data: `tests/unit/fixtures/upstream/<name>.json`.

Each file is what one upstream test file (or the real upstream code run over its inputs) answered: `source` cites
it (module@version and file, CONTRIBUTING.md "Upstream facts"), and `tables` holds each table as `columns` (what a
row's fields are) and `rows`. The tests in `tests/unit/kube/test_upstream_*.py` read them here and cite `source`
in their assertions. JSON arrays come back as tuples, so a row is a pytest parameter set and compares equal to the
tuples the code under test returns; objects stay dicts.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

UPSTREAM_FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "upstream"


@cache
def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((UPSTREAM_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def source(name: str) -> str:
    """Where the vectors of `name` were read: module@version and file."""
    cited: str = _load(name)["source"]
    return cited


def rows(name: str, table: str) -> list[tuple[Any, ...]]:
    """The rows of `table` in `name`, each a tuple of its columns (nested arrays are tuples too)."""
    return [_tupled(row) for row in _load(name)["tables"][table]["rows"]]


def _tupled(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tupled(item) for item in value)
    if isinstance(value, dict):
        return {key: _tupled(item) for key, item in value.items()}
    return value
