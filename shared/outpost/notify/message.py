"""The message of one alarm state change: pure, no cloud called.

`compose` writes what the person reads: environment, cluster, check, rule, the new state and when, the run's
summary, its next steps (the runbook command lines), its run id and time, and the runbook link. Every piece of
text passes the redaction guard (`outpost.redaction`: resolved secrets, credentials in URLs, `Bearer` tokens) and
has its control characters shown as visible escapes (`outpost.logs.terminal_safe`: a log line's bytes are never
interpreted by a mail client or a terminal). The body is capped at `max_bytes` UTF-8 bytes: next steps are
dropped from the end (the message says how many), then the summary is cut with a visible marker, and the facts
alone, should they not fit, are cut last. Without a run line the message carries the alarm's own facts and one
line saying why the details are missing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from outpost import redaction
from outpost.deploy import RULE_OUTCOMES, runbook_path
from outpost.logs import terminal_safe

State = Literal["ALARM", "OK"]

CUT: Final = " [cut: over messages.max_bytes]"
"""Ends a summary (or, last, a body) cut to fit the cap."""
SUBJECT_MAX: Final = 99
"""SNS: a subject is ASCII, one line, fewer than 100 characters (Publish, `Subject`)."""


class _Line(BaseModel):
    # A run line carries more (errors, details, the EMF members); what is not read is ignored.
    model_config = ConfigDict(extra="ignore", frozen=True)


class StepLine(_Line):
    """One of a run line's `next_steps` (`outpost.result.NextStep`, as the line serialises it)."""

    failure: StrictStr = ""
    cause: StrictStr = ""
    command: StrictStr
    see: StrictStr = ""


class RunLine(_Line):
    """The run line of one check run (`outpost.logs.emit_run_log`): what the message tells of it."""

    check: StrictStr
    status: Literal["ok", "degraded", "failed", "error"]
    summary: StrictStr
    next_steps: list[StepLine] = Field(default_factory=list)
    run_id: StrictStr
    time: StrictStr
    cluster: StrictStr = ""
    environment: StrictStr = ""


def parse_run_line(raw: str | Mapping[str, Any], check: str) -> RunLine:
    """`raw` (the line's JSON text, or its parsed object) as a `RunLine` of `check`; ValueError naming the field."""
    document: Any = raw
    if isinstance(raw, str):
        try:
            document = json.loads(raw)
        except ValueError:
            raise ValueError("the run line is not JSON") from None
    if not isinstance(document, Mapping):
        raise ValueError("the run line is not a JSON object")
    try:
        line = RunLine.model_validate(document)
    except ValidationError as error:
        item = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in item["loc"]) or "(line)"
        raise ValueError(f"the run line's {where}: {item['msg']}") from None
    if line.check != check:
        raise ValueError(f"the run line is of check {line.check[:63]!r}, not {check}")
    return line


@dataclass(frozen=True)
class AlarmFacts:
    """What the alarm's state change itself says: whose alarm, which rule, the new state, when (`events`)."""

    environment: str
    check: str
    rule: str
    state: State
    at: dt.datetime
    alarm: str
    """The alarm's name (AWS) or the alert policy's display name (Google Cloud)."""

    @property
    def outcome(self) -> str:
        """The run outcome behind the state: the rule's (`RULE_OUTCOMES`) in ALARM, `ok` once it cleared."""
        return RULE_OUTCOMES[self.rule] if self.state == "ALARM" else "ok"


@dataclass(frozen=True)
class Message:
    """One message: a one-line ASCII subject, the body, and string attributes to filter subscriptions on."""

    subject: str
    body: str
    attributes: dict[str, str]


def safe(text: str) -> str:
    """`text` redacted, its control characters (newlines included) shown as visible escapes."""
    return terminal_safe(redaction.redact(text))


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, on a character boundary."""
    return text.encode("utf-8")[: max(0, limit)].decode("utf-8", errors="ignore")


def _when(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def subject(facts: AlarmFacts) -> str:
    """`Outpost prod: apiserver-health failed ALARM`: ASCII, one line, under SNS's 100 characters."""
    what = "ALARM" if facts.state == "ALARM" else "OK (cleared)"
    text = f"Outpost {facts.environment}: {facts.check} {facts.rule} {what}"
    return "".join(c if " " <= c <= "~" else "?" for c in text)[:SUBJECT_MAX]


def _render(
    facts: AlarmFacts,
    cluster: str,
    run: RunLine | None,
    missing: str,
    summary: str,
    steps: Sequence[StepLine],
    dropped: int,
    runbook_line: str,
) -> str:
    state = "entered ALARM" if facts.state == "ALARM" else "cleared (OK)"
    lines = [
        f"Outpost {safe(facts.environment)}: check {safe(facts.check)}, rule {safe(facts.rule)}: {state}",
        f"Environment: {safe(facts.environment)}",
        f"Cluster: {cluster or '(unknown)'}",
        f"Alarm: {safe(facts.alarm)} {state} at {_when(facts.at)}",
    ]
    if run is None:
        lines.append(f"Details missing: {missing}")
    else:
        lines.append(f"Run: {safe(run.run_id)} at {safe(run.time)}, {run.status}")
        lines.append(f"Summary: {summary}")
        if steps or dropped:
            lines.append("Next steps:")
        for step in steps:
            lines.append(f"- {safe(step.failure) or 'next'}: {safe(step.cause)}")
            lines.append(f"  $ {safe(step.command)}")
            if step.see:
                lines.append(f"  see {safe(step.see)}")
        if dropped:
            lines.append(f"({dropped} more next step(s) left out to fit messages.max_bytes: see the run line)")
    # Redacted as a whole once more (what a field hid, the joined text still hides), but for the runbook link: ours,
    # and a URL the guard would cut (its `#check` fragment).
    return redaction.redact("\n".join(lines)) + "\n" + runbook_line + "\n"


def compose(
    facts: AlarmFacts,
    run: RunLine | None,
    *,
    missing: str = "",
    cluster: str = "",
    runbook_base: str = "",
    max_bytes: int,
) -> Message:
    """The message of `facts`, with `run` (the run line behind it) or, without one, `missing` (why it is missing).
    `cluster`: the configured cluster name, when the run line names none; `runbook_base`: the prefix of the
    runbook link (the deployment's runbook base URL; empty: the path in the repository)."""
    named = safe(run.cluster if run is not None and run.cluster else cluster)
    # The base is the deployment's (validated where it is read: https, no user information); the path is ours.
    runbook_line = f"Runbook: {terminal_safe(runbook_base + runbook_path(facts.check))}"
    why = safe(missing or "no run line was read")
    steps = list(run.next_steps) if run is not None else []
    summary = safe(run.summary) if run is not None else ""

    def render(summary_text: str, keep: int) -> str:
        return _render(facts, named, run, why, summary_text, steps[:keep], len(steps) - keep, runbook_line)

    body = ""
    for keep in range(len(steps), -1, -1):
        body = render(summary, keep)
        if _size(body) <= max_bytes:
            break
    else:
        room = max_bytes - _size(render("", 0)) - _size(CUT)
        body = render(_cut(summary, room) + CUT, 0)
    if _size(body) > max_bytes:  # the facts alone (a very long cluster name) do not fit
        body = _cut(body, max_bytes - _size(CUT)) + CUT
    attributes = {
        "environment": facts.environment,
        "check": facts.check,
        "rule": facts.rule,
        "state": facts.state,
    }
    if run is not None:
        attributes["run_id"] = safe(run.run_id)[:100]
    return Message(subject(facts), body, attributes)
