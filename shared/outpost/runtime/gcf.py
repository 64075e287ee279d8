"""Google Cloud Functions adapter: `make_target(check)` returns a functions-framework HTTP function.

Settings load at import (cold start), so a bad configuration stops the server from starting rather than serving
a function that cannot work. Outcomes as docs/contracts.md "Exit codes and platform mapping"; a body is read at
most to `MAX_BODY_BYTES` + 1. Under gunicorn each worker's SIGTERM/SIGINT ends it at once, wrapping
`Worker.init_signals` (functions-framework has no hook): gunicorn's graceful stop would let a run in flight ping
after the platform stopped the instance. flask is imported for type checking only (the Lambda bundle lacks it).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from outpost import registry
from outpost.holdback.senders import INHIBITOR_URL_ENV, sender_for
from outpost.logs import emit
from outpost.runtime.common import JSON_HEADERS, cold_start_settings, run_http, stop_at_signals
from outpost.runtime.events import MAX_BODY_BYTES, HttpRequest

if TYPE_CHECKING:
    import flask

HttpTarget = Callable[["flask.Request"], tuple[str, int, dict[str, str]]]


def make_target(check_name: str) -> HttpTarget:
    settings = cold_start_settings(check_name)
    hold = sender_for(settings, "gcf")
    if settings.hold_back.enabled and hold is None and registry.dependants(check_name):
        emit(
            "WARNING",
            f"{check_name}: hold_back.enabled, but no inhibitor URI (hold_back.inhibitor_url, ${INHIBITOR_URL_ENV}): "
            "this check's dependants are not held back while it fails (they alert); deploy with infra/gcp",
            check=check_name,
            environment=settings.environment,
        )
    if "functions_framework" in sys.modules:
        _stop_gunicorn_workers_at_signals(check_name)

    def target(request: flask.Request) -> tuple[str, int, dict[str, str]]:
        # One byte past the cap is enough for `parse_options` to refuse a larger body (400) unread.
        parsed = HttpRequest(
            method=request.method.upper(),
            query=list(request.args.items(multi=True)),
            body=request.stream.read(MAX_BODY_BYTES + 1),
        )
        # Cloud Scheduler's POST is the schedule here: a reporting run counts towards the alert policies.
        status, answer = run_http(settings, check_name, parsed, hold, counts=True)
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
