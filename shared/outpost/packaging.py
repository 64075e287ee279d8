"""`outpost package --env ENV`: the deployable build of one environment, or a refusal naming every bad field.

Packaging is the second place a bad configuration is refused (after `outpost validate`, before any cold
start): the environment file is fully validated first, `outpost.deploy`'s rules included, and an environment
without a `deploy` section (`local`) is refused: it runs locally only. Nothing is written for a refused file;
a build that fails halfway leaves no build at all (the stage's directory is emptied first), so a stale
bundle can never be mistaken for the current one.

Output, under `build/<env>/`:
- `deployment.json`: what serverless.yml deploys, read only through `infra/aws/verified-build.js`: the build
  record (SHA-256 of every input file, the environment file and the product's sources, and of the bundle)
  and, for AWS, the Serverless sections generated from the file: one function per enabled check (schedule,
  derived timeout, reserved concurrency 1, no retry, maximum event age, optional failure destination, IAM
  Function URL, `check` tag), the IAM statements (secret stores in the stage's scope, `kms:Decrypt` on a
  configured key, `sts:AssumeRole` on an EKS `role_arn`), an Errors alarm per function (SNS topic by the
  `alarmTopicArn` parameter) and the stack's tags;
- AWS: `outpost-<env>.zip`, the Lambda bundle: the product, its dependencies as wheels for the function's
  architecture, every enabled check's entry module, and the environment file at
  `infra/environments/<env>.yaml` (what `$OUTPOST_CONFIG` names at cold start);
- Cloud Functions (`--platform gcp`, or its older name `gcf`): `outpost-<env>-gcf.zip`, the product as
  source, the entry modules, the environment file, a root `main.py` whose `http` target serves the check
  named by `$OUTPOST_CHECK` (and one named target per enabled check), and `requirements.txt`, which Cloud
  Functions installs itself: the environment's subset of the Cloud Functions lock, every distribution pinned
  with `==` and the SHA-256 of its files (pip's hash-checking mode); and
  `terraform.tfvars.json`, the variables of `infra/gcp` (one function and one Cloud Scheduler job per enabled
  check, the derived timeout, the cron schedules, the Secret Manager secrets the file references, the service
  account ids), so Terraform deploys exactly what was validated and built.

Bundle guarantees:
- reproducible: the same lock and the same sources give the same bytes, whatever the building environment
  holds: the dependencies are installed from the target's lock in `infra/locks/` (outpost.locks: one per
  target, made by `make lock`), hashes required and nothing resolved (pip --require-hashes --no-deps), wheels
  only; entries sorted, fixed timestamps and modes, byte code compiled with hash-based invalidation (no mtime
  inside) and a fixed hash seed. A missing or stale lock (pyproject.toml changed since `make lock`) is refused;
- `.pyc` precompiled for the runtime's Python (3.11; another interpreter is refused) as unchecked-hash
  byte code: the bundle is immutable, so imports skip reading and hashing the sources;
- built in a fresh temporary directory from the sources themselves (never a setuptools `build/lib`);
- only the product and what the platform and the environment reach: the core dependencies, `aws` (boto3)
  for `ssm:`/`secretsmanager:` references or `eks` auth, `gcp` for `gcpsm:` or `gke`, `cloudfunctions` on
  Cloud Functions only, and the extras the enabled checks declare (`CheckSpec.extras`: `certificates`,
  cryptography, only when `apiserver-cert-expiry` or `webhook-cert-expiry` is enabled), exactly the lock's
  closure of the core and those extras (Lock.subset); never the sandbox,
  never console scripts (`bin/`) or install records naming this machine (`RECORD`, `direct_url.json`),
  never caches from the source tree;
- the architecture is checked: every ELF shared object must be built for the function's architecture and
  every wheel tag must name it (or none), so a bundle that would fail at import is refused here;
- its size, packed and unpacked, is printed; over Lambda's 250 MB unpacked it is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform as host_platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from outpost import registry
from outpost.config import EksAuth, Settings, environment_file
from outpost.deploy import (
    SERVICE,
    alarm_name,
    aws_partition,
    cron_schedule,
    function_name,
    function_timeout_seconds,
    lambda_architecture,
    schedule_minutes,
    secretsmanager_scope,
    service_accounts,
    severity,
    ssm_scope,
)
from outpost.errors import ConfigError
from outpost.errors import PackagingError as PackagingError  # its public name stays outpost.packaging's
from outpost.locks import LOCK_DIRECTORY, TARGETS, Lock, normalized_name, read_lock, requirements_text
from outpost.secrets import parse_secret_ref
from outpost.settings import load_settings

RUNTIME_PYTHON: Final = (3, 11)
LAMBDA_RUNTIME: Final = "python3.11"
CLOUD_FUNCTIONS_LOCK: Final = "cloudfunctions-x86_64"
"""Cloud Functions (2nd gen) builds and runs on x86_64 Linux; Lambda's locks are `lambda-<architecture>`."""
CLOUD_FUNCTIONS: Final = "gcf"
GCP: Final = "gcp"
"""`--platform gcp`: the Google Cloud build (Cloud Functions source + Terraform variables); `gcf` is its older name."""
HOST: Final = "host"
PLATFORMS: Final = ("aws-arm64", "aws-x86_64", GCP, CLOUD_FUNCTIONS, HOST)
CLOUD_FUNCTIONS_RUNTIME: Final = "python311"
CLOUD_FUNCTIONS_ENTRY_POINT: Final = "http"
CHECK_ENV: Final = "OUTPOST_CHECK"
"""Names the check a Cloud Functions instance serves through the root main.py's `http` target."""
TERRAFORM_VARIABLES: Final = "terraform.tfvars.json"
TERRAFORM_DIRECTORY: Final = "infra/gcp"
SCHEDULER_DEADLINE_MARGIN_SECONDS: Final = 30
"""Cloud Scheduler waits this long beyond the function timeout before it counts an attempt as timed out."""
SCHEDULER_DEADLINE_RANGE: Final = (15, 1800)
LAMBDA_UNPACKED_MAX_BYTES: Final = 262_144_000
DEPLOYMENT_FILE: Final = "deployment.json"
ALARM_TOPIC_PARAMETER: Final = "AlarmTopicArn"
MAX_EVENT_AGE_RANGE: Final = (60, 21_600)

