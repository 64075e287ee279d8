"""`make lock` (`python -m outpost.tooling.lock_writer`): compile each target's lock in infra/locks/ with uv, from
pyproject.toml, with the records `outpost.tooling.packaging.locks` checks when a bundle is built.

Needs uv (the dev extra) and the package index; nothing here runs when a bundle is built, which reads the
committed locks offline. A lock is written whole or not at all: a failure leaves the previous file as it was.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from outpost.errors import PackagingError
from outpost.tooling.packaging.locks import (
    CORE,
    LOCK_DIRECTORY,
    LOCKED_EXTRAS,
    PIN,
    PYTHON_VERSION,
    REFRESH,
    TARGETS,
    LockTarget,
    declared_requirements,
    lock_file,
    normalized_name,
    parse_lock,
)


def find_uv() -> Path:
    """The uv of this Python's environment (`make python` installs it from the dev extra), else the one on PATH."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise PackagingError("uv is not installed: `make python` installs it (pyproject.toml's dev extra)")
    return Path(found)


def write_locks(root: Path, uv: Path, upgrade: bool = False, targets: Iterable[str] = tuple(TARGETS)) -> list[str]:
    """Compile each target's lock from root/pyproject.toml and write it with its records; one summary line each.
    The pins already locked are kept while pyproject.toml still allows them (uv reads the previous file as its
    preferences), unless `upgrade`. A failure leaves the previous file as it was."""
    declared = declared_requirements(root)
    version = _uv(uv, root, ["--version"]).strip().partition(" (")[0]  # `uv 0.13.9`, not the build's host
    summaries = []
    for name in targets:
        target = TARGETS[name]
        path = lock_file(root, name)
        shown = f"{LOCK_DIRECTORY}/{path.name}"
        common = [
            "--python",
            sys.executable,
            "--python-version",
            PYTHON_VERSION,
            "--python-platform",
            target.python_platform,
            "--only-binary",
            ":all:",
            "--no-strip-extras",
            "--quiet",
        ]
        with tempfile.TemporaryDirectory(prefix="outpost-lock-") as scratch:
            draft = Path(scratch) / path.name
            if path.is_file() and not upgrade:
                shutil.copyfile(path, draft)  # uv prefers the pins of an existing output file
            every_extra = [argument for extra in LOCKED_EXTRAS for argument in ("--extra", extra)]
            _compile(uv, root, [*every_extra, *common, "--generate-hashes", "--no-header", "-o", str(draft)], name)
            body = draft.read_text(encoding="utf-8")
            _records, pins = parse_lock(body, shown)
            core = _closure(uv, root, [*common, "-c", str(draft)], name)
            installs = {CORE: sorted(core)}
            for extra in LOCKED_EXTRAS:
                installs[extra] = sorted(_closure(uv, root, ["--extra", extra, *common, "-c", str(draft)], name) - core)
        if {pin for names in installs.values() for pin in names} != set(pins):
            raise PackagingError(
                f"{shown}: the core's and the extras' closures are not the whole lock (uv resolved differently with "
                "an extra alone): not written"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lock_header(target, declared, installs, version) + body, encoding="utf-8")
        added = ", ".join(f"{extra} +{len(installs[extra])}" for extra in LOCKED_EXTRAS)
        summaries.append(f"{shown}: {len(pins)} pins (core {len(installs[CORE])}; {added})")
    return summaries


def lock_header(
    target: LockTarget, declared: Mapping[str, list[str]], installs: Mapping[str, list[str]], uv_version: str
) -> str:
    """What a lock says about itself (prose), then the records read_lock checks, one JSON value per line."""
    prose = (
        f"Outpost's dependency lock for {target.description}: CPython {PYTHON_VERSION}, {target.python_platform}, "
        f"wheels only, with the SHA-256 of every file of each pinned version. Written by `{REFRESH}` (python -m "
        f"outpost.tooling.lock_writer, {uv_version}) from pyproject.toml: never edit it by hand. After changing "
        "pyproject.toml's "
        f"dependencies or extras, run `{REFRESH}` and commit both; `make lock-upgrade` moves every pin to the newest "
        "release pyproject.toml allows. `outpost package` installs from it with hashes required and nothing resolved: "
        "installs.dependencies plus installs.<extra> for each extra the environment reaches. It refuses this file as "
        "stale when `target` or a `requires.` record no longer matches the packaging code or pyproject.toml."
    )
    lines = [
        *textwrap.wrap(prose, width=118, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False),
        f"# target = {json.dumps(target.record(), sort_keys=True)}",
        *(f"# requires.{key} = {json.dumps(requirements)}" for key, requirements in declared.items()),
        *(f"# installs.{key} = {json.dumps(names)}" for key, names in installs.items()),
    ]
    return "\n".join(lines) + "\n"


def _closure(uv: Path, root: Path, arguments: list[str], target: str) -> set[str]:
    """The names uv installs for pyproject.toml with `arguments` (constrained to the draft lock, so its versions)."""
    output = _compile(uv, root, [*arguments, "--no-header", "--no-annotate"], target)
    names = set()
    for line in output.splitlines():
        pin = PIN.fullmatch(line.strip())
        if pin:
            names.add(normalized_name(pin["name"]))
    return names


def _compile(uv: Path, root: Path, arguments: list[str], target: str) -> str:
    try:
        return _uv(uv, root, ["pip", "compile", "pyproject.toml", *arguments])
    except PackagingError as error:
        raise PackagingError(f"locking {target}: {error}") from error


def _uv(uv: Path, root: Path, arguments: list[str]) -> str:
    process = subprocess.run([str(uv), *arguments], cwd=root, capture_output=True, text=True, check=False)
    if process.returncode != 0:
        tail = " | ".join(process.stderr.strip().splitlines()[-6:])
        raise PackagingError(f"uv {' '.join(arguments[:2])} failed: {tail}")
    return process.stdout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m outpost.tooling.lock_writer",
        description=f"write {LOCK_DIRECTORY}/ from pyproject.toml (`{REFRESH}`)",
    )
    parser.add_argument("--root", default=".", metavar="DIR", help="the project directory (default: .)")
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="the newest releases pyproject.toml allows (default: keep the locked pins it still allows)",
    )
    args = parser.parse_args(argv)
    try:
        for summary in write_locks(Path(args.root).resolve(), find_uv(), upgrade=args.upgrade):
            print(summary)
    except PackagingError as error:
        print(f"{REFRESH}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
