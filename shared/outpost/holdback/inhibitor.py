"""The inhibitor: opens the maintenance windows a failing parent's hold request asks for.

It is the one deployed identity that holds the Vigilmon API key (the checks' functions hold heartbeat URLs only).
A request names a parent and its status, nothing else: the monitors and the lengths come from this inhibitor's
own configuration (`decision.windows`), so the most a request can do is renew the windows a real failure of a
real, enabled parent would open. Each window is bounded by `vigilmon.maintenance_max_minutes`, never on the
parent's own monitor, and opened all or nothing (`outpost.windows`): when one fails, the ones opened are ended
again and the request fails, so the dependants alert as they would without hold-back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from outpost import registry
from outpost.config import Settings
from outpost.errors import InvocationError, ReportError
from outpost.holdback.decision import HoldRequest, parse_request, windows
from outpost.logs import emit
from outpost.windows import Connect, connector, start_windows

WHY = "hold-back"


def handle(
    settings: Settings,
    document: object,
    *,
    connect: Connect | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    log: bool = True,
) -> dict[str, Any]:
    """Open the windows `document` (a `HoldRequest`) asks for; the outcome, as logged.

    InvocationError: the request is refused (malformed, another environment, a parent that is unknown, disabled
    or hold-back off): nothing was sent. ReportError: a window could not be opened; the others were ended.
    `log`: write the one line of the outcome (the inhibitor's function does; a local run puts it in the result)."""
    request = parse_request(document)
    refusal = _refusal(settings, request)
    if refusal:
        raise InvocationError(f"hold request for {request.parent} refused: {refusal}; nothing was held")
    planned = windows(settings, request.parent, now())
    parent_monitor = settings.checks[request.parent].monitor_id
    if any(window.monitor_id == parent_monitor for window in planned):  # `windows` never does; a second lock
        raise InvocationError(f"hold request for {request.parent} refused: it would hold the parent's own monitor")
    outcome: dict[str, Any] = {
        "environment": request.environment,
        "parent": request.parent,
        "parent_status": request.status,
        "held": [
            {"check": w.check, "monitor_id": w.monitor_id, "minutes": w.minutes, "until": w.until.isoformat()}
            for w in planned
        ],
    }
    say = _log if log else _quiet
    if not planned:
        say(request, "INFO", f"{request.parent} {request.status}: no enabled dependant has a monitor to hold")
        return outcome
    if connect is None:
        connect = connector(settings, WHY)
    try:
        with connect() as client:
            start_windows(
                {w.check: w.monitor_id for w in planned},
                {w.check: w.minutes for w in planned},
                client,
                connect,
                say=lambda _line: None,  # the outcome is one line, below
            )
    except ReportError as error:
        say(request, "ERROR", f"{request.parent} {request.status}: dependants NOT held back (they alert): {error}")
        raise
    held = ", ".join(f"{w.check} {w.minutes} min" for w in planned)
    say(request, "INFO", f"{request.parent} {request.status}: held back {len(planned)} dependant(s): {held}")
    return outcome


def _refusal(settings: Settings, request: HoldRequest) -> str | None:
    if request.environment != settings.environment:
        return f"it is for environment {request.environment!r}, this inhibitor serves {settings.environment!r}"
    if not settings.hold_back.enabled:
        return f"hold_back.enabled is off in environment {settings.environment!r}"
    if request.parent not in registry.names():
        return "not a check of the catalogue"
    configured = settings.checks.get(request.parent)
    if configured is None or not configured.enabled:
        return f"not enabled in environment {settings.environment!r}"
    return None


def _log(request: HoldRequest, level: str, message: str) -> None:
    emit(level, f"inhibitor: {message}", check=request.parent, outcome="hold-back", environment=request.environment)


def _quiet(request: HoldRequest, level: str, message: str) -> None:
    pass
