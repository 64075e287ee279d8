"""Where a bundle runs: the platforms `outpost package` builds for, the deployable settings of an environment,
the platform the file asks for (a request it contradicts is refused), and the extras and lock that platform takes.

Pure decisions over validated settings, no file written: the bundle, the records and the generated sections all
ask here, so a build cannot take one platform's wheels and another's template.
"""

from __future__ import annotations

import platform as host_platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from outpost import registry
from outpost.config import Settings, environment_file
from outpost.deploy import (
    INHIBITOR,
    NOTIFIER,
    deploys_inhibitor,
    deploys_notifier,
    lambda_architecture,
)
from outpost.errors import ConfigError, PackagingError
from outpost.settings import load_settings

RUNTIME_PYTHON: Final = (3, 11)

CLOUD_FUNCTIONS_LOCK: Final = "cloudfunctions-x86_64"
"""Cloud Functions (2nd gen) builds and runs on x86_64 Linux; Lambda's locks are `lambda-<architecture>`."""
CLOUD_FUNCTIONS: Final = "gcf"
GCP: Final = "gcp"
"""`--platform gcp`: the Google Cloud build (Cloud Functions source + Terraform variables); `gcf` is its older name."""
HOST: Final = "host"
PLATFORMS: Final = ("aws-arm64", "aws-x86_64", GCP, CLOUD_FUNCTIONS, HOST)


def entry_module(check: str) -> str:
    """`functions/<check_with_underscores>/main.py`, relative to the bundle root."""
    return f"functions/{check.replace('-', '_')}/main.py"


def entry_functions(settings: Settings) -> list[str]:
    """The functions a bundle serves, each from its `entry_module`: every enabled check, the inhibitor when
    hold-back is on or recurring windows are declared (the one function holding the Vigilmon API key), and the
    notifier when messages are on."""
    return [
        *settings.enabled_checks(),
        *([INHIBITOR] if deploys_inhibitor(settings) else []),
        *([NOTIFIER] if deploys_notifier(settings) else []),
    ]


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


def required_extras(settings: Settings, platform: str) -> list[str]:
    """The `[project.optional-dependencies]` this environment reaches on this platform (rule: the package docstring)."""
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


def lock_target(platform: str, architecture: str | None) -> str:
    """The lock a bundle installs from: Cloud Functions', or Lambda's for the function's architecture (a `host`
    build has been checked to run on that architecture, so it installs the same pins)."""
    return CLOUD_FUNCTIONS_LOCK if platform == CLOUD_FUNCTIONS else f"lambda-{architecture}"