# Never in any bundle: the sandbox is a development tool, not the product.
SANDBOX_PATHS: Final = ("outpost/sandbox/", "outpost_sandbox/")
# Never in a Lambda bundle: the Cloud Functions server and what only it pulls in.
CLOUD_FUNCTIONS_ONLY: Final = ("functions_framework", "flask", "werkzeug", "gunicorn")
# Left out of every bundle (see the module docstring).
_SKIPPED_TOP_LEVEL: Final = frozenset({"bin"})
_SKIPPED_SUFFIXES: Final = (".pyc", ".pyo")
_SKIPPED_METADATA: Final = frozenset({"RECORD", "direct_url.json"})
# The source set a build is made from, hashed into its record (infra/aws/verified-build.js walks the same).
SOURCE_DIRECTORIES: Final = ("shared/outpost", "functions", LOCK_DIRECTORY)
SOURCE_FILES: Final = ("pyproject.toml",)
_ZIP_EPOCH: Final = (1980, 1, 1, 0, 0, 0)
# ELF e_machine of each Lambda architecture.
_ELF_MACHINES: Final = {62: "x86_64", 183: "arm64"}
_WHEEL_ARCH_TAGS: Final = {"x86_64": ("x86_64", "amd64"), "arm64": ("aarch64", "arm64")}


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


def entry_module(check: str) -> str:
    """`functions/<check_with_underscores>/main.py`, relative to the bundle root."""
    return f"functions/{check.replace('-', '_')}/main.py"


