"""`outpost package --env ENV`: the deployable bundle and function list for one environment.

Packaging is the second place a bad configuration is refused (after `outpost validate`, before any
cold start): the environment file is fully validated first, and nothing is written if it is bad.

Output, under `build/<env>/` (what serverless.yml reads):
- `functions.json`: one Lambda function per enabled check, with its EventBridge schedule, no automatic
  retries, and an IAM-authenticated Function URL;
- `outpost-<env>.zip`: the `outpost` package with its dependencies (wheels for the Lambda platform),
  every `functions/<check>/main.py` entry module, and the environment file at
  `infra/environments/<env>.yaml`, which `$OUTPOST_CONFIG` names at cold start.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from outpost import registry
from outpost.config import Settings, environment_file
from outpost.errors import ConfigError, OutpostError
from outpost.settings import load_settings

LAMBDA_PLATFORMS = {
    "aws-arm64": ["--platform", "manylinux2014_aarch64", "--implementation", "cp", "--python-version", "3.11",
                  "--only-binary=:all:"],
    "aws-x86_64": ["--platform", "manylinux2014_x86_64", "--implementation", "cp", "--python-version", "3.11",
                   "--only-binary=:all:"],
    "host": [],
}


class PackagingError(OutpostError):
    """The bundle could not be built (pip failed, an entry module is missing)."""


def register(commands: Any) -> None:
    parser = commands.add_parser("package", help="validate an environment and build its deployable bundle")
    parser.add_argument("--env", required=True, metavar="ENV", help="environment: infra/environments/ENV.yaml")
    parser.add_argument("--output", default="build", metavar="DIR", help="output directory (default: build)")
    parser.add_argument("--root", default=".", metavar="DIR",
                        help="project directory with functions/ and infra/environments/ (default: .)")
    parser.add_argument("--platform", choices=sorted(LAMBDA_PLATFORMS), default="aws-arm64",
                        help="wheel platform of the dependencies (default: aws-arm64, as serverless.yml)")
    parser.add_argument("--functions-only", action="store_true",
                        help="write functions.json only (no dependency download)")
    parser.set_defaults(func=main)


def entry_module(check: str) -> str:
    """`functions/<check_with_underscores>/main.py`, relative to the bundle root."""
    return f"functions/{check.replace('-', '_')}/main.py"


def schedule_expression(minutes: int) -> str:
    return "rate(1 minute)" if minutes == 1 else f"rate({minutes} minutes)"


def function_definitions(settings: Settings, root: Path) -> dict[str, Any]:
    """The serverless.yml `functions:` mapping for every enabled check."""
    functions: dict[str, Any] = {}
    missing = []
    for name in settings.enabled_checks():
        spec = registry.get(name)
        module = entry_module(name)
        if not (root / module).is_file():
            missing.append(f"checks.{name}: no entry module {module}")
            continue
        configured = settings.checks[name]
        functions[name] = {
            "handler": module.removesuffix(".py") + ".handler",
            "description": f"Outpost check {name} ({settings.environment}, {spec.severity})",
            "maximumRetryAttempts": 0,
            "url": {"authorizer": "aws_iam"},
            "events": [{"schedule": {"rate": [schedule_expression(configured.schedule_minutes
                                                                  or spec.schedule_minutes)]}}],
        }
    if missing:
        raise ConfigError(f"environment {settings.environment!r} cannot be packaged", missing)
    return functions


def build(environment: str, output: Path, root: Path, platform: str = "aws-arm64",
          functions_only: bool = False) -> Path:
    """Validate, then write `functions.json` and (unless functions_only) the bundle zip. Returns the env dir."""
    config_file = environment_file(environment, root)
    settings = load_settings(config_file)
    functions = function_definitions(settings, root)
    target = output / environment
    target.mkdir(parents=True, exist_ok=True)
    (target / "functions.json").write_text(json.dumps(functions, indent=2) + "\n")
    if not functions_only:
        _bundle(settings, root, config_file, target / f"outpost-{environment}.zip", platform)
    return target


def _bundle(settings: Settings, root: Path, config_file: Path, archive: Path, platform: str) -> None:
    with tempfile.TemporaryDirectory(prefix="outpost-bundle-") as scratch:
        staging = Path(scratch) / "bundle"
        wheels = Path(scratch) / "wheels"
        _pip(["wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(root)])
        (wheel,) = wheels.glob("outpost-*.whl")
        _pip(["install", "--quiet", "--no-compile", "--target", str(staging), *LAMBDA_PLATFORMS[platform],
              str(wheel)])
        for name in settings.enabled_checks():
            module = staging / entry_module(name)
            module.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / entry_module(name), module)
        environments = staging / "infra" / "environments"
        environments.mkdir(parents=True)
        shutil.copy2(config_file, environments / config_file.name)
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
            for path in sorted(staging.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    bundle.write(path, path.relative_to(staging).as_posix())


def _pip(arguments: list[str]) -> None:
    process = subprocess.run([sys.executable, "-m", "pip", *arguments], capture_output=True, text=True,
                             check=False)
    if process.returncode != 0:
        tail = " | ".join(process.stderr.strip().splitlines()[-3:])
        raise PackagingError(f"pip {arguments[0]} failed: {tail}")


def main(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    target = build(args.env, root / args.output, root, args.platform, args.functions_only)
    print(f"packaged environment {args.env!r} into {target}")
    return 0
