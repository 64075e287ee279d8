"""Structured logs: one JSON object per line on stdout, readable by CloudWatch Logs and Cloud Logging.

Each line has `severity` (Cloud Logging), `level` (CloudWatch filters), `message` and `time`; `emit_run_log`
writes one per run, with the run's id and the cluster's name, and on AWS the run's outcome as CloudWatch metrics
in the embedded metric format (EMF: the `_aws` key, as docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
CloudWatch_Embedded_Metric_Format_Specification.html specifies it), which the cloud alarms count
(`outpost.tooling.alerting`). Every outgoing string passes the redaction guard (resolved secrets, URL credentials,
`Bearer` tokens), because results carry text from checks and libraries. `dumps` escapes C0, DEL and C1 (json's
`ensure_ascii=False` escapes C0 only) and `terminal_safe` shows them as visible escapes, so a server's bytes are
never interpreted by a viewer. `install_redaction` guards stdlib `logging` records too.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
import uuid
from collections.abc import Iterable, Mapping
from typing import IO, Any, Final

from outpost import redaction
from outpost.result import Result, Status
from outpost.secrets import Secret

REDACTED: Final = redaction.REDACTED

_LEVELS: Final = {
    Status.OK: "INFO",
    Status.DEGRADED: "WARNING",
    Status.FAILED: "ERROR",
    Status.ERROR: "ERROR",
}

METRIC_NAMESPACE: Final = "Outpost"
"""The CloudWatch namespace of the run metrics (dimensions: `environment`, `check`)."""
METRIC_DIMENSIONS: Final = ("environment", "check")
OUTCOME_METRICS: Final = {
    Status.FAILED: "Failed",
    Status.ERROR: "Error",
    Status.DEGRADED: "Degraded",
    Status.OK: "Ok",
}
"""One metric per outcome, 1 for the run's own and 0 for the others: an alarm counts runs of one outcome."""

_JSON_CONTROL: Final = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}
"""DEL and the C1 controls, as JSON escapes (json.dumps escapes C0 itself; these it leaves raw)."""
_TERMINAL_CONTROL: Final = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r"}


def dumps(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON (UTF-8 text kept readable) with no raw control character in it: DEL and C1 escaped too."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(value, ensure_ascii=False, separators=separators, indent=indent, default=str)
    return text.translate(_JSON_CONTROL)


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character (C0 but tab, ESC, DEL, C1 incl. CSI U+009B) shown as a visible escape.

    Why: text from a server (an error body, a health line) reaches a terminal through the CLI, and an escape
    sequence in it would be executed by the terminal (retitle it, clear it, move the cursor over earlier lines).
    """

    def visible(match: re.Match[str]) -> str:
        char = match.group()
        if char == "\n" and keep_newlines:
            return char
        return _NAMED.get(char) or f"\\x{ord(char):02x}"

    return _TERMINAL_CONTROL.sub(visible, text)


def redact(text: str) -> str:
    """Scrub known secret values, credentials in URLs and bearer tokens out of one string."""
    return redaction.redact(text)


def sanitize(value: Any) -> Any:
    """A JSON-ready copy of `value` with every string passed through `redact`."""
    if isinstance(value, Secret):
        return REDACTED
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(str(key)): sanitize(item) for key, item in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, bytes | bytearray):
        return [sanitize(item) for item in value]
    # Anything else (a Secret, an exception, a datetime) goes out as its str(), which a Secret redacts.
    return redact(str(value))


def structured(level: str, message: str, **fields: Any) -> dict[str, Any]:
    """One structured log record, redacted (what `emit` writes, as `dumps` serialises it)."""
    record: dict[str, Any] = {
        "severity": level,
        "level": level,
        "message": message,
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        **fields,
    }
    return dict(sanitize(record))


def emit(level: str, message: str, *, stream: IO[str] | None = None, **fields: Any) -> dict[str, Any]:
    """Write one structured line; returns the (redacted) object written, for callers that want it."""
    clean = structured(level, message, **fields)
    line = dumps(clean)
    out = stream if stream is not None else sys.stdout
    out.write(line + "\n")
    out.flush()
    return dict(clean)


def new_run_id() -> str:
    """A run id where the platform gives none (a CLI run, Cloud Functions): a random UUID."""
    return str(uuid.uuid4())


def embedded_metrics(status: Status, at: dt.datetime) -> dict[str, Any]:
    """The EMF members of a run line: the `_aws` directive (namespace, dimensions, metrics) and one value per
    outcome metric. The dimensions' values are the line's own `environment` and `check` members."""
    return {
        "_aws": {
            "Timestamp": int(at.timestamp() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": METRIC_NAMESPACE,
                    "Dimensions": [list(METRIC_DIMENSIONS)],
                    "Metrics": [{"Name": name, "Unit": "Count"} for name in OUTCOME_METRICS.values()],
                }
            ],
        },
        **{name: int(status == outcome) for outcome, name in OUTCOME_METRICS.items()},
    }


def emit_run_log(
    result: Result,
    environment: str,
    *,
    cluster: str = "",
    run_id: str | None = None,
    counted: bool = False,
    metrics: bool = False,
    stream: IO[str] | None = None,
) -> dict[str, Any]:
    """The one log line of one check run: its id (`run_id`, a new UUID when the platform gives none) and the
    cluster's name let the person paged find this very run. `counted` (the member the Google Cloud log-based
    metric selects on): the run counts towards the cloud alarms, as the platform adapter decides (a scheduled
    run, never a dry run); `metrics` adds the EMF members (AWS scheduled runs), which count it on AWS."""
    extra = embedded_metrics(result.status, dt.datetime.now(dt.UTC)) if metrics else {}
    return emit(
        _LEVELS[result.status],
        f"{result.check} {result.status.value}: {result.summary}",
        stream=stream,
        check=result.check,
        status=result.status.value,
        summary=result.summary,
        errors=result.errors,
        next_steps=[step.model_dump() for step in result.next_steps],
        duration_ms=result.duration_ms,
        environment=environment,
        cluster=cluster,
        run_id=run_id or new_run_id(),
        counted=counted or metrics,
        reported=result.reported,
        details=result.details,
        **extra,
    )


class RedactingFilter(logging.Filter):
    """Rewrites a log record's message through `redact` (stdlib logging's counterpart of `sanitize`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        redaction.scrub_record(record)
        return True


# "google" rather than "google.auth": a configured "google" logger is what keeps google-auth from turning its
# propagation off on the first request (its warnings would never reach the function's log).
_FILTERED_LOGGERS: Final = ("httpx", "httpcore", "urllib3", "botocore", "google")


def install_redaction(loggers: Iterable[str] = _FILTERED_LOGGERS) -> None:
    """Quieten the HTTP libraries' loggers to WARNING and attach `RedactingFilter` to them (idempotent).

    Why both: a logger's filter sees only records created on that very logger, not on its children
    (`botocore.parsers` logs whole response bodies, i.e. secret values, at DEBUG; `httpx` logs full request
    URLs, i.e. heartbeat tokens, at INFO). The level keeps the children quiet even when a platform turns the
    root logger up to DEBUG; the filter scrubs what still gets through on the parent loggers.
    """
    for name in loggers:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
        if not any(isinstance(existing, RedactingFilter) for existing in logger.filters):
            logger.addFilter(RedactingFilter())
    redaction.install()
