"""Writing a bundle: install the lock's subset (hashes required, nothing resolved), copy the product and the
enabled entry modules, refuse what must not ship (the sandbox, the operator's side, the Cloud Functions server on
Lambda, another architecture's binaries), compile and zip reproducibly.

The guarantees are the package's (`outpost.tooling.packaging`): same lock and sources, same bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from outpost.config import Settings
from outpost.errors import PackagingError
from outpost.tooling.packaging.cloudfunctions import cloud_functions_main, cloud_functions_requirements
from outpost.tooling.packaging.locks import TARGETS, normalized_name, read_lock, requirements_text
from outpost.tooling.packaging.platforms import (
    CLOUD_FUNCTIONS,
    HOST,
    RUNTIME_PYTHON,
    entry_functions,
    entry_module,
    lock_target,
    required_extras,
)
from outpost.tooling.packaging.records import COMPILED_SUFFIXES

LAMBDA_UNPACKED_MAX_BYTES: Final = 262_144_000

# Never in any bundle: the sandbox is a development tool, not the product.
SANDBOX_PATHS: Final = ("outpost/sandbox/", "outpost_sandbox/")
# Never in any bundle: the operator's side of the package (`outpost package`, `rbac`, `monitors`, ... and the CLI
# that offers them), which no run imports.
OPERATOR_SIDE: Final = frozenset({"tooling", "cli.py"})
# Never in a Lambda bundle: the Cloud Functions server and what only it pulls in.
CLOUD_FUNCTIONS_ONLY: Final = ("functions_framework", "flask", "werkzeug", "gunicorn")
# Left out of every bundle (see the package docstring, outpost.tooling.packaging).
_SKIPPED_TOP_LEVEL: Final = frozenset({"bin"})

_SKIPPED_METADATA: Final = frozenset({"RECORD", "direct_url.json"})

_ZIP_EPOCH: Final = (1980, 1, 1, 0, 0, 0)
# ELF e_machine of each Lambda architecture.
_ELF_MACHINES: Final = {62: "x86_64", 183: "arm64"}
_WHEEL_ARCH_TAGS: Final = {"x86_64": ("x86_64", "amd64"), "arm64": ("aarch64", "arm64")}


def forbidden_entries(names: Iterable[str], platform: str) -> list[str]:
    """Top-level entries of a bundle that must not be there (sandbox code, the operator's side; on Lambda, the GCF
    server)."""
    found: set[str] = set()
    for name in names:
        found.update(prefix.rstrip("/") for prefix in SANDBOX_PATHS if name.startswith(prefix))
        found.update(
            f"outpost/{side}"
            for side in OPERATOR_SIDE
            if name == f"outpost/{side}" or name.startswith(f"outpost/{side}/")
        )
        top = name.split("/")[0]
        distribution = top.split("-")[0].lower()  # `flask` and `flask-3.1.3.dist-info` alike
        if distribution == "outpost_sandbox":
            found.add(top)
        if platform != CLOUD_FUNCTIONS and distribution in CLOUD_FUNCTIONS_ONLY:
            found.add(top)
    return sorted(found)


def architecture_mismatches(staging: Path, architecture: str) -> list[str]:
    """Files of a staged bundle built for another architecture: ELF shared objects and wheel tags."""
    wrong: list[str] = []
    for path in sorted(staging.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(staging).as_posix()
        if path.name.endswith(".so") or ".so." in path.name:
            with path.open("rb") as stream:
                header = stream.read(20)
            if header[:4] == b"\x7fELF" and len(header) == 20:
                machine = _ELF_MACHINES.get(int.from_bytes(header[18:20], "little"), f"e_machine {header[18]}")
                if machine != architecture:
                    wrong.append(f"{relative} ({machine})")
        elif path.name == "WHEEL" and path.parent.name.endswith(".dist-info"):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if not line.startswith("Tag:"):
                    continue
                platform_tag = line.split(":", 1)[1].strip().split("-")[-1]
                if platform_tag != "any" and not any(tag in platform_tag for tag in _WHEEL_ARCH_TAGS[architecture]):
                    wrong.append(f"{relative} (wheel tag {platform_tag})")
    return sorted(wrong)


def write_bundle(
    settings: Settings,
    root: Path,
    config_file: Path,
    archive: Path,
    platform: str,
    architecture: str | None,
    scratch: Path,
) -> dict[str, str]:
    """Stage, compile, check and zip one bundle; returns the third-party versions it holds or requires (the lock's)."""
    extras = required_extras(settings, platform)
    staging = scratch / "bundle"
    staging.mkdir()
    # The lock, never the building environment: checked current against pyproject.toml before anything is installed.
    lock = read_lock(root, lock_target(platform, architecture))
    subset = lock.subset(extras)
    pins = {pin.name: pin.version for pin in subset}
    if platform == CLOUD_FUNCTIONS:
        # Cloud Functions installs requirements.txt itself; only the product is vendored (as source).
        (staging / "requirements.txt").write_text(cloud_functions_requirements(lock, extras))
        (staging / "main.py").write_text(cloud_functions_main(settings))
    else:
        requirements = scratch / "requirements.txt"
        requirements.write_text(requirements_text(subset))
        # A `host` build installs the wheels this machine takes (it runs the bundle in tests); any other installs
        # the target's, whatever this machine is.
        wheels = (
            []
            if platform == HOST
            else [
                "--platform",
                TARGETS[lock_target(platform, architecture)].pip_platform,
                "--implementation",
                "cp",
                "--python-version",
                ".".join(map(str, RUNTIME_PYTHON)),
            ]
        )
        # Exact pins, each file checked against the lock's hashes, no dependency resolved (the subset is the closure).
        _pip(
            [
                "install",
                "--quiet",
                "--no-compile",
                "--disable-pip-version-check",
                "--target",
                str(staging),
                "--require-hashes",
                "--no-deps",
                "--only-binary=:all:",
                *wheels,
                "--requirement",
                str(requirements),
            ]
        )
        installed = bundled_versions(staging)
        if installed != pins:
            differences = sorted(set(installed.items()) ^ set(pins.items()))
            raise PackagingError(
                f"bundle for {platform} holds other distributions than {lock.shown} locks for extras "
                f"{', '.join(extras) or '(none)'}: {', '.join(f'{name} {version}' for name, version in differences)}"
            )
    _copy_product(root, staging)
    for name in entry_functions(settings):
        module = staging / entry_module(name)
        module.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / entry_module(name), module)
    environments = staging / "infra" / "environments"
    environments.mkdir(parents=True)
    shutil.copyfile(config_file, environments / config_file.name)
    for skipped in [path for path in staging.rglob("*") if not _ships(path.relative_to(staging))]:
        if skipped.is_dir():
            shutil.rmtree(skipped, ignore_errors=True)
        elif skipped.exists():
            skipped.unlink()
    names = sorted(path.relative_to(staging).as_posix() for path in staging.rglob("*") if path.is_file())
    forbidden = forbidden_entries(names, platform)
    if forbidden:
        raise PackagingError(
            f"bundle for {platform} would contain {', '.join(forbidden)} (extras: "
            f"{', '.join(extras) or 'none'}); refusing to write {archive.name}"
        )
    if architecture is not None:
        wrong = architecture_mismatches(staging, architecture)
        if wrong:
            raise PackagingError(
                f"bundle for {architecture} holds files built for another architecture: "
                f"{', '.join(wrong[:5])}{' ...' if len(wrong) > 5 else ''}"
            )
    _compile(staging)
    write_reproducible_zip(staging, archive)
    if platform != CLOUD_FUNCTIONS:
        unpacked = sum(path.stat().st_size for path in staging.rglob("*") if path.is_file())
        if unpacked > LAMBDA_UNPACKED_MAX_BYTES:
            raise PackagingError(
                f"bundle unpacks to {unpacked / 1e6:.1f} MB, over Lambda's {LAMBDA_UNPACKED_MAX_BYTES / 1e6:.0f} MB"
            )
    return pins


