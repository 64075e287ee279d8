"""Google Cloud Functions adapter: `make_target(check)` returns a functions-framework HTTP function.

Guarantees:
- settings are loaded when `make_target` runs (module import = cold start); a ConfigError raises there, so
  the functions-framework refuses to start rather than serving a function that cannot work;
- Cloud Scheduler's POST (optional JSON body) and an on-demand GET run the check; the response is
  `(json body, status, headers)`: 200 ok/degraded, 503 failed/error (Cloud Scheduler records the job run
  as failed), 400 malformed, 405 for other methods.

flask is imported for type checking only: the Lambda bundle imports this module's siblings without it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from outpost.runtime.common import JSON_HEADERS, cold_start_settings, run_http
from outpost.runtime.events import HttpRequest

if TYPE_CHECKING:
    import flask

HttpTarget = Callable[["flask.Request"], tuple[str, int, dict[str, str]]]


def make_target(check_name: str) -> HttpTarget:
    settings = cold_start_settings(check_name)

    def target(request: flask.Request) -> tuple[str, int, dict[str, str]]:
        parsed = HttpRequest(
            method=request.method.upper(),
            query=list(request.args.items(multi=True)),
            body=request.get_data(cache=False),
        )
        status, body = run_http(settings, check_name, parsed)
        headers = dict(JSON_HEADERS)
        if status == 405:
            headers["Allow"] = "GET, POST"
        return json.dumps(body), status, headers

    target.__name__ = target.__qualname__ = f"http_{check_name.replace('-', '_')}"
    return target
