"""`outpost package --env ENV`: validate, write the bundle, then `deployment.json` (last), and print a summary.

A refused environment writes nothing, and the stage's directory is emptied before a build starts, so a failed
build leaves no bundle that could be mistaken for the current one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from outpost.errors import ConfigError, PackagingError
from outpost.tooling.packaging.aws import serverless_sections
from outpost.tooling.packaging.bundle import write_bundle
from outpost.tooling.packaging.cloudfunctions import (
    TERRAFORM_DIRECTORY,
    TERRAFORM_VARIABLES,
    terraform_path,
    terraform_variables,
)
from outpost.tooling.packaging.platforms import (
    PLATFORMS,
    RUNTIME_PYTHON,
    archive_name,
    deployable_settings,
    entry_module,
    resolve_platform,
)
from outpost.tooling.packaging.records import DEPLOYMENT_FILE, file_sha256, inputs_digest, source_inputs


def register(commands: Any) -> None:
    parser = commands.add_parser("package", help="validate a deployable environment and build its bundle")
    parser.add_argument("--env", required=True, metavar="ENV", help="environment: infra/environments/ENV.yaml")
    parser.add_argument("--output", default="build", metavar="DIR", help="output directory (default: build)")
    parser.add_argument(
        "--root",
        default=".",
        metavar="DIR",
        help="project directory with functions/ and infra/environments/ (default: .)",
    )
    parser.add_argument(
        "--platform",
        choices=PLATFORMS,
        default=None,
        help="default: the environment's deploy.platform and deploy.architecture; `host` builds "
        "with this machine's wheels (tests; must match the environment's architecture)",
    )
    parser.set_defaults(func=main)


def build(environment: str, output: Path, root: Path, platform: str | None = None) -> Path:
    """Validate, then write the bundle and `deployment.json` (last). Returns the stage's directory."""
    if platform is not None and platform not in PLATFORMS:
        raise PackagingError(f"unknown platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
    settings, config_file = deployable_settings(environment, root)
    chosen, architecture = resolve_platform(settings, platform)
    missing = [
        f"checks.{name}: no entry module {entry_module(name)}"
        for name in settings.enabled_checks()
        if not (root / entry_module(name)).is_file()
    ]
    if missing:
        raise ConfigError(f"environment {environment!r} cannot be packaged", missing)
    if sys.version_info[:2] != RUNTIME_PYTHON:
        raise PackagingError(
            f"byte code must be compiled by Python {'.'.join(map(str, RUNTIME_PYTHON))} (the "
            f"functions' runtime), not {sys.version_info.major}.{sys.version_info.minor}"
        )
    inputs = source_inputs(root, config_file)
    target = output / environment
    if target.exists():
        shutil.rmtree(target)  # no stale build survives a failed one
    with tempfile.TemporaryDirectory(prefix="outpost-bundle-") as scratch:
        archive = Path(scratch) / archive_name(environment, chosen)
        dependencies = write_bundle(settings, root, config_file, archive, chosen, architecture, Path(scratch))
        target.mkdir(parents=True)
        final = target / archive.name
        shutil.move(archive, final)
    record = {
        "inputs_sha256": inputs_digest(inputs),
        "inputs": inputs,
        "artifact": final.name,
        "artifact_sha256": file_sha256(final),
        "platform": chosen,
        "python": ".".join(map(str, RUNTIME_PYTHON)),
        "dependencies": dependencies,
    }
    deployment: dict[str, Any] = {"environment": environment, "build": record, "serverless": None}
    if settings.deploy is not None and settings.deploy.platform == "aws":
        deployment["serverless"] = serverless_sections(settings, _relative(final, root))
    else:
        variables = terraform_variables(settings, terraform_path(final, root), file_sha256(final))
        (target / TERRAFORM_VARIABLES).write_text(json.dumps(variables, indent=2) + "\n")
        deployment["terraform"] = {"directory": TERRAFORM_DIRECTORY, "variables": TERRAFORM_VARIABLES}
    (target / DEPLOYMENT_FILE).write_text(json.dumps(deployment, indent=2, sort_keys=False) + "\n")
    return target


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def describe(archive: Path) -> str:
    """`<name>: <size> MB (<unpacked> MB unpacked), <n> files, sha256 <prefix>`, for the packaging summary."""
    with zipfile.ZipFile(archive) as bundle:
        entries = bundle.infolist()
    unpacked = sum(entry.file_size for entry in entries)
    return (
        f"{archive.name}: {archive.stat().st_size / 1_000_000:.1f} MB ({unpacked / 1_000_000:.1f} MB unpacked), "
        f"{len(entries)} files, sha256 {file_sha256(archive)[:16]}"
    )


def main(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    target = build(args.env, root / args.output, root, args.platform)
    deployment = json.loads((target / DEPLOYMENT_FILE).read_text())
    record = deployment["build"]
    print(
        f"packaged environment {args.env!r} into {target} (platform {record['platform']}, "
        f"inputs sha256 {record['inputs_sha256'][:16]})"
    )
    print(describe(target / record["artifact"]))
    serverless = deployment["serverless"]
    if serverless:
        timeouts = {f["timeout"] for f in serverless["functions"].values()}
        print(
            f"{len(serverless['functions'])} function(s), timeout {', '.join(map(str, sorted(timeouts)))} s; "
            f"deploy with: serverless deploy --stage {args.env}"
        )
    terraform = deployment.get("terraform")
    if terraform:
        variables = json.loads((target / terraform["variables"]).read_text())
        var_file = _relative(target / terraform["variables"], root)
        print(
            f"{len(variables['checks'])} function(s) and Cloud Scheduler job(s), timeout "
            f"{variables['timeout_seconds']} s; deploy with: terraform -chdir={terraform['directory']} workspace "
            f"select -or-create {args.env} && terraform -chdir={terraform['directory']} apply "
            f"-var-file={'../../' + var_file if not var_file.startswith('/') else var_file}"
        )
    return 0