def schedule_expression(minutes: int) -> str:
    return "rate(1 minute)" if minutes == 1 else f"rate({minutes} minutes)"


def archive_name(environment: str, platform: str) -> str:
    return f"outpost-{environment}-gcf.zip" if platform == CLOUD_FUNCTIONS else f"outpost-{environment}.zip"


def deployable_settings(environment: str, root: Path) -> tuple[Settings, Path]:
    """The validated settings of a deployable environment; ConfigError naming every bad field otherwise."""
    config_file = environment_file(environment, root)
    settings = load_settings(config_file)
    if settings.deploy is None:
        raise ConfigError(
            f"environment {environment!r} is not deployable",
            [
                "deploy: missing: this environment runs locally only (add deploy: {platform: aws, region: ...} to "
                "deploy it)"
            ],
        )
    return settings, config_file


def resolve_platform(settings: Settings, requested: str | None) -> tuple[str, str | None]:
    """(platform, Lambda architecture or None for Cloud Functions); a request the file contradicts is refused."""
    assert settings.deploy is not None
    if settings.deploy.platform == "gcf":
        if requested not in (None, CLOUD_FUNCTIONS, GCP):
            raise PackagingError(
                f"--platform {requested}: environment {settings.environment} deploys to "
                "Cloud Functions (deploy.platform: gcf)"
            )
        return CLOUD_FUNCTIONS, None
    architecture = lambda_architecture(settings)
    if requested == HOST:
        machine = host_architecture()
        if machine != architecture:
            raise PackagingError(
                f"--platform host builds {machine} wheels; environment {settings.environment} "
                f"deploys {architecture} (deploy.architecture)"
            )
        return HOST, architecture
    if requested not in (None, f"aws-{architecture}"):
        why = (
            "it deploys to AWS Lambda (deploy.platform: aws)"
            if requested in (GCP, CLOUD_FUNCTIONS)
            else "its wheels would not import there"
        )
        raise PackagingError(
            f"--platform {requested}: environment {settings.environment} deploys "
            f"aws-{architecture} (deploy.platform, deploy.architecture): {why}"
        )
    return f"aws-{architecture}", architecture


def host_architecture() -> str:
    machine = host_platform.machine().lower()
    return {"aarch64": "arm64", "amd64": "x86_64"}.get(machine, machine)


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
        dependencies = _bundle(settings, root, config_file, archive, chosen, architecture, Path(scratch))
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
        variables = terraform_variables(settings, _terraform_path(final, root), file_sha256(final))
        (target / TERRAFORM_VARIABLES).write_text(json.dumps(variables, indent=2) + "\n")
        deployment["terraform"] = {"directory": TERRAFORM_DIRECTORY, "variables": TERRAFORM_VARIABLES}
    (target / DEPLOYMENT_FILE).write_text(json.dumps(deployment, indent=2, sort_keys=False) + "\n")
    return target


def terraform_variables(settings: Settings, archive: str, archive_sha256: str) -> dict[str, Any]:
    """The variables of infra/gcp for this environment: everything Terraform needs that the file decides."""
    deploy = settings.deploy
    assert deploy is not None
    assert deploy.project is not None
    env = settings.environment
    timeout = function_timeout_seconds(settings)
    low, high = SCHEDULER_DEADLINE_RANGE
    checks: dict[str, Any] = {}
    for name in settings.enabled_checks():
        schedule = cron_schedule(schedule_minutes(settings, name))
        assert schedule is not None  # outpost.deploy refused the file otherwise
        checks[name] = {
            "function_name": function_name(env, name),
            "description": f"Outpost check {name} ({env}, {severity(settings, name)})",
            "schedule": schedule,
        }
    secrets = sorted(
        {
            parse_secret_ref(ref).name.partition("/versions/")[0]
            for _path, ref in settings.secret_references()
            if ref.startswith("gcpsm:")
        }
    )
    accounts = service_accounts(env)
    return {
        "environment": env,
        "project": deploy.project,
        "region": deploy.region,
        "source_archive": archive,
        "source_sha256": archive_sha256,
        "runtime": CLOUD_FUNCTIONS_RUNTIME,
        "entry_point": CLOUD_FUNCTIONS_ENTRY_POINT,
        "config_path": f"infra/environments/{env}.yaml",
        "timeout_seconds": timeout,
        "attempt_deadline_seconds": min(max(timeout + SCHEDULER_DEADLINE_MARGIN_SECONDS, low), high),
        "checks": checks,
        "secrets": secrets,
        "runtime_account_id": accounts["runtime"],
        "invoker_account_id": accounts["invoker"],
        "gke_cluster_viewer": settings.cluster.auth.mode == "gke",
    }


