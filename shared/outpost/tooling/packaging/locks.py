"""The dependency locks every bundle installs from (`infra/locks/`): which file serves which target, how
`outpost package` reads one, and what `make lock` (`outpost.tooling.lock_writer`) writes.

A bundle's dependencies come from a reviewed file, never from the building environment or the index on the day
(an unrelated package once pulled python-dateutil 4.0 into a build), so the same sources give the same bundle.
One uv lock per target, not `--universal`, because pip evaluates a universal file's markers against the building
interpreter. The header's per-extra closures make a subset exact without a resolver, and its recorded
requirements let a stale lock be refused offline. CONTRIBUTING.md "Dependencies" has the details.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from outpost.errors import PackagingError

LOCK_DIRECTORY: Final = "infra/locks"
REFRESH: Final = "make lock"
PYTHON_VERSION: Final = "3.11"
"""The functions' runtime (AWS Lambda python3.11, Cloud Functions python311); `outpost package` builds for it."""
CORE: Final = "dependencies"
"""The core dependencies' key in a lock's `requires.` and `installs.` records (pyproject.toml's own name)."""
LOCKED_EXTRAS: Final = ("aws", "gcp", "cloudfunctions", "certificates")
"""Every extra a bundle can reach (`platforms.required_extras`): those pyproject.toml's `all` names."""


@dataclass(frozen=True)
class LockTarget:
    """A platform bundles are built for: its lock is `infra/locks/<name>.txt`."""

    name: str
    description: str
    python_platform: str
    """uv pip compile's --python-platform."""
    pip_platform: str
    """pip install's --platform, for a bundle built on another machine than the one it runs on."""

    def record(self) -> dict[str, str]:
        """What the lock's `# target =` line records: a lock made for anything else is stale."""
        return {"name": self.name, "python_platform": self.python_platform, "python_version": PYTHON_VERSION}


# manylinux2014 (glibc 2.17) wheels run on both clouds: Lambda's python3.11 is Amazon Linux 2 (glibc 2.26),
# Cloud Functions' python311 is Ubuntu 22.04 (glibc 2.35). Cloud Functions' own pip installs requirements.txt, and
# the lock holds the hash of every file of a pinned version, so it may pick a newer-glibc wheel of the same version.
TARGETS: Final[Mapping[str, LockTarget]] = {
    target.name: target
    for target in (
        LockTarget("lambda-arm64", "AWS Lambda arm64", "aarch64-manylinux2014", "manylinux2014_aarch64"),
        LockTarget("lambda-x86_64", "AWS Lambda x86_64", "x86_64-manylinux2014", "manylinux2014_x86_64"),
        LockTarget("cloudfunctions-x86_64", "Google Cloud Functions", "x86_64-manylinux2014", "manylinux2014_x86_64"),
    )
}

_RECORD: Final = re.compile(r"# (?P<key>target|(?:requires|installs)\.[a-z0-9-]+) = (?P<value>.+)")
PIN: Final = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[A-Za-z0-9._,\s-]*\])?==(?P<version>\S+)")
_HASH: Final = re.compile(r"--hash=(?P<hash>sha256:[0-9a-f]{64})")


@dataclass(frozen=True)
class Pin:
    """One locked distribution: `name[extras]==version` and the SHA-256 of each of its files."""

    name: str
    """Normalized (PEP 503), the key everything is compared by."""
    requirement: str
    version: str
    hashes: tuple[str, ...]

    def text(self) -> str:
        """The requirement as pip reads it in hash-checking mode."""
        return " \\\n    ".join([self.requirement, *(f"--hash={digest}" for digest in self.hashes)]) + "\n"


@dataclass(frozen=True)
class Lock:
    """A lock read and checked against pyproject.toml and its target (read_lock)."""

    shown: str
    """Its path relative to the project, for messages."""
    target: LockTarget
    pins: Mapping[str, Pin]
    installs: Mapping[str, tuple[str, ...]]

    def subset(self, extras: Iterable[str]) -> list[Pin]:
        """The pins the core dependencies plus `extras` install, by name: the union of their `installs.` records."""
        names = set(self.installs[CORE])
        for extra in extras:
            if extra not in self.installs:
                raise PackagingError(
                    f"{self.shown}: extra {extra!r} is not locked (locked: {', '.join(LOCKED_EXTRAS)}); add it to "
                    f"outpost.tooling.packaging.locks.LOCKED_EXTRAS and run `{REFRESH}`"
                )
            names.update(self.installs[extra])
        return [self.pins[name] for name in sorted(names)]


def normalized_name(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): lower case, runs of `-_.` as one `-`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_file(root: Path, target: str) -> Path:
    return root / LOCK_DIRECTORY / f"{target}.txt"


