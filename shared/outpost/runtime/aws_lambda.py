"""AWS Lambda adapter: `make_handler(check)` returns the `handler(event, context)` of one check's function.

Settings load at import (cold start). The run id is Lambda's request id. A scheduled run's line carries its
outcome as CloudWatch metrics (EMF) for the cloud alarms; its failed/error raises `CheckUnhealthy` so the
invocation counts as failed (the failure destination; serverless.yml sets no retries); HTTP events get proxy
responses as docs/contracts.md "Exit codes and platform mapping"; anything else is an `InvocationError`. In the
Lambda runtime SIGTERM/SIGINT end the process at once with no ping after them; elsewhere (tests) signal handling
is left alone.
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
        # Lambda's request id names this invocation in its own REPORT/START lines too.
        request_id = getattr(context, "aws_request_id", None)
        run_id = request_id if isinstance(request_id, str) and request_id else None
        if isinstance(parsed, HttpRequest):
            status, body = run_http(settings, check_name, parsed, hold, run_id=run_id)
            return _proxy_response(status, body)
        return run_scheduled(settings, check_name, hold, run_id=run_id, metrics=True)

    handler.__name__ = handler.__qualname__ = f"handler_{check_name.replace('-', '_')}"
    return handler


def _proxy_response(status: int, body: dict[str, Any]) -> dict[str, Any]:
    headers = dict(JSON_HEADERS)
    if status == 405:
        headers["Allow"] = "GET, POST"
    return {"statusCode": status, "headers": headers, "body": json.dumps(body), "isBase64Encoded": False}
