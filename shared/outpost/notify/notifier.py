"""One alarm state change in, one message out.

`notify` reads the run line behind the change (ALARM: the newest run of the rule's outcome; OK: the newest `ok`
run) within the alarm's window (`outpost.deploy.alarm_window_seconds` before the change, a minute after), composes
the message (`message.compose`) and publishes it. The run line is a courtesy: when it cannot be read (no
permission, none in the window, malformed) the message still goes, with the alarm's own facts and one line
saying why the details are missing, and the cause is logged. A publish that fails is logged as an ERROR and
returned, never raised: the alarm's own actions (the SNS topics, the notification channels) told the person
already, and a retry would only tell the same change late.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from outpost.config import Settings
from outpost.deploy import alarm_window_seconds
from outpost.errors import ReportError
from outpost.logs import emit
from outpost.notify.message import AlarmFacts, RunLine, compose, parse_run_line
from outpost.notify.seams import Publisher, RunLineSource

AFTER_SECONDS = 60
"""How long after the state change a run line is still looked for (clocks and log delivery)."""


def _when(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def read_run(settings: Settings, facts: AlarmFacts, source: RunLineSource) -> tuple[RunLine | None, str]:
    """(the run line behind `facts`, "") or (None, why it is missing)."""
    start = facts.at - dt.timedelta(seconds=alarm_window_seconds(settings, facts.check))
    end = facts.at + dt.timedelta(seconds=AFTER_SECONDS)
    try:
        found = source.latest(facts.check, facts.outcome, start, end)
    except ReportError as error:
        return None, f"the run line could not be read: {error}"
    except Exception as error:  # noqa: BLE001 - a seam's surprise must not cost the message; its class names it
        return None, f"the run line could not be read: unexpected {type(error).__name__}"
    if found is None:
        return None, (
            f"no {facts.outcome} run line of {facts.check} between {_when(start)} and {_when(end)} in "
            f"{source.where(facts.check)}"
        )
    try:
        return parse_run_line(found, facts.check), ""
    except ValueError as error:
        return None, f"the newest {facts.outcome} run line of {facts.check} is malformed: {error}"


def notify(
    settings: Settings,
    facts: AlarmFacts,
    *,
    source: RunLineSource,
    publisher: Publisher,
    runbook_base: str = "",
) -> dict[str, Any]:
    """Publish the message of `facts`; the outcome, as logged (`published`, and `error` when it was not)."""
    run, missing = read_run(settings, facts, source)
    fields: dict[str, Any] = {"check": facts.check, "environment": facts.environment, "outcome": "message"}
    if run is None:
        emit("WARNING", f"notifier: {facts.alarm} {facts.state}: details missing: {missing}", **fields)
    message = compose(
        facts,
        run,
        missing=missing,
        cluster=settings.cluster.name,
        runbook_base=runbook_base,
        max_bytes=settings.messages.max_bytes,
    )
    outcome: dict[str, Any] = {
        "environment": facts.environment,
        "check": facts.check,
        "rule": facts.rule,
        "state": facts.state,
        "run_id": run.run_id if run is not None else None,
        "details": run is not None,
        "bytes": len(message.body.encode("utf-8")),
    }
    try:
        message_id = publisher.publish(message)
    except Exception as error:  # noqa: BLE001 - a ReportError names its cause; any other, its class only
        why = str(error) if isinstance(error, ReportError) else f"unexpected {type(error).__name__}"
        emit("ERROR", f"notifier: {facts.alarm} {facts.state}: message NOT published: {why}", **fields)
        return {**outcome, "published": False, "error": why}
    emit(
        "INFO",
        f"notifier: {facts.alarm} {facts.state}: message published ({outcome['bytes']} bytes, "
        f"{'with' if run is not None else 'without'} the run's details)",
        run_id=outcome["run_id"],
        **fields,
    )
    return {**outcome, "published": True, "message_id": message_id}