def _terraform_path(archive: Path, root: Path) -> str:
    """The archive's path as Terraform sees it from infra/gcp (`terraform -chdir=infra/gcp`), else absolute."""
    try:
        relative = archive.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(archive.resolve())
    return "../../" + relative


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


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
            paths += [Path(folder) / name for name in files if not name.endswith(_SKIPPED_SUFFIXES)]
    inputs = {
        path.resolve().relative_to(root.resolve()).as_posix(): file_sha256(path) for path in paths if path.is_file()
    }
    return dict(sorted(inputs.items()))


def inputs_digest(inputs: Mapping[str, str]) -> str:
    """SHA-256 of `<sha256>  <path>` lines in path order (sha256sum's format; verified-build.js computes the same)."""
    lines = "".join(f"{inputs[name]}  {name}\n" for name in sorted(inputs))
    return hashlib.sha256(lines.encode()).hexdigest()


def function_definitions(settings: Settings) -> dict[str, Any]:
    """The serverless.yml `functions:` mapping: one hardened Lambda function per enabled check."""
    assert settings.deploy is not None
    timeout = function_timeout_seconds(settings)
    functions: dict[str, Any] = {}
    for name in settings.enabled_checks():
        minutes = schedule_minutes(settings, name)
        low, high = MAX_EVENT_AGE_RANGE
        function: dict[str, Any] = {
            "handler": entry_module(name).removesuffix(".py") + ".handler",
            "description": f"Outpost check {name} ({settings.environment}, {severity(settings, name)})",
            "timeout": timeout,
            # One run at a time: a slow run makes the next scheduled one wait (throttled), never overlap.
            "reservedConcurrency": 1,
            # A failed run is counted (Errors, the alarm, the destination), never re-run by Lambda itself.
            "maximumRetryAttempts": 0,
            # A run that could not start within one period is superseded by the next one.
            "maximumEventAge": min(max(minutes * 60, low), high),
            "url": {"authorizer": "aws_iam"},
            "events": [{"schedule": {"rate": [schedule_expression(minutes)]}}],
            "tags": {"check": name},
        }
        if settings.deploy.failure_destination:
            function["destinations"] = {"onFailure": settings.deploy.failure_destination}
        functions[name] = function
    return functions


def logical_id(check: str) -> str:
    """Serverless's CloudFormation name of a function (`apiserver-health` -> `ApiserverDashhealth`)."""
    normalized = check.replace("-", "Dash").replace("_", "Underscore")
    return normalized[:1].upper() + normalized[1:]


