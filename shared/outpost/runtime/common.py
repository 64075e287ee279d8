"""What the Lambda and GCF adapters share: cold-start settings, and result -> outcome mapping.

Settings load once per process from `$OUTPOST_CONFIG`/`$OUTPOST_ENV`, and a bad configuration or a check the
environment does not enable raises at import, so the platform reports a failed start rather than a function that
stays silent. Outcomes follow docs/contracts.md "Exit codes and platform mapping" (scheduled failed/error raise
`CheckUnhealthy` so error metrics count them). `stop_at_signals` ends the process at a stop with no ping after it.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Final

from outpost import interrupt, registry
from outpost.config import Settings
from outpost.errors import ConfigError, InvocationError, OutpostError
from outpost.holdback.senders import HoldSender
from outpost.logs import dumps, emit, new_run_id, sanitize, structured
from outpost.runner import run_check
from outpost.runtime.events import ALLOWED_METHODS, HttpRequest, parse_options
from outpost.settings import CONFIG_ENV, ENVIRONMENT_ENV, settings_from_environment

JSON_HEADERS: Final = {"Content-Type": "application/json", "Cache-Control": "no-store"}


class CheckUnhealthy(OutpostError):
    """A scheduled run ended failed or error: raised so the platform counts the invocation as failed."""

    def __init__(self, result_dict: dict[str, Any]) -> None:
        self.result = result_dict
        super().__init__(f"{result_dict['check']} {result_dict['status']}: {result_dict['summary']}")


@functools.lru_cache(maxsize=8)
def _load(config: str | None, environment: str | None, check_name: str) -> Settings:
    environ = {key: value for key, value in ((CONFIG_ENV, config), (ENVIRONMENT_ENV, environment)) if value}
    # Only this function's check is imported and judged: its cold start is one check, not the catalogue.
    return settings_from_environment(environ, only=check_name)


def cold_start_settings(check_name: str) -> Settings:
    """The process's settings, validated for `check_name`; raises ConfigError loudly otherwise."""
    if check_name not in registry.names():
        raise ConfigError(
            f"entry point for unknown check {check_name!r}", [f"checks.{check_name}: not in the catalogue"]
        )
    settings = _load(os.environ.get(CONFIG_ENV), os.environ.get(ENVIRONMENT_ENV), check_name)
    configured = settings.checks.get(check_name)
    if configured is None or not configured.enabled:
        state = "not configured" if configured is None else "disabled"
        raise ConfigError(
            f"environment {settings.environment} does not run {check_name}",
            [f"checks.{check_name}: {state}, but a function for it was started"],
        )
    return settings


def stop_line(check_name: str, platform: str) -> interrupt.StopHook:
    """The last log line of a function process stopped by a signal (written straight to stdout's descriptor)."""

    def write(signum: int) -> None:
        name, code = interrupt.signal_name(signum), interrupt.exit_code(signum)
        record = structured(
            "WARNING",
            f"{check_name}: {platform} process stopped by {name}: the run in progress, "
            f"if any, ends unreported (no heartbeat after a stop); exit {code}",
            check=check_name,
            outcome="stopped",
            signal=name,
        )
        interrupt.write_line(1, dumps(record))

    return write


def stop_at_signals(check_name: str, platform: str) -> None:
    """SIGTERM/SIGINT end this process at once (`outpost.interrupt.install`; the main thread only)."""
    interrupt.install(stop_line(check_name, platform))


def result_payload(settings: Settings, result: Any, run_id: str | None = None) -> dict[str, Any]:
    """The run's answer: the result, its environment and its run id (the id its log line carries)."""
    payload: dict[str, Any] = {"environment": settings.environment, **result.model_dump(mode="json")}
    if run_id:
        payload["run_id"] = run_id
    return dict(sanitize(payload))


def run_scheduled(
    settings: Settings,
    check_name: str,
    hold: HoldSender | None = None,
    *,
    run_id: str | None = None,
    metrics: bool = False,
) -> dict[str, Any]:
    """A scheduled run: reports (and, failing, asks `hold` to hold its dependants back), returns the result dict if
    healthy, raises CheckUnhealthy otherwise. `run_id`: the platform's invocation id (a new one otherwise);
    `metrics`: the line carries the run metrics (AWS)."""
    run_id = run_id or new_run_id()
    result = run_check(settings, check_name, report=True, hold=hold, run_id=run_id, counted=True, metrics=metrics)
    payload = result_payload(settings, result, run_id)
    if not result.status.healthy:
        raise CheckUnhealthy(payload)
    return payload


def run_http(
    settings: Settings,
    check_name: str,
    request: HttpRequest,
    hold: HoldSender | None = None,
    *,
    run_id: str | None = None,
    counts: bool = False,
) -> tuple[int, dict[str, Any]]:
    """An HTTP run: (status code, JSON body). `counts`: a reporting run counts towards the cloud alarms (Cloud
    Functions, where Cloud Scheduler's POST is the schedule); a `report=false` run never does, nor any HTTP run on
    AWS (on demand: the schedule is EventBridge's)."""
    if request.method not in ALLOWED_METHODS:
        return 405, {"error": f"method {request.method[:10]} not allowed (use GET or POST)"}
    try:
        options = parse_options(request)
    except InvocationError as error:
        return bad_request(check_name, error)
    run_id = run_id or new_run_id()
    result = run_check(
        settings, check_name, report=options.report, hold=hold, run_id=run_id, counted=counts and options.report
    )
    return (200 if result.status.healthy else 503), result_payload(settings, result, run_id)


def bad_request(check_name: str, error: InvocationError) -> tuple[int, dict[str, Any]]:
    emit("WARNING", f"{check_name}: invocation refused: {error}", check=check_name, outcome="bad request")
    return 400, {"error": str(sanitize(str(error)))}
