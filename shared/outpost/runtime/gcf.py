"""Google Cloud Functions adapter: `make_target(check)` returns a functions-framework HTTP function.

Guarantees:
- settings are loaded when `make_target` runs (module import = cold start); a ConfigError raises there, so
  the functions-framework refuses to start rather than serving a function that cannot work;
- Cloud Scheduler's POST (optional JSON body) and an on-demand GET run the check; the response is
  `(json body, status, headers)`: 200 ok/degraded, 503 failed/error (Cloud Scheduler records the job run
  as failed), 400 malformed, 405 for other methods; at most `MAX_BODY_BYTES` + 1 of a body is read (a
  larger one is refused, 400, without reading the rest into memory);
- served by functions-framework's production server (gunicorn, whose workers import nothing of ours: the
  master loads the module, then forks them), each worker's SIGTERM and SIGINT end it at once, exit 143/130:
  plugins killed, one log line, no heartbeat after the signal. gunicorn's own SIGTERM is a graceful stop that
  lets a request in flight finish (and ping) for up to its graceful timeout; the platform sends SIGTERM when
  it stops the instance, so a stop must not be followed by a ping. The handlers are installed by wrapping
  gunicorn's `Worker.init_signals` (it runs in each worker's main thread, after fork): functions-framework
  offers no hook of its own. Under another server (`--debug`'s werkzeug, a test) signals are left alone.

flask is imported for type checking only: the Lambda bundle imports this module's siblings without it.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from outpost.runtime.common import JSON_HEADERS, cold_start_settings, run_http, stop_at_signals
from outpost.runtime.events import MAX_BODY_BYTES, HttpRequest

if TYPE_CHECKING:
    import flask

HttpTarget = Callable[["flask.Request"], tuple[str, int, dict[str, str]]]


def make_target(check_name: str) -> HttpTarget:
    settings = cold_start_settings(check_name)
    if "functions_framework" in sys.modules:
        _stop_gunicorn_workers_at_signals(check_name)

    def target(request: flask.Request) -> tuple[str, int, dict[str, str]]:
        # One byte past the cap is enough for `parse_options` to refuse a larger body (400) unread.
        parsed = HttpRequest(
            method=request.method.upper(),
            query=list(request.args.items(multi=True)),
            body=request.stream.read(MAX_BODY_BYTES + 1),
        )
        status, answer = run_http(settings, check_name, parsed)
        headers = dict(JSON_HEADERS)
        if status == 405:
            headers["Allow"] = "GET, POST"
        return json.dumps(answer), status, headers

    target.__name__ = target.__qualname__ = f"http_{check_name.replace('-', '_')}"
    return target


def _stop_gunicorn_workers_at_signals(check_name: str) -> None:
    """Make every gunicorn worker forked from here stop at once at SIGTERM/SIGINT (see the module doc)."""
    try:
        workers: Any = importlib.import_module("gunicorn.workers.base")
    except ImportError:  # not served by gunicorn (functions-framework's fallback server): nothing to arm
        return
    original = workers.Worker.init_signals
    if getattr(original, "_outpost_stop", False):
        return

    def init_signals(self: Any) -> None:
        original(self)
        stop_at_signals(check_name, "functions-framework worker")

    init_signals._outpost_stop = True  # type: ignore[attr-defined]
    workers.Worker.init_signals = init_signals
