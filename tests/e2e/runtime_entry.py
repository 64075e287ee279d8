"""A check's entry module as each platform meets it: imported fresh as Lambda imports it on a cold start,
served by functions-framework as Cloud Functions serves it, and called with a scheduled event."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import functions_framework
from werkzeug.serving import make_server

from kit.entries import cold_import
from outpost.runtime.common import CheckUnhealthy
from samples.aws_events import SCHEDULED_EVENT


def lambda_module(entry: Path) -> ModuleType:
    """Import the entry module as Lambda would on a cold start (a new module object each time)."""
    return cold_import(entry)


@contextmanager
def served_http_target(entry: Path) -> Iterator[str]:
    """The entry module's `http` target under functions-framework on a local port; yields its URL."""
    app = functions_framework.create_app(target="http", source=str(entry))  # type: ignore[no-untyped-call]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(5)


def scheduled(module: ModuleType) -> dict[str, Any]:
    """The scheduled Lambda run's result, with `raised`: whether the invocation failed (unhealthy)."""
    try:
        result: dict[str, Any] = module.handler(SCHEDULED_EVENT, None)
    except CheckUnhealthy as unhealthy:
        return {**unhealthy.result, "raised": True}
    return {**result, "raised": False}
