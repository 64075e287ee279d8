"""`outpost package --env ENV`: the deployable bundle and function list for one environment.

Packaging is the second place a bad configuration is refused (after `outpost validate`, before any
cold start): the environment file is fully validated first, and nothing is written if it is bad.

Output, under `build/<env>/`:
- `functions.json`: one Lambda function per enabled check, with its EventBridge schedule, no automatic
  retries, and an IAM-authenticated Function URL (what serverless.yml reads);
- `--platform aws-arm64|aws-x86_64|host`: `outpost-<env>.zip`, the Lambda bundle: the `outpost` package,
  its dependencies installed as wheels for the Lambda platform (`host`: this machine's, for tests), every
  `functions/<check>/main.py` entry module, and the environment file at `infra/environments/<env>.yaml`,
  which `$OUTPOST_CONFIG` names at cold start;
- `--platform gcf`: `outpost-<env>-gcf.zip`, the Cloud Functions source: the `outpost` package as source,
  the entry modules, the environment file, a root `main.py` exporting one HTTP target per enabled check
  (named like its entry module's directory), and `requirements.txt`, which Cloud Functions installs itself.

Guarantees (the bundle holds only the product):
- never sandbox code: `outpost/sandbox/` is left out even when the source tree has it, and a bundle that
  would contain `outpost/sandbox` or `outpost_sandbox` is refused (PackagingError), as is a Lambda bundle
  holding the Cloud Functions server (functions_framework, flask, werkzeug, gunicorn);
- third-party dependencies are chosen by one rule: the core `[project] dependencies` (what every product
  module imports when loaded), plus each extra the environment reaches, read from its validated settings:
  `aws` (boto3) for any `ssm:`/`secretsmanager:` reference or `eks` auth, `gcp` (google-auth, requests) for
  any `gcpsm:` reference or `gke` auth (kubeconfig auth needs nothing more: Outpost reads kubeconfigs
  and runs exec plugins itself, see `outpost.cluster.auth`); plus the platform's adapter:
  `cloudfunctions` (functions-framework) on Cloud Functions, nothing on Lambda (its runtime calls the
  handler; the runtime's own boto3 is not relied on, its version is not ours to pin); plus the extras
  the enabled checks declare (`CheckSpec.extras`): `certificates` (cryptography, a compiled wheel of
  several MB) only when `apiserver-cert-expiry` or `webhook-cert-expiry` is enabled.
  So a Lambda environment with SSM secrets carries boto3 and no functions-framework, and a Cloud
  Functions environment with `gcpsm:` secrets and `gke` auth carries no boto3. Secret references are
  found by scanning every string of the settings, so a field that holds a reference is never missed (a
  false match only adds a dependency, never removes one);
- caches (`__pycache__`, `*.pyc`), console scripts (`bin/`) and the install-time records
  (`*.dist-info/RECORD`, `direct_url.json`, which name the build machine's paths) are left out; the
  rest of each `*.dist-info` stays, because packages read their own metadata at runtime.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from outpost import registry
from outpost.config import Settings, environment_file
from outpost.errors import ConfigError, OutpostError
from outpost.settings import load_settings

LAMBDA_PLATFORMS: Final = {
    "aws-arm64": ["--platform", "manylinux2014_aarch64", "--implementation", "cp", "--python-version", "3.11",
                  "--only-binary=:all:"],
    "aws-x86_64": ["--platform", "manylinux2014_x86_64", "--implementation", "cp", "--python-version", "3.11",
                   "--only-binary=:all:"],
    "host": [],
}
CLOUD_FUNCTIONS: Final = "gcf"
PLATFORMS: Final = (*sorted(LAMBDA_PLATFORMS), CLOUD_FUNCTIONS)

# Never in any bundle: the sandbox is a development tool, not the product.
SANDBOX_PATHS: Final = ("outpost/sandbox/", "outpost_sandbox/")
# Never in a Lambda bundle: the Cloud Functions server and what only it pulls in.
CLOUD_FUNCTIONS_ONLY: Final = ("functions_framework", "flask", "werkzeug", "gunicorn")
# Left out of every bundle (see the module docstring).
_SKIPPED_TOP_LEVEL: Final = frozenset({"bin"})
_SKIPPED_SUFFIXES: Final = (".pyc", ".pyo")
_SKIPPED_METADATA: Final = frozenset({"RECORD", "direct_url.json"})

class PackagingError(OutpostError):
    """The bundle could not be built (pip failed, an entry module is missing)."""


def register(commands: Any) -> None:
    parser = commands.add_parser("package", help="validate an environment and build its deployable bundle")
    parser.add_argument("--env", required=True, metavar="ENV", help="environment: infra/environments/ENV.yaml")
    parser.add_argument("--output", default="build", metavar="DIR", help="output directory (default: build)")
    parser.add_argument("--root", default=".", metavar="DIR",
                        help="project directory with functions/ and infra/environments/ (default: .)")
    parser.add_argument("--platform", choices=PLATFORMS, default="aws-arm64",
                        help="Lambda wheel platform of the dependencies (default: aws-arm64, as serverless.yml), "
                             "or gcf for the Cloud Functions source")
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


def archive_name(environment: str, platform: str) -> str:
    return f"outpost-{environment}-gcf.zip" if platform == CLOUD_FUNCTIONS else f"outpost-{environment}.zip"


def build(environment: str, output: Path, root: Path, platform: str = "aws-arm64",
          functions_only: bool = False) -> Path:
    """Validate, then write `functions.json` and (unless functions_only) the bundle zip. Returns the env dir."""
    if platform not in PLATFORMS:
        raise PackagingError(f"unknown platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
    config_file = environment_file(environment, root)
    settings = load_settings(config_file)
    functions = function_definitions(settings, root)
    target = output / environment
    target.mkdir(parents=True, exist_ok=True)
    (target / "functions.json").write_text(json.dumps(functions, indent=2) + "\n")
    if not functions_only:
        _bundle(settings, root, config_file, target / archive_name(environment, platform), platform)
    return target


def required_extras(settings: Settings, platform: str) -> list[str]:
    """The `[project.optional-dependencies]` this environment reaches on this platform (rule: module docstring)."""
    schemes = {text.partition(":")[0] for text in _strings(settings.model_dump())}
    mode = settings.cluster.auth.mode
    extras = []
    if schemes & {"ssm", "secretsmanager"} or mode == "eks":
        extras.append("aws")
    if "gcpsm" in schemes or mode == "gke":
        extras.append("gcp")
    if platform == CLOUD_FUNCTIONS:
        extras.append("cloudfunctions")
    for name in settings.enabled_checks():  # e.g. `certificates` (cryptography) only for the cert checks
        extras += [extra for extra in registry.get(name).extras if extra not in extras]
    return extras


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value.strip()
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from _strings(item)


def requirements(root: Path, extras: Iterable[str]) -> list[str]:
    """The requirement lines of the core dependencies plus `extras`, as declared in root/pyproject.toml."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    lines = list(project.get("dependencies", []))
    for extra in extras:
        if extra not in optional:
            raise PackagingError(f"pyproject.toml: no optional dependency set {extra!r}")
        lines.extend(optional[extra])
    return lines


