"""AWS Lambda adapter: `make_handler(check)` returns the `handler(event, context)` of one check's function.

Settings load at import (cold start). A scheduled event's failed/error raises `CheckUnhealthy` so Lambda's Errors
metric counts it (serverless.yml sets no retries); HTTP events get proxy responses as docs/contracts.md "Exit
codes and platform mapping"; anything else is an `InvocationError`. In the Lambda runtime SIGTERM/SIGINT end the
process at once with no ping after them; elsewhere (tests) signal handling is left alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from outpost.errors import InvocationError
from outpost.holdback.senders import sender_for
from outpost.runtime.common import (
    JSON_HEADERS,
    bad_request,
    cold_start_settings,
    run_http,
    run_scheduled,
    stop_at_signals,
)
from outpost.runtime.events import HttpRequest, parse_lambda_event

LambdaHandler = Callable[[Any, Any], dict[str, Any]]
RUNTIME_API_ENV = "AWS_LAMBDA_RUNTIME_API"
"""Set by Lambda in every execution environment (the runtime's own endpoint): we are the runtime's process."""


def make_handler(check_name: str) -> LambdaHandler:
    settings = cold_start_settings(check_name)
    hold = sender_for(settings, "aws")
    if os.environ.get(RUNTIME_API_ENV):
        stop_at_signals(check_name, "lambda")

    def handler(event: Any, context: Any) -> dict[str, Any]:
        is_http = isinstance(event, dict) and ("httpMethod" in event or event.get("version") == "2.0")
        try:
            parsed = parse_lambda_event(event)
        except InvocationError as error:
            if not is_http:
                raise
            status, body = bad_request(check_name, error)
            return _proxy_response(status, body)
        if isinstance(parsed, HttpRequest):
            status, body = run_http(settings, check_name, parsed, hold)
            return _proxy_response(status, body)
        return run_scheduled(settings, check_name, hold)

    handler.__name__ = handler.__qualname__ = f"handler_{check_name.replace('-', '_')}"
    return handler


def _proxy_response(status: int, body: dict[str, Any]) -> dict[str, Any]:
    headers = dict(JSON_HEADERS)
    if status == 405:
        headers["Allow"] = "GET, POST"
    return {"statusCode": status, "headers": headers, "body": json.dumps(body), "isBase64Encoded": False}
