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
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from outpost import registry
from outpost.config import CHECK_NAME_PATTERN, Settings
from outpost.errors import InvocationError, ReportError
from outpost.holdback.decision import HoldRequest, Window, parse_request, windows
from outpost.logs import emit
from outpost.recurring import TICK, due, open_minutes
from outpost.strict import StrictScalars
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
    at = now()
    # A monitor a recurring window keeps open longer than the hold is left alone: a shorter window would cut the
    # maintenance short (both set the end), and a rollback would end it.
    planned: list[Window] = []
    kept: list[Window] = []
    for window in windows(settings, request.parent, at):
        (kept if open_minutes(settings, window.check, at) >= window.minutes else planned).append(window)
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
        "in_recurring_window": [w.check for w in kept],
    }
    say = _log if log else _quiet
    if not planned:
        why = "in a recurring maintenance window" if kept else "no enabled dependant has a monitor to hold"
        say(request, "INFO", f"{request.parent} {request.status}: nothing to hold ({why})")
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


# --- recurring maintenance windows ---------------------------------------------------------------------------

RECURRING = "maintenance window"


class TickRequest(StrictScalars):
    """A scheduled call of the inhibitor on Cloud Functions (Cloud Scheduler's body): open the recurring windows
    that are due. On AWS the EventBridge scheduled event is the tick."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    environment: str = Field(pattern=CHECK_NAME_PATTERN, max_length=63)
    tick: Literal["maintenance-windows"]


def is_tick(document: object) -> bool:
    """Whether `document` is a tick: an EventBridge scheduled event, or a `TickRequest`-shaped body."""
    if not isinstance(document, dict):
        return False
    if document.get("source") == "aws.events" and document.get("detail-type") == "Scheduled Event":
        return True
    return document.get("tick") == TICK


def tick(
    settings: Settings,
    document: object,
    *,
    connect: Connect | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    log: bool = True,
) -> dict[str, Any]:
    """Open the recurring windows due at `now` (`outpost.recurring.due`), each all or nothing, for what is left of
    it; the outcome, as logged. InvocationError: a body for another environment or malformed. ReportError, after
    every window was tried: one could not be opened (its monitors alert as without it; a later tick within the
    lookback tries again)."""
    if isinstance(document, dict) and "tick" in document:
        try:
            request = TickRequest.model_validate(document)
        except ValidationError as error:
            item = error.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in item["loc"]) or "(request)"
            raise InvocationError(f"tick refused: {where}: {item['msg']}") from None
        if request.environment != settings.environment:
            raise InvocationError(
                f"tick refused: it is for environment {request.environment!r}, this inhibitor serves "
                f"{settings.environment!r}"
            )
    at = now()
    opening = due(settings, at)
    outcome: dict[str, Any] = {
        "environment": settings.environment,
        "opened": [
            {"window": d.name, "start": d.start.isoformat(), "minutes": d.minutes, "checks": sorted(d.targets)}
            for d in opening
        ],
    }
    if not opening:
        return outcome
    if connect is None:
        connect = connector(settings, RECURRING)
    failures: list[str] = []
    for window in opening:
        try:
            with connect() as client:
                start_windows(window.targets, window.minutes, client, connect, say=lambda _line: None)
        except ReportError as error:
            failures.append(f"{window.name}: {error}")
            if log:
                emit(
                    "ERROR",
                    f"inhibitor: maintenance window {window.name} NOT opened: {error}",
                    outcome="maintenance",
                    environment=settings.environment,
                )
            continue
        if log:
            emit(
                "INFO",
                f"inhibitor: maintenance window {window.name} (started {window.start.isoformat()}) opened for "
                f"{window.minutes} min on {', '.join(window.targets)}",
                outcome="maintenance",
                environment=settings.environment,
            )
    if failures:
        raise ReportError("recurring maintenance windows not opened: " + "; ".join(failures))
    return outcome
