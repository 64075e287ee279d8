"""Structured logs: one JSON object per line on stdout, readable by CloudWatch Logs and Cloud Logging.

Guarantees:
- every line is a single JSON object with `severity` (Cloud Logging's special field), `level` (the same word,
  for CloudWatch filters), `message` and `time`; `emit_run_log` writes exactly one line per check run with
  `check`, `status`, `summary`, `errors`, `duration_ms`, `environment`, `reported` and `details`;
- a redaction guard runs over every string that goes out, because results carry text written by checks and
  by libraries we do not control:
  * any value `outpost.secrets` resolved in this process is replaced by `***`;
  * in URLs, userinfo, query strings and token-like path segments are replaced by `***` (a heartbeat URL
    carries its token in the path or query, and anyone holding it can mask an outage);
  * `Bearer <token>` becomes `Bearer ***`;
  * a `Secret` is written as `***`; other objects that are not plain JSON go through `str()`;
- `RedactingFilter` applies the same guard to stdlib `logging` records (installed on the HTTP client
  libraries' loggers, which log full request URLs at INFO/DEBUG), and `install_redaction` also installs
  `outpost.redaction`'s record factory, which scrubs every record of every logger (third-party ones too).

This module sits just above `secrets` in the import layers (it reads the resolved values to scrub them).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
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


def emit(level: str, message: str, *, stream: IO[str] | None = None, **fields: Any) -> dict[str, Any]:
    """Write one structured line; returns the (redacted) object written, for callers that want it."""
    record: dict[str, Any] = {
        "severity": level,
        "level": level,
        "message": message,
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        **fields,
    }
    clean = sanitize(record)
    line = json.dumps(clean, ensure_ascii=False, separators=(",", ":"), default=str)
    out = stream if stream is not None else sys.stdout
    out.write(line + "\n")
    out.flush()
    return dict(clean)


def emit_run_log(result: Result, environment: str, *, stream: IO[str] | None = None) -> dict[str, Any]:
    """The one log line of one check run."""
    return emit(
        _LEVELS[result.status],
        f"{result.check} {result.status.value}: {result.summary}",
        stream=stream,
        check=result.check,
        status=result.status.value,
        summary=result.summary,
        errors=result.errors,
        duration_ms=result.duration_ms,
        environment=environment,
        reported=result.reported,
        details=result.details,
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