def iam_statements(settings: Settings) -> list[dict[str, Any]]:
    """Least privilege: the secret stores the file references, in the stage's scope; its KMS key; its EKS role."""
    assert settings.deploy is not None
    env = settings.environment
    schemes = {parse_secret_ref(ref).scheme for _path, ref in settings.secret_references()}
    account = "arn:${AWS::Partition}:%s:${AWS::Region}:${AWS::AccountId}"
    statements: list[dict[str, Any]] = []
    if "ssm" in schemes:
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": {"Fn::Sub": (account % "ssm") + f":parameter{ssm_scope(env)}*"},
            }
        )
    if "secretsmanager" in schemes:
        scope = f":secret:{secretsmanager_scope(env)}*"
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": {"Fn::Sub": (account % "secretsmanager") + scope},
            }
        )
    if settings.deploy.kms_key_arn:
        region = settings.deploy.region
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["kms:Decrypt"],
                "Resource": settings.deploy.kms_key_arn,
                "Condition": {
                    "StringEquals": {
                        "kms:ViaService": [f"ssm.{region}.amazonaws.com", f"secretsmanager.{region}.amazonaws.com"]
                    }
                },
            }
        )
    auth = settings.cluster.auth
    if isinstance(auth, EksAuth) and auth.role_arn:
        statements.append({"Effect": "Allow", "Action": ["sts:AssumeRole"], "Resource": auth.role_arn})
    return statements


def resources(settings: Settings) -> dict[str, Any]:
    """CloudFormation added to the stack: the alarm topic parameter, an Errors alarm per function, and
    explicit deletion policies for the log groups Serverless creates (a removed stage takes its logs)."""
    env = settings.environment
    alarms: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for name in settings.enabled_checks():
        minutes = schedule_minutes(settings, name)
        topic = {"Fn::If": ["HasAlarmTopic", [{"Ref": ALARM_TOPIC_PARAMETER}], {"Ref": "AWS::NoValue"}]}
        alarms[f"{logical_id(name)}ErrorsAlarm"] = {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "AlarmName": alarm_name(env, name),
                "AlarmDescription": f"Outpost check {name} ({env}) failed or could not observe; Vigilmon alerts "
                "on its silent heartbeat, this alarm on the failed invocations.",
                "Namespace": "AWS/Lambda",
                "MetricName": "Errors",
                "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": f"{logical_id(name)}LambdaFunction"}}],
                "Statistic": "Sum",
                "Period": min(minutes * 60, 86_400),
                "EvaluationPeriods": 1,
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                # No data means no run finished; the heartbeat monitor covers silence.
                "TreatMissingData": "notBreaching",
                "AlarmActions": topic,
                "OKActions": topic,
                "Tags": [
                    {"Key": "service", "Value": SERVICE},
                    {"Key": "environment", "Value": env},
                    {"Key": "check", "Value": name},
                ],
            },
        }
        extensions[f"{logical_id(name)}LogGroup"] = {"DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete"}
    return {
        "Parameters": {
            ALARM_TOPIC_PARAMETER: {
                "Type": "String",
                "Default": "",
                "Description": "SNS topic ARN notified when a check's function fails (empty: alarms without actions)",
                "AllowedPattern": r"^(arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]+)?$",
            }
        },
        "Conditions": {"HasAlarmTopic": {"Fn::Not": [{"Fn::Equals": [{"Ref": ALARM_TOPIC_PARAMETER}, ""]}]}},
        "Resources": alarms,
        "extensions": extensions,
    }


def serverless_sections(settings: Settings, artifact: str) -> dict[str, Any]:
    """What serverless.yml takes from the build (through infra/aws/verified-build.js)."""
    assert settings.deploy is not None
    return {
        "region": settings.deploy.region,
        "partition": aws_partition(settings.deploy.region),
        "architecture": lambda_architecture(settings),
        "runtime": LAMBDA_RUNTIME,
        "artifact": artifact,
        "tags": {"service": SERVICE, "environment": settings.environment},
        "functions": function_definitions(settings),
        "iamStatements": iam_statements(settings),
        "resources": resources(settings),
        "functionNames": {name: function_name(settings.environment, name) for name in settings.enabled_checks()},
    }


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


