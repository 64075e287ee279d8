"""Google Cloud Functions: the Terraform variables of infra/gcp, the bundle's root `main.py` and its
`requirements.txt` (the environment's subset of the lock, every pin with its hashes).

Derived from the validated settings and the lock alone, so Terraform deploys exactly what was validated and built,
and Cloud Build installs exactly the locked files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from outpost.config import Settings
from outpost.deploy import (
    INHIBITOR,
    NOTIFIER,
    SERVICE,
    alarm_name,
    check_secret_references,
    cron_schedule,
    deploys_inhibitor,
    deploys_notifier,
    function_name,
    function_timeout_seconds,
    inhibitor_secret_references,
    inhibitor_service_account,
    inhibitor_timeout_seconds,
    notifier_service_account,
    notifier_timeout_seconds,
    runbook_path,
    schedule_minutes,
    secret_store_name,
    service_accounts,
    severity,
)
from outpost.recurring import TICK, TICK_MINUTES
from outpost.tooling import alerting
from outpost.tooling.packaging.locks import Lock, requirements_text
from outpost.tooling.packaging.platforms import entry_functions, entry_module

CLOUD_FUNCTIONS_RUNTIME: Final = "python311"
CLOUD_FUNCTIONS_ENTRY_POINT: Final = "http"
CHECK_ENV: Final = "OUTPOST_CHECK"
"""Names the check a Cloud Functions instance serves through the root main.py's `http` target."""
TERRAFORM_VARIABLES: Final = "terraform.tfvars.json"
TERRAFORM_DIRECTORY: Final = "infra/gcp"
SCHEDULER_DEADLINE_MARGIN_SECONDS: Final = 30
"""Cloud Scheduler waits this long beyond the function timeout before it counts an attempt as timed out."""
SCHEDULER_DEADLINE_RANGE: Final = (15, 1800)


def alert_policies(settings: Settings) -> dict[str, Any]:
    """infra/gcp's `alarms`: one Cloud Monitoring alert policy per check and rule (`outpost.tooling.alerting`), on
    the run-count metric: more than `threshold` runs of `status` within the last `window_seconds`, met for
    `wait_seconds`; held back (`alerting.monitoring_policy`), AND each `quiet` condition: every check of `checks`
    had fewer than `runs` failed-or-error runs within the last `window_seconds`, for `duration_seconds`."""
    env = settings.environment
    policies: dict[str, Any] = {}
    for name in settings.enabled_checks():
        for rule in alerting.rules(settings, name):
            policy = alerting.monitoring_policy(settings, rule)
            condition = policy.own
            summary = alerting.summary(settings, rule)
            if policy.held is not None:
                summary += f"; {alerting.held_note(policy.held)}"
            policies[f"{name}/{rule.key}"] = {
                "check": name,
                "display_name": alarm_name(env, name, rule.key),
                "status": condition.outcome,
                "window_seconds": condition.alignment_seconds,
                "threshold": int(condition.threshold),
                "wait_seconds": condition.duration_seconds,
                "quiet": [
                    {
                        "checks": list(quiet.parents),
                        "window_seconds": quiet.alignment_seconds,
                        "runs": quiet.runs,
                        "duration_seconds": quiet.duration_seconds,
                    }
                    for quiet in policy.quiet
                ],
                "tier": rule.tier,
                "summary": summary,
                "runbook_path": runbook_path(name),
                "logs_query": alerting.logs_explorer_query(env, name),
            }
    return policies


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
        "secrets": secret_manager_secrets(check_secret_references(settings)),
        "inhibitor_secrets": secret_manager_secrets(inhibitor_secret_references(settings)),
        "inhibitor": inhibitor_variables(settings),
        "notifier": notifier_variables(settings),
        "runtime_account_id": accounts["runtime"],
        "invoker_account_id": accounts["invoker"],
        "gke_cluster_viewer": settings.cluster.auth.mode == "gke",
        "alarms": alert_policies(settings),
    }


