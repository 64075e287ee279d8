"""A project copy holding only what reading and writing the dependency locks needs (pyproject.toml, infra/locks/)."""

from __future__ import annotations

import shutil
from pathlib import Path

from outpost.tooling.packaging.locks import LOCK_DIRECTORY

REPO = Path(__file__).resolve().parents[2]


def project_with_locks(tmp_path: Path) -> Path:
    """`tmp_path/project` with this repository's pyproject.toml and committed locks, to change without touching them."""
    root = tmp_path / "project"
    (root / "infra").mkdir(parents=True)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(REPO / LOCK_DIRECTORY, root / LOCK_DIRECTORY)
    return root
