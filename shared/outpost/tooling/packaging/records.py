"""The build record: the SHA-256 of every input a build is made from (the environment file, pyproject.toml, the
product's sources, functions/ and the locks) and of the artifact, written last into `deployment.json`.

infra/aws/verified-build.js walks the same sources and computes the same digest, so a build older than its
sources is refused at deploy time; tests/functional/test_deployment.py holds the two together.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from outpost.tooling.packaging.locks import LOCK_DIRECTORY

DEPLOYMENT_FILE: Final = "deployment.json"

COMPILED_SUFFIXES: Final = (".pyc", ".pyo")

# The source set a build is made from, hashed into its record (infra/aws/verified-build.js walks the same).
SOURCE_DIRECTORIES: Final = ("shared/outpost", "functions", LOCK_DIRECTORY)
SOURCE_FILES: Final = ("pyproject.toml",)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_inputs(root: Path, config_file: Path) -> dict[str, str]:
    """{relative path: SHA-256} of every file a build is made from (the environment file and the sources)."""
    paths = [root / name for name in SOURCE_FILES] + [config_file]
    for directory in SOURCE_DIRECTORIES:
        for folder, subfolders, files in os.walk(root / directory):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            paths += [Path(folder) / name for name in files if not name.endswith(COMPILED_SUFFIXES)]
    inputs = {
        path.resolve().relative_to(root.resolve()).as_posix(): file_sha256(path) for path in paths if path.is_file()
    }
    return dict(sorted(inputs.items()))


def inputs_digest(inputs: Mapping[str, str]) -> str:
    """SHA-256 of `<sha256>  <path>` lines in path order (sha256sum's format; verified-build.js computes the same)."""
    lines = "".join(f"{inputs[name]}  {name}\n" for name in sorted(inputs))
    return hashlib.sha256(lines.encode()).hexdigest()
