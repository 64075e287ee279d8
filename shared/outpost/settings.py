"""Loading a whole environment's configuration, check parameters included.

`outpost.config` validates the file's shape; this module adds what needs the catalogue: that every
configured check exists and that its `params` satisfy that check's own `Params` model. The CLI
(`outpost validate`), the packaging step and every function's cold start all go through here, so
a bad field is refused the same way, with the same `path: reason` lines, everywhere. That includes the
platform rule (the check's deadline plus the heartbeat's worst case must fit in the function timeout the
platform allows), for an environment with a `deploy` section every rule of `outpost.deploy`, and hold-back's
(`outpost.holdback.decision.hold_back_problems`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from outpost import registry
from outpost.config import (
    ClusterSettings,
    KubeconfigAuth,
    Settings,
    environment_file,
    format_validation_error,
    parse_settings,
    read_settings_file,
)
from outpost.deploy import deployment_problems, timeout_problems
from outpost.deploy import run_worst_case_seconds as run_worst_case_seconds  # re-exported (the CLI's import)
from outpost.errors import ConfigError
from outpost.holdback.decision import hold_back_problems
from outpost.recurring import recurring_window_problems

CONFIG_ENV = "OUTPOST_CONFIG"
ENVIRONMENT_ENV = "OUTPOST_ENV"


def load_settings(path: str | os.PathLike[str], only: str | None = None) -> Settings:
    """Read and fully validate one environment file; ConfigError lists every bad field.

    `only` (a function's cold start) judges the check-specific rules (params, deploy rules) of that one
    check: the function runs nothing else, and every other check's were judged by `outpost validate`, by
    packaging and by its own function's cold start. The rest of the file is validated whole either way.
    """
    file = Path(path).expanduser()
    raw = read_settings_file(file)
    problems: list[str] = []
    settings: Settings | None = None
    try:
        settings = parse_settings(raw, source=str(file))
    except ConfigError as error:
        problems += error.problems
    # Parameters are checked even when the shape failed elsewhere, so one run names every problem.
    problems += check_problems(raw, only)
    if settings is not None:
        problems += timeout_problems(settings)
        problems += deployment_problems(settings, file, only)
        problems += hold_back_problems(settings)
        problems += recurring_window_problems(settings)
    if problems or settings is None:
        raise ConfigError(f"configuration {file} is invalid", sorted(dict.fromkeys(problems)))
    return settings


PARAMS_DEADLINE = "deadline_seconds"
"""Validation context of every check's `Params`: the run's deadline, for parameters that must fit in it
(e.g. apiserver-latency's scrape interval); absent when a model is validated on its own."""


def _params_context(raw: Any) -> dict[str, float]:
    cluster = raw.get("cluster") if isinstance(raw, dict) else None
    deadline = cluster.get("deadline_seconds") if isinstance(cluster, dict) else None
    if isinstance(deadline, int | float) and not isinstance(deadline, bool):
        return {PARAMS_DEADLINE: float(deadline)}
    default = ClusterSettings.model_fields["deadline_seconds"].default
    return {PARAMS_DEADLINE: float(default)} if deadline is None else {}


def check_problems(raw: Any, only: str | None = None) -> list[str]:
    """Unknown check names and bad `params` (of check `only`, when given), as `checks.NAME...: reason` lines."""
    checks = raw.get("checks") if isinstance(raw, dict) else None
    if not isinstance(checks, dict):
        return []
    problems = []
    for name, entry in checks.items():
        if str(name) not in registry.names():
            problems.append(f"checks.{name}: unknown check {str(name)!r} (known: {', '.join(registry.names())})")
            continue
        if only is not None and str(name) != only:
            continue  # importing another check's module just to judge its params is that check's cold start
        try:
            spec = registry.get(str(name))
        except KeyError as error:
            problems.append(f"checks.{name}: {error.args[0]}")
            continue
        params = entry.get("params", {}) if isinstance(entry, dict) else {}
        try:
            spec.params.model_validate(params if params is not None else {}, context=_params_context(raw))
        except ValidationError as error:
            problems += format_validation_error(error, prefix=f"checks.{name}.params")
    return problems


def settings_from_environment(environ: dict[str, str] | None = None, only: str | None = None) -> Settings:
    """Cold-start loading: $OUTPOST_CONFIG (a path) or $OUTPOST_ENV (infra/environments/<env>.yaml); `only`:
    the function's own check (`load_settings`)."""
    env = os.environ if environ is None else environ
    if env.get(CONFIG_ENV):
        return load_settings(env[CONFIG_ENV], only)
    if env.get(ENVIRONMENT_ENV):
        return load_settings(environment_file(env[ENVIRONMENT_ENV]), only)
    raise ConfigError(f"no configuration: set {CONFIG_ENV} to a file or {ENVIRONMENT_ENV} to an environment name")


def check_params(settings: Settings, name: str) -> Any:
    """The validated `Params` of check `name` (defaults when it is not configured)."""
    spec = registry.get(name)
    configured = settings.checks.get(name)
    try:
        return spec.params.model_validate(
            configured.params if configured else {}, context={PARAMS_DEADLINE: settings.cluster.deadline_seconds}
        )
    except ValidationError as error:
        raise ConfigError("invalid check parameters", format_validation_error(error, f"checks.{name}.params")) from None


DEFAULT_ENVIRONMENT = "local"
"""The embedded default: the local simulated cluster (`outpost sandbox up`)."""


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """`--config FILE | --env ENV`, shared by every command that reads a configuration."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", metavar="FILE", help="environment configuration file")
    source.add_argument("--env", metavar="ENV", help="environment name: infra/environments/ENV.yaml")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """--config, --env, $OUTPOST_CONFIG, $OUTPOST_ENV, an ad-hoc --kubeconfig, or the local sandbox.

    `--kubeconfig`/`--context` (where a command has them) replace the configured cluster auth, and every
    check's own `cluster_auth`.
    """
    kubeconfig = getattr(args, "kubeconfig", None)
    context = getattr(args, "context", None)
    if args.config:
        settings = load_settings(args.config)
    elif args.env:
        settings = load_settings(environment_file(args.env))
    elif os.environ.get(CONFIG_ENV):
        settings = load_settings(os.environ[CONFIG_ENV])
    elif os.environ.get(ENVIRONMENT_ENV):
        settings = load_settings(environment_file(os.environ[ENVIRONMENT_ENV]))
    elif kubeconfig:
        auth = KubeconfigAuth(mode="kubeconfig", path=kubeconfig, context=context)
        return Settings(environment="adhoc", cluster=ClusterSettings(name=context or "kubeconfig", auth=auth))
    else:
        settings = load_settings(environment_file(DEFAULT_ENVIRONMENT))
    if kubeconfig or context:
        current = settings.cluster.auth
        path = kubeconfig or (current.path if isinstance(current, KubeconfigAuth) else None)
        auth = KubeconfigAuth(mode="kubeconfig", path=path, context=context)
        # The command line names the identity for this run: it replaces every configured one, a check's
        # own `cluster_auth` included (a job then runs as that identity, or is refused by its RBAC).
        checks = {name: check.model_copy(update={"cluster_auth": None}) for name, check in settings.checks.items()}
        settings = settings.model_copy(
            update={"cluster": settings.cluster.model_copy(update={"auth": auth}), "checks": checks}
        )
    return settings