def declared_requirements(root: Path) -> dict[str, list[str]]:
    """pyproject.toml's requirement lines a lock is made from: the core dependencies and each locked extra, sorted."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise PackagingError(f"pyproject.toml: cannot read its [project] table: {error}") from error
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    missing = [extra for extra in LOCKED_EXTRAS if extra not in optional]
    if missing:
        raise PackagingError(
            f"pyproject.toml: no optional dependency set {', '.join(map(repr, missing))} (LOCKED_EXTRAS in "
            "outpost.tooling.packaging.locks names every extra a bundle can reach)"
        )
    return {
        CORE: sorted(project.get("dependencies", [])),
        **{extra: sorted(optional[extra]) for extra in LOCKED_EXTRAS},
    }


def parse_lock(text: str, shown: str) -> tuple[dict[str, Any], dict[str, Pin]]:
    """The header's records (`target`, `requires.<key>`, `installs.<key>`) and the pins, by normalized name.
    Anything but comments, records, exact pins and sha256 hashes is refused: pip would read it, we would not."""
    records: dict[str, Any] = {}
    pins: dict[str, Pin] = {}
    current: tuple[str, str, str, list[str]] | None = None

    def close() -> None:
        if current is not None:
            name, requirement, version, hashes = current
            if not hashes:
                raise PackagingError(f"{shown}: {requirement} has no --hash: run `{REFRESH}`")
            pins[name] = Pin(name, requirement, version, tuple(hashes))

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip().removesuffix("\\").rstrip()
        if not line:
            continue
        if not raw[:1].isspace():
            record = _RECORD.fullmatch(line)
            if record:
                try:
                    records[record["key"]] = json.loads(record["value"])
                except json.JSONDecodeError as error:
                    raise PackagingError(
                        f"{shown}:{number}: unreadable {record['key']} record: run `{REFRESH}`"
                    ) from error
                continue
            if line.startswith("#"):
                continue
            pin = PIN.fullmatch(line)
            if pin is None:
                raise PackagingError(f"{shown}:{number}: not an exact pin: {line!r}; run `{REFRESH}`")
            close()
            name = normalized_name(pin["name"])
            if name in pins:
                raise PackagingError(f"{shown}:{number}: {name} is pinned twice; run `{REFRESH}`")
            current = (name, line, pin["version"], [])
            continue
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        digest = _HASH.fullmatch(stripped)
        if digest is None or current is None:
            raise PackagingError(f"{shown}:{number}: expected a --hash=sha256:... of a pin: {stripped!r}")
        current[3].append(digest["hash"])
    close()
    return records, pins


def stale_records(records: Mapping[str, Any], declared: Mapping[str, list[str]], target: LockTarget) -> list[str]:
    """Why a lock's records do not describe this pyproject.toml and this target (empty: it is current)."""
    if "target" not in records:
        return ["it has no `# target =` record: `make lock` did not write it, or was interrupted"]
    problems = []
    if records["target"] != target.record():
        problems.append(f"made for {json.dumps(records['target'])}, not {json.dumps(target.record())}")
    recorded = {key.removeprefix("requires."): value for key, value in records.items() if key.startswith("requires.")}
    for key in sorted(set(recorded) | set(declared)):
        now, then = set(declared.get(key, [])), set(recorded.get(key, []))
        if key not in recorded or key not in declared or now != then:
            where = "the core dependencies" if key == CORE else f"extra {key!r}"
            changes = [f"+{line}" for line in sorted(now - then)] + [f"-{line}" for line in sorted(then - now)]
            problems.append(f"{where} changed in pyproject.toml since it was made ({', '.join(changes) or 'added'})")
    return problems


def read_lock(root: Path, target: str) -> Lock:
    """The lock of `target`, checked: present, written by `make lock` for this target from this pyproject.toml, every
    pin hashed and accounted for by an `installs.` record. Otherwise a PackagingError naming the file and the fix."""
    if target not in TARGETS:
        raise PackagingError(f"no dependency lock for {target!r}: locked targets are {', '.join(TARGETS)}")
    spec = TARGETS[target]
    path = lock_file(root, target)
    shown = f"{LOCK_DIRECTORY}/{path.name}"
    if not path.is_file():
        raise PackagingError(
            f"no dependency lock {shown} for {spec.description}: run `{REFRESH}` and commit {LOCK_DIRECTORY}/"
        )
    records, pins = parse_lock(path.read_text(encoding="utf-8"), shown)
    problems = stale_records(records, declared_requirements(root), spec)
    if problems:
        raise PackagingError(
            f"{shown} is stale: {'; '.join(problems)}. Run `{REFRESH}` and commit it with pyproject.toml"
        )
    installs: dict[str, tuple[str, ...]] = {}
    for key in (CORE, *LOCKED_EXTRAS):
        names = records.get(f"installs.{key}")
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise PackagingError(f"{shown}: no `# installs.{key} =` list of names: run `{REFRESH}`")
        installs[key] = tuple(names)
    named = {name for names in installs.values() for name in names}
    if named != set(pins):
        unpinned, unreached = sorted(named - set(pins)), sorted(set(pins) - named)
        raise PackagingError(
            f"{shown}: installs records and pins disagree (not pinned: {', '.join(unpinned) or 'none'}; pinned but "
            f"never installed: {', '.join(unreached) or 'none'}): run `{REFRESH}`"
        )
    return Lock(shown, spec, pins, installs)


def requirements_text(pins: Iterable[Pin], header: str = "") -> str:
    """A requirements file pip installs in hash-checking mode: every pin with the hashes of its files, by name."""
    return header + "".join(pin.text() for pin in sorted(pins, key=lambda pin: pin.name))
