"""The inhibitor's function: `make_inhibitor_handler()` (AWS Lambda) and `make_inhibitor_target()` (Cloud Functions).

The one deployed identity that holds the Vigilmon API key (`outpost.holdback.inhibitor`). Settings load at import
(cold start) and are refused unless `vigilmon.api_key` and `hold_back.enabled` or `maintenance_windows` are set;
the key is resolved then, so a function that cannot read it fails its start loudly rather than every request.
Lambda receives a hold request as the event of an asynchronous invocation, and a refused or failed one raises
(the invocation fails and is counted); Cloud Functions receives it as a POST body (the platform checks the
caller's ID token first): 200 with the outcome, 400 refused, 405 another method, 502 when Vigilmon did not open
the windows. A tick (the EventBridge schedule's event on AWS, Cloud Scheduler's `{"environment", "tick"}` body on
Cloud Functions) opens the recurring maintenance windows that are due instead (`inhibitor.tick`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from outpost.config import Settings
from outpost.deploy import deploys_inhibitor
from outpost.errors import ConfigError, InvocationError, ReportError
from outpost.holdback.inhibitor import WHY, handle, is_tick, tick
from outpost.logs import emit, sanitize
from outpost.runtime.common import JSON_HEADERS
from outpost.runtime.events import MAX_BODY_BYTES, parse_body
from outpost.settings import CONFIG_ENV, ENVIRONMENT_ENV, settings_from_environment
from outpost.windows import Connect, connector

if TYPE_CHECKING:
    import flask

NO_CHECK: Final = ""
"""`load_settings`' `only` for a function that runs no check: the file is validated whole, no check's own rules."""


@functools.lru_cache(maxsize=4)
def _cold_start(config: str | None, environment: str | None) -> tuple[Settings, Connect]:
    environ = {key: value for key, value in ((CONFIG_ENV, config), (ENVIRONMENT_ENV, environment)) if value}
    settings = settings_from_environment(environ, only=NO_CHECK)
    if not deploys_inhibitor(settings):
        raise ConfigError(
            f"environment {settings.environment} neither holds back nor declares maintenance windows",
            ["hold_back.enabled: off and no maintenance_windows, but the inhibitor's function was started"],
        )
    return settings, connector(settings, WHY)


def inhibitor_settings() -> tuple[Settings, Connect]:
    """The process's settings and its Vigilmon connection (the key resolved once); ConfigError otherwise."""
    return _cold_start(os.environ.get(CONFIG_ENV), os.environ.get(ENVIRONMENT_ENV))


def make_inhibitor_handler() -> Callable[[Any, Any], dict[str, Any]]:
    settings, connect = inhibitor_settings()

    def handler(event: Any, context: Any) -> dict[str, Any]:
        try:
            if is_tick(event):  # the EventBridge schedule: open the recurring windows that are due
                return tick(settings, event, connect=connect)
            return handle(settings, event, connect=connect)
        except InvocationError as error:
            emit("WARNING", f"inhibitor: {error}", outcome="hold-back refused", environment=settings.environment)
            raise  # a ReportError too: `handle` logged which windows were rolled back

    handler.__name__ = handler.__qualname__ = "handler_inhibitor"
    return handler


def make_inhibitor_target() -> Callable[[flask.Request], tuple[str, int, dict[str, str]]]:
    settings, connect = inhibitor_settings()

    def target(request: flask.Request) -> tuple[str, int, dict[str, str]]:
        if request.method.upper() != "POST":
            return _answer(405, {"error": "method not allowed (POST a hold request)"}, allow="POST")
        try:
            document = parse_body(request.stream.read(MAX_BODY_BYTES + 1))
            if is_tick(document):  # Cloud Scheduler's tick: open the recurring windows that are due
                outcome = tick(settings, document, connect=connect)
            else:
                outcome = handle(settings, document, connect=connect)
        except InvocationError as error:
            emit("WARNING", f"inhibitor: {error}", outcome="hold-back refused", environment=settings.environment)
            return _answer(400, {"error": str(sanitize(str(error)))})
        except ReportError as error:
            return _answer(502, {"error": str(sanitize(str(error)))})
        return _answer(200, outcome)

    target.__name__ = target.__qualname__ = "http_inhibitor"
    return target


def _answer(status: int, body: dict[str, Any], allow: str | None = None) -> tuple[str, int, dict[str, str]]:
    headers = dict(JSON_HEADERS)
    if allow:
        headers["Allow"] = allow
    return json.dumps(body), status, headers
