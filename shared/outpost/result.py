"""The result contract of every check (docs/contracts.md "Result contract").

Guarantees, enforced by the model rather than by convention:
- `status` is one of ok, degraded, failed, error;
- `ok` never carries errors (a result built as ok with errors is refused);
- only ok and degraded are healthy, i.e. the only statuses that ping a heartbeat;
- summary, errors and details pass `outpost.redaction` when the result is built: no registered credential
  (and nothing shaped like one) survives into a result, whatever text a server or library put there.
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from outpost import redaction


class Status(enum.StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    FAILED = "failed"
    ERROR = "error"

    @property
    def healthy(self) -> bool:
        """Whether this status pings the heartbeat (silence is the alarm for the others)."""
        return self in (Status.OK, Status.DEGRADED)

    @property
    def exit_code(self) -> int:
        """The CLI exit status: 0 ok/degraded, 1 failed, 2 error."""
        return {Status.OK: 0, Status.DEGRADED: 0, Status.FAILED: 1, Status.ERROR: 2}[self]


class Result(BaseModel):
    """What one run of one check observed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: str
    status: Status
    summary: str = Field(description="One line a person reads in an alert.")
    errors: list[str] = Field(default_factory=list, description="One line per problem, naming the object.")
    details: dict[str, Any] = Field(default_factory=dict)
    duration_ms: int = 0
    reported: bool = False

    @field_validator("summary", "errors", "details", mode="after")
    @classmethod
    def _redacted(cls, value: Any) -> Any:
        # Results carry text from servers and libraries: scrub every credential the process knows of.
        return redaction.redact_any(value)

    @model_validator(mode="after")
    def _ok_has_no_errors(self) -> Result:
        if self.status is Status.OK and self.errors:
            raise ValueError("a result with errors cannot be ok")
        if "\n" in self.summary:
            raise ValueError("summary must be one line")
        return self

    # A judgement names its verdict first: `Result.failed(NAME, summary, errors, details)` reads as what it is.
    @classmethod
    def ok(cls, check: str, summary: str, details: dict[str, Any] | None = None) -> Result:
        """Healthy, nothing to report beyond the summary."""
        return cls(check=check, status=Status.OK, summary=summary, details=details or {})

    @classmethod
    def degraded(cls, check: str, summary: str, errors: list[str], details: dict[str, Any] | None = None) -> Result:
        """Healthy enough to ping, with what is wrong named per line."""
        return cls(check=check, status=Status.DEGRADED, summary=summary, errors=errors, details=details or {})

    @classmethod
    def failed(cls, check: str, summary: str, errors: list[str], details: dict[str, Any] | None = None) -> Result:
        """Observed and unhealthy: one error line per problem, naming the object."""
        return cls(check=check, status=Status.FAILED, summary=summary, errors=errors, details=details or {})

    @classmethod
    def error(cls, check: str, cause: str, **details: Any) -> Result:
        """The probe could not observe: `cause` names what and why, in one line (newlines are folded)."""
        cause = " ".join(cause.split())[:500] or "no cause given"
        return cls(check=check, status=Status.ERROR, summary=cause, errors=[cause], details=details)
