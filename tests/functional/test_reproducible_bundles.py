"""`outpost package` gives byte-identical bundles from two different virtualenvs, for both platforms.

The two builds run in processes of their own: one from the test's virtualenv, one from a second virtualenv made
here with `python -m venv` (its own pip, ensurepip's) that holds other versions of packages the Lambda bundle
ships (python-dateutil, urllib3 and six, which boto3 pulls in) ahead of everything else it imports. A build that
took anything from the building environment (its installed versions, its pip's choices, its clock, its file
modes, its order of directory entries) would differ; a build from the lock (infra/locks/) alone does not. The
example environments are built as they deploy: `dev` for Lambda (x86_64 wheels, whatever this machine is) and
`gcp-dev` for Cloud Functions.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from kit.bundles import (
    REPO,
    SOURCES,
    Built,
    clean_venv,
    distribution_versions,
    package,
    pip_install,
    sees,
    this_site_packages,
)
from outpost.tooling.packaging.locks import normalized_name, read_lock
from outpost.tooling.packaging.platforms import lock_target
from outpost.tooling.packaging.records import file_sha256

# Versions the lock does not hold, of distributions the Lambda bundle ships: what the second environment imports.
OTHER_VERSIONS = {"python-dateutil": "2.8.2", "urllib3": "1.26.20", "six": "1.16.0"}
ENVIRONMENTS = {"dev": "aws-x86_64", "gcp-dev": "gcp"}


@pytest.fixture(scope="module")
def second_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second virtualenv: other versions of shipped distributions first, then the product and its tools."""
    venv = tmp_path_factory.mktemp("second") / "venv"
    python = clean_venv(venv)
    pip_install(venv, *(f"{name}=={version}" for name, version in OTHER_VERSIONS.items()))
    sees(venv, *SOURCES, this_site_packages())
    return python


@pytest.mark.parametrize("environment", sorted(ENVIRONMENTS))
def test_two_virtualenvs_build_the_same_bytes(environment: str, second_python: Path, tmp_path: Path) -> None:
    platform = ENVIRONMENTS[environment]
    first_versions, second_versions = distribution_versions(sys.executable), distribution_versions(second_python)
    for name, version in OTHER_VERSIONS.items():  # the two environments really differ where the bundle is concerned
        assert second_versions[name] == version != first_versions[name], (name, first_versions.get(name))

    first = package(sys.executable, environment, tmp_path / "first", platform=platform)
    second = package(second_python, environment, tmp_path / "second", platform=platform)

    assert first.artifact.name == second.artifact.name
    assert first.artifact.read_bytes() == second.artifact.read_bytes(), _difference(first, second)
    assert file_sha256(first.artifact) == file_sha256(second.artifact) == first.record["artifact_sha256"]
    assert first.record == second.record  # the same inputs, digests and dependencies, nothing path- or host-bound
    # ... and those dependencies are the lock's, not either environment's.
    locked = {pin.name: pin.version for pin in read_lock(REPO, _lock_of(platform)).pins.values()}
    dependencies = first.record["dependencies"]
    assert isinstance(dependencies, dict)
    assert dependencies, "no dependency recorded"
    assert all(locked[normalized_name(name)] == version for name, version in dependencies.items()), dependencies
    if platform.startswith("aws-"):
        assert {"python-dateutil", "urllib3", "six"} <= set(dependencies), sorted(dependencies)


def _lock_of(platform: str) -> str:
    return lock_target("gcf", None) if platform == "gcp" else lock_target(platform, platform.removeprefix("aws-"))


def _difference(first: Built, second: Built) -> str:
    """The first entries whose bytes or metadata differ, to say what made the builds diverge."""
    with zipfile.ZipFile(first.artifact) as a, zipfile.ZipFile(second.artifact) as b:
        left = {info.filename: (info.CRC, info.date_time, info.external_attr) for info in a.infolist()}
        right = {info.filename: (info.CRC, info.date_time, info.external_attr) for info in b.infolist()}
    names = sorted(set(left) ^ set(right)) or sorted(name for name in left if left[name] != right[name])
    return f"{len(names)} entries differ, first: {names[:8]}"