def _copy_product(root: Path, staging: Path) -> None:
    """The `outpost` package from its sources: no caches, never the sandbox, nor the operator's side (`tooling`,
    and the command line, which imports it): nothing a function runs imports either (import-linter holds that)."""
    source = root / "shared" / "outpost"
    caches = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "sandbox")

    def ignored(directory: str, names: list[str]) -> set[str]:
        operator_side = OPERATOR_SIDE.intersection(names) if Path(directory) == source else set()
        return set(caches(directory, names)) | operator_side

    shutil.copytree(source, staging / "outpost", ignore=ignored)


def bundled_versions(staging: Path) -> dict[str, str]:
    """`{normalized name: version}` of the distributions installed into a staged bundle (their `.dist-info`)."""
    versions = {}
    for metadata in sorted(staging.glob("*.dist-info")):
        name, _, version = metadata.name.removesuffix(".dist-info").partition("-")
        versions[normalized_name(name)] = version
    return versions


_COMPILE = """
import importlib.util, pathlib, py_compile, sys
root = pathlib.Path(sys.argv[1])
skipped = 0
for path in sorted(root.rglob("*.py")):
    relative = path.relative_to(root).as_posix()
    try:
        py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)), dfile=relative,
                           doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    except py_compile.PyCompileError:
        skipped += 1  # a file the package never imports (e.g. a template with placeholders)
print(skipped)
"""


def _compile(staging: Path) -> None:
    """Byte-compile every module, deterministically: a fresh interpreter, a fixed hash seed (set and frozenset
    constants are marshalled in hash order), hash-based invalidation (no mtime), paths relative to the bundle."""
    environment = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    process = subprocess.run(
        [sys.executable, "-I", "-c", _COMPILE, str(staging)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    if process.returncode != 0:
        tail = " | ".join(process.stderr.strip().splitlines()[-3:])
        raise PackagingError(f"byte-compiling the bundle failed: {tail}")


def write_reproducible_zip(staging: Path, archive: Path) -> None:
    """Sorted entries, a fixed timestamp and modes, one compression level: same files, same bytes."""
    files = sorted((path.relative_to(staging).as_posix(), path) for path in staging.rglob("*") if path.is_file())
    with zipfile.ZipFile(archive, "w") as bundle:
        for name, path in files:
            info = zipfile.ZipInfo(name, date_time=_ZIP_EPOCH)
            info.create_system = 3  # Unix, so the modes below are read
            mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, path.read_bytes(), compresslevel=6)


def _ships(relative: Path) -> bool:
    parts = relative.parts
    if parts[0] in _SKIPPED_TOP_LEVEL or "__pycache__" in parts or relative.suffix in COMPILED_SUFFIXES:
        return False
    return not (len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _SKIPPED_METADATA)


def _pip(arguments: list[str]) -> None:
    process = subprocess.run([sys.executable, "-m", "pip", *arguments], capture_output=True, text=True, check=False)
    if process.returncode != 0:
        tail = " | ".join(process.stderr.strip().splitlines()[-3:])
        raise PackagingError(f"pip {arguments[0]} failed: {tail}")