def secret_manager_secrets(references: list[tuple[str, str]]) -> list[str]:
    """The Secret Manager secrets (`projects/P/secrets/S`, no version) `references` read, sorted."""
    found = {secret_store_name(text) for _path, text in references}
    return sorted(name for scheme, name in (item for item in found if item is not None) if scheme == "gcpsm")


def inhibitor_variables(settings: Settings) -> dict[str, Any] | None:
    """infra/gcp's `inhibitor`: its function (entry point `inhibitor` of the generated main.py), its timeout and
    service account, and its tick's schedule and body with recurring windows; None when it is not deployed."""
    if not deploys_inhibitor(settings):
        return None
    env = settings.environment
    return {
        "function_name": function_name(env, INHIBITOR),
        "description": f"Outpost inhibitor ({env}): holds back the dependants of a failing check",
        "entry_point": INHIBITOR,
        "account_id": inhibitor_service_account(env),
        "timeout_seconds": inhibitor_timeout_seconds(settings),
        # With recurring maintenance windows, a Cloud Scheduler job ticks it (`outpost.recurring`).
        "schedule": cron_schedule(TICK_MINUTES) if settings.maintenance_windows else None,
        "attempt_deadline_seconds": min(
            max(inhibitor_timeout_seconds(settings) + SCHEDULER_DEADLINE_MARGIN_SECONDS, SCHEDULER_DEADLINE_RANGE[0]),
            SCHEDULER_DEADLINE_RANGE[1],
        ),
        "tick_body": json.dumps({"environment": env, "tick": TICK}, sort_keys=True),
    }


def notifier_variables(settings: Settings) -> dict[str, Any] | None:
    """infra/gcp's `notifier`: its function (entry point `notifier` of the generated main.py, a CloudEvent function
    on the incidents topic), its timeout and service account, and the incidents topic's name; None when messages
    are off. The topic it publishes to is the `messages_topic` variable, the deployer's."""
    if not deploys_notifier(settings):
        return None
    env = settings.environment
    return {
        "function_name": function_name(env, NOTIFIER),
        "description": f"Outpost notifier ({env}): what to do, on each alert policy's incident",
        "entry_point": NOTIFIER,
        "account_id": notifier_service_account(env),
        "timeout_seconds": notifier_timeout_seconds(settings),
        "incidents_topic": f"{SERVICE}-{env}-incidents",
    }


def terraform_path(archive: Path, root: Path) -> str:
    """The archive's path as Terraform sees it from infra/gcp (`terraform -chdir=infra/gcp`), else absolute."""
    try:
        relative = archive.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(archive.resolve())
    return "../../" + relative


def cloud_functions_requirements(lock: Lock, extras: Iterable[str]) -> str:
    """requirements.txt for Cloud Functions: the environment's subset of the lock, every pin with its hashes, sorted,
    so Cloud Build installs exactly the locked files (pip's hash-checking mode) and two builds match byte for byte."""
    header = (
        f"# Written by `outpost package` from {lock.shown} (`make lock`): the dependencies of this environment's\n"
        f"# functions, the core and the extras {', '.join(extras) or '(none)'}, each with the SHA-256 of its files.\n"
        "# Edit pyproject.toml and run `make lock`, never this file.\n"
    )
    return requirements_text(lock.subset(extras), header)


_CLOUD_FUNCTIONS_MAIN = '''"""Cloud Functions entry points of environment {environment!r}. Generated by `outpost package
--platform gcp`; do not edit.

`http` (infra/gcp's entry point) serves the check named by ${check_env}; `<check_with_underscores>` serves
that check (`--entry-point apiserver_health`); `inhibitor`, with hold-back on, the inhibitor; `notifier`, with
messages on, the notifier (a CloudEvent function). Each imports
only its own entry module, on first use: that import is the cold start, which loads and validates
$OUTPOST_CONFIG for that check alone.
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


def cloud_functions_main(settings: Settings) -> str:
    modules = {name: entry_module(name).removesuffix(".py").replace("/", ".") for name in entry_functions(settings)}
    return _CLOUD_FUNCTIONS_MAIN.format(
        environment=settings.environment, check_env=CHECK_ENV, modules=json.dumps(modules, indent=4, sort_keys=True)
    )
