"""The hold decision, pure: which run asks for a hold, which windows it opens, how long, and the config's rules.

A run asks when its check has dependants (`outpost.registry.dependants`) and it ended `failed`, or `error` while
observing: the API server's outage is typically an `error` of apiserver-health (connection refused). A run that
observed ok or degraded and then could not ping, or was stopped, asks nothing: the component is not known to be
down. Each dependant's window lasts the parent's schedule plus the dependant's, two runs and a margin: long
enough to outlive the parent's next renewal, and the dependant's first run (and ping) after the parent
recovers, so a recovery pages nobody; bounded by `vigilmon.maintenance_max_minutes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from pydantic import ConfigDict, Field, ValidationError

from outpost import registry
from outpost.config import CHECK_NAME_PATTERN, Settings
from outpost.deploy import INHIBITOR as INHIBITOR
from outpost.deploy import run_seconds, schedule_minutes
from outpost.errors import InvocationError
from outpost.result import Result, Status
from outpost.strict import StrictScalars

HOLDING_STATUSES: Final = (Status.FAILED, Status.ERROR)


class HoldRequest(StrictScalars):
    """What a parent's run sends the inhibitor: "parent P is failing in environment E, hold its dependants".

    It carries no monitor and no duration: the inhibitor derives both from its own configuration, so a request
    can at most renew the windows a real failure of a real parent would open."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    environment: str = Field(pattern=CHECK_NAME_PATTERN, max_length=63)
    parent: str = Field(pattern=CHECK_NAME_PATTERN, max_length=63)
    status: Literal["failed", "error"]


def parse_request(document: object) -> HoldRequest:
    """A request as received; InvocationError naming the first bad field otherwise (its value never echoed)."""
    try:
        return HoldRequest.model_validate(document)
    except ValidationError as error:
        item = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in item["loc"]) or "(request)"
        raise InvocationError(f"hold request refused: {where}: {item['msg']}") from None


@dataclass(frozen=True)
class Window:
    """One maintenance window the inhibitor opens: on `check`'s monitor, for `minutes`, until about `until`."""

    check: str
    monitor_id: str
    minutes: int
    until: datetime


def request_for(settings: Settings, result: Result) -> HoldRequest | None:
    """The request `result`'s run sends, or None: hold-back off, the check disabled or without dependants, a
    healthy status, or an `error` that is no observation (observed healthy, then not pinged or stopped)."""
    if not settings.hold_back.enabled or result.status not in HOLDING_STATUSES:
        return None
    configured = settings.checks.get(result.check)
    if configured is None or not configured.enabled or not registry.dependants(result.check):
        return None
    observed = result.details.get("observed_status")
    if result.details.get("stopped") or observed in (Status.OK.value, Status.DEGRADED.value):
        return None
    status: Literal["failed", "error"] = "failed" if result.status is Status.FAILED else "error"
    return HoldRequest(environment=settings.environment, parent=result.check, status=status)


def window_minutes(settings: Settings, parent: str, dependant: str) -> int:
    """The window a failing `parent` opens on `dependant`'s monitor, before the environment's bound."""
    schedules = 60 * (schedule_minutes(settings, parent) + schedule_minutes(settings, dependant))
    seconds = schedules + 2 * run_seconds(settings) + 60 * settings.hold_back.margin_minutes
    return math.ceil(seconds / 60)


def windows(settings: Settings, parent: str, now: datetime) -> list[Window]:
    """The windows a failing `parent` opens at `now`: one per enabled dependant with a monitor, catalogue order.

    Never the parent's own monitor (nor any monitor the parent shares), and never longer than
    `vigilmon.maintenance_max_minutes`. A dependant without `monitor_id` has nothing to hold (a local run)."""
    own = settings.checks.get(parent)
    own_monitor = own.monitor_id if own is not None else None
    longest = settings.vigilmon.maintenance_max_minutes
    found = []
    for dependant in registry.dependants(parent):
        configured = settings.checks.get(dependant)
        if configured is None or not configured.enabled or not configured.monitor_id:
            continue
        if configured.monitor_id == own_monitor:
            continue
        minutes = min(longest, window_minutes(settings, parent, dependant))
        found.append(Window(dependant, configured.monitor_id, minutes, now + timedelta(minutes=minutes)))
    return found


def decide(settings: Settings, result: Result, now: datetime) -> list[Window]:
    """The whole decision for one run, as the inhibitor will make it: the windows `result` opens at `now` (none
    when its run asks nothing)."""
    request = request_for(settings, result)
    return [] if request is None else windows(settings, request.parent, now)


def hold_back_problems(settings: Settings) -> list[str]:
    """Every reason hold-back, as configured, could not do what it says, as `path: reason` lines."""
    hold = settings.hold_back
    problems: list[str] = []
    platform = settings.deploy.platform if settings.deploy else None
    if hold.inhibitor_url is not None and platform != "gcf":
        problems.append(
            "hold_back.inhibitor_url: Cloud Functions only (on AWS the inhibitor is invoked by its function name; "
            "a local run calls it in process)"
        )
    if not hold.enabled:
        return problems
    if settings.vigilmon.api_key is None:
        problems.append(
            # Not "api_key: required": the redaction guard reads `api_key: <word>` as a credential.
            "vigilmon.api_key: not set, but hold_back.enabled needs it: the inhibitor opens the dependants' "
            "maintenance windows with it"
        )
    enabled = set(settings.enabled_checks())
    unheld: set[str] = set()
    for parent in settings.enabled_checks():
        if parent not in registry.names():
            continue  # named by the shape validation already
        parent_monitor = settings.checks[parent].monitor_id
        for dependant in registry.dependants(parent):
            if dependant not in enabled:
                continue
            monitor = settings.checks[dependant].monitor_id
            if not monitor and settings.deploy is None and dependant not in unheld:  # deployed: outpost.deploy's
                unheld.add(dependant)
                problems.append(
                    f"checks.{dependant}.monitor_id: required while hold_back.enabled: {dependant} is held back "
                    f"while {parent} fails, by a window on its monitor"
                )
            elif monitor and monitor == parent_monitor:
                problems.append(
                    f"checks.{dependant}.monitor_id: the same monitor as checks.{parent}.monitor_id, which it "
                    f"depends on: holding {dependant} back would silence {parent} itself"
                )
            needed = window_minutes(settings, parent, dependant)
            if monitor and needed > settings.vigilmon.maintenance_max_minutes:
                problems.append(
                    f"vigilmon.maintenance_max_minutes: {settings.vigilmon.maintenance_max_minutes} is shorter than "
                    f"the {needed} min window holding {dependant} back while {parent} fails (their schedules, two "
                    "runs and hold_back.margin_minutes): raise it, or shorten the schedules"
                )
    return problems