def _bundle(
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
        (staging / "main.py").write_text(_cloud_functions_main(settings))
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
    for name in settings.enabled_checks():
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


def lock_target(platform: str, architecture: str | None) -> str:
    """The lock a bundle installs from: Cloud Functions', or Lambda's for the function's architecture (a `host`
    build has been checked to run on that architecture, so it installs the same pins)."""
    return CLOUD_FUNCTIONS_LOCK if platform == CLOUD_FUNCTIONS else f"lambda-{architecture}"


def cloud_functions_requirements(lock: Lock, extras: Iterable[str]) -> str:
    """requirements.txt for Cloud Functions: the environment's subset of the lock, every pin with its hashes, sorted,
    so Cloud Build installs exactly the locked files (pip's hash-checking mode) and two builds match byte for byte."""
    header = (
        f"# Written by `outpost package` from {lock.shown} (`make lock`): the dependencies of this environment's\n"
        f"# functions, the core and the extras {', '.join(extras) or '(none)'}, each with the SHA-256 of its files.\n"
        "# Edit pyproject.toml and run `make lock`, never this file.\n"
    )
    return requirements_text(lock.subset(extras), header)


def _copy_product(root: Path, staging: Path) -> None:
    """The `outpost` package from its sources: no caches, never the sandbox, nor the repository tooling (which
    writes the repository's files and is imported by nothing a function runs)."""
    shutil.copytree(
        root / "shared" / "outpost",
        staging / "outpost",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "sandbox", "tooling"),
    )


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
    if parts[0] in _SKIPPED_TOP_LEVEL or "__pycache__" in parts or relative.suffix in _SKIPPED_SUFFIXES:
        return False
    return not (len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _SKIPPED_METADATA)


_CLOUD_FUNCTIONS_MAIN = '''"""Cloud Functions entry points of environment {environment!r}. Generated by `outpost package
--platform gcp`; do not edit.

`http` (infra/gcp's entry point) serves the check named by ${check_env}; `<check_with_underscores>` serves
that check (`--entry-point apiserver_health`). Each imports only its own entry module, on first use: that
import is the cold start, which loads and validates $OUTPOST_CONFIG for that check alone.
"""

import importlib
import os

ENTRY_MODULES = {modules}


def __getattr__(name):
    if name == "http":
        check = os.environ.get("{check_env}", "")
        if check not in ENTRY_MODULES:
            raise RuntimeError(f"${check_env}={{check!r}}: not an enabled check of this environment "
                               f"(expected one of {{', '.join(sorted(ENTRY_MODULES))}})")
    else:
        check = name.replace("_", "-")
        if check not in ENTRY_MODULES:
            raise AttributeError(name)
    target = importlib.import_module(ENTRY_MODULES[check]).http
    globals()[name] = target
    return target
'''


def _cloud_functions_main(settings: Settings) -> str:
    modules = {name: entry_module(name).removesuffix(".py").replace("/", ".") for name in settings.enabled_checks()}
    return _CLOUD_FUNCTIONS_MAIN.format(
        environment=settings.environment, check_env=CHECK_ENV, modules=json.dumps(modules, indent=4, sort_keys=True)
    )


def describe(archive: Path) -> str:
    """`<name>: <size> MB (<unpacked> MB unpacked), <n> files, sha256 <prefix>`, for the packaging summary."""
    with zipfile.ZipFile(archive) as bundle:
        entries = bundle.infolist()
    unpacked = sum(entry.file_size for entry in entries)
    return (
        f"{archive.name}: {archive.stat().st_size / 1_000_000:.1f} MB ({unpacked / 1_000_000:.1f} MB unpacked), "
        f"{len(entries)} files, sha256 {file_sha256(archive)[:16]}"
    )


def _pip(arguments: list[str]) -> None:
    process = subprocess.run([sys.executable, "-m", "pip", *arguments], capture_output=True, text=True, check=False)
    if process.returncode != 0:
        tail = " | ".join(process.stderr.strip().splitlines()[-3:])
        raise PackagingError(f"pip {arguments[0]} failed: {tail}")


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