def forbidden_entries(names: Iterable[str], platform: str) -> list[str]:
    """Top-level entries of a bundle that must not be there (sandbox code; on Lambda, the GCF server)."""
    found: set[str] = set()
    for name in names:
        found.update(prefix.rstrip("/") for prefix in SANDBOX_PATHS if name.startswith(prefix))
        top = name.split("/")[0]
        distribution = top.split("-")[0].lower()  # `flask` and `flask-3.1.3.dist-info` alike
        if distribution == "outpost_sandbox":
            found.add(top)
        if platform != CLOUD_FUNCTIONS and distribution in CLOUD_FUNCTIONS_ONLY:
            found.add(top)
    return sorted(found)


def _bundle(settings: Settings, root: Path, config_file: Path, archive: Path, platform: str) -> None:
    extras = required_extras(settings, platform)
    with tempfile.TemporaryDirectory(prefix="outpost-bundle-") as scratch:
        staging = Path(scratch) / "bundle"
        wheels = Path(scratch) / "wheels"
        _pip(["wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(root)])
        (wheel,) = wheels.glob("outpost-*.whl")
        if platform == CLOUD_FUNCTIONS:
            # Cloud Functions installs requirements.txt itself; only the product is vendored (as source).
            _pip(["install", "--quiet", "--no-compile", "--no-deps", "--target", str(staging), str(wheel)])
            for metadata in staging.glob("outpost-*.dist-info"):
                shutil.rmtree(metadata)
            (staging / "requirements.txt").write_text("\n".join(requirements(root, extras)) + "\n")
            (staging / "main.py").write_text(_cloud_functions_main(settings))
        else:
            _pip(["install", "--quiet", "--no-compile", "--target", str(staging), *LAMBDA_PLATFORMS[platform],
                  str(wheel), *requirements(root, extras)])
        # The wheel is built from the source tree, which may still hold the sandbox: never ship it.
        shutil.rmtree(staging / "outpost" / "sandbox", ignore_errors=True)
        for name in settings.enabled_checks():
            module = staging / entry_module(name)
            module.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / entry_module(name), module)
        environments = staging / "infra" / "environments"
        environments.mkdir(parents=True)
        shutil.copy2(config_file, environments / config_file.name)
        files = [path for path in sorted(staging.rglob("*")) if path.is_file() and _ships(path.relative_to(staging))]
        names = [path.relative_to(staging).as_posix() for path in files]
        forbidden = forbidden_entries(names, platform)
        if forbidden:
            raise PackagingError(f"bundle for {platform} would contain {', '.join(forbidden)} (extras: "
                                 f"{', '.join(extras) or 'none'}); refusing to write {archive.name}")
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
            for path, name in zip(files, names, strict=True):
                bundle.write(path, name)


def _ships(relative: Path) -> bool:
    parts = relative.parts
    if parts[0] in _SKIPPED_TOP_LEVEL or "__pycache__" in parts or relative.suffix in _SKIPPED_SUFFIXES:
        return False
    return not (len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _SKIPPED_METADATA)


def _cloud_functions_main(settings: Settings) -> str:
    lines = [
        f'"""Cloud Functions entry points of environment {settings.environment!r}: deploy each check with',
        "`--entry-point <name below>`. Generated by `outpost package --platform gcf`; do not edit.\"\"\"",
        "",
    ]
    for name in settings.enabled_checks():
        package = entry_module(name).removesuffix(".py").replace("/", ".")
        lines.append(f"from {package} import http as {name.replace('-', '_')}")
    return "\n".join(lines) + "\n"


def describe(archive: Path) -> str:
    """`<name>: <size> MB, <n> files`, for the packaging summary."""
    with zipfile.ZipFile(archive) as bundle:
        count = len(bundle.namelist())
    return f"{archive.name}: {archive.stat().st_size / 1_000_000:.1f} MB, {count} files"


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
    if not args.functions_only:
        settings = load_settings(environment_file(args.env, root))
        extras = required_extras(settings, args.platform)
        print(f"{describe(target / archive_name(args.env, args.platform))} "
              f"(platform {args.platform}; extras: {', '.join(extras) or 'none'})")
    return 0
